// What a Messages answer and its stream share: stop reasons and usage in Anthropic's terms.
import type { UpstreamUsage } from '../../../llm/types.js';
import { usageDetails, type Usage } from '../types.js';

export function stopReason(finish_reason: string | null | undefined): string {
  if (finish_reason === 'length') return 'max_tokens';
  if (finish_reason === 'tool_calls' || finish_reason === 'function_call') return 'tool_use';
  if (finish_reason === 'content_filter') return 'refusal';
  return 'end_turn';
}

export function anthropicUsage(usage: Usage, upstream: UpstreamUsage | null | undefined) {
  const { cached_tokens } = usageDetails(upstream);
  // Anthropic counts cache reads apart from input_tokens; chat counts them inside prompt_tokens.
  return { input_tokens: usage.prompt_tokens - Math.min(cached_tokens, usage.prompt_tokens), cache_creation_input_tokens: 0, cache_read_input_tokens: cached_tokens, output_tokens: usage.completion_tokens };
}

