// The virtual accounts' routes: the account's load details (inside /api, behind its key) and
// the operator's review of held transfers (inside /admin, behind the admin bearer; audited in
// the commit that acts).
import { Router } from 'express';
import { z } from 'zod';
import { jsonBody } from '../../http/body.js';
import { parseWith } from '../../http/errors.js';
import type { Logger } from '../../log.js';
import { authorize } from '../../payments/auth.js';
import { auditInTx } from '../../payments/logs.js';
import type { Store } from '../../store/types.js';
import type { VirtualAccounts } from './service.js';
import type { TopupVirtualAccount } from './tables.js';

export const VIRTUAL_ACCOUNT_PATHS = {
  /** Inside /api: the account's virtual account (made on the first ask). */
  load_details: '/wallet/load-details',
  /** Inside /admin: credit a held transfer, or refuse it (returned to the payer). */
  release: '/topups/:topup_id/release',
  give_back: '/topups/:topup_id/return',
} as const;

export const reviewBody = z.strictObject({ note: z.string().trim().max(300).optional() });

/** What the account is told of its virtual account (the API's answer, /wallet's box). */
export interface LoadDetailsView {
  provider: TopupVirtualAccount['provider'];
  virtual_account_id: string;
  account_number: string;
  ifsc: string;
  bank_name: string | null;
  upi_id: string | null;
  status: TopupVirtualAccount['status'];
  created_at: string;
}

export function loadDetailsView(va: TopupVirtualAccount): LoadDetailsView {
  return {
    provider: va.provider,
    virtual_account_id: va.virtual_account_id,
    account_number: va.account_number,
    ifsc: va.ifsc,
    bank_name: va.bank_name,
    upi_id: va.upi_id,
    status: va.status,
    created_at: va.created_at,
  };
}

interface Deps {
  store: Store;
  logger: Logger;
  config: { limits: { body_bytes: number } };
  virtual_accounts: VirtualAccounts;
}

export function virtualAccountApi({ store, logger, virtual_accounts }: Deps): Router {
  const router = Router();
  router.get(VIRTUAL_ACCOUNT_PATHS.load_details, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    res.json(loadDetailsView(await virtual_accounts.loadDetails(account.id)));
  });
  return router;
}

export function virtualAccountAdmin({ store, config, virtual_accounts }: Deps): Router {
  const router = Router();
  const review =
    (action: 'release' | 'return') =>
    async (req: import('express').Request, res: import('express').Response) => {
      const topup_id = String(req.params.topup_id);
      const { note } = parseWith(reviewBody, req.body ?? {});
      const topup = await store.transact((tx) => {
        const moved =
          action === 'release'
            ? virtual_accounts.release(tx, topup_id)
            : virtual_accounts.giveBack(tx, topup_id, note ?? '');
        auditInTx(tx, req, res, {
          action: `topup.${action}`,
          account_id: moved.account_id,
          details: { topup_id, payment_id: moved.payment_id, note: note ?? null },
        });
        return moved;
      });
      res.json({
        topup_id: topup.id,
        account_id: topup.account_id,
        status: topup.status,
        note: topup.note,
        payer: topup.payer ?? null,
      });
    };
  router.post(VIRTUAL_ACCOUNT_PATHS.release, jsonBody(config), review('release'));
  router.post(VIRTUAL_ACCOUNT_PATHS.give_back, jsonBody(config), review('return'));
  return router;
}
