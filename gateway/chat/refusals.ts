// Refusals whose wording clients parse: each carries its figures, so that a protocol words
// it as its own API does (Anthropic's "prompt is too long: N tokens > M maximum" starts
// Claude Code's compaction, "model: <id>" its model fallback); the default wording is
// OpenAI's chat completions.
import { ApiError } from '../http/errors.js';
import { TIER_IDS } from './config.js';

/** The prompt leaves no room for output in the tier's context window. */
export class ContextLengthError extends ApiError {
  constructor(
    readonly prompt_tokens: number,
    /** The most prompt tokens the tier accepts (its context window less one output token). */
    readonly max_prompt_tokens: number,
  ) {
    super(
      400,
      'context_length_exceeded',
      `This model's maximum context length is ${max_prompt_tokens + 1} tokens. However, your messages resulted in ${prompt_tokens} tokens. Please reduce the length of the messages.`,
      'messages',
      'invalid_request_error',
    );
  }
}

/** A model id that names no tier. */
export class ModelNotFoundError extends ApiError {
  constructor(readonly model: string) {
    super(
      404,
      'model_not_found',
      `The model \`${model.slice(0, 100)}\` does not exist or you do not have access to it; use one of ${TIER_IDS.join(', ')}`,
      'model',
      'invalid_request_error',
    );
  }
}
