// Admin routes of the payments room: eKYC review, service activation (only after approval),
// IP whitelists, the audit log, and a look at any transaction. Each change writes its audit
// record in the same commit.
import { Router } from 'express';
import { z } from 'zod';
import { accountView, requireAccount } from '../accounts/accounts.js';
import { ApiError, badRequest, conflict, notFound, parseWith } from '../http/errors.js';
import { table } from '../store/state.js';
import { selectTransactions, transactionsQuery } from './account-routes.js';
import type { PaymentsContext } from './context.js';
import { approveBody, auditQuery, kycListQuery, rejectBody, servicesBody, whitelistBody } from './schemas.js';
import { parseWhitelistEntry } from '../accounts/ip-whitelist.js';
import { submissionView } from './kyc.js';
import { readDocument } from './sealing.js';
import { clearSigningSecret, setSigningSecret } from './signing.js';
import { auditInTx } from './logs.js';
import { txnView } from './transactions.js';

const idParam = z.string().min(1).max(100);

export function paymentsAdminRouter(ctx: PaymentsContext): Router {
  const router = Router();
  kycRoutes(ctx, router);
  accountRoutes(ctx, router);
  transactionRoutes(ctx, router);
  return router;
}

/** eKYC review: the queue, one submission, its documents, approve and reject. */
const KYC_STATUSES = ['submitted', 'approved', 'rejected'] as const;

function kycRoutes(ctx: PaymentsContext, router: Router): void {
  const { store, config } = ctx;
  router.get('/kyc', async (req, res) => {
    const query = parseWith(kycListQuery, req.query);
    await store.readDurable();
    // Costs its page: the submissions of a status are an index kept with every commit (in
    // the order they took that status: a submission's `submitted_at` order for `submitted`);
    // all of them are walked in creation order. Totals are the index's sizes.
    const by_status = store.indexBy('kyc_submissions', 'status');
    const rows = table(store.state, 'kyc_submissions');
    const start = (query.page - 1) * query.limit;
    const page: Array<(typeof rows)[string]> = [];
    let total: number;
    if (query.status) {
      const ids = by_status.ids(query.status);
      total = ids.size;
      let i = 0;
      for (const id of ids) {
        if (i++ < start) continue;
        if (page.length >= query.limit) break;
        page.push(rows[id]!);
      }
    } else {
      total = KYC_STATUSES.reduce((sum, status) => sum + by_status.ids(status).size, 0);
      const { ids, count } = store.rowIds('kyc_submissions');
      let seen = 0;
      for (let i = 0; i < count && page.length < query.limit; i++) {
        if (!Object.hasOwn(rows, ids[i]!)) continue;
        if (seen++ >= start) page.push(rows[ids[i]!]!);
      }
    }
    res.json({ object: 'list', total, page: query.page, limit: query.limit, data: page.map(submissionView) });
  });

  router.get('/kyc/:accountId', async (req, res) => {
    const id = parseWith(idParam, req.params.accountId);
    await store.readDurable();
    const submission = store.get('kyc_submissions', id);
    if (!submission) throw notFound(`no eKYC submission for account ${id}`, 'kyc_not_found');
    res.json(submissionView(submission));
  });

  router.get('/kyc/:accountId/documents/:docId', async (req, res) => {
    const id = parseWith(idParam, req.params.accountId);
    const document = store.get('kyc_submissions', id)?.documents.find((d) => d.id === req.params.docId);
    if (!document) throw notFound('no such document', 'document_not_found');
    res.setHeader('content-type', document.content_type);
    res.setHeader('content-length', String(document.size_bytes));
    res.setHeader('content-disposition', `attachment; filename="${document.id}.${document.path.split('.').pop()}"`);
    res.setHeader('x-content-type-options', 'nosniff');
    res.end(readDocument(config.data_dir, document, ctx.sealer)); // at most kyc.max_file_bytes, decrypted in memory
  });

  const review = (decision: 'approved' | 'rejected') => async (req: import('express').Request, res: import('express').Response) => {
    const id = parseWith(idParam, req.params.accountId);
    const body = parseWith(decision === 'approved' ? approveBody : rejectBody, req.body ?? {});
    const submission = await store.transact((tx) => {
      const account = requireAccount(tx, id);
      const current = tx.get('kyc_submissions', id);
      if (!current) throw notFound(`account ${id} has not submitted eKYC`, 'kyc_not_found');
      if (current.status !== 'submitted') throw conflict(`the eKYC submission of ${id} is ${current.status} already`, 'kyc_not_under_review');
      const next = { ...current, status: decision, reason: body.reason ?? null, reviewed_at: tx.now.toISOString() };
      tx.set('kyc_submissions', id, next);
      tx.set('accounts', id, { ...account, kyc_status: decision });
      auditInTx(tx, req, res, { action: decision === 'approved' ? 'kyc.approve' : 'kyc.reject', account_id: id });
      return next;
    });
    res.json(submissionView(submission));
  };
  router.post('/kyc/:accountId/approve', review('approved'));
  router.post('/kyc/:accountId/reject', review('rejected'));
}

/** An account's payments settings: services (only after eKYC approval) and the IP whitelist. */
function accountRoutes(ctx: PaymentsContext, router: Router): void {
  const { store, config } = ctx;
  const view = (id: string) => accountView(store.state, requireAccount(store, id), config.currency);

  router.post('/accounts/:id/services', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    const body = parseWith(servicesBody, req.body ?? {});
    await store.transact((tx) => {
      const account = requireAccount(tx, id);
      const activating = Object.entries(body).filter(([, on]) => on).map(([name]) => name);
      if (activating.length > 0 && account.kyc_status !== 'approved') {
        throw new ApiError(
          409,
          'kyc_not_approved',
          `payments services (${activating.join(', ')}) can be activated only after eKYC approval; the eKYC status is ${account.kyc_status}`,
          activating[0]!,
        );
      }
      tx.set('accounts', id, { ...account, services: { ...account.services, ...body } });
      auditInTx(tx, req, res, { action: 'account.services', account_id: id });
    });
    res.json(view(id));
  });

  router.put('/accounts/:id/ip-whitelist', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    const body = parseWith(whitelistBody, req.body ?? {});
    const entries: string[] = [];
    body.ips.forEach((raw, index) => {
      const parsed = parseWhitelistEntry(raw);
      if ('error' in parsed) throw badRequest(`ips.${index}: ${parsed.error}`, `ips.${index}`, 'invalid_value');
      if (!entries.includes(parsed.entry)) entries.push(parsed.entry);
    });
    await store.transact((tx) => {
      const account = requireAccount(tx, id);
      tx.set('accounts', id, { ...account, ip_whitelist: entries });
      auditInTx(tx, req, res, { action: 'account.ip_whitelist', account_id: id, details: { ips: entries } });
    });
    res.json(view(id));
  });

  /** Turns signed /api requests on, or replaces the secret (the old one stops at once); the secret is shown once. */
  router.post('/accounts/:id/signing-secret', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    parseWith(z.strictObject({}), req.body ?? {});
    const created = await store.transact((tx) => {
      const account = requireAccount(tx, id);
      const result = setSigningSecret(tx, id, ctx.sealer);
      auditInTx(tx, req, res, { action: account.signing ? 'account.signing_rotate' : 'account.signing_enable', account_id: id, details: {} });
      return result;
    });
    res.status(201).json({
      account_id: id,
      secret: created.secret,
      created_at: created.created_at,
      headers: { timestamp: 'X-AIHub-Timestamp', signature: 'X-AIHub-Signature' },
      message: 'every /api request of this account must now be signed: X-AIHub-Signature = hex HMAC-SHA256(secret, timestamp + "." + raw body); the secret is shown only now',
    });
  });

  router.delete('/accounts/:id/signing-secret', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    await store.transact((tx) => {
      const account = requireAccount(tx, id);
      if (!account.signing) return;
      clearSigningSecret(tx, id);
      auditInTx(tx, req, res, { action: 'account.signing_disable', account_id: id, details: {} });
    });
    res.json(view(id));
  });
}

/** The audit log and any transaction: look, list, re-arm its status checks. */
function transactionRoutes(ctx: PaymentsContext, router: Router): void {
  const { store, engine } = ctx;
  router.get('/audit', async (req, res) => {
    const query = parseWith(auditQuery, req.query);
    await store.readDurable();
    const { total, rows } = store.reads.audit({ account_id: query.account_id ?? null, action: query.action }, { offset: (query.page - 1) * query.limit, limit: query.limit });
    res.json({ object: 'list', total, page: query.page, limit: query.limit, data: rows });
  });

  router.get('/transactions', async (req, res) => {
    const query = parseWith(transactionsQuery.extend({ account_id: z.string().max(100).optional() }), req.query);
    await store.readDurable();
    const { total, rows } = selectTransactions(store, query, query.account_id ?? null, { offset: (query.page - 1) * query.limit, limit: query.limit });
    res.json({ object: 'list', total, page: query.page, limit: query.limit, data: rows.map((t) => ({ account_id: t.account_id, ...txnView(t) })) });
  });

  router.get('/transactions/:txnId', async (req, res) => {
    await store.readDurable();
    const txn = store.get('payment_txns', String(req.params.txnId));
    if (!txn) throw notFound('no such transaction', 'transaction_not_found');
    res.json({ account_id: txn.account_id, ...txnView(txn) });
  });

  /** Re-arms status checks of a transaction whose checks ran out (never a blind refund). */
  router.post('/transactions/:txnId/recheck', async (req, res) => {
    const txn = store.get('payment_txns', String(req.params.txnId));
    if (!txn) throw notFound('no such transaction', 'transaction_not_found');
    if (txn.status !== 'pending') throw conflict(`transaction ${txn.id} is ${txn.status} already`, 'transaction_final');
    const next = await engine.rearm(txn.id);
    res.json({ account_id: next.account_id, ...txnView(next) });
  });
}
