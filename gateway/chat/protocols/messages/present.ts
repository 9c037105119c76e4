// What a Messages answer and its stream share: stop reasons and usage in Anthropic's terms.
import type { UpstreamUsage } from '../../../llm/types.js';
import { usageDetails, type Usage } from '../../protocol.js';

/**
 * The stop sequence an answer ended at: the choice's `stop_reason` (vLLM's field, which the
 * built-in engine fills too) when it is one of the request's stop_sequences, else null (an
 * upstream that does not say which one matched cannot be told from one that just ended).
 */
export function matchedStop(
  choice: unknown,
  stop_sequences: readonly string[] | undefined,
): string | null {
  if (!stop_sequences?.length || !choice || typeof choice !== 'object') return null;
  const reason = (choice as { stop_reason?: unknown }).stop_reason;
  return typeof reason === 'string' && stop_sequences.includes(reason) ? reason : null;
}

export function stopReason(
  finish_reason: string | null | undefined,
  stop_sequence: string | null = null,
): string {
  if (stop_sequence !== null) return 'stop_sequence';
  if (finish_reason === 'length') return 'max_tokens';
  if (finish_reason === 'tool_calls' || finish_reason === 'function_call') return 'tool_use';
  if (finish_reason === 'content_filter') return 'refusal';
  return 'end_turn';
}

export function anthropicUsage(usage: Usage, upstream: UpstreamUsage | null | undefined) {
  const { cached_tokens } = usageDetails(upstream);
  // Anthropic counts cache reads apart from input_tokens; chat counts them inside prompt_tokens.
  return {
    input_tokens: usage.prompt_tokens - Math.min(cached_tokens, usage.prompt_tokens),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached_tokens,
    output_tokens: usage.completion_tokens,
  };
}
