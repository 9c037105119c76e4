// The output limit: the client's own, within the tier's output limit and what the prompt
// leaves of the tier's context window. A limit above the tier's is capped, not refused
// (Claude Code and opencode ask for 32,000 on every tier), and the client is told.
import type { TierConfig } from '../config.js';
import type { ChatCall } from '../protocol.js';
import { ContextLengthError } from '../refusals.js';

export function outputLimit(
  tier: TierConfig,
  body: ChatCall,
  prompt_tokens_estimate: number,
): number {
  const room = tier.context_window - prompt_tokens_estimate;
  if (room < 1) throw new ContextLengthError(prompt_tokens_estimate, tier.context_window - 1);
  return Math.min(body.requested_max ?? tier.max_output_tokens, tier.max_output_tokens, room);
}

/** The warning for a client whose output limit was lowered (by the tier, the context window or today's free allowance), if it was. */
export function capWarning(
  tier: TierConfig,
  body: ChatCall,
  prompt_tokens_estimate: number,
  max_output_tokens: number,
): string | null {
  const requested = body.requested_max;
  if (requested === null || max_output_tokens >= requested) return null;
  let why: string;
  if (max_output_tokens === tier.max_output_tokens) why = `${tier.id}'s output limit`;
  else if (max_output_tokens === tier.context_window - prompt_tokens_estimate)
    why = `what ${tier.id}'s context window of ${tier.context_window} tokens leaves after the prompt`;
  else why = "what today's free allowance leaves";
  return `${body.cap_field} ${requested} capped to ${max_output_tokens}: ${why}`;
}
