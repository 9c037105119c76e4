// The lean lane: routes on the hot path (/v1) served straight from Node's HTTP server,
// without Express. Express 5's router alone cut a trivial route's throughput to about a
// third (docs/ARCHITECTURE.md#lanes-of-http has the figures); /v1 keeps everything the shared middleware
// gives (x-request-id, one JSON log line, metrics, errors in the surface's shape) at a
// fraction of the cost.
import { newId } from '../util/ids.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log.js';
import { ApiError, errorBody, fromService, storeUnavailable } from './errors.js';
import { ServiceError, StoreUnavailableError } from '../kernel/errors.js';
import { newRequestScope, type RequestScope } from '../kernel/request-scope.js';
import { assertWellFormedPath } from './path.js';
import type { Metrics } from './metrics.js';
import { guarded } from '../util/guard.js';
import { endServerSpan, traceFields } from '../telemetry/index.js';

export interface Locals {
  request_id: string;
  account_id: string | null;
  /** The route pattern for the log line, e.g. `/v1/models/:model`. */
  route: string;
  /** A refusal (4xx) answered: its code and param, for the log line. */
  refusal?: Refusal;
  /**
   * What this request has committed (kernel/request-scope.ts): passed with each of its
   * transactions and to the store refusal it answers. The lean lane carries it explicitly: an
   * implicit (async-local) scope costs every promise of the process on Node 20.
   */
  scope: RequestScope;
}

/** What the log line says of a 4xx: the machine code and the offending field, never a body. */
export interface Refusal {
  code: string;
  param: string | null;
}

/** The refusal fields of a request's log line (none unless the answer was a 4xx). */
export function refusalFields(status: number, refusal: Refusal | undefined) {
  if (!refusal || status < 400 || status >= 500) return {};
  return {
    error_code: refusal.code.slice(0, 100),
    ...(refusal.param ? { error_param: refusal.param.slice(0, 200) } : {}),
  };
}

export function newRequestId(): string {
  return newId('req');
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function pathOf(url: string | undefined): string {
  const path = url ?? '/';
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

/** Runs one request in the lean lane: request id, log line and metrics on close, errors shaped for the path. */
export function runLean(
  req: IncomingMessage,
  res: ServerResponse,
  context: { logger: Logger; request_logger: Logger; metrics: Metrics; surface: string },
  handle: (locals: Locals) => Promise<void> | void,
): void {
  const started = process.hrtime.bigint();
  const path = pathOf(req.url);
  const locals: Locals = {
    request_id: newRequestId(),
    account_id: null,
    route: path.length > 200 ? `${path.slice(0, 200)}…` : path,
    scope: newRequestScope(),
  };
  res.setHeader('x-request-id', locals.request_id);
  const onListenerError = (error: unknown) =>
    context.logger.error({
      msg: 'the request log listener failed',
      request_id: locals.request_id,
      err: error,
    });
  res.on(
    'close',
    guarded(onListenerError, () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      context.metrics.observe(context.surface, res.statusCode, seconds);
      // The route is the path itself until a route matched: never a span's name then.
      endServerSpan(res, locals.refusal?.code === 'invalid_path' ? null : locals.route);
      context.request_logger.info({
        msg: 'request',
        ...traceFields(res),
        request_id: locals.request_id,
        account_id: locals.account_id,
        method: req.method,
        route: locals.route,
        status: res.statusCode,
        ...refusalFields(res.statusCode, locals.refusal),
        duration_ms: seconds * 1000,
        aborted: !res.writableFinished,
      });
    }),
  );
  const fail = (error: unknown) => {
    const api = asApiError(error, context.logger, locals);
    if (res.headersSent) {
      res.end();
      return;
    }
    locals.refusal = { code: api.code, param: api.param };
    sendJson(res, api.status, errorBody(path, api), api.headers);
  };
  try {
    assertWellFormedPath(path);
    const done = handle(locals);
    if (done) done.catch(fail);
  } catch (error) {
    fail(error);
  }
}

/** An error as the answer it gets: its own, the store's 503, or a 500 logged with its cause. */
function asApiError(error: unknown, logger: Logger, locals: Locals): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof ServiceError) return fromService(error) as ApiError; // a full disk's 507, say
  if (error instanceof StoreUnavailableError) return storeUnavailable(error, locals.scope);
  logger.error({
    msg: 'unexpected error',
    request_id: locals.request_id,
    route: locals.route,
    err: error,
  });
  return new ApiError(
    500,
    'internal_error',
    'internal error; the request id identifies it in the gateway log',
    null,
    'api_error',
  );
}
