// The output limit: what the prompt leaves of the tier's context window, within the tier's
// output limit and the client's own.
import { ApiError } from '../../http/errors.js';
import type { TierConfig } from '../config.js';
import type { ChatCall } from '../protocols/types.js';

export function outputLimit(
  tier: TierConfig,
  body: ChatCall,
  prompt_tokens_estimate: number,
): number {
  const room = tier.context_window - prompt_tokens_estimate;
  if (room < 1) {
    throw new ApiError(
      400,
      'context_length_exceeded',
      `the messages take about ${prompt_tokens_estimate} tokens; ${tier.id} accepts at most ${tier.context_window - 1} so that at least one can be generated`,
      'messages',
      'invalid_request_error',
    );
  }
  const cap_field = body.cap_field;
  const requested = body.requested_max;
  if (requested !== null && requested > tier.max_output_tokens) {
    throw new ApiError(
      400,
      'invalid_value',
      `${cap_field} is too large: ${requested}; ${tier.id} generates at most ${tier.max_output_tokens} tokens`,
      cap_field,
      'invalid_request_error',
    );
  }
  return Math.min(requested ?? tier.max_output_tokens, room);
}
