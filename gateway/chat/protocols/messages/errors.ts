// Anthropic's error shape, `{type: "error", error: {type, message}}`: the body every error on
// /v1/messages is answered in (http/errors.ts, through the shape chat/routes.ts adds) and the
// `error` event of a stream that broke off, built here once for both.
import type { ApiError, ErrorShape } from '../../../http/errors.js';

/** Anthropic's Messages API, whose clients read errors in Anthropic's shape. */
export function isAnthropicPath(path: string): boolean {
  return path === '/v1/messages' || path.startsWith('/v1/messages/');
}

const ANTHROPIC_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/**
 * An error in Anthropic's shape, its type by status; the `error` event of a stream that broke
 * off (`broke_off`) names a timeout apart and any other failure `api_error`.
 */
export function anthropicErrorBody(
  error: ApiError,
  broke_off = false,
): { type: 'error'; error: { type: string; message: string } } {
  const type = broke_off
    ? error.status === 504
      ? 'timeout_error'
      : 'api_error'
    : (ANTHROPIC_TYPES[error.status] ??
      (error.status >= 500 ? 'api_error' : 'invalid_request_error'));
  return { type: 'error', error: { type, message: error.message } };
}

export const anthropicErrorShape: ErrorShape = {
  matches: isAnthropicPath,
  body: (error) => anthropicErrorBody(error),
  schema: 'AnthropicError',
  json_schema: {
    type: 'object',
    required: ['type', 'error'],
    properties: {
      type: { const: 'error' },
      error: {
        type: 'object',
        required: ['type', 'message'],
        properties: { type: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};
