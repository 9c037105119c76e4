// The account's own views: transactions, the webhook URL, and the wallet (balance, history).
import { Router } from 'express';
import { z } from 'zod';
import { jsonBody } from '../app.js';
import { badRequest, notFound, parseWith } from '../http/errors.js';
import { balanceMicros, heldMicros, walletAccount } from '../ledger/ledger.js';
import { durableHistory } from '../store/history.js';
import { microsToUnits } from '../util/money.js';
import { authorize } from './auth.js';
import type { PaymentsContext } from './context.js';
import type { PaymentTxn } from './tables.js';
import { txnView } from './transactions.js';
import { isPrivateAddress, newWebhookSecret } from './webhooks.js';

const SERVICES = ['recharge', 'dmt', 'pan', 'bills'] as const;

/** `2025-01-31` (the whole day, UTC) or a full ISO timestamp. */
const dateBound = (end: boolean) =>
  z
    .string()
    .max(40)
    .transform((text, ctx) => {
      const day = /^\d{4}-\d{2}-\d{2}$/.test(text);
      const ms = Date.parse(day ? `${text}T00:00:00.000Z` : text);
      if (Number.isNaN(ms)) {
        ctx.addIssue({ code: 'custom', message: 'must be a date (YYYY-MM-DD) or an ISO timestamp' });
        return z.NEVER;
      }
      return day && end ? ms + 86_400_000 - 1 : ms;
    });

const page = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(500).default(50),
};

export const transactionsQuery = z.object({
  service: z.enum(SERVICES).optional(),
  status: z.enum(['pending', 'success', 'failed']).optional(),
  number: z.string().max(32).optional(),
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  ...page,
});

const historyQuery = z.object({
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  txn_id: z.string().max(64).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
  ...page,
});

const webhookBody = z.strictObject({ url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2_048) });

export function filterTransactions(rows: Iterable<PaymentTxn>, query: z.output<typeof transactionsQuery>, account_id: string | null): PaymentTxn[] {
  const list: PaymentTxn[] = [];
  for (const txn of rows) {
    if (account_id !== null && txn.account_id !== account_id) continue;
    if (query.service && txn.service !== query.service) continue;
    if (query.status && txn.status !== query.status) continue;
    if (query.number && txn.subject !== query.number) continue;
    const at = Date.parse(txn.created_at);
    if (query.from !== undefined && at < query.from) continue;
    if (query.to !== undefined && at > query.to) continue;
    list.push(txn);
  }
  return list.sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id));
}

export function accountRouter(ctx: PaymentsContext): Router {
  const { store, logger, config, webhooks } = ctx;
  const router = Router();

  router.get('/transactions/:txn_id', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.transact(() => undefined);
    const txn = store.get('payment_txns', String(req.params.txn_id));
    if (!txn || txn.account_id !== account.id) throw notFound(`no transaction ${String(req.params.txn_id).slice(0, 64)}`, 'transaction_not_found');
    res.json({ status: true, data: txnView(txn) });
  });

  router.get('/transactions', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const query = parseWith(transactionsQuery, req.query);
    await store.transact(() => undefined);
    const list = filterTransactions(Object.values(store.rows('payment_txns')), query, account.id);
    const start = (query.page - 1) * query.limit;
    res.json({ status: true, data: { total: list.length, page: query.page, limit: query.limit, transactions: list.slice(start, start + query.limit).map(txnView) } });
  });

  router.put('/webhook', jsonBody(config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const body = parseWith(webhookBody, req.body ?? {});
    const host = new URL(body.url).hostname.replace(/^\[|\]$/g, '');
    if (!webhooks.allow_private && (host === 'localhost' || isPrivateAddress(host))) {
      throw badRequest('url: private and loopback addresses are not allowed for webhooks', 'url', 'invalid_value');
    }
    const secret = newWebhookSecret();
    await store.transact((tx) => {
      tx.set('accounts', account.id, { ...tx.get('accounts', account.id)!, webhook: { url: body.url, secret } });
    });
    res.json({
      status: true,
      message: 'webhook set: final transaction statuses are POSTed there, signed in X-AIHub-Signature (hex HMAC-SHA256 of the raw body with this secret)',
      data: { url: body.url, secret },
    });
  });

  router.get('/webhook', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.transact(() => undefined);
    const webhook = store.get('accounts', account.id)?.webhook;
    res.json({ status: true, data: webhook ? { url: webhook.url, secret_hint: `${webhook.secret.slice(0, 10)}…` } : { url: null } });
  });

  router.delete('/webhook', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.transact((tx) => {
      tx.set('accounts', account.id, { ...tx.get('accounts', account.id)!, webhook: null });
    });
    res.json({ status: true, message: 'webhook removed', data: { url: null } });
  });

  router.get('/wallet/balance', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.transact(() => undefined);
    res.json({ status: true, data: { balance: microsToUnits(balanceMicros(store.state, account.id)), currency: config.currency } });
  });

  router.get('/wallet/history', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const query = parseWith(historyQuery, req.query);
    if (query.from !== undefined && query.to !== undefined && query.from > query.to) throw badRequest('from: must not be after to', 'from');
    const wallet = walletAccount(account.id);
    let running = 0;
    let opening: number | null = null;
    const entries = [];
    for await (const item of durableHistory(store)) {
      if (!('posting' in item)) continue;
      const amount_micros = item.posting.entries.find(([ledger_account]) => ledger_account === wallet)?.[1];
      if (amount_micros === undefined) continue;
      const at = Date.parse(item.posting.ts);
      if (query.to !== undefined && at > query.to) break;
      const before = running;
      running += amount_micros;
      if (query.from !== undefined && at < query.from) continue;
      opening ??= before;
      if (query.txn_id && item.posting.ref !== query.txn_id) continue;
      entries.push({
        posting_id: item.posting.id,
        at: item.posting.ts,
        memo: item.posting.memo,
        kind: kindOf(item.posting.hold?.action, amount_micros, item.posting.memo),
        amount: microsToUnits(amount_micros),
        opening_balance: microsToUnits(before),
        closing_balance: microsToUnits(running),
        ref: item.posting.ref ?? null,
      });
    }
    const opening_micros = opening ?? running;
    if (query.order === 'desc') entries.reverse();
    const start = (query.page - 1) * query.limit;
    res.json({
      status: true,
      data: {
        currency: config.currency,
        opening_balance: microsToUnits(opening_micros),
        closing_balance: microsToUnits(running),
        balance: microsToUnits(balanceMicros(store.state, account.id)),
        held: microsToUnits(heldMicros(store.state, account.id)),
        total: entries.length,
        page: query.page,
        limit: query.limit,
        entries: entries.slice(start, start + query.limit),
      },
    });
  });

  return router;
}

function kindOf(hold_action: string | undefined, amount_micros: number, memo: string): string {
  if (hold_action === 'open') return 'hold';
  if (hold_action === 'void') return 'refund';
  if (hold_action === 'capture') return 'release';
  if (memo.includes('commission')) return 'commission';
  return amount_micros > 0 ? 'credit' : 'debit';
}
