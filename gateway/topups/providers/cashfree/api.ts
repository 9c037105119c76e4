// The one way this adapter calls Cashfree: its keys in headers (never in a URL or a log), the
// API version pinned, a deadline on every call, answers bounded and read with zod; an error
// answer or no answer is a ProviderCallError with Cashfree's status.
import type { z } from 'zod';
import { ProviderCallError } from '../../types.js';
import { CASHFREE_API_VERSION, cashfreeError } from './shapes.js';

/** The largest answer read from Cashfree. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export interface CashfreeKeys {
  base_url: string;
  client_id: string;
  client_secret: string;
  timeout_ms: number;
}

export type CashfreeCall = <T>(
  method: 'GET' | 'POST',
  path: string,
  schema: z.ZodType<T>,
  body: unknown,
  signal: AbortSignal | undefined,
  missing_ok?: boolean,
) => Promise<T | null>;

export function cashfreeCaller({
  base_url,
  client_id,
  client_secret,
  timeout_ms,
}: CashfreeKeys): CashfreeCall {
  return async function call<T>(
    method: 'GET' | 'POST',
    path: string,
    schema: z.ZodType<T>,
    body: unknown,
    signal: AbortSignal | undefined,
    missing_ok = false,
  ): Promise<T | null> {
    const deadline = AbortSignal.timeout(timeout_ms);
    let response: Response;
    let text: string;
    try {
      response = await fetch(`${base_url}${path}`, {
        method,
        headers: {
          'x-client-id': client_id,
          'x-client-secret': client_secret,
          'x-api-version': CASHFREE_API_VERSION,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? null : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
      });
      const bytes = Number(response.headers.get('content-length') ?? 0);
      if (bytes > MAX_ANSWER_BYTES) throw new Error(`an answer of ${bytes} bytes`);
      text = await response.text();
      if (text.length > MAX_ANSWER_BYTES) throw new Error('an answer too large');
    } catch (error) {
      throw new ProviderCallError(
        `cashfree ${method} ${path}: ${(error as Error).message}`.slice(0, 300),
        null,
      );
    }
    return answer(method, path, response.status, text, schema, missing_ok);
  };
}

function answer<T>(
  method: string,
  path: string,
  status: number,
  text: string,
  schema: z.ZodType<T>,
  missing_ok: boolean,
): T | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ProviderCallError(`cashfree ${method} ${path}: an answer that is not JSON`, status);
  }
  if (status === 404 && missing_ok) return null;
  if (status < 200 || status > 299) {
    const known = cashfreeError.safeParse(parsed);
    const said = known.success
      ? `${known.data.code ?? ''} ${known.data.message}`.trim()
      : 'an error';
    throw new ProviderCallError(
      `cashfree ${method} ${path}: ${status} ${said}`.slice(0, 300),
      status,
    );
  }
  const read = schema.safeParse(parsed);
  if (!read.success)
    throw new ProviderCallError(
      `cashfree ${method} ${path}: an answer not in Cashfree's shape`,
      status,
    );
  return read.data;
}
