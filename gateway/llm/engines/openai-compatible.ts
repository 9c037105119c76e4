// Any server that speaks OpenAI's chat completions (OpenAI, Ollama, vLLM, llama.cpp,
// LM Studio, OpenRouter, ...), through the official openai SDK, in one of two ways:
//
// - `prepared` (the default): the SDK prepares the request once per target (URL, auth, its
//   own and the configured headers), and each call writes it onto a keep-alive connection
//   of the gateway's own HTTP/1.1 client (../http-client.ts); an error answer becomes the SDK's typed error (`APIError.generate`),
//   the same one `create()` would throw. The SDK's per-call work (merging six header sets
//   into a WHATWG Headers object, a timeout AbortController, eager debug-log formatting,
//   its promise wrappers) costs about 70 µs of CPU per request here, as much as the rest
//   of the gateway's hot path, and undici's pool adds 0.28 ms per request at one
//   connection where the small client adds 0.01 ms; this is how the gateway stays fast.
// - `sdk`: every call through `client.chat.completions.create`, for a server that needs
//   something only the SDK's full request path does.
//
// The SDK's own retries are off: the router decides where a failed request goes next.
import OpenAI from 'openai';
import { z } from 'zod';
import { readSse, SseFormatError } from '../sse-reader.js';
import { toAbortSignal, type CancelSignal } from '../cancel.js';
import { HttpClientError, HttpPool, type PreparedRequest, type ResponseBody } from '../http-client.js';
import { pooledFetch, upstreamPool } from '../transport.js';
import {
  isPlainChunk,
  isPlainCompletion,
  UpstreamError,
  upstreamChunkSchema,
  upstreamCompletionSchema,
  type Engine,
  type EngineRequest,
  type UpstreamChunk,
  type UpstreamCompletion,
} from '../types.js';

/** Headers the client sets per connection or per request. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect']);

/** At most this much of an error answer is read, to quote it. */
const ERROR_BODY_LIMIT = 64 * 1024;

/** A chat completion larger than this is not one we asked for (the largest output cap is 32,768 tokens). */
const COMPLETION_BODY_LIMIT = 16 * 1024 * 1024;


const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;

/** The config of an `openai-compatible` target (a tier's entry in `chat.engines`). */
export const openaiCompatibleEngineSchema = z.strictObject({
  type: z.literal('openai-compatible'),
  /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1` (Ollama). */
  base_url: z.url({ protocol: /^https?$/ }).max(2_048),
  /** Name of the environment variable holding the upstream key; none for servers without auth. */
  api_key_env: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
  /** The upstream's model name, sent in place of the tier id. */
  model: z.string().min(1).max(256),
  headers: z.record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), z.string().max(4_096)).default({}),
  /** Limit on waiting for the first byte, and on silence between streamed chunks. */
  timeout_ms: z.int().min(100).max(600_000).default(60_000),
  /** Ask for `usage` on streams (`stream_options.include_usage`); turn off for servers that reject it. */
  stream_usage: z.boolean().default(true),
  /** The field that carries the output cap: OpenAI's newer models take only `max_completion_tokens`. */
  max_tokens_field: z.enum(['max_tokens', 'max_completion_tokens']).default('max_tokens'),
  /**
   * How the openai SDK is used: `prepared` (default) has it build the request once and sends
   * each call on the pool, with its typed errors; `sdk` runs every call through
   * `chat.completions.create` (about 70 µs more CPU per request).
   */
  client: z.enum(['prepared', 'sdk']).default('prepared'),
  /** Connection pool size towards this upstream. */
  max_connections: z.int().min(1).max(4_096).default(256),
  /**
   * How long a request waits for one of those connections when all are busy before it fails
   * as a timeout (and so fails over); by default min(timeout_ms, 10 s).
   */
  queue_timeout_ms: z.int().min(1).max(600_000).optional(),
});
export type OpenAICompatibleEngineConfig = z.output<typeof openaiCompatibleEngineSchema>;

export class OpenAICompatibleEngine implements Engine {
  readonly type = 'openai-compatible';
  private readonly client: OpenAI;
  /** Carries the SDK's own calls in `sdk` mode. */
  private readonly sdk_pool: ReturnType<typeof upstreamPool>;
  /** Carries the prepared calls. */
  private readonly http: HttpPool;
  private prepared: PreparedRequest | null = null;
  private preparing: Promise<PreparedRequest> | null = null;

  constructor(
    readonly name: string,
    private readonly config: OpenAICompatibleEngineConfig,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    let api_key = 'none';
    if (config.api_key_env) {
      const value = env[config.api_key_env];
      if (!value) throw new Error(`chat engine "${name}": environment variable ${config.api_key_env} is not set`);
      api_key = value;
    }
    this.sdk_pool = upstreamPool(config.base_url, { connections: config.max_connections, timeout_ms: config.timeout_ms });
    this.http = new HttpPool(config.base_url, { connections: config.max_connections, timeout_ms: config.timeout_ms, queue_timeout_ms: config.queue_timeout_ms });
    this.client = new OpenAI({
      apiKey: api_key,
      baseURL: config.base_url,
      defaultHeaders: config.headers,
      timeout: config.timeout_ms,
      maxRetries: 0,
      fetch: pooledFetch(this.sdk_pool, config.base_url),
      logLevel: 'off',
    });
  }

  private body(request: EngineRequest, stream: boolean): OpenAI.ChatCompletionCreateParams {
    return {
      ...(request.params as object),
      model: this.config.model,
      messages: request.messages as OpenAI.ChatCompletionMessageParam[],
      [this.config.max_tokens_field]: request.max_output_tokens,
      ...(stream ? { stream: true, ...(this.config.stream_usage ? { stream_options: { include_usage: true } } : {}) } : {}),
    };
  }

  complete(request: EngineRequest): Promise<UpstreamCompletion> {
    return this.config.client === 'sdk' ? this.completeSdk(request) : this.completePrepared(request);
  }

  stream(request: EngineRequest): AsyncIterable<UpstreamChunk> {
    return this.config.client === 'sdk' ? this.streamSdk(request) : this.streamPrepared(request);
  }

  async close(): Promise<void> {
    await Promise.all([this.sdk_pool.close(), this.http.close()]);
  }

  /** The request as the SDK builds it, once: its path on the upstream's origin and its headers. */
  private prepare(): PreparedRequest | Promise<PreparedRequest> {
    if (this.prepared) return this.prepared;
    this.preparing ??= this.client
      .buildRequest({ method: 'post', path: '/chat/completions', body: {} })
      .then(({ req, url }) => {
        const headers: Record<string, string> = {};
        for (const [name, value] of req.headers as Headers) if (!HOP_BY_HOP.has(name)) headers[name] = value;
        const parsed = new URL(url);
        if (parsed.origin !== this.http.origin) throw new Error(`invariant: the SDK built ${parsed.origin}, not ${this.http.origin}`);
        this.prepared = this.http.prepare('POST', `${parsed.pathname}${parsed.search}`, headers);
        return this.prepared;
      })
      .finally(() => {
        this.preparing = null;
      });
    return this.preparing;
  }

  /** Sends the body; resolves to the body of a 2xx answer, else throws the SDK's typed error. */
  private async send(request: EngineRequest, stream: boolean): Promise<ResponseBody> {
    const prepared = this.prepared ?? (await this.prepare());
    const response = await this.http.request(prepared, JSON.stringify(this.body(request, stream)), request.signal);
    if (response.status >= 200 && response.status < 300) return response.body;
    const text = await readBounded(response.body, ERROR_BODY_LIMIT);
    const json = safeJson(text);
    throw OpenAI.APIError.generate(response.status, json, json ? undefined : text, new Headers(Object.entries(response.headers)));
  }

  private async completePrepared(request: EngineRequest): Promise<UpstreamCompletion> {
    let raw: unknown;
    try {
      raw = await (await this.send(request, false)).json(COMPLETION_BODY_LIMIT);
    } catch (error) {
      throw classify(error, request.signal);
    }
    return completion(raw);
  }

  private async *streamPrepared(request: EngineRequest): AsyncIterable<UpstreamChunk> {
    let body: ResponseBody;
    try {
      body = await this.send(request, true);
    } catch (error) {
      throw classify(error, request.signal);
    }
    let finished = false;
    // Reading on after [DONE] to the end of the body (within a bound) keeps the connection for the next request.
    let after_done_chars = -1;
    try {
      for await (const sse of readSse(body)) {
        if (after_done_chars >= 0) {
          after_done_chars += sse.data.length;
          if (after_done_chars > ERROR_BODY_LIMIT) break;
          continue;
        }
        if (sse.data.startsWith('[DONE]')) {
          after_done_chars = 0;
          continue;
        }
        const data = JSON.parse(sse.data) as { error?: unknown } | null;
        // An error inside the stream, as the SDK reports it.
        if (data?.error) throw new OpenAI.APIError(undefined, data.error as object, undefined, undefined);
        yield chunk(data);
      }
      finished = true;
    } catch (error) {
      throw classify(error, request.signal);
    } finally {
      if (!finished) body.destroy();
    }
    if (request.signal.aborted) throw new UpstreamError('aborted', 'the client went away');
  }

  private async completeSdk(request: EngineRequest): Promise<UpstreamCompletion> {
    let raw: unknown;
    try {
      raw = await this.client.chat.completions.create(this.body(request, false) as OpenAI.ChatCompletionCreateParamsNonStreaming, { signal: toAbortSignal(request.signal) });
    } catch (error) {
      throw classify(error, request.signal);
    }
    return completion(raw);
  }

  private async *streamSdk(request: EngineRequest): AsyncIterable<UpstreamChunk> {
    let chunks: AsyncIterable<unknown>;
    try {
      chunks = await this.client.chat.completions.create(this.body(request, true) as OpenAI.ChatCompletionCreateParamsStreaming, { signal: toAbortSignal(request.signal) });
    } catch (error) {
      throw classify(error, request.signal);
    }
    try {
      for await (const raw of chunks) yield chunk(raw);
    } catch (error) {
      throw classify(error, request.signal);
    }
    // The SDK ends a stream quietly when it is aborted; the caller must still learn why it ended.
    if (request.signal.aborted) throw new UpstreamError('aborted', 'the client went away');
  }
}

function completion(raw: unknown): UpstreamCompletion {
  if (isPlainCompletion(raw)) return raw;
  const parsed = upstreamCompletionSchema.safeParse(raw);
  if (!parsed.success) throw new UpstreamError('invalid_response', `upstream answer is not a chat completion: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

function chunk(raw: unknown): UpstreamChunk {
  if (isPlainChunk(raw)) return raw;
  const parsed = upstreamChunkSchema.safeParse(raw);
  if (!parsed.success) throw new UpstreamError('invalid_response', `upstream chunk is not a chat completion chunk: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

async function readBounded(body: ResponseBody, limit: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const part of body) {
      parts.push(part);
      size += part.length;
      if (size >= limit) break;
    }
  } catch {
    // What arrived is enough to quote.
  } finally {
    body.destroy();
  }
  return Buffer.concat(parts).subarray(0, limit).toString('utf8');
}

function safeJson(text: string): object | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' ? value : undefined;
  } catch {
    return undefined;
  }
}


const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT', 'HEADERS_TIMEOUT', 'BODY_TIMEOUT', 'CONNECT_TIMEOUT', 'QUEUE_TIMEOUT']);

/** Maps whatever the SDK or the socket threw to one UpstreamError kind. */
export function classify(error: unknown, signal: CancelSignal): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (signal.aborted) return new UpstreamError('aborted', 'the client went away', null, { cause: error });
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    const status = error.status;
    const detail = `upstream answered ${status}: ${error.message}`.slice(0, 500);
    if (status === 429) return new UpstreamError('rate_limited', detail, status, { cause: error });
    if (status >= 500) return new UpstreamError('server', detail, status, { cause: error });
    if (status === 401 || status === 403 || status === 404) return new UpstreamError('misconfigured', detail, status, { cause: error });
    return new UpstreamError('rejected', detail, status, { cause: error });
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError || hasCode(error, TIMEOUT_CODES)) {
    return new UpstreamError('timeout', 'upstream timed out', null, { cause: error });
  }
  if (error instanceof OpenAI.APIError && error.status === undefined && !(error instanceof OpenAI.APIConnectionError)) {
    // An `error` event inside a stream.
    return new UpstreamError('server', `upstream stream failed: ${error.message}`.slice(0, 500), null, { cause: error });
  }
  if (error instanceof HttpClientError && (error.code === 'BAD_RESPONSE' || error.code === 'BODY_TOO_LARGE')) {
    return new UpstreamError('invalid_response', `upstream answer is not usable HTTP: ${error.message}`, null, { cause: error });
  }
  if (error instanceof SyntaxError || error instanceof SseFormatError) return new UpstreamError('invalid_response', 'upstream sent malformed JSON', null, { cause: error });
  return new UpstreamError('connection', `upstream connection failed: ${describe(error)}`, null, { cause: error });
}

function hasCode(error: unknown, codes: Set<string>): boolean {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return true;
  }
  return false;
}

function describe(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    parts.push(typeof code === 'string' ? code : e instanceof Error ? e.message : String(e));
  }
  return parts.join(': ').slice(0, 300);
}
