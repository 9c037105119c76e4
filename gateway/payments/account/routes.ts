// The account's own views: transactions, the webhook URL, and the wallet's balance (its
// history is the wallet report for one account: reports/routes.ts).
import { Router } from 'express';
import { jsonBody } from '../../http/body.js';
import { badRequest, notFound, parseWith } from '../../http/errors.js';
import { balanceMicros } from '../../ledger/ledger.js';
import { microsToUnits } from '../../util/money.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { webhookBody } from './schemas.js';
import { txnView } from '../engine/transactions.js';
import { selectTransactions, transactionsQuery } from '../engine/txn-filter.js';
import { isPrivateAddress, newWebhookSecret } from '../engine/webhooks.js';
import { webhookSecretAad } from '../sealing.js';

export function accountRouter(ctx: PaymentsContext): Router {
  const router = Router();
  transactionRoutes(ctx, router);
  webhookRoutes(ctx, router);
  walletRoutes(ctx, router);
  return router;
}

function transactionRoutes(ctx: PaymentsContext, router: Router): void {
  const { store, logger } = ctx;
  router.get('/transactions/:txn_id', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const txn = await store.fetch('payment_txns', String(req.params.txn_id));
    if (!txn || txn.account_id !== account.id)
      throw notFound(
        `no transaction ${String(req.params.txn_id).slice(0, 64)}`,
        'transaction_not_found',
      );
    res.json({ status: true, data: txnView(txn) });
  });

  router.get('/transactions', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const query = parseWith(transactionsQuery, req.query);
    await store.readDurable();
    const { total, rows } = await selectTransactions(store, query, account.id, {
      offset: (query.page - 1) * query.limit,
      limit: query.limit,
    });
    res.json({
      status: true,
      data: { total, page: query.page, limit: query.limit, transactions: rows.map(txnView) },
    });
  });
}

function webhookRoutes(ctx: PaymentsContext, router: Router): void {
  const { store, logger, config, webhooks } = ctx;
  router.put('/webhook', jsonBody(config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const body = parseWith(webhookBody, req.body ?? {});
    const host = new URL(body.url).hostname.replace(/^\[|\]$/g, '');
    if (!webhooks.allow_private && (host === 'localhost' || isPrivateAddress(host))) {
      throw badRequest(
        'url: private and loopback addresses are not allowed for webhooks',
        'url',
        'invalid_value',
      );
    }
    const secret = newWebhookSecret();
    await store.transact((tx) => {
      tx.set('accounts', account.id, {
        ...tx.get('accounts', account.id)!,
        webhook: {
          url: body.url,
          secret: ctx.sealer.sealText(secret, webhookSecretAad(account.id)),
        },
      });
    });
    res.json({
      status: true,
      message:
        'webhook set: final transaction statuses are POSTed there, signed in X-AIHub-Signature (hex HMAC-SHA256 of the raw body with this secret)',
      data: { url: body.url, secret },
    });
  });

  router.get('/webhook', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const webhook = (await store.fetch('accounts', account.id))?.webhook;
    res.json({
      status: true,
      data: webhook
        ? {
            url: webhook.url,
            secret_hint: `${ctx.sealer.openText(webhook.secret, webhookSecretAad(account.id)).slice(0, 10)}…`,
          }
        : { url: null },
    });
  });

  router.delete('/webhook', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.transact((tx) => {
      tx.set('accounts', account.id, { ...tx.get('accounts', account.id)!, webhook: null });
    });
    res.json({ status: true, message: 'webhook removed', data: { url: null } });
  });
}

function walletRoutes(ctx: PaymentsContext, router: Router): void {
  const { store, logger, config } = ctx;
  router.get('/wallet/balance', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const balance_micros = await store.read((s) => balanceMicros(s, account.id), { fresh: true });
    res.json({
      status: true,
      data: {
        balance: microsToUnits(balance_micros),
        currency: config.currency,
      },
    });
  });
}
