// What every HTTP-speaking provider adapter shares: one bounded call (timeouts and transport
// failures become ProviderUnavailableError, so the chain fails over or enquires), the answer
// read up to a byte limit, transport-level statuses (5xx, 429, 408) told apart from business
// answers, headers with a credential from the environment, and dotted-path access to JSON.
import { CallbackRefusedError, ProviderUnavailableError } from './types.js';
import { injectTrace } from '../telemetry/index.js';

/** Fixed headers plus an optional credential header from an environment variable. */
export interface UpstreamHeaderConfig {
  headers: Record<string, string>;
  auth?: { header: string; value_env: string; prefix: string } | undefined;
}

/**
 * An upstream's configured headers plus its credential from the environment, if it has auth
 * (a provider and the SMS sender share this configuration); `who` names it in the error.
 */
export function upstreamHeaders(
  config: UpstreamHeaderConfig,
  env: NodeJS.ProcessEnv,
  who: string,
): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json', ...config.headers };
  if (config.auth) {
    const credential = env[config.auth.value_env];
    if (!credential)
      throw new ProviderUnavailableError(
        'misconfigured',
        `${who}: environment variable ${config.auth.value_env} is not set`,
      );
    headers[config.auth.header] = `${config.auth.prefix}${credential}`;
  }
  return headers;
}

/** A secret from the environment, or `misconfigured` naming the variable (never its value). */
export function envSecret(env: NodeJS.ProcessEnv, name: string, who: string): string {
  const value = env[name];
  if (!value)
    throw new ProviderUnavailableError(
      'misconfigured',
      `${who}: environment variable ${name} is not set`,
    );
  return value;
}

/** A secret a callback is checked with; unset, the callback is refused (401), never believed. */
export function callbackSecret(env: NodeJS.ProcessEnv, name: string, provider: string): string {
  const value = env[name];
  if (!value)
    throw new CallbackRefusedError(
      'unauthenticated',
      `callbacks of ${provider} cannot be checked: ${name} is not set`,
    );
  return value;
}

/**
 * One HTTP call to a provider (redirects refused). A failure to connect, or `signal` aborting
 * (the chain's timeout), is ProviderUnavailableError; the answer is read up to `max_bytes`.
 */
export async function send(
  name: string,
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string | undefined },
  limits: { timeout_ms: number; max_bytes: number; signal: AbortSignal },
): Promise<{ status: number; text: string }> {
  const { signal } = limits;
  const headers = { ...init.headers };
  injectTrace(headers); // W3C traceparent: the provider's spans, if it traces, join the request's trace
  let response: Response;
  try {
    response = await fetch(url, { ...init, headers, signal, redirect: 'error' });
  } catch (error) {
    if (signal.aborted)
      throw new ProviderUnavailableError(
        'timeout',
        `provider ${name} did not answer in ${limits.timeout_ms} ms`,
      );
    throw new ProviderUnavailableError(
      'transport',
      `provider ${name}: ${(error as Error).message}`,
    );
  }
  return {
    status: response.status,
    text: await readBounded(response, limits.max_bytes, signal, name),
  };
}

/** Transport-level statuses become ProviderUnavailableError; anything else must be JSON. */
export function decodeJson(
  name: string,
  status: number,
  text: string,
): { http_status: number; body: unknown } {
  if (status >= 500)
    throw new ProviderUnavailableError('http_5xx', `provider ${name} answered HTTP ${status}`);
  if (status === 429)
    throw new ProviderUnavailableError('rate_limited', `provider ${name} answered HTTP 429`);
  if (status === 408)
    throw new ProviderUnavailableError('timeout', `provider ${name} answered HTTP 408`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ProviderUnavailableError(
      'bad_response',
      `provider ${name} answered HTTP ${status} with a body that is not JSON`,
    );
  }
  return { http_status: status, body: parsed };
}

export function getPath(document: unknown, path: string): unknown {
  let current = document;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, part))
      return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

export function setPath(document: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let current = document;
  for (const part of parts.slice(0, -1)) {
    const next = current[part];
    if (next === null || typeof next !== 'object') current[part] = Object.create(null);
    current = current[part] as Record<string, unknown>;
  }
  current[parts[parts.length - 1]!] = value;
}

async function readBounded(
  response: Response,
  max_bytes: number,
  signal: AbortSignal,
  name: string,
): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > max_bytes) {
        await reader.cancel();
        throw new ProviderUnavailableError(
          'bad_response',
          `provider ${name} answered with more than ${max_bytes} bytes`,
        );
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof ProviderUnavailableError) throw error;
    if (signal.aborted)
      throw new ProviderUnavailableError(
        'timeout',
        `provider ${name} did not finish its answer in time`,
      );
    throw new ProviderUnavailableError(
      'transport',
      `provider ${name}: ${(error as Error).message}`,
    );
  }
  return Buffer.concat(chunks).toString('utf8');
}
