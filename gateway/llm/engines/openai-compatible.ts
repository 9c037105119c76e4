// Any server that speaks OpenAI's chat completions (OpenAI, Ollama, vLLM, llama.cpp,
// LM Studio, OpenRouter, ...), through the official openai SDK. The SDK's own retries are
// off: the router decides where a failed request goes next.
import OpenAI from 'openai';
import type { OpenAICompatibleEngineConfig } from '../../chat/config.js';
import { pooledFetch, type PooledFetch } from '../transport.js';
import {
  UpstreamError,
  upstreamChunkSchema,
  upstreamCompletionSchema,
  type Engine,
  type EngineRequest,
  type UpstreamChunk,
  type UpstreamCompletion,
} from '../types.js';

export class OpenAICompatibleEngine implements Engine {
  readonly type = 'openai-compatible';
  private readonly client: OpenAI;
  private readonly transport: PooledFetch;

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
    this.transport = pooledFetch(config.base_url, { connections: config.max_connections, timeout_ms: config.timeout_ms });
    this.client = new OpenAI({
      apiKey: api_key,
      baseURL: config.base_url,
      defaultHeaders: config.headers,
      timeout: config.timeout_ms,
      maxRetries: 0,
      fetch: this.transport.fetch,
      logLevel: 'off',
    });
  }

  private body(request: EngineRequest): OpenAI.ChatCompletionCreateParamsNonStreaming {
    return {
      ...(request.params as object),
      model: this.config.model,
      messages: request.messages as OpenAI.ChatCompletionMessageParam[],
      [this.config.max_tokens_field]: request.max_output_tokens,
    };
  }

  async complete(request: EngineRequest): Promise<UpstreamCompletion> {
    let raw: unknown;
    try {
      raw = await this.client.chat.completions.create(this.body(request), { signal: request.signal });
    } catch (error) {
      throw classify(error, request.signal);
    }
    const parsed = upstreamCompletionSchema.safeParse(raw);
    if (!parsed.success) throw new UpstreamError('invalid_response', `upstream answer is not a chat completion: ${parsed.error.issues[0]?.message}`);
    return parsed.data;
  }

  async *stream(request: EngineRequest): AsyncIterable<UpstreamChunk> {
    let chunks: AsyncIterable<unknown>;
    try {
      chunks = await this.client.chat.completions.create(
        {
          ...this.body(request),
          stream: true,
          ...(this.config.stream_usage ? { stream_options: { include_usage: true } } : {}),
        },
        { signal: request.signal },
      );
    } catch (error) {
      throw classify(error, request.signal);
    }
    try {
      for await (const chunk of chunks) {
        const parsed = upstreamChunkSchema.safeParse(chunk);
        if (!parsed.success) throw new UpstreamError('invalid_response', `upstream chunk is not a chat completion chunk: ${parsed.error.issues[0]?.message}`);
        yield parsed.data;
      }
    } catch (error) {
      throw classify(error, request.signal);
    }
    // The SDK ends a stream quietly when it is aborted; the caller must still learn why it ended.
    if (request.signal.aborted) throw new UpstreamError('aborted', 'the client went away');
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

/** Maps whatever the SDK or the socket threw to one UpstreamError kind. */
export function classify(error: unknown, signal: AbortSignal): UpstreamError {
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
  if (error instanceof SyntaxError) return new UpstreamError('invalid_response', 'upstream sent malformed JSON', null, { cause: error });
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
