import { newId } from '../util/ids.js';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../log.js';
import { ApiError, sendError } from './errors.js';
import { refusalFields, type Refusal } from './lean.js';
import { guarded } from '../util/guard.js';
import { endServerSpan, traceFields } from '../telemetry/index.js';

/** Sets `x-request-id` on every response and `res.locals.request_id` for the handlers. */
export function requestId(_req: Request, res: Response, next: NextFunction): void {
  const id = newId('req');
  res.locals.request_id = id;
  res.setHeader('x-request-id', id);
  next();
}

/** One structured line per request, written when the response ends. Never a header or a body. */
export function requestLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    const onError = (error: unknown) =>
      logger.error({ msg: 'the request log listener failed', err: error });
    res.on(
      'close',
      guarded(onError, () => {
        const route = routeOf(req);
        endServerSpan(res, req.route ? route : null); // a pattern, never a path
        logger.info({
          msg: 'request',
          ...traceFields(res),
          request_id: res.locals.request_id,
          account_id: res.locals.account_id ?? null,
          method: req.method,
          route,
          status: res.statusCode,
          ...refusalFields(res.statusCode, res.locals.refusal as Refusal | undefined),
          duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
          aborted: !res.writableFinished,
        });
      }),
    );
    next();
  };
}

/** The matched route pattern (no ids, no query strings that could carry a secret). */
function routeOf(req: Request): string {
  const pattern = (req.route as { path?: string } | undefined)?.path;
  if (typeof pattern === 'string') {
    if (req.baseUrl) return `${req.baseUrl}${pattern}`;
    // An error answered at the app level: Express has restored baseUrl to '' by then, so the
    // router's mount path is taken from the request path, one segment per pattern segment.
    const segments = req.path.split('/').length - pattern.split('/').length;
    return segments > 0
      ? `${req.path
          .split('/')
          .slice(0, segments + 1)
          .join('/')}${pattern}`
      : pattern;
  }
  return req.path.length > 200 ? `${req.path.slice(0, 200)}…` : req.path;
}

export function notFoundHandler(req: Request, res: Response): void {
  sendError(
    req,
    res,
    new ApiError(404, 'not_found', `no route for ${req.method} ${req.path.slice(0, 200)}`),
  );
}
