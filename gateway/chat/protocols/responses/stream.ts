// A chat-completions stream as Responses API events, in the order the openai SDK's
// `responses.stream()` accumulates them: response.created, response.in_progress, then per
// output item output_item.added → (content_part.added → output_text.delta… → output_text.done
// → content_part.done | function_call_arguments.delta… → .done) → output_item.done, and
// response.completed with usage and x_aihub once the bill is settled.
import type { ApiError } from '../../../http/errors.js';
import type { UpstreamChunk, UpstreamUsage } from '../../../llm/types.js';
import {
  reasoningOf,
  toolCallsOf,
  type AnswerMeta,
  type SseOut,
  type StreamPresenter,
  type ToolCallDelta,
  type Usage,
  type XAihub,
} from '../../protocol.js';
import type { ResponsesRequest } from './schemas.js';
import { clientName, type ToolNames } from './tools.js';
import { incompleteDetails, responseEnvelope, responsesUsage } from './present.js';

/** An output item; `status` is set when it is closed (`incomplete`: the output limit cut it). */
type Item = { status?: 'completed' | 'incomplete' } & (
  | { type: 'reasoning'; id: string; text: string }
  | { type: 'message'; id: string; text: string }
  | {
      type: 'function_call';
      id: string;
      call_id: string;
      name: string;
      arguments: string;
      chat_index: number;
    }
);

export class ResponsesStream implements StreamPresenter {
  readonly done_marker = false;
  private sequence = 0;
  private readonly items: Item[] = [];
  private open: Item | null = null;
  private finish_reason: string | null = null;

  constructor(
    private readonly body: ResponsesRequest,
    private readonly meta: AnswerMeta,
    private readonly names: ToolNames,
  ) {}

  private event(type: string, fields: Record<string, unknown>): SseOut {
    return { event: type, data: { type, sequence_number: this.sequence++, ...fields } };
  }

  private snapshot(status: string, extra: Record<string, unknown> = {}) {
    return {
      ...responseEnvelope(this.body, this.meta),
      status,
      incomplete_details: null,
      output: this.items.map((item) => this.itemJson(item, item.status ?? 'in_progress')),
      usage: null,
      ...extra,
    };
  }

  start(): SseOut[] {
    const response = this.snapshot('in_progress');
    return [
      this.event('response.created', { response }),
      this.event('response.in_progress', { response }),
    ];
  }

  chunk(chunk: UpstreamChunk): SseOut[] {
    const choice = chunk.choices?.[0];
    if (!choice) return [];
    const out: SseOut[] = [];
    const delta = choice.delta;
    const reasoning = reasoningOf(delta);
    if (reasoning) {
      const item = this.current(out, 'reasoning');
      item.text += reasoning;
      out.push(
        this.event('response.reasoning_text.delta', {
          item_id: item.id,
          output_index: this.index(item),
          content_index: 0,
          delta: reasoning,
        }),
      );
    }
    if (typeof delta?.content === 'string' && delta.content) {
      const item = this.current(out, 'message');
      item.text += delta.content;
      out.push(
        this.event('response.output_text.delta', {
          item_id: item.id,
          output_index: this.index(item),
          content_index: 0,
          delta: delta.content,
          logprobs: [],
        }),
      );
    }
    for (const call of toolCallsOf(delta)) this.toolCall(out, call);
    if (choice.finish_reason) this.finish_reason = choice.finish_reason;
    return out;
  }

  /** One tool-call delta: a new call opens its function_call item; then its arguments. */
  private toolCall(out: SseOut[], call: ToolCallDelta): void {
    const chat_index = call.index ?? 0;
    let item =
      this.open?.type === 'function_call' && this.open.chat_index === chat_index ? this.open : null;
    if (!item) {
      this.close(out);
      const n = this.items.length;
      item = {
        type: 'function_call',
        id: `fc_${this.meta.request_id}_${n}`,
        call_id: call.id ?? `call_${this.meta.request_id}_${n}`,
        name: call.function?.name ?? '',
        arguments: '',
        chat_index,
      };
      this.items.push(item);
      this.open = item;
      out.push(
        this.event('response.output_item.added', {
          output_index: n,
          item: this.itemJson(item, 'in_progress'),
        }),
      );
    }
    const args = call.function?.arguments;
    if (args) {
      item.arguments += args;
      out.push(
        this.event('response.function_call_arguments.delta', {
          item_id: item.id,
          output_index: this.index(item),
          delta: args,
        }),
      );
    }
  }

  finish(usage: Usage, upstream: UpstreamUsage | null, x_aihub: XAihub): SseOut[] {
    const out: SseOut[] = [];
    const incomplete = incompleteDetails(this.finish_reason);
    // The item the output limit cut is incomplete, in its output_item.done and in the
    // Response: clients (openai-python's get_final_response) judge each item by its status.
    this.close(out, incomplete ? 'incomplete' : 'completed');
    const response = this.snapshot(incomplete ? 'incomplete' : 'completed', {
      incomplete_details: incomplete,
      usage: responsesUsage(usage, upstream),
      x_aihub,
    });
    out.push(this.event(incomplete ? 'response.incomplete' : 'response.completed', { response }));
    return out;
  }

  fail(error: ApiError, x_aihub: XAihub): SseOut[] {
    const response = this.snapshot('failed', {
      error: { code: error.code, message: error.message },
      x_aihub,
    });
    return [this.event('response.failed', { response })];
  }

  private index(item: Item): number {
    return this.items.indexOf(item);
  }

  /** The open item of this type, or a new one after closing the open one. */
  private current<T extends 'reasoning' | 'message'>(
    out: SseOut[],
    type: T,
  ): Extract<Item, { type: T }> {
    if (this.open?.type === type) return this.open as Extract<Item, { type: T }>;
    this.close(out);
    const n = this.items.length;
    const item: Item = {
      type,
      id: `${type === 'message' ? 'msg' : 'rs'}_${this.meta.request_id}_${n}`,
      text: '',
    };
    this.items.push(item);
    this.open = item;
    out.push(
      this.event('response.output_item.added', {
        output_index: n,
        item: this.itemJson(item, 'in_progress', true),
      }),
    );
    const part =
      type === 'message'
        ? { type: 'output_text', text: '', annotations: [], logprobs: [] }
        : { type: 'reasoning_text', text: '' };
    out.push(
      this.event('response.content_part.added', {
        item_id: item.id,
        output_index: n,
        content_index: 0,
        part,
      }),
    );
    return item as Extract<Item, { type: T }>;
  }

  private close(out: SseOut[], status: 'completed' | 'incomplete' = 'completed'): void {
    const item = this.open;
    if (!item) return;
    this.open = null;
    item.status = status;
    const output_index = this.index(item);
    if (item.type === 'message') {
      out.push(
        this.event('response.output_text.done', {
          item_id: item.id,
          output_index,
          content_index: 0,
          text: item.text,
          logprobs: [],
        }),
      );
      out.push(
        this.event('response.content_part.done', {
          item_id: item.id,
          output_index,
          content_index: 0,
          part: { type: 'output_text', text: item.text, annotations: [], logprobs: [] },
        }),
      );
    } else if (item.type === 'reasoning') {
      out.push(
        this.event('response.reasoning_text.done', {
          item_id: item.id,
          output_index,
          content_index: 0,
          text: item.text,
        }),
      );
      out.push(
        this.event('response.content_part.done', {
          item_id: item.id,
          output_index,
          content_index: 0,
          part: { type: 'reasoning_text', text: item.text },
        }),
      );
    } else {
      out.push(
        this.event('response.function_call_arguments.done', {
          item_id: item.id,
          output_index,
          name: clientName(this.names, item.name).name,
          arguments: item.arguments,
        }),
      );
    }
    out.push(
      this.event('response.output_item.done', {
        output_index,
        item: this.itemJson(item, status),
      }),
    );
  }

  private itemJson(item: Item, status: string, empty = false): Record<string, unknown> {
    if (item.type === 'message') {
      return {
        type: 'message',
        id: item.id,
        status,
        role: 'assistant',
        content: empty
          ? []
          : [{ type: 'output_text', text: item.text, annotations: [], logprobs: [] }],
      };
    }
    if (item.type === 'reasoning')
      return {
        type: 'reasoning',
        id: item.id,
        summary: [],
        content: empty ? [] : [{ type: 'reasoning_text', text: item.text }],
      };
    return {
      type: 'function_call',
      id: item.id,
      call_id: item.call_id,
      ...clientName(this.names, item.name),
      arguments: item.arguments,
      status,
    };
  }
}
