// A chat-completions stream as Anthropic Messages events, in the order @anthropic-ai/sdk's
// MessageStream accumulates them: message_start, then per content block content_block_start
// → content_block_delta (text_delta | input_json_delta | thinking_delta)… → content_block_stop,
// then message_delta (stop_reason, usage, and x_aihub once the bill is settled) and message_stop.
import type { ApiError } from '../../../http/errors.js';
import type { UpstreamChunk, UpstreamUsage } from '../../../llm/types.js';
import {
  reasoningOf,
  toolCallsOf,
  type AnswerMeta,
  type SseOut,
  type StreamPresenter,
  type Usage,
  type XAihub,
} from '../../protocol.js';
import { anthropicUsage, matchedStop, stopReason } from './present.js';
import { anthropicErrorBody } from './errors.js';

type Open = { kind: 'thinking' | 'text' } | { kind: 'tool_use'; chat_index: number };

export class MessagesStream implements StreamPresenter {
  readonly done_marker = false;
  private index = -1;
  private open: Open | null = null;
  private finish_reason: string | null = null;
  private stop_sequence: string | null = null;

  constructor(
    private readonly meta: AnswerMeta,
    private readonly stop_sequences?: readonly string[],
  ) {}

  start(): SseOut[] {
    const message = {
      id: `msg_${this.meta.request_id}`,
      type: 'message',
      role: 'assistant',
      model: this.meta.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: this.meta.prompt_tokens_estimate,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 0,
      },
    };
    return [event('message_start', { message }), event('ping', {})];
  }

  chunk(chunk: UpstreamChunk): SseOut[] {
    const choice = chunk.choices?.[0];
    if (!choice) return [];
    const out: SseOut[] = [];
    const delta = choice.delta;
    const reasoning = reasoningOf(delta);
    if (reasoning) {
      this.block(out, { kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
      out.push(
        event('content_block_delta', {
          index: this.index,
          delta: { type: 'thinking_delta', thinking: reasoning },
        }),
      );
    }
    if (typeof delta?.content === 'string' && delta.content) {
      this.block(out, { kind: 'text' }, { type: 'text', text: '' });
      out.push(
        event('content_block_delta', {
          index: this.index,
          delta: { type: 'text_delta', text: delta.content },
        }),
      );
    }
    for (const call of toolCallsOf(delta)) {
      const chat_index = call.index ?? 0;
      const same = this.open?.kind === 'tool_use' && this.open.chat_index === chat_index;
      if (!same)
        this.block(
          out,
          { kind: 'tool_use', chat_index },
          {
            type: 'tool_use',
            id: call.id ?? `toolu_${this.meta.request_id}_${this.index + 1}`,
            name: call.function?.name ?? '',
            input: {},
          },
        );
      const args = call.function?.arguments;
      if (args)
        out.push(
          event('content_block_delta', {
            index: this.index,
            delta: { type: 'input_json_delta', partial_json: args },
          }),
        );
    }
    if (choice.finish_reason) {
      this.finish_reason = choice.finish_reason;
      this.stop_sequence =
        choice.finish_reason === 'stop' ? matchedStop(choice, this.stop_sequences) : null;
    }
    return out;
  }

  finish(usage: Usage, upstream: UpstreamUsage | null, x_aihub: XAihub): SseOut[] {
    const out: SseOut[] = [];
    this.close(out);
    out.push(
      event('message_delta', {
        delta: {
          stop_reason: stopReason(this.finish_reason, this.stop_sequence),
          stop_sequence: this.stop_sequence,
        },
        usage: anthropicUsage(usage, upstream),
        x_aihub,
      }),
    );
    out.push(event('message_stop', {}));
    return out;
  }

  fail(error: ApiError, x_aihub: XAihub): SseOut[] {
    return [{ event: 'error', data: { ...anthropicErrorBody(error, true), x_aihub } }];
  }

  /** Opens a block of this kind unless it is the open one. */
  private block(out: SseOut[], open: Open, content_block: Record<string, unknown>): void {
    if (this.open && this.open.kind === open.kind && open.kind !== 'tool_use') return;
    this.close(out);
    this.index++;
    this.open = open;
    out.push(event('content_block_start', { index: this.index, content_block }));
  }

  private close(out: SseOut[]): void {
    if (!this.open) return;
    this.open = null;
    out.push(event('content_block_stop', { index: this.index }));
  }
}

function event(type: string, fields: Record<string, unknown>): SseOut {
  return { event: type, data: { type, ...fields } };
}
