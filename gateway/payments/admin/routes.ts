// Admin routes of the payments room: eKYC review, service activation (only after approval),
// IP whitelists, request signing, the audit log, and a look at any transaction. Each route
// validates, calls one command of admin/commands.ts (where the rules are) and presents; each
// change writes its audit record in the same commit.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { accountView, requireAccount } from '../../accounts/accounts.js';
import { notFound, parseWith } from '../../http/errors.js';
import { table } from '../../store/state.js';
import { adminTransactionsQuery, selectTransactions } from '../engine/txn-filter.js';
import type { PaymentsContext } from '../context.js';
import {
  approveBody,
  auditQuery,
  kycListQuery,
  reasonBody,
  recheckBody,
  rejectBody,
  servicesBody,
  whitelistBody,
} from './schemas.js';
import { submissionView } from '../shared/kyc-view.js';
import { duplicateIndexes, duplicatesOf } from '../identity/duplicates.js';
import type { KycSubmission } from '../engine/tables.js';
import { readDocument } from '../sealing.js';
import {
  TRANSACTION_ACTIONS,
  disableSigning,
  enableSigning,
  moveTransaction,
  reviewKyc,
  setIpWhitelist,
  setServices,
} from './commands.js';
import { auditInTx, type Audit } from '../logs.js';
import { txnView } from '../engine/transactions.js';

// Every schema is built once, here, never per request.
const idParam = z.string().min(1).max(100);
const emptyBody = z.strictObject({});

/** The commands' audit writer for this request: who asked, from where, in the change's commit. */
const auditOf =
  (req: Request, res: Response): Audit =>
  (tx, entry) =>
    auditInTx(tx, req, res, entry);

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
  duplicateIndexes(store); // declared before the first request (PostgreSQL builds them)
  /** Submissions as the admin sees them: each with the other accounts of its Aadhaar and PAN. */
  const flagged = async (submissions: KycSubmission[]) => {
    const duplicates = await store.read(() => submissions.map((s) => duplicatesOf(store, s)));
    return submissions.map((s, i) => ({ ...submissionView(s), duplicates: duplicates[i]! }));
  };
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
      total = await store.read(() =>
        KYC_STATUSES.reduce((sum, status) => sum + by_status.ids(status).size, 0),
      );
      page.push(...(await store.page('kyc_submissions', { offset: start, limit: query.limit })));
    }
    res.json({
      object: 'list',
      total,
      page: query.page,
      limit: query.limit,
      data: await flagged(page),
    });
  });

  router.get('/kyc/:accountId', async (req, res) => {
    const id = parseWith(idParam, req.params.accountId);
    await store.readDurable();
    const submission = store.get('kyc_submissions', id);
    if (!submission) throw notFound(`no eKYC submission for account ${id}`, 'kyc_not_found');
    res.json((await flagged([submission]))[0]);
  });

  router.get('/kyc/:accountId/documents/:docId', async (req, res) => {
    const id = parseWith(idParam, req.params.accountId);
    const document = store
      .get('kyc_submissions', id)
      ?.documents.find((d) => d.id === req.params.docId);
    if (!document) throw notFound('no such document', 'document_not_found');
    res.setHeader('content-type', document.content_type);
    res.setHeader('content-length', String(document.size_bytes));
    res.setHeader(
      'content-disposition',
      `attachment; filename="${document.id}.${document.path.split('.').pop()}"`,
    );
    res.setHeader('x-content-type-options', 'nosniff');
    res.end(readDocument(config.data_dir, document, ctx.sealer)); // at most kyc.max_file_bytes, decrypted in memory
  });

  const review = (decision: 'approved' | 'rejected') => async (req: Request, res: Response) => {
    const id = parseWith(idParam, req.params.accountId);
    const body = parseWith(decision === 'approved' ? approveBody : rejectBody, req.body ?? {});
    const submission = await reviewKyc(store, id, decision, body.reason ?? null, auditOf(req, res));
    res.json(submissionView(submission));
  };
  router.post('/kyc/:accountId/approve', review('approved'));
  router.post('/kyc/:accountId/reject', review('rejected'));
}

/** An account's payments settings: services (only after eKYC approval) and the IP whitelist. */
function accountRoutes(ctx: PaymentsContext, router: Router): void {
  const { store, config } = ctx;
  const view = (id: string) => accountView(store.state, requireAccount(store, id), config.currency);
  const services_body = servicesBody(ctx.services.map((service) => service.code));

  router.post('/accounts/:id/services', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    const body = parseWith(services_body, req.body ?? {});
    await setServices(store, id, body, auditOf(req, res));
    res.json(view(id));
  });

  router.put('/accounts/:id/ip-whitelist', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    const body = parseWith(whitelistBody, req.body ?? {});
    await setIpWhitelist(store, id, body.ips, auditOf(req, res), {
      floor: {
        ipv4: ctx.settings.ip_whitelist.min_prefix_ipv4,
        ipv6: ctx.settings.ip_whitelist.min_prefix_ipv6,
      },
      force: body.force === true,
    });
    res.json(view(id));
  });

  /** Turns signed /api requests on, or replaces the secret (the old one stops at once); the secret is shown once. */
  router.post('/accounts/:id/signing-secret', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    parseWith(emptyBody, req.body ?? {});
    const created = await enableSigning(store, ctx.sealer, id, auditOf(req, res));
    res.status(201).json({
      account_id: id,
      secret: created.secret,
      created_at: created.created_at,
      headers: { timestamp: 'X-AIHub-Timestamp', signature: 'X-AIHub-Signature' },
      scheme: 'v2',
      message:
        'every /api request of this account must now be signed: X-AIHub-Signature = "v2=" + hex HMAC-SHA256(secret, "v2\\n" + timestamp + "\\n" + METHOD + "\\n" + path with query + "\\n" + raw body); the secret is shown only now',
    });
  });

  router.delete('/accounts/:id/signing-secret', async (req, res) => {
    const id = parseWith(idParam, req.params.id);
    await disableSigning(store, id, auditOf(req, res));
    res.json(view(id));
  });
}

/** The audit log and any transaction: look, list, re-arm its status checks. */
function transactionRoutes(ctx: PaymentsContext, router: Router): void {
  const { store, engine } = ctx;
  router.get('/audit', async (req, res) => {
    const query = parseWith(auditQuery, req.query);
    await store.readDurable();
    const { total, rows } = await store.reads.audit(
      { account_id: query.account_id ?? null, action: query.action },
      { offset: (query.page - 1) * query.limit, limit: query.limit },
    );
    res.json({ object: 'list', total, page: query.page, limit: query.limit, data: rows });
  });

  router.get('/transactions', async (req, res) => {
    const query = parseWith(adminTransactionsQuery, req.query);
    await store.readDurable();
    const { total, rows } = await selectTransactions(store, query, query.account_id ?? null, {
      offset: (query.page - 1) * query.limit,
      limit: query.limit,
    });
    res.json({
      object: 'list',
      total,
      page: query.page,
      limit: query.limit,
      data: rows.map((t) => ({ account_id: t.account_id, ...txnView(t) })),
    });
  });

  router.get('/transactions/:txnId', async (req, res) => {
    const txn = await store.fetch('payment_txns', String(req.params.txnId));
    if (!txn) throw notFound('no such transaction', 'transaction_not_found');
    res.json({ account_id: txn.account_id, ...txnView(txn) });
  });

  /**
   * Moves a transaction by hand (docs/payments-api.md, "Statuses and transitions"): recheck
   * (on_hold → pending, status checks re-armed; never a blind refund), hold (pending →
   * on_hold), refund (on_hold | refund_pending → refunded), reverse (success → reversed).
   * A reason is required except for a re-check; each is audited in its commit.
   */
  for (const action of TRANSACTION_ACTIONS) {
    router.post(`/transactions/:txnId/${action}`, async (req, res) => {
      const body = parseWith(action === 'recheck' ? recheckBody : reasonBody, req.body ?? {});
      const next = await moveTransaction(
        store,
        engine,
        parseWith(idParam, req.params.txnId),
        action,
        body.reason ?? 're-check requested by an operator',
        auditOf(req, res),
      );
      res.json({ account_id: next.account_id, ...txnView(next) });
    });
  }
}
