// The one interface every LLM engine implements, and the shapes it returns. Upstream
// answers are an edge: they are parsed with these schemas before anything is billed on them.
import { z } from 'zod';
import type { ChatMessage } from '../chat/schema.js';
import type { CancelSignal } from './cancel.js';

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

export interface EngineRequest {
  /** The client's fields for the upstream (messages, temperature, tools, ...), without the gateway's own. */
  params: Record<string, unknown>;
  messages: readonly ChatMessage[];
  /** The most the answer may cost in tokens: the upstream is told so and the hold covers it. */
  max_output_tokens: number;
  prompt_tokens_estimate: number;
  /** Set when the client has gone away. */
  signal: CancelSignal;
}

export interface Engine {
  readonly type: string;
  complete(request: EngineRequest): Promise<UpstreamCompletion>;
  /** Yields chunks; an error before the first one lets the router try the next target. */
  stream(request: EngineRequest): AsyncIterable<UpstreamChunk>;
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

export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    readonly kind: UpstreamErrorKind,
    message: string,
    readonly status: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
  /** Worth trying the next target (when nothing has reached the client yet). */
  get retryable(): boolean {
    return this.kind !== 'rejected' && this.kind !== 'aborted';
  }
  /** Counts against the target's circuit breaker. */
  get targetFault(): boolean {
    return this.kind !== 'rejected' && this.kind !== 'aborted';
  }
}
