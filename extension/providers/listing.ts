// Asks a provider for its models (GET <base>/models, as the catalogue's kinds say to) and probes
// the local servers (Ollama, LM Studio) on loopback. Bounded: a time limit on every request, a
// cap on the body read and on the models kept. No vscode import, so it is unit-testable.
import { modelIds, modelsRequest, type ProviderKindId } from '../../gateway/catalogue/kinds.js';

const LIST_TIMEOUT_MS = 15_000;
/** A local server either answers at once or is not there; the picker must not wait for it. */
export const PROBE_TIMEOUT_MS = 400;
const MAX_BODY_BYTES = 4 * 1024 * 1024;
const MAX_MODELS = 1_000;

export class ListingError extends Error {
  override name = 'ListingError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The model ids the provider lists, sorted and deduplicated; throws ListingError with a readable reason. */
export async function listModels(
  kind: ProviderKindId,
  baseUrl: string,
  apiKey: string | undefined,
  signal: AbortSignal = AbortSignal.timeout(LIST_TIMEOUT_MS),
): Promise<string[]> {
  const { url, headers } = modelsRequest(kind, baseUrl, apiKey ?? null);
  let response: Response;
  try {
    response = await fetch(url, { headers, signal });
  } catch (error) {
    throw new ListingError(`${url} did not answer: ${reason(error)}`);
  }
  const text = await readBounded(response);
  if (!response.ok) {
    const detail = errorMessage(text);
    throw new ListingError(
      `${url} answered ${response.status}${detail ? `: ${detail}` : ''}`,
      response.status,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ListingError(`${url}: the model list is not JSON`);
  }
  const ids = [...new Set(modelIds(body, MAX_MODELS))].sort((a, b) => a.localeCompare(b));
  if (ids.length === 0) throw new ListingError(`${url} lists no models`);
  return ids;
}

/** The models of a local server on this loopback root, or undefined when it does not answer in PROBE_TIMEOUT_MS. */
export async function probeLocal(
  kind: ProviderKindId,
  baseUrl: string,
): Promise<string[] | undefined> {
  try {
    return await listModels(kind, baseUrl, undefined, AbortSignal.timeout(PROBE_TIMEOUT_MS));
  } catch {
    return undefined;
  }
}

async function readBounded(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      throw new ListingError(`the model list is larger than ${MAX_BODY_BYTES / 1024 / 1024} MB`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    const message =
      typeof body.error === 'string'
        ? body.error
        : typeof body.error?.message === 'string'
          ? body.error.message
          : typeof body.message === 'string'
            ? body.message
            : undefined;
    return message ? message.slice(0, 300) : '';
  } catch {
    return text.slice(0, 200).trim();
  }
}

function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'timed out';
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? error.message;
}
