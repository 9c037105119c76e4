// The admin console drives the payments room's own admin handlers (eKYC review, service
// activation, IP whitelists, document download) in-process, so the console and the JSON
// admin API share one implementation: the same validation, the same 409 before eKYC
// approval, the same audit record. The console has checked its admin session first.
import type { Request, Response } from 'express';
import { ApiError } from '../http/errors.js';
import type { WebContext } from './context.js';

export interface BridgeReply {
  status: number;
  body: unknown;
}

export function paymentsPresent(ctx: WebContext): boolean {
  return ctx.deps.payments !== undefined;
}

/**
 * Runs one request through the payments admin router with the given method, path and JSON
 * body, and returns its JSON answer instead of sending it. Errors come back as ApiError.
 */
export function callPaymentsAdmin(
  ctx: WebContext,
  req: Request,
  res: Response,
  method: string,
  url: string,
  body: unknown,
): Promise<BridgeReply> {
  const router = ctx.deps.payments?.admin;
  if (!router)
    return Promise.reject(
      new ApiError(404, 'payments_absent', 'The payments module is not part of this gateway.'),
    );
  return new Promise((resolve, reject) => {
    const saved = {
      url: req.url,
      method: req.method,
      body: req.body as unknown,
      json: res.json,
      status: res.status,
    };
    let status = 200;
    let settled = false;
    const restore = () => {
      req.url = saved.url;
      req.method = saved.method;
      req.body = saved.body;
      res.json = saved.json;
      res.status = saved.status;
    };
    res.status = ((code: number) => {
      status = code;
      return res;
    }) as Response['status'];
    res.json = ((payload: unknown) => {
      if (!settled) {
        settled = true;
        restore();
        resolve({ status, body: payload });
      }
      return res;
    }) as Response['json'];
    req.url = url;
    req.method = method;
    req.body = body;
    router(req, res, (error?: unknown) => {
      if (settled) return;
      settled = true;
      restore();
      reject(
        error ?? new ApiError(404, 'not_found', `no payments admin route for ${method} ${url}`),
      );
    });
  });
}

/** Streams a response of the payments admin router (a document download) straight to the client. */
export function streamPaymentsAdmin(
  ctx: WebContext,
  req: Request,
  res: Response,
  url: string,
): Promise<void> {
  const router = ctx.deps.payments?.admin;
  if (!router)
    return Promise.reject(
      new ApiError(404, 'payments_absent', 'The payments module is not part of this gateway.'),
    );
  return new Promise((resolve, reject) => {
    req.url = url;
    req.method = 'GET';
    res.on('close', () => resolve());
    router(req, res, (error?: unknown) =>
      reject(error ?? new ApiError(404, 'not_found', 'no such document')),
    );
  });
}
