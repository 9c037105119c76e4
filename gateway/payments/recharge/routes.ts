// GET /api/operators and POST /api/recharge: validate, call the command
// (recharge/commands.ts, where the rules are), present.
import { Router } from 'express';
import { jsonBody } from '../../http/body.js';
import { parseWith } from '../../http/errors.js';
import { idempotencyKey } from '../engine/intent.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { rechargeCommands } from './commands.js';
import { operatorView } from './views.js';
import { operatorsQuery, rechargeBody } from './schemas.js';

export function rechargeRouter(ctx: PaymentsContext): Router {
  const { store, logger, settings } = ctx;
  const router = Router();
  const commands = rechargeCommands(ctx);

  router.get('/operators', (req, res) => {
    authorize(store.state, req, res, logger);
    const query = parseWith(operatorsQuery, req.query);
    const list = settings.operators
      .filter((o) => !query.type || o.type === query.type)
      .map(operatorView);
    res.json({ status: true, data: list });
  });

  router.post('/recharge', jsonBody(ctx.config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'recharge');
    const body = parseWith(rechargeBody, req.body ?? {});
    const answer = await commands.recharge(account, body, idempotencyKey(req, body.client_ref));
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  return router;
}
