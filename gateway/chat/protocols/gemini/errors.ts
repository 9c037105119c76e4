// Refusals in Google's own words, where clients read them: an unknown model as Google's 404
// says it (Gemini CLI and the SDK show it as is), a prompt over the context window as
// Google's 400 says it; and Google's error shape ({error: {code, message, status, details}}),
// which http/errors.ts answers every Gemini path in (chat/routes.ts adds it).
import { ApiError, type ErrorShape } from '../../../http/errors.js';
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

/**
 * Google's Gemini API (`/v1beta/...`, and its methods under `/v1/models/`), whose clients read
 * errors in Google's shape. `GET /v1/models` stays OpenAI's: the Gemini list there is told
 * apart by its credentials, not its path, and answers errors as OpenAI's list does.
 */
export function isGeminiPath(path: string): boolean {
  return (
    path === '/v1beta' ||
    path.startsWith('/v1beta/') ||
    (path.startsWith('/v1/models/') && path.includes(':'))
  );
}

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  402: 'FAILED_PRECONDITION',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  408: 'DEADLINE_EXCEEDED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  501: 'UNIMPLEMENTED',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
  507: 'RESOURCE_EXHAUSTED',
};

/** An error in Google's shape: `{error: {code, message, status, details}}`, details as google.rpc types. */
export function googleErrorBody(error: ApiError): { error: Record<string, unknown> } {
  const details: Record<string, unknown>[] = [
    { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: error.code, domain: 'aihub' },
  ];
  if (error.param)
    details.push({
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: error.param, description: error.message }],
    });
  if (error.help)
    details.push({ '@type': 'type.googleapis.com/google.rpc.Help', links: [error.help] });
  const retry = Number(error.headers['retry-after']);
  if (Number.isFinite(retry) && retry >= 0)
    details.push({
      '@type': 'type.googleapis.com/google.rpc.RetryInfo',
      retryDelay: `${Math.ceil(retry)}s`,
    });
  return {
    error: {
      code: error.status,
      message: error.message,
      status: GOOGLE_STATUS[error.status] ?? (error.status >= 500 ? 'INTERNAL' : 'UNKNOWN'),
      details,
    },
  };
}

export const googleErrorShape: ErrorShape = {
  matches: isGeminiPath,
  body: googleErrorBody,
  schema: 'GoogleError',
  json_schema: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message', 'status'],
        properties: {
          code: { type: 'integer' },
          message: { type: 'string' },
          status: { type: 'string' },
          details: { type: 'array', items: { type: 'object' } },
        },
      },
    },
  },
};
