// What an upstream generates, measured against the output limit the request holds for. An
// upstream that ignores `max_tokens` (issue #25 item 12: asked for 50, one streamed 166 KB and
// reported 17,409 tokens) is stopped once the limit is passed by a small margin, and no
// request is billed more output than its hold covers.
//
// When to stop: the gateway's tokenizer (cl100k) is an estimate of the upstream's, and can
// count several times the upstream's tokens (Hindi on a model with a larger vocabulary), so
// it alone would cut honest answers. An honest upstream sends at least one of its tokens per
// content piece, so its pieces stay within the limit. A stream is stopped when both its pieces
// and the estimate pass the limit by the margin (an upstream streaming token by token past its
// limit, the usual case), or when its text passes 24 UTF-8 bytes per token of the limit (one
// streaming in large pieces: no tokenizer's tokens average that much in real text).
import { countTextTokens, toolCallText } from '../../llm/tokens.js';
import type { UpstreamChunk, UpstreamCompletion, UpstreamUsage } from '../../llm/types.js';
import type { Usage } from '../protocol.js';

/** The limit plus the margin an upstream may pass it by before it is stopped. */
export function withMargin(limit_tokens: number): number {
  return limit_tokens + Math.max(16, Math.ceil(limit_tokens / 10));
}

/** Past this many UTF-8 bytes of output an upstream is stopped however it splits it. */
function byteLimit(limit_tokens: number): number {
  return 24 * limit_tokens + 256;
}

/** A stream's output so far: its text (to bill on without usage), its pieces, its usage. */
export class OutputMeter {
  upstream_usage: UpstreamUsage | null = null;
  /** The upstream passed the limit: the stream was stopped there. */
  stopped = false;
  private readonly texts: string[] = [];
  private pieces = 0;
  private chars = 0;
  /** Kept up once needed (null before): the estimate once the pieces pass the margin, the bytes once 3 × chars pass the byte limit. */
  private running_tokens: number | null = null;
  private running_bytes: number | null = null;
  /** Choice indexes seen, each to be finished with `length` when the stream is stopped. */
  readonly choices = new Set<number>();

  constructor(
    /** The whole request's output limit: the per-choice limit times the choices. */
    readonly limit_tokens: number,
  ) {}

  /** Takes one chunk; true when the upstream has now passed the limit and must be stopped. */
  observe(chunk: UpstreamChunk): boolean {
    if (chunk.usage) this.upstream_usage = chunk.usage;
    for (const choice of chunk.choices ?? []) {
      this.choices.add(choice.index ?? 0);
      const delta = choice.delta;
      if (!delta) continue;
      if (typeof delta.content === 'string' && delta.content) this.add(delta.content);
      const tool_calls = (delta as { tool_calls?: unknown }).tool_calls;
      if (tool_calls) {
        const text = toolCallText(tool_calls);
        if (text) this.add(text);
      }
    }
    const margin = withMargin(this.limit_tokens);
    const bytes = byteLimit(this.limit_tokens);
    // A UTF-16 character is at most 3 UTF-8 bytes (a surrogate pair 4 for 2): no count is
    // needed before that bound passes the limit.
    if (this.running_bytes === null && this.chars * 3 > bytes)
      this.running_bytes = Buffer.byteLength(this.texts.join(''));
    if (this.running_tokens === null && this.pieces > margin)
      this.running_tokens = countTextTokens(this.texts.join(''));
    this.stopped = (this.running_tokens ?? 0) > margin || (this.running_bytes ?? 0) > bytes;
    return this.stopped;
  }

  /** What was relayed, in tokens, counted whole (pieces counted apart count a little more). */
  tokens(): number {
    return countTextTokens(this.texts.join(''));
  }

  /** The chunk that ends every choice at the limit, for the presenter, once the stream is stopped. */
  lengthChunk(): UpstreamChunk {
    const indexes = this.choices.size ? [...this.choices] : [0];
    return {
      choices: indexes.map((index) => ({ index, delta: {}, finish_reason: 'length' })),
    } as UpstreamChunk;
  }

  private add(text: string): void {
    this.texts.push(text);
    this.pieces++;
    this.chars += text.length;
    if (this.running_tokens !== null) this.running_tokens += countTextTokens(text);
    if (this.running_bytes !== null) this.running_bytes += Buffer.byteLength(text);
  }
}

/**
 * The usage billed: never more output than the hold covers. Returns whether it was capped,
 * so that the client is told (x_aihub.warnings).
 */
export function capOutput(usage: Usage, limit_tokens: number): { usage: Usage; capped: boolean } {
  if (usage.completion_tokens <= limit_tokens) return { usage, capped: false };
  return {
    usage: {
      ...usage,
      completion_tokens: limit_tokens,
      reasoning_tokens: Math.min(usage.reasoning_tokens ?? 0, limit_tokens),
    },
    capped: true,
  };
}

/** The warning for an upstream that generated past the limit. */
export function overrunWarning(limit_tokens: number): string {
  return `the upstream generated past the output limit of ${limit_tokens} tokens: stopped there and billed at the limit`;
}

/**
 * A JSON answer from an upstream that ignored the limit (its usage says so, or without usage
 * its text passes the byte limit), cut to the limit: each choice's text to its share, tool calls
 * that do not fit dropped, the choice finished with `length`. True when it was cut.
 */
export function trimCompletion(completion: UpstreamCompletion, per_choice_tokens: number): boolean {
  const limit = per_choice_tokens * Math.max(1, completion.choices.length);
  const reported = completion.usage?.completion_tokens;
  const over =
    reported !== undefined
      ? reported > withMargin(limit)
      : Buffer.byteLength(completionText(completion)) > byteLimit(limit);
  if (!over) return false;
  for (const choice of completion.choices) {
    const message = choice.message as { content?: string | null; tool_calls?: unknown[] };
    let left = per_choice_tokens;
    if (typeof message.content === 'string') {
      message.content = firstTokens(message.content, left);
      left -= countTextTokens(message.content);
    }
    if (Array.isArray(message.tool_calls)) {
      const kept = [];
      for (const call of message.tool_calls) {
        const tokens = countTextTokens(toolCallText([call]));
        if (tokens > left) break;
        kept.push(call);
        left -= tokens;
      }
      if (kept.length) message.tool_calls = kept;
      else delete message.tool_calls;
    }
    choice.finish_reason = 'length';
  }
  return true;
}

function completionText(completion: UpstreamCompletion): string {
  return completion.choices
    .map((choice) => {
      const message = choice.message as { content?: string | null; tool_calls?: unknown };
      return (message.content ?? '') + toolCallText(message.tool_calls);
    })
    .join('');
}

/** The longest prefix of `text` within `tokens` tokens (by the gateway's tokenizer). */
function firstTokens(text: string, tokens: number): string {
  if (tokens <= 0) return '';
  // Tokens are rarely longer than 8 characters: start from 8 × tokens characters, then
  // shorten until the prefix fits.
  let end = Math.min(text.length, tokens * 8);
  while (end > 0 && countTextTokens(text.slice(0, end)) > tokens)
    end = Math.floor(end * Math.min(0.95, tokens / countTextTokens(text.slice(0, end))));
  return text.slice(0, end);
}
