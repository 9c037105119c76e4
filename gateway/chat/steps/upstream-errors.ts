// What the router or an engine threw, as the error the client gets: no target (503 or the
// router's status), an upstream's own 4xx as the upstream worded it, a timeout 504, anything
// else from upstream 502; never an internal error's text.
import { ApiError, fromService, storeUnavailable } from '../../http/errors.js';
import { ServiceError, StoreUnavailableError } from '../../kernel/errors.js';
import type { RequestScope } from '../../kernel/request-scope.js';
import { RoutingError } from '../../llm/router.js';
import { UpstreamError } from '../../llm/types.js';

/** What ended a stream early, as an upstream failure. */
export function asUpstreamError(error: unknown): UpstreamError {
  return error instanceof UpstreamError
    ? error
    : new UpstreamError('invalid_response', String(error), null, { cause: error });
}

/** `scope`: the request's (kernel/request-scope.ts), for a store refusal's "nothing was changed". */
export function toApiError(error: unknown, scope?: RequestScope): ApiError {
  if (error instanceof RoutingError) {
    return new ApiError(
      error.status,
      error.code,
      error.message,
      null,
      'api_error',
      error.retry_after_s ? { 'retry-after': String(error.retry_after_s) } : {},
    );
  }
  if (error instanceof UpstreamError) {
    if (error.kind === 'rejected') return rejected(error);
    if (error.kind === 'aborted')
      return new ApiError(
        499,
        'client_closed_request',
        'the client closed the request',
        null,
        'invalid_request_error',
      );
    if (error.kind === 'timeout')
      return new ApiError(504, 'upstream_timeout', error.message, null, 'api_error');
    return new ApiError(502, 'upstream_error', error.message, null, 'api_error');
  }
  if (error instanceof StoreUnavailableError) return storeUnavailable(error, scope);
  if (error instanceof ServiceError) return fromService(error) as ApiError; // a full disk's 507, say
  return error instanceof ApiError
    ? error
    : new ApiError(
        500,
        'internal_error',
        'internal error; the request id identifies it in the gateway log',
        null,
        'api_error',
      );
}

/** An upstream's 4xx: its status, code, param and message reach the client as the upstream worded them. */
function rejected(error: UpstreamError): ApiError {
  const status =
    error.status !== null && error.status >= 400 && error.status < 500 ? error.status : 400;
  const body = error.body;
  const message = body?.message ?? error.message;
  return new ApiError(
    status,
    body?.code ?? 'upstream_rejected_request',
    message,
    body?.param ?? null,
    body?.type ?? 'invalid_request_error',
  );
}
