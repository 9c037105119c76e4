// Bill payment over /api: the biller catalogue, bill fetch, payment and the receipt of each
// payment as HTML or PDF. Each route validates, calls one command of bills/commands.ts
// (where the rules are) and presents.
import { timingSafeEqual } from 'node:crypto';
import { Router, type Response } from 'express';
import { notFound, parseWith } from '../../http/errors.js';
import { jsonBody } from '../../http/body.js';
import { authorize } from '../auth.js';
import { LEGACY_HEADERS, billsCommands, legacyShape } from './commands.js';
import { billView, billerView, categoriesView, receiptUrl } from './views.js';
import {
  complaintBody,
  complaintIdSchema,
  complaintView,
  readComplaint,
  registerComplaint,
} from './complaints.js';
import type { Biller } from './config.js';
import type { PaymentsContext } from '../context.js';
import { idempotencyKey } from '../engine/intent.js';
import { receiptHtml, receiptPdf } from './receipt.js';
import { billersQuery, fetchBody, payBody, receiptQuery, validateBody } from './schemas.js';

function sameToken(given: string, expected: unknown): boolean {
  if (typeof expected !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function billsRouter(ctx: PaymentsContext): Router {
  const { store, logger, config } = ctx;
  const router = Router();
  const bills = billsCommands(ctx);
  /** The shape from before BBPS: refused while switched off; on, its answers say it is deprecated. */
  const shape = (res: Response, body: { biller_id: string; consumer_number?: string }) => {
    if (legacyShape(ctx.settings, body.biller_id, body))
      for (const [name, value] of Object.entries(LEGACY_HEADERS)) res.setHeader(name, value);
  };

  catalogueRoutes(router, ctx);

  router.post('/bills/fetch', jsonBody(config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'bills');
    const body = parseWith(fetchBody, req.body ?? {});
    shape(res, body);
    const { bill, biller } = await bills.fetch(account, body);
    res.json({ status: true, data: billView(bill, biller) });
  });

  router.post('/bills/validate', jsonBody(config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'bills');
    const body = parseWith(validateBody, req.body ?? {});
    shape(res, body);
    const { bill, biller } = await bills.validate(account, body);
    res.json({ status: true, data: billView(bill, biller) });
  });

  router.post('/bills/pay', jsonBody(config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'bills');
    const body = parseWith(payBody, req.body ?? {});
    shape(res, body);
    const answer = await bills.pay(account, body, idempotencyKey(req, body.client_ref));
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  router.get('/bills/receipt/:txn_id', async (req, res) => {
    const query = parseWith(receiptQuery, req.query);
    const txn_id = String(req.params.txn_id).slice(0, 64);
    const txn = await store.fetch('payment_txns', txn_id);
    if (query.token !== undefined) {
      if (txn?.service !== 'bills' || !sameToken(query.token, txn.details.receipt_token))
        throw notFound(`no receipt ${txn_id}`, 'receipt_not_found');
    } else {
      const { account } = authorize(store.state, req, res, logger);
      if (txn?.service !== 'bills' || txn.account_id !== account.id)
        throw notFound(`no bill payment ${txn_id}`, 'receipt_not_found');
    }
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (query.format === 'pdf') {
      const pdf = receiptPdf(txn, config.currency);
      res.setHeader('Content-Type', 'application/pdf');
      res.setHeader('Content-Disposition', `inline; filename="receipt-${txn.id}.pdf"`);
      res.send(pdf);
      return;
    }
    const pdf_url = `${receiptUrl(ctx.public_url(), txn)}&format=pdf`;
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    res.type('html').send(receiptHtml(txn, config.currency, pdf_url));
  });

  complaintRoutes(router, ctx, bills.requireBiller);
  return router;
}

/** BBPS complaints: register one (about a payment, or a biller's or the agent's service), read one, list them. */
function complaintRoutes(
  router: Router,
  ctx: PaymentsContext,
  requireBiller: (biller_id: string) => Biller,
): void {
  const { store, logger, config } = ctx;
  router.post('/bills/complaints', jsonBody(config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'bills');
    const body = parseWith(complaintBody, req.body ?? {});
    if (body.txn_id) res.locals.txn_id = body.txn_id;
    const complaint = await registerComplaint(ctx, account, body, requireBiller);
    res.status(201).json({
      status: true,
      message: `complaint registered with BBPS as ${complaint.complaint_ref ?? complaint.id}; GET /api/bills/complaints/${complaint.id} follows it`,
      data: complaintView(complaint),
    });
  });

  router.get('/bills/complaints/:complaint_id', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'bills');
    const id = parseWith(complaintIdSchema, req.params.complaint_id);
    res.json({ status: true, data: complaintView(await readComplaint(ctx, account, id)) });
  });

  router.get('/bills/complaints', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'bills');
    const list = (await store.list('bill_complaints', 'account_id', account.id))
      .sort((a, b) => b.created_at.localeCompare(a.created_at))
      .slice(0, 500);
    res.json({ status: true, data: list.map(complaintView) });
  });
}

/** The catalogue: BBPS categories (counted once: the catalogue is configuration) and billers. */
function catalogueRoutes(router: Router, ctx: PaymentsContext): void {
  const { store, logger, settings } = ctx;
  const categories = categoriesView(settings.bills.billers);
  router.get('/bills/categories', (req, res) => {
    authorize(store.state, req, res, logger);
    res.json({ status: true, data: categories });
  });

  router.get('/bills/billers', (req, res) => {
    authorize(store.state, req, res, logger);
    const query = parseWith(billersQuery, req.query);
    const words = query.q?.toLowerCase();
    res.json({
      status: true,
      data: settings.bills.billers
        .filter((b) => !query.category || b.category === query.category)
        .filter(
          (b) =>
            !words ||
            b.name.toLowerCase().includes(words) ||
            b.biller_id.toLowerCase().includes(words),
        )
        .map(billerView),
    });
  });
}
