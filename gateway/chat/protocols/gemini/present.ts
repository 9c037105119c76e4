// A chat completion as Gemini's GenerateContentResponse: a candidate per choice whose parts
// are the model's thoughts (when the client asked for them), its text and its function calls;
// a finishReason; usageMetadata in Gemini's counts (thoughts apart from candidates). The
// stream (stream.ts) sends the same shape, piece by piece.
import type { UpstreamCompletion } from '../../../llm/types.js';
import { argumentsObject } from '../parse.js';
import { reasoningOf, toolCallsOf, type AnswerMeta, type Usage } from '../../protocol.js';

export function finishReason(finish_reason: string | null | undefined): string {
  if (finish_reason === 'length') return 'MAX_TOKENS';
  if (finish_reason === 'content_filter') return 'SAFETY';
  return 'STOP';
}

export function usageMetadata(usage: Usage): Record<string, number> {
  const thoughts = Math.min(usage.reasoning_tokens ?? 0, usage.completion_tokens);
  const cached = usage.cached_tokens ?? 0;
  return {
    promptTokenCount: usage.prompt_tokens,
    candidatesTokenCount: usage.completion_tokens - thoughts,
    totalTokenCount: usage.prompt_tokens + usage.completion_tokens,
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
    ...(cached ? { cachedContentTokenCount: cached } : {}),
  };
}

export function functionCallPart(id: string, name: string, args: string | undefined) {
  return { functionCall: { id, name, args: argumentsObject(args) } };
}

export function geminiJson(
  completion: UpstreamCompletion,
  usage: Usage,
  meta: AnswerMeta,
  include_thoughts: boolean,
): Record<string, unknown> {
  const candidates = completion.choices.map((choice, index) => {
    const parts: Record<string, unknown>[] = [];
    const reasoning = reasoningOf(choice.message);
    if (include_thoughts && reasoning) parts.push({ text: reasoning, thought: true });
    if (choice.message.content) parts.push({ text: choice.message.content });
    toolCallsOf(choice.message).forEach((call, at) =>
      parts.push(
        functionCallPart(
          call.id ?? `call_${meta.request_id}_${index}_${at}`,
          call.function?.name ?? '',
          call.function?.arguments,
        ),
      ),
    );
    if (!parts.length) parts.push({ text: '' });
    return {
      content: { role: 'model', parts },
      finishReason: finishReason(choice.finish_reason),
      index: choice.index ?? index,
    };
  });
  return {
    candidates,
    usageMetadata: usageMetadata(usage),
    modelVersion: meta.model,
    responseId: meta.request_id,
  };
}
