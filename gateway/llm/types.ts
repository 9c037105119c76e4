// The one interface every LLM engine implements, and the shapes it returns. Upstream
// answers are an edge: they are parsed with these schemas before anything is billed on them.
import { z } from 'zod';
import type { ChatMessage } from './messages.js';
import type { CallSignal } from './call-signal.js';

const tokenCount = z.int().min(0).max(100_000_000);

export const upstreamUsageSchema = z.looseObject({
  prompt_tokens: tokenCount,
  completion_tokens: tokenCount,
});
export type UpstreamUsage = z.output<typeof upstreamUsageSchema>;

const messageSchema = z.looseObject({
  role: z.string().optional(),
  content: z.string().nullable().optional(),
});

export const upstreamCompletionSchema = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        index: z.int().min(0).optional(),
        message: messageSchema,
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1)
    .max(16),
  usage: upstreamUsageSchema.nullable().optional().catch(null),
});
export type UpstreamCompletion = z.output<typeof upstreamCompletionSchema>;

export const upstreamChunkSchema = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        index: z.int().min(0).optional(),
        delta: z.looseObject({ content: z.string().nullable().optional() }).optional(),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .max(16)
    .optional(),
  usage: upstreamUsageSchema.nullable().optional().catch(null),
});
export type UpstreamChunk = z.output<typeof upstreamChunkSchema>;

export const upstreamEmbeddingsSchema = z.looseObject({
  data: z
    .array(
      z.looseObject({
        index: z.int().min(0).optional(),
        embedding: z.array(z.number()).max(65_536),
      }),
    )
    .max(2_048),
  usage: z.looseObject({ prompt_tokens: tokenCount }).nullable().optional().catch(null),
});
export type UpstreamEmbeddings = z.output<typeof upstreamEmbeddingsSchema>;

/** Texts to embed (the embeddings protocol). */
export interface EmbedRequest {
  input: readonly string[];
  /** The vector length asked for, or null for the engine's own. */
  dimensions: number | null;
  signal: CallSignal;
}

/** What a protocol's address (NativeRequest.address) knows of the target. */
export interface NativeTarget {
  /** The target's base URL (its chat completions' API). */
  base_url: string;
  /** Where the target's config puts this protocol's own API (`native_base_urls`), if it does. */
  own_base_url: string | undefined;
  /** The upstream's model name. */
  model: string;
  api_key: string;
}

/** Where a native request goes and what it carries: `path` absolute, or relative to base_url; a null header is not sent. */
export interface NativeAddress {
  path: string;
  body: Record<string, unknown>;
  headers: Record<string, string | null>;
}

/** A request in a protocol the target speaks natively (`protocols` in its config). */
export interface NativeRequest {
  protocol: string;
  /** The client's body, as the protocol put the gateway's output cap in. */
  body: Record<string, unknown>;
  stream: boolean;
  signal: CallSignal;
  /** Where it goes on a target, given by its protocol (chat/protocols/<name>/native.ts). */
  address(target: NativeTarget, body: Record<string, unknown>, stream: boolean): NativeAddress;
}

/** One server-sent event as read: its name (null when unnamed) and its data text. */
export interface NativeEvent {
  event: string | null;
  data: string;
}

export type NativeAnswer =
  | { kind: 'json'; body: Record<string, unknown> }
  | { kind: 'stream'; first: NativeEvent | null; rest: AsyncIterator<NativeEvent> };

export interface EngineRequest {
  /** The client's fields for the upstream (messages, temperature, tools, ...), without the gateway's own. */
  params: Record<string, unknown>;
  messages: readonly ChatMessage[];
  /** The most the answer may cost in tokens: the upstream is told so and the hold covers it. */
  max_output_tokens: number;
  prompt_tokens_estimate: number;
  /** Set when the client has gone away. */
  signal: CallSignal;
}

export interface Engine {
  readonly type: string;
  complete(request: EngineRequest): Promise<UpstreamCompletion>;
  /** Yields chunks; an error before the first one lets the router try the next target. */
  stream(request: EngineRequest): AsyncIterable<UpstreamChunk>;
  /** Embeddings, for engines that serve them; one vector per input, in order. */
  embed?(request: EmbedRequest): Promise<UpstreamEmbeddings>;
  /** The protocols besides chat completions the target speaks, whose requests pass through as they came. */
  readonly protocols?: ReadonlySet<string>;
  native?(request: NativeRequest): Promise<NativeAnswer>;
  close(): Promise<void>;
}

export type UpstreamErrorKind =
  | 'connection' // refused, reset, DNS: the request may never have arrived
  | 'timeout' // no headers, or silence between chunks, beyond the target's timeout
  | 'rate_limited' // 429
  | 'server' // 5xx
  | 'misconfigured' // 401, 403, 404 from the upstream: our target config is wrong, not the request
  | 'rejected' // other 4xx: the upstream refused this request
  | 'invalid_response' // an answer we cannot bill on
  | 'aborted'; // our client went away

/** What an upstream said in its own error body, relayed to the client on a 4xx. */
export interface UpstreamErrorBody {
  message: string | null;
  type: string | null;
  code: string | null;
  param: string | null;
}

export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    readonly kind: UpstreamErrorKind,
    message: string,
    readonly status: number | null = null,
    options?: { cause?: unknown; body?: UpstreamErrorBody },
  ) {
    super(message, options);
    this.body = options?.body ?? null;
  }
  readonly body: UpstreamErrorBody | null;
  /** Worth trying the next target (when nothing has reached the client yet). */
  get retryable(): boolean {
    return this.kind !== 'rejected' && this.kind !== 'aborted';
  }
  /** Counts against the target's circuit breaker. */
  get targetFault(): boolean {
    return this.kind !== 'rejected' && this.kind !== 'aborted';
  }
}

// The schemas above are the definition of an acceptable upstream answer. A stream brings
// ten or more chunks per request and a zod parse of each is a measurable part of a streamed
// request (docs/chat-api.md#benchmark), so the common shapes are first checked by hand: a value
// that passes is one the schema accepts unchanged; anything else goes through the schema,
// which also words the error. test/unit/chat/upstream-shapes.test.ts holds the two together.

const MAX_TOKENS = 100_000_000;

function isTokenCount(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKENS;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** usage absent, null, or well formed (a malformed one the schema turns into null: not here). */
function plainUsage(usage: unknown): boolean {
  return (
    usage === undefined ||
    usage === null ||
    (isObject(usage) && isTokenCount(usage.prompt_tokens) && isTokenCount(usage.completion_tokens))
  );
}

function plainChoiceFields(choice: Record<string, unknown>): boolean {
  const index = choice.index;
  const finish = choice.finish_reason;
  return (
    (index === undefined ||
      (typeof index === 'number' && Number.isSafeInteger(index) && index >= 0)) &&
    (finish === undefined || finish === null || typeof finish === 'string')
  );
}

function plainContent(holder: unknown, required: boolean): boolean {
  if (holder === undefined) return !required;
  if (!isObject(holder)) return false;
  const content = holder.content;
  const role = holder.role;
  return (
    (content === undefined || content === null || typeof content === 'string') &&
    (role === undefined || typeof role === 'string')
  );
}

/** True when `raw` is a chunk that upstreamChunkSchema accepts unchanged. */
export function isPlainChunk(raw: unknown): raw is UpstreamChunk {
  if (!isObject(raw) || !plainUsage(raw.usage)) return false;
  const choices = raw.choices;
  if (choices === undefined) return true;
  if (!Array.isArray(choices) || choices.length > 16) return false;
  for (const choice of choices)
    if (!isObject(choice) || !plainChoiceFields(choice) || !plainContent(choice.delta, false))
      return false;
  return true;
}

/** True when `raw` is a completion that upstreamCompletionSchema accepts unchanged. */
export function isPlainCompletion(raw: unknown): raw is UpstreamCompletion {
  if (!isObject(raw) || !plainUsage(raw.usage)) return false;
  const choices = raw.choices;
  if (!Array.isArray(choices) || choices.length < 1 || choices.length > 16) return false;
  for (const choice of choices)
    if (!isObject(choice) || !plainChoiceFields(choice) || !plainContent(choice.message, true))
      return false;
  return true;
}
