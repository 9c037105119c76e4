// A chat-completions stream as Gemini's streamGenerateContent: one GenerateContentResponse
// per piece of text (and of thought, when asked for), function calls whole (Gemini sends a
// call in one part, never its arguments in pieces: they are gathered until the choice ends),
// and a last response with every candidate's finishReason, the usageMetadata and x_aihub once
// the bill is settled. `alt=sse` frames them as server-sent events; without it they are the
// elements of one JSON array (JSON_ARRAY_FRAMING, given as ChatCall.framing).
import type { ApiError } from '../../../http/errors.js';
import type { UpstreamChunk, UpstreamUsage } from '../../../llm/types.js';
import {
  reasoningOf,
  toolCallsOf,
  type AnswerMeta,
  type Framing,
  type SseOut,
  type StreamPresenter,
  type Usage,
  type XAihub,
} from '../../protocol.js';
import { googleErrorBody as googleError } from './errors.js';
import { finishReason, functionCallPart, usageMetadata } from './present.js';

/** streamGenerateContent without `alt=sse`: the events are the elements of one JSON array. */
export const JSON_ARRAY_FRAMING: Framing = {
  headers: {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    'x-accel-buffering': 'no',
  },
  open: '[',
  event: (data, _name, index) => `${index ? ',\r\n' : ''}${JSON.stringify(data)}`,
  close: ']',
};

interface PendingCall {
  id: string;
  name: string;
  args: string;
}

interface Candidate {
  calls: Map<number, PendingCall>;
  finish_reason: string | null;
}

export class GeminiStream implements StreamPresenter {
  readonly done_marker = false;
  private readonly candidates = new Map<number, Candidate>();

  constructor(
    private readonly meta: AnswerMeta,
    private readonly include_thoughts: boolean,
  ) {}

  start(): SseOut[] {
    return [];
  }

  chunk(chunk: UpstreamChunk): SseOut[] {
    const out: SseOut[] = [];
    for (const choice of chunk.choices ?? []) {
      const index = choice.index ?? 0;
      const candidate = this.candidate(index);
      const delta = choice.delta;
      const reasoning = reasoningOf(delta);
      if (reasoning && this.include_thoughts)
        out.push(this.response([{ index, parts: [{ text: reasoning, thought: true }] }]));
      if (typeof delta?.content === 'string' && delta.content)
        out.push(this.response([{ index, parts: [{ text: delta.content }] }]));
      for (const call of toolCallsOf(delta)) {
        const at = call.index ?? 0;
        const pending = candidate.calls.get(at);
        if (!pending)
          candidate.calls.set(at, {
            id: call.id ?? `call_${this.meta.request_id}_${index}_${at}`,
            name: call.function?.name ?? '',
            args: call.function?.arguments ?? '',
          });
        else {
          if (call.function?.name) pending.name ||= call.function.name;
          pending.args += call.function?.arguments ?? '';
        }
      }
      if (choice.finish_reason) {
        candidate.finish_reason = choice.finish_reason;
        const calls = this.takeCalls(candidate);
        if (calls.length) out.push(this.response([{ index, parts: calls }]));
      }
    }
    return out;
  }

  finish(usage: Usage, _upstream: UpstreamUsage | null, x_aihub: XAihub): SseOut[] {
    if (!this.candidates.size) this.candidate(0);
    const candidates = [...this.candidates].map(([index, candidate]) => {
      const calls = this.takeCalls(candidate);
      return {
        index,
        parts: calls.length ? calls : [{ text: '' }],
        finishReason: finishReason(candidate.finish_reason),
      };
    });
    return [
      {
        data: {
          ...this.response(candidates).data,
          usageMetadata: usageMetadata(usage),
          x_aihub,
        },
      },
    ];
  }

  fail(error: ApiError, x_aihub: XAihub): SseOut[] {
    return [{ data: { ...googleError(error), x_aihub } }];
  }

  private candidate(index: number): Candidate {
    let candidate = this.candidates.get(index);
    if (!candidate) {
      candidate = { calls: new Map(), finish_reason: null };
      this.candidates.set(index, candidate);
    }
    return candidate;
  }

  private takeCalls(candidate: Candidate): Record<string, unknown>[] {
    const calls = [...candidate.calls.values()].map((call) =>
      functionCallPart(call.id, call.name, call.args),
    );
    candidate.calls.clear();
    return calls;
  }

  private response(
    candidates: { index: number; parts: Record<string, unknown>[]; finishReason?: string }[],
  ): SseOut & { data: Record<string, unknown> } {
    return {
      data: {
        candidates: candidates.map(({ index, parts, finishReason }) => ({
          content: { role: 'model', parts },
          ...(finishReason ? { finishReason } : {}),
          index,
        })),
        modelVersion: this.meta.model,
        responseId: this.meta.request_id,
      },
    };
  }
}
