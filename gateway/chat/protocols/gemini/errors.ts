// Refusals in Google's own words, where clients read them: an unknown model as Google's 404
// says it (Gemini CLI and the SDK show it as is), a prompt over the context window as
// Google's 400 says it. The shape ({error: {code, message, status, details}}) is made by
// http/errors.ts for every Gemini path.
import { ApiError } from '../../../http/errors.js';
import { ContextLengthError, ModelNotFoundError } from '../../refusals.js';

export function geminiError(error: ApiError): ApiError {
  if (error instanceof ModelNotFoundError)
    return new ApiError(
      404,
      error.code,
      `models/${error.model.slice(0, 100)} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.`,
      null,
      error.type,
      error.headers,
    );
  if (error instanceof ContextLengthError)
    return new ApiError(
      400,
      error.code,
      `The input token count (${error.prompt_tokens}) exceeds the maximum number of tokens allowed (${error.max_prompt_tokens}).`,
      'contents',
      error.type,
      error.headers,
    );
  return error;
}
