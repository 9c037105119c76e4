// The GST documents over HTTP (docs/payments-api.md, "GST invoices"):
//   GET /api/reports/gst-invoices?month=YYYY-MM[&format=json|pdf][&account_id=<retailer>]
//   GET /admin/reports/gst-invoices?month=YYYY-MM&account_id=...
// A month's documents exist once the month is over in India: the first request for it (or a
// later month) issues them (issue.ts), in a report slot; every later one reads them.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { badRequest, conflict, parseWith } from '../../http/errors.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { reportForClient, reportSubject } from '../shared/report-slots.js';
import { operatorParty } from '../engine/tax.js';
import { documentView, documentsPdf } from './documents.js';
import { documentsOf, issueThrough, monthClosed, type IssueDeps } from './issue.js';
import { istMonth, istMonthStartMs, nextMonth, previousMonth } from './movements.js';

export const gstInvoicesQuery = z.strictObject({
  month: z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'must be YYYY-MM'),
  format: z.enum(['json', 'pdf']).default('json'),
  account_id: z.string().max(100).optional(),
});

/** One issuing pass per gateway at a time: concurrent requests wait for it, then read. */
const issuing = new WeakMap<PaymentsContext, Promise<void>>();

async function coalesced(ctx: PaymentsContext, run: () => Promise<void>): Promise<void> {
  for (;;) {
    const running = issuing.get(ctx);
    if (!running) break;
    await running.catch(() => {});
  }
  const pass = run();
  issuing.set(ctx, pass);
  try {
    await pass;
  } finally {
    if (issuing.get(ctx) === pass) issuing.delete(ctx);
  }
}

/**
 * Issues the documents of every month that is over (the room's background work calls it at
 * each pruning interval, on the leader): a month's documents are issued in the days after it
 * ends whether or not anyone asks for them (CGST Rules, rule 47: within 30 days of the supply).
 */
export async function issueClosedMonths(ctx: PaymentsContext, signal: AbortSignal): Promise<void> {
  const last = previousMonth(istMonth(ctx.clock.now().getTime()));
  const pacer = ctx.store.reads.turns.pacer(signal);
  try {
    await coalesced(ctx, () => issueThrough(issueDeps(ctx), last, pacer));
  } finally {
    pacer.end();
  }
}

function issueDeps(ctx: PaymentsContext): IssueDeps {
  const tax = ctx.settings.tax;
  return {
    store: ctx.store,
    pricing: ctx.pricing,
    settings: ctx.settings,
    clock: ctx.clock,
    invoices: {
      sac: tax.gst.sac,
      prefix: tax.invoices.prefix,
      credit_prefix: tax.invoices.credit_prefix,
      from_month: tax.invoices.from_month,
    },
  };
}

async function serve(
  ctx: PaymentsContext,
  req: Request,
  res: Response,
  who: string,
  account_id: string,
  query: z.output<typeof gstInvoicesQuery>,
  wrap: (data: unknown) => unknown,
): Promise<void> {
  if (!monthClosed(query.month, ctx.clock.now()))
    throw conflict(
      `the GST documents of ${query.month} are issued once the month is over in India (from ${new Date(istMonthStartMs(nextMonth(query.month))).toISOString()})`,
      'month_not_closed',
      'month',
    );
  await reportForClient(ctx, req, res, who, async (pacer) => {
    await coalesced(ctx, () => issueThrough(issueDeps(ctx), query.month, pacer));
    const documents = await documentsOf(ctx.store, account_id, query.month);
    pacer.end();
    const title = `GST documents of ${account_id}, ${query.month}`;
    res.setHeader('Cache-Control', 'no-store');
    if (query.format === 'pdf') {
      res.setHeader('Content-Type', 'application/pdf');
      res.setHeader(
        'Content-Disposition',
        `attachment; filename="gst-invoices-${account_id}-${query.month}.pdf"`,
      );
      res.end(documentsPdf(title, documents, ctx.clock.now()));
      return;
    }
    res.json(
      wrap({
        document: title,
        month: query.month,
        account_id,
        supplier: operatorParty(ctx.pricing, ctx.settings),
        documents: documents.map(documentView),
      }),
    );
  });
}

export function invoicesRouter(ctx: PaymentsContext): { api: Router; admin: Router } {
  const api = Router();
  api.get('/reports/gst-invoices', async (req, res) => {
    const { account } = authorize(ctx.store.state, req, res, ctx.logger);
    const query = parseWith(gstInvoicesQuery, req.query);
    const subject = reportSubject(ctx, account.id, query.account_id);
    await serve(ctx, req, res, account.id, subject, query, (data) => ({ status: true, data }));
  });
  const admin = Router();
  admin.get('/reports/gst-invoices', async (req, res) => {
    const query = parseWith(gstInvoicesQuery, req.query);
    if (!query.account_id)
      throw badRequest('account_id: GST documents are one account’s', 'account_id');
    await serve(ctx, req, res, 'admin', query.account_id, query, (data) => data);
  });
  return { api, admin };
}
