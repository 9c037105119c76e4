// The key-authenticated wallet routes of the payments surface (CONTRACT.md paths table).
import { Router } from 'express';
import type { AppDeps } from '../app.js';
import { balanceMicros } from '../ledger/ledger.js';
import { microsToUnits } from '../util/money.js';
import { authenticate } from './auth.js';

export function walletRouter({ store, config }: AppDeps): Router {
  const router = Router();
  router.get('/balance', async (req, res) => {
    const { account } = authenticate(store.state, req.headers);
    res.locals.account_id = account.id;
    await store.transact(() => undefined);
    res.json({ status: true, data: { balance: microsToUnits(balanceMicros(store.state, account.id)), currency: config.currency } });
  });
  return router;
}
