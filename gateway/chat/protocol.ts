// What a wire protocol (chat completions, Responses, Anthropic Messages, ...) gives the one
// chat pipeline (chat/routes.ts): its request translated to a chat call, and presenters that
// turn the chat completion the engines return back into the protocol's answer and events.
import type { ApiError } from '../http/errors.js';
import type { ChatMessage } from '../llm/messages.js';
import type {
  NativeAddress,
  NativeTarget,
  UpstreamChunk,
  UpstreamCompletion,
  UpstreamUsage,
} from '../llm/types.js';

/** A /v1 protocol's name: its folder under protocols/, listed in protocols/index.ts. */
export type ProtocolName = string;

/** Tokens as billed. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Of prompt_tokens, read from the upstream's cache. */
  cached_tokens?: number;
  /** Of completion_tokens, spent on reasoning. */
  reasoning_tokens?: number;
  /** Of prompt_tokens, written to the upstream's cache (Anthropic's `cache_creation_input_tokens`). */
  cache_write_tokens?: number;
  /** The upstream reported no usage: the counts are the gateway's tokenizer estimate. */
  estimated?: boolean;
}

/** The usage object of a chat-shaped answer: the upstream's own fields kept, the billed counts on top. */
export function usageBody(reported: UpstreamUsage | null | undefined, usage: Usage) {
  return {
    ...(reported ?? {}),
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.prompt_tokens + usage.completion_tokens,
  };
}

/** The gateway's bill for one request, as `x_aihub` shows it. */
export type XAihub = Record<string, unknown> & {
  request_id: string;
  cost: number;
  balance: number;
};

/** What every presenter knows about the request it answers. */
export interface AnswerMeta {
  request_id: string;
  /** The tier id the client asked for. */
  model: string;
  /** Unix seconds. */
  created: number;
  /** The prompt tokens estimated before the call (for a stream's opening event). */
  prompt_tokens_estimate: number;
  /** The output limit the request runs under (the client's, capped by the tier). */
  max_output_tokens: number;
}

/** One server-sent event: `event:` (when the protocol names its events) and JSON `data:`. */
export interface SseOut {
  event?: string;
  data: unknown;
}

export interface StreamPresenter {
  /** Events sent once the upstream has answered, before its first chunk. */
  start(): SseOut[];
  /** Events for one upstream chunk (possibly none; a presenter may hold some back). */
  chunk(chunk: UpstreamChunk): SseOut[];
  /** The closing events, carrying the bill, once it is settled. */
  finish(usage: Usage, upstream_usage: UpstreamUsage | null, x_aihub: XAihub): SseOut[];
  /** The closing events when the upstream broke off. */
  fail(error: ApiError, x_aihub: XAihub): SseOut[];
  /** `data: [DONE]` after the last event (OpenAI's chat and completions framing). */
  readonly done_marker: boolean;
}

/** A protocol request translated to the chat call the engines speak. */
export interface ChatCall {
  protocol: ProtocolName;
  model: string;
  messages: ChatMessage[];
  /** Chat-completions fields for the upstream (tools, tool_choice, response_format, stop, ...). */
  params: Record<string, unknown>;
  stream: boolean;
  /** How many choices the client asked for (chat's `n`); each may use the whole output cap. */
  choices: number;
  /** The output cap the client asked for, and the field that carried it (for error messages). */
  requested_max: number | null;
  cap_field: string;
  /** The request as it came, for a target that speaks this protocol natively. */
  original: Record<string, unknown>;
  /**
   * What the gateway changed in the request to serve it (an output limit capped, a tool it
   * cannot run dropped, ...): sent as `x-aihub-warning` headers and in `x_aihub.warnings`.
   */
  warnings: string[];
  /** The JSON answer without the bill; serialized before anything is billed on it. */
  json(completion: UpstreamCompletion, usage: Usage, meta: AnswerMeta): Record<string, unknown>;
  /** Whether x_aihub goes in the JSON body (not for Anthropic's clients, which read a closed shape). */
  bill_in_body: boolean;
  streamer(meta: AnswerMeta): StreamPresenter;
  /** How a stream's events are put on the wire, when not as server-sent events (chat/sse.ts's SSE_FRAMING). */
  framing?: Framing;
  /** How a target that speaks this protocol natively is spoken to, when one can (NativeDialect). */
  native?: NativeDialect;
}

type Json = Record<string, unknown>;

/**
 * How a target that speaks a protocol natively is spoken to (chat/native.ts relays it): where
 * the request goes, what the pass-through reads and rewrites of the protocol's own requests,
 * answers and stream events. Each protocol that has one gives it in its folder.
 */
export interface NativeDialect {
  /** The request's field that carries the output cap (dotted when nested). */
  readonly cap_field: string;
  /** The request as it came, with the output cap the gateway held put in its field. */
  body(original: Json, max_output_tokens: number): Json;
  /** Where on the target the request goes, and the headers it authenticates with. */
  address(target: NativeTarget, body: Json, stream: boolean): NativeAddress;
  /** Usage in chat terms from a JSON answer, or null when it has none. */
  usageOf(answer: Json): Usage | null;
  /** The generated part of a JSON answer, counted when the answer reports no usage. */
  output(answer: Json): unknown;
  /** Why the model stopped, in the protocol's own words, from a JSON answer or one stream event (none: []). */
  finishOf(data: Json): string[];
  /** The answer (its x_aihub taken off) with the tier id as its model. */
  json(answer: Json, model: string): Json;
  /** A reader for one stream's events, which puts `model` (the tier id) in them. */
  reader(model: string): NativeReader;
  /** Whether any event may be the one that carries the bill: the last one is always held back. */
  readonly holds_last: boolean;
  /** Whether `data: [DONE]` closes its streams (OpenAI's completions framing). */
  readonly done_marker: boolean;
}

/** What a native stream has shown so far, for its bill. */
export interface NativeSeen {
  /** The usage it reported, once it has. */
  usage: Usage | null;
  /** Its prompt tokens, when an event reported them before the usage. */
  input_tokens: number | null;
  /** The text it generated, counted when it reports no usage. */
  generated: string[];
}

/** Reads one native stream's events. */
export interface NativeReader {
  /** Reads one event (the tier id put as its model): what it shows added to `seen`. */
  observe(data: Json, seen: NativeSeen): void;
  /** Whether this event carries the bill (it and what follows are held back); unused when holds_last. */
  isBilling(data: Json): boolean;
  /** Puts the bill on the event that carries it. */
  bill(data: Json, x_aihub: XAihub): void;
}

/** How a stream's events are put on the wire: its headers, what opens and closes it, each event. */
export interface Framing {
  readonly headers: Readonly<Record<string, string>>;
  /** Written right after the head, unless empty. */
  readonly open: string;
  /** One event as written; `index` counts the events written before it. */
  event(data: unknown, name: string | undefined, index: number): string;
  /** Written last while the client is still there, unless empty. */
  readonly close: string;
}

export interface Protocol {
  readonly name: ProtocolName;
  /** Validates a request body (throwing a 400 ApiError) and translates it. */
  parse(raw: unknown): ChatCall;
  /** The protocol's own status for an error (Anthropic's 529 for no upstream). */
  error?(error: ApiError): ApiError;
}

/** The `tool_calls` of a chat message or delta, whatever the upstream put there. */
export interface ToolCallDelta {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

export function toolCallsOf(holder: unknown): ToolCallDelta[] {
  const calls = (holder as { tool_calls?: unknown } | null | undefined)?.tool_calls;
  return Array.isArray(calls) ? (calls as ToolCallDelta[]) : [];
}

/** Reasoning text an upstream sent beside the answer (`reasoning_content` or `reasoning`). */
export function reasoningOf(holder: unknown): string | null {
  const h = holder as { reasoning_content?: unknown; reasoning?: unknown } | null | undefined;
  const text = h?.reasoning_content ?? h?.reasoning;
  return typeof text === 'string' && text ? text : null;
}

/** Cached and reasoning token counts from a chat usage object, 0 when absent. */
export function usageDetails(usage: UpstreamUsage | null | undefined): {
  cached_tokens: number;
  reasoning_tokens: number;
} {
  const u = usage as
    | {
        prompt_tokens_details?: { cached_tokens?: unknown };
        completion_tokens_details?: { reasoning_tokens?: unknown };
      }
    | null
    | undefined;
  const cached = u?.prompt_tokens_details?.cached_tokens;
  const reasoning = u?.completion_tokens_details?.reasoning_tokens;
  return {
    cached_tokens: typeof cached === 'number' ? cached : 0,
    reasoning_tokens: typeof reasoning === 'number' ? reasoning : 0,
  };
}
