// Status callbacks from providers: POST /api/callbacks/<service>/<provider>. A provider that
// is configured with `callback` tells the gateway of its transactions' statuses as they
// change (a success, a failure, a hold, and a reversal days after a success). No API key: the
// call proves it is the provider's by its signature or token (providers/http/adapter.ts), judged
// from the head before the body is read where it can be; the event then goes through the
// engine's status table like any other news. Answered 200 whenever the call was the
// provider's, so that it stops retrying; whether anything changed is in the answer.
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { ApiError, notFound } from '../../http/errors.js';
import { CallbackRefusedError, type PaymentService } from '../../providers/types.js';
import type { PaymentsContext } from '../context.js';
import { SERVICES } from '../engine/txn-filter.js';

export function callbacksRouter(ctx: PaymentsContext): Router {
  const router = Router();
  router.post(
    '/callbacks/:service/:provider',
    (req: Request, res: Response, next: NextFunction) => {
      const service = String(req.params.service);
      const name = String(req.params.provider);
      const provider = (SERVICES as readonly string[]).includes(service)
        ? ctx.providers[service as PaymentService].find((p) => p.name === name)
        : undefined;
      const callbacks = provider?.callbacks;
      if (!callbacks)
        throw notFound(
          `no provider ${name.slice(0, 64)} of ${service.slice(0, 32)} takes callbacks`,
          'unknown_provider',
        );
      refused(() => callbacks.checkHead(req.headers));
      express.raw({ type: () => true, limit: callbacks.max_body_bytes })(
        req,
        res,
        (error?: unknown) => {
          if (error) return next(error);
          void (async () => {
            const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
            // A provider may confirm a callback with its own API first (Eko's inquiry).
            const event = await Promise.resolve()
              .then(() => callbacks.read(req.headers, raw))
              .catch((error: unknown) => {
                throw refusal(error);
              });
            if (!event) {
              res.json({
                status: true,
                applied: false,
                message: 'a status the gateway does not act on',
              });
              return;
            }
            res.locals.txn_id = event.txn_id;
            const outcome = await ctx.engine.applyEvent(event);
            if (outcome.txn) res.locals.account_id = outcome.txn.account_id;
            if (!outcome.applied)
              ctx.logger.warn({
                msg: 'a provider callback changed nothing',
                provider: name,
                txn_id: event.txn_id,
                outcome: event.outcome,
                reason: outcome.reason,
              });
            res.json({
              status: true,
              applied: outcome.applied,
              message: outcome.reason ?? `the transaction is ${outcome.txn?.status}`,
              data: outcome.txn ? { txn_id: outcome.txn.id, status: outcome.txn.status } : null,
            });
          })().catch(next);
        },
      );
    },
  );
  return router;
}

/** A refused callback is a 401 (not the provider's) or a 400 (unreadable), in the API's shape. */
function refused<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    throw refusal(error);
  }
}

function refusal(error: unknown): unknown {
  if (error instanceof CallbackRefusedError)
    return new ApiError(
      error.kind === 'unauthenticated' ? 401 : 400,
      error.kind === 'unauthenticated' ? 'callback_unauthenticated' : 'invalid_callback',
      error.message,
    );
  return error;
}
