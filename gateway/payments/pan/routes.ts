// POST /api/pan-find and POST /api/pan/verify (the variants): validate, call the command (pan/commands.ts, where the rules are),
// present. A PAN that is not found costs nothing.
import { Router } from 'express';
import { jsonBody } from '../../http/body.js';
import { parseWith } from '../../http/errors.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { idempotencyKey } from '../engine/intent.js';
import { findPan, verifyPan } from './commands.js';
import { panBody, panVerifyBody } from './schemas.js';

export function panRouter(ctx: PaymentsContext): Router {
  const { store, logger } = ctx;
  const router = Router();

  router.post('/pan-find', jsonBody(ctx.config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'pan');
    const body = parseWith(panBody, req.body ?? {});
    const answer = await findPan(ctx, account, body, idempotencyKey(req, body.client_ref));
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  router.post('/pan/verify', jsonBody(ctx.config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'pan');
    const body = parseWith(panVerifyBody, req.body ?? {});
    const answer = await verifyPan(ctx, account, body, idempotencyKey(req, body.client_ref));
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  return router;
}
