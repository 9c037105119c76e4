// POST /api/pan-find: a PAN lookup through the payment engine, so it has what every payment
// has (the fee held before any provider call, idempotency, failover, a transaction record).
// The holder type comes from the PAN's fourth character; a PAN that is not found costs nothing.
import { Router } from 'express';
import { jsonBody } from '../http/body.js';
import { badRequest, parseWith } from '../http/errors.js';
import { authorize } from './auth.js';
import type { PaymentsContext } from './context.js';
import { parsePan } from './pan-views.js';
import { panBody } from './schemas.js';
import { idempotencyKey, requestHash } from './intent.js';

export function panRouter(ctx: PaymentsContext): Router {
  const { store, logger, settings, engine } = ctx;
  const router = Router();

  router.post('/pan-find', jsonBody(ctx.config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'pan');
    const body = parseWith(panBody, req.body ?? {});
    const parsed = parsePan(body.pan_number);
    if ('error' in parsed) throw badRequest(`pan_number: ${parsed.error}`, 'pan_number', 'invalid_pan');
    const answer = await engine.submit({
      account,
      service: 'pan',
      idempotency_key: idempotencyKey(req, body.client_ref),
      client_ref: body.client_ref ?? null,
      request_hash: requestHash('pan-find', { pan: parsed.pan, client_ref: body.client_ref ?? null }),
      // Looking the same PAN up again is an ordinary thing to do, not a double submission.
      allow_duplicate: true,
      amount_micros: settings.pan.fee,
      charges_micros: 0,
      commission_micros: 0,
      pay_to: 'revenue:pan',
      subject: parsed.pan,
      details: { kind: 'pan_lookup', pan_type: parsed.type },
      provider_params: { pan: parsed.pan },
    });
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  return router;
}
