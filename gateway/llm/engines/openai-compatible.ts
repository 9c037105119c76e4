// Any server that speaks OpenAI's chat completions (OpenAI, Ollama, vLLM, llama.cpp,
// LM Studio, OpenRouter, ...), on the gateway's one upstream client: an undici pool per
// target (../transport.ts). The gateway sends the JSON body it builds from the request it
// already parsed, with headers built in one place (upstreamHeaders); an error answer is read,
// bounded, and turned into the openai SDK's typed error for its status (the SDK's classes
// stay the one vocabulary classify() maps); the answer's body is read here, bounded, and a
// stream's events are parsed by eventsource-parser (../sse-reader.ts). Nothing is retried
// here: the router decides where a failed request goes next.
import OpenAI from 'openai';
import { z } from 'zod';
import { injectTrace, tracingOn } from '../../telemetry/index.js';
import { readSse, SseFormatError } from '../sse-reader.js';
import type { CallSignal } from '../call-signal.js';
import {
  BodyTooLargeError,
  PooledHeaders,
  readBounded,
  UpstreamClient,
  upstreamPath,
  withoutHopByHop,
  type ReadableBody,
} from '../transport.js';
import {
  isPlainChunk,
  isPlainCompletion,
  UpstreamError,
  upstreamChunkSchema,
  upstreamCompletionSchema,
  upstreamEmbeddingsSchema,
  type EmbedRequest,
  type NativeAnswer,
  type NativeEvent,
  type NativeRequest,
  type UpstreamEmbeddings,
  type Engine,
  type EngineRequest,
  type UpstreamChunk,
  type UpstreamCompletion,
  type UpstreamErrorBody,
} from '../types.js';

/** At most this much of an error answer is read, to quote it. */
const ERROR_BODY_LIMIT = 64 * 1024;

type UndiciBody = ReadableBody;

/** A chat completion larger than this is not one we asked for (the largest output cap is 32,768 tokens). */
const COMPLETION_BODY_LIMIT = 16 * 1024 * 1024;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;

/** The config of an `openai-compatible` target (a tier's entry in `chat.engines`). */
export const openaiCompatibleEngineSchema = z
  .strictObject({
    type: z.literal('openai-compatible'),
    /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1` (Ollama). */
    base_url: z.url({ protocol: /^https?$/ }).max(2_048),
    /** Name of the environment variable holding the upstream key; none for servers without auth. */
    api_key_env: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
    /** The upstream's model name, sent in place of the tier id. */
    model: z.string().min(1).max(256),
    headers: z
      .record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), z.string().max(4_096))
      .default({}),
    /** Limit on waiting for the first byte, and on silence between streamed chunks. */
    timeout_ms: z.int().min(100).max(600_000).default(60_000),
    /** Ask for `usage` on streams (`stream_options.include_usage`); turn off for servers that reject it. */
    stream_usage: z.boolean().default(true),
    /** The field that carries the output cap: OpenAI's newer models take only `max_completion_tokens`. */
    max_tokens_field: z.enum(['max_tokens', 'max_completion_tokens']).default('max_tokens'),
    /**
     * The role `developer` messages (OpenAI's newer name for system text, which Codex CLI and
     * the Responses API send) go upstream as: `system` (the default: every chat server takes
     * it, and OpenAI reads it as developer text) or `developer`, for upstreams that tell the two apart.
     */
    developer_role: z.enum(['system', 'developer']).default('system'),
    /**
     * No longer used: every call goes through the SDK on the target's pool. Still accepted,
     * so that config files written for the gateway's former private HTTP client load.
     */
    client: z.enum(['prepared', 'sdk']).optional(),
    /** Connection pool size towards this upstream. */
    max_connections: z.int().min(1).max(4_096).default(256),
    /**
     * How long a request waits for one of those connections when all are busy before it fails
     * as a timeout (and so fails over); by default min(timeout_ms, 10 s).
     */
    queue_timeout_ms: z.int().min(1).max(600_000).optional(),
    /**
     * Protocols the upstream speaks natively besides chat completions, by the names of the
     * gateway's /v1 protocols that can pass through (chat/protocols/<name>/native.ts says
     * where each goes and how it authenticates): their requests pass through as they came,
     * with the model name and the output cap replaced.
     */
    protocols: z
      .array(z.string().regex(/^[a-z][a-z_]{0,31}$/))
      .max(8)
      .default([]),
    /**
     * Where a protocol's own API is, when not beside `base_url` (by protocol name). On the same
     * origin as `base_url` (one connection pool per target).
     */
    native_base_urls: z
      .record(z.string().regex(/^[a-z][a-z_]{0,31}$/), z.url({ protocol: /^https?$/ }).max(2_048))
      .optional(),
  })
  .superRefine((config, ctx) => {
    const origin = new URL(config.base_url).origin;
    for (const [protocol, url] of Object.entries(config.native_base_urls ?? {}))
      if (new URL(url).origin !== origin)
        ctx.addIssue({
          code: 'custom',
          message: 'must be on the same origin as base_url',
          path: ['native_base_urls', protocol],
        });
  });
export type OpenAICompatibleEngineConfig = z.output<typeof openaiCompatibleEngineSchema>;

/** The User-Agent of the gateway's own upstream requests. */
const USER_AGENT = 'aihub-gateway';

export class OpenAICompatibleEngine implements Engine {
  readonly type = 'openai-compatible';
  readonly protocols: ReadonlySet<string>;
  private readonly api_key: string;
  private readonly client: UpstreamClient;
  /** Every request's headers but a call's own (upstreamHeaders), built once. */
  private readonly base_headers: Record<string, string>;
  private readonly chat_path: string;
  private readonly embeddings_path: string;

  constructor(
    readonly name: string,
    private readonly config: OpenAICompatibleEngineConfig,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    let api_key = 'none';
    if (config.api_key_env) {
      const value = env[config.api_key_env];
      if (!value)
        throw new Error(
          `chat engine "${name}": environment variable ${config.api_key_env} is not set`,
        );
      api_key = value;
    }
    this.api_key = api_key;
    this.protocols = new Set(config.protocols);
    this.client = new UpstreamClient(config.base_url, {
      connections: config.max_connections,
      timeout_ms: config.timeout_ms,
      queue_timeout_ms: config.queue_timeout_ms,
    });
    this.base_headers = withoutHopByHop({
      accept: 'application/json',
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      authorization: `Bearer ${api_key}`,
      ...lowerCased(config.headers),
    });
    this.chat_path = upstreamPath(config.base_url, '/chat/completions');
    this.embeddings_path = upstreamPath(config.base_url, '/embeddings');
  }

  /**
   * The headers of a request to this upstream: the one place they are built. Its own fields
   * (accept, content type, user agent, the key as a bearer token), then the target's
   * configured `headers`, then the call's own (a native protocol's auth; null: not sent).
   * Without a call's own headers it returns the one shared object, which nothing may change:
   * a header that differs per request (a trace context) belongs in the copy made here.
   */
  private upstreamHeaders(own?: Record<string, string | null>): Record<string, string> {
    const traced = tracingOn();
    if (!own && !traced) return this.base_headers;
    const headers = { ...this.base_headers };
    for (const [name, value] of Object.entries(own ?? {})) {
      const lower = name.toLowerCase();
      if (value === null) delete headers[lower];
      else headers[lower] = value;
    }
    // W3C traceparent: the upstream's spans join the client's trace (OpenTelemetry on).
    if (traced) injectTrace(headers);
    return withoutHopByHop(headers);
  }

  /**
   * POSTs `body` (JSON text) to `path`; resolves with the answer's body, to stream, once its
   * status is a success. An error status is read (up to ERROR_BODY_LIMIT, to quote it) and
   * thrown as the openai SDK's typed error for that status, which classify() maps.
   */
  private async post(
    path: string,
    body: string,
    signal: CallSignal,
    own?: Record<string, string | null>,
  ): Promise<UndiciBody> {
    const response = await this.client.request({
      path,
      method: 'POST',
      headers: this.upstreamHeaders(own),
      body,
      signal,
    });
    if (response.statusCode >= 200 && response.statusCode < 300) return response.body;
    const text = await readBounded(response.body, ERROR_BODY_LIMIT, false).catch(
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    throw statusError(response.statusCode, text, response.headers);
  }

  /**
   * POSTs `body` (JSON text) to `path` and parses the whole answer (at most
   * COMPLETION_BODY_LIMIT bytes) once its status is a success; an error status as post().
   */
  private async postJson(
    path: string,
    body: string,
    signal: CallSignal,
    own?: Record<string, string | null>,
  ): Promise<unknown> {
    const answer = await this.client.requestText(
      { path, method: 'POST', headers: this.upstreamHeaders(own), body, signal },
      { ok: COMPLETION_BODY_LIMIT, error: ERROR_BODY_LIMIT },
    );
    if (answer.statusCode >= 200 && answer.statusCode < 300) return JSON.parse(answer.text);
    throw statusError(answer.statusCode, answer.text, answer.headers);
  }

  /** The messages as this upstream takes them: `developer` as `system` unless it takes `developer`. */
  private messages(messages: EngineRequest['messages']): EngineRequest['messages'] {
    if (this.config.developer_role === 'developer' || !messages.some((m) => m.role === 'developer'))
      return messages;
    return messages.map((m) =>
      m.role === 'developer' ? { ...m, role: 'system' as const } : m,
    ) as EngineRequest['messages'];
  }

  private body(request: EngineRequest, stream: boolean): string {
    return JSON.stringify({
      ...(request.params as object),
      model: this.config.model,
      messages: this.messages(request.messages),
      [this.config.max_tokens_field]: request.max_output_tokens,
      ...(stream
        ? {
            stream: true,
            ...(this.config.stream_usage ? { stream_options: { include_usage: true } } : {}),
          }
        : {}),
    });
  }

  async complete(request: EngineRequest): Promise<UpstreamCompletion> {
    let raw: unknown;
    try {
      raw = await this.postJson(this.chat_path, this.body(request, false), request.signal);
    } catch (error) {
      throw classify(error, request.signal);
    }
    return completion(raw);
  }

  async embed(request: EmbedRequest): Promise<UpstreamEmbeddings> {
    let raw: unknown;
    try {
      const params = {
        model: this.config.model,
        input: [...request.input],
        encoding_format: 'float' as const,
        ...(request.dimensions ? { dimensions: request.dimensions } : {}),
      };
      raw = await this.postJson(this.embeddings_path, JSON.stringify(params), request.signal);
    } catch (error) {
      throw classify(error, request.signal);
    }
    const parsed = upstreamEmbeddingsSchema.safeParse(raw);
    if (!parsed.success || parsed.data.data.length !== request.input.length)
      throw new UpstreamError(
        'invalid_response',
        `upstream answer is not ${request.input.length} embeddings`,
      );
    return parsed.data;
  }

  async native(request: NativeRequest): Promise<NativeAnswer> {
    // Where it goes and how it authenticates is the protocol's (chat/protocols/<name>/native.ts).
    let body: UndiciBody;
    try {
      const {
        path,
        body: sent,
        headers,
      } = request.address(
        {
          base_url: this.config.base_url,
          own_base_url: this.config.native_base_urls?.[request.protocol],
          model: this.config.model,
          api_key: this.api_key,
        },
        request.body,
        request.stream,
      );
      const upstream_path = upstreamPath(this.config.base_url, path);
      if (!request.stream) {
        const parsed = await this.postJson(
          upstream_path,
          JSON.stringify(sent),
          request.signal,
          headers,
        );
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
          throw new UpstreamError(
            'invalid_response',
            `upstream ${request.protocol} answer is not a JSON object`,
          );
        return { kind: 'json', body: parsed as Record<string, unknown> };
      }
      body = await this.post(upstream_path, JSON.stringify(sent), request.signal, headers);
    } catch (error) {
      throw error instanceof UpstreamError ? error : classify(error, request.signal);
    }
    const events = readSse(body);
    const signal = request.signal;
    const rest: AsyncIterator<NativeEvent> = {
      async next() {
        try {
          const next = await events.next();
          return next.done
            ? { done: true, value: undefined }
            : { done: false, value: { event: next.value.event ?? null, data: next.value.data } };
        } catch (error) {
          body.destroy();
          throw classify(error, signal);
        }
      },
      async return() {
        body.destroy();
        return { done: true, value: undefined };
      },
    };
    const first = await rest.next();
    return { kind: 'stream', first: first.done ? null : first.value, rest };
  }

  async *stream(request: EngineRequest): AsyncIterable<UpstreamChunk> {
    let body: UndiciBody;
    try {
      body = await this.post(this.chat_path, this.body(request, true), request.signal);
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
        if (data?.error)
          throw new OpenAI.APIError(undefined, data.error as object, undefined, undefined);
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

  async close(): Promise<void> {
    await this.client.close();
  }
}

/** Header names in lower case (as HTTP compares them), so that a later one replaces an earlier one. */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  const lower: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value;
  return lower;
}

function completion(raw: unknown): UpstreamCompletion {
  if (isPlainCompletion(raw)) return raw;
  const parsed = upstreamCompletionSchema.safeParse(raw);
  if (!parsed.success)
    throw new UpstreamError(
      'invalid_response',
      `upstream answer is not a chat completion: ${parsed.error.issues[0]?.message}`,
    );
  return parsed.data;
}

function chunk(raw: unknown): UpstreamChunk {
  if (isPlainChunk(raw)) return raw;
  const parsed = upstreamChunkSchema.safeParse(raw);
  if (!parsed.success)
    throw new UpstreamError(
      'invalid_response',
      `upstream chunk is not a chat completion chunk: ${parsed.error.issues[0]?.message}`,
    );
  return parsed.data;
}

/** undici's codes for an answer that is not usable HTTP. */
const BAD_RESPONSE_CODES = new Set([
  'HPE_INVALID_CONSTANT',
  'HPE_INVALID_HEADER_TOKEN',
  'HPE_INVALID_STATUS',
  'HPE_INVALID_VERSION',
  'HPE_HEADER_OVERFLOW',
  'HPE_INVALID_CHUNK_SIZE',
  'UND_ERR_HEADERS_OVERFLOW',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_INFO',
]);

const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
  'HEADERS_TIMEOUT',
  'BODY_TIMEOUT',
  'CONNECT_TIMEOUT',
  'QUEUE_TIMEOUT',
]);

/** An error status's answer as the openai SDK's typed error for that status (classify() maps it). */
function statusError(
  status: number,
  text: string,
  headers: Record<string, string | string[] | undefined>,
): InstanceType<typeof OpenAI.APIError> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return OpenAI.APIError.generate(
    status,
    json as object | undefined,
    json === undefined ? text : undefined,
    new PooledHeaders(headers) as unknown as Headers,
  );
}

/** Maps whatever the SDK or the socket threw to one UpstreamError kind. */
export function classify(error: unknown, signal: CallSignal): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (signal.aborted)
    return new UpstreamError('aborted', 'the client went away', null, { cause: error });
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    const status = error.status;
    const detail = `upstream answered ${status}: ${error.message}`.slice(0, 500);
    if (status === 429) return new UpstreamError('rate_limited', detail, status, { cause: error });
    if (status >= 500) return new UpstreamError('server', detail, status, { cause: error });
    if (status === 401 || status === 403 || status === 404)
      return new UpstreamError('misconfigured', detail, status, { cause: error });
    return new UpstreamError('rejected', detail, status, { cause: error, body: errorBody(error) });
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError || hasCode(error, TIMEOUT_CODES)) {
    return new UpstreamError('timeout', 'upstream timed out', null, { cause: error });
  }
  if (
    error instanceof OpenAI.APIError &&
    error.status === undefined &&
    !(error instanceof OpenAI.APIConnectionError)
  ) {
    // An `error` event inside a stream.
    return new UpstreamError(
      'server',
      `upstream stream failed: ${error.message}`.slice(0, 500),
      null,
      { cause: error },
    );
  }
  if (error instanceof BodyTooLargeError || hasCode(error, BAD_RESPONSE_CODES)) {
    return new UpstreamError(
      'invalid_response',
      `upstream answer is not usable HTTP: ${describe(error)}`,
      null,
      { cause: error },
    );
  }
  if (error instanceof SyntaxError || error instanceof SseFormatError)
    return new UpstreamError('invalid_response', 'upstream sent malformed JSON', null, {
      cause: error,
    });
  return new UpstreamError('connection', `upstream connection failed: ${describe(error)}`, null, {
    cause: error,
  });
}

const RELAYED_TEXT_LIMIT = 2_000;

function shortText(value: unknown): string | null {
  if (typeof value === 'string') return value.slice(0, RELAYED_TEXT_LIMIT);
  if (typeof value === 'number') return String(value);
  return null;
}

/** The upstream's own `error` object (OpenAI's shape, or a bare `{message}`), bounded. */
function errorBody(error: InstanceType<typeof OpenAI.APIError>): UpstreamErrorBody {
  const raw = error.error as Record<string, unknown> | undefined;
  const inner =
    raw && typeof raw === 'object' && raw.error && typeof raw.error === 'object'
      ? (raw.error as Record<string, unknown>)
      : raw;
  return {
    message: shortText(inner?.message),
    type: shortText(inner?.type),
    code: shortText(inner?.code ?? error.code),
    param: shortText(inner?.param ?? error.param),
  };
}

function hasCode(error: unknown, codes: Set<string>): boolean {
  for (
    let e: unknown = error, depth = 0;
    e && typeof e === 'object' && depth < 5;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return true;
  }
  return false;
}

function describe(error: unknown): string {
  const parts: string[] = [];
  for (
    let e: unknown = error, depth = 0;
    e && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    parts.push(typeof code === 'string' ? code : e instanceof Error ? e.message : String(e));
  }
  return parts.join(': ').slice(0, 300);
}
