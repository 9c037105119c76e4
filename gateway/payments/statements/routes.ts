// The tax documents over HTTP, as JSON, CSV or PDF, each in a report slot (the reports'
// admission and turns):
//   GET /api/reports/commission-statement?month=YYYY-MM (or from_month & to_month, ≤ 12)
//   GET /api/reports/tds-statement?fy=2025-26&quarter=Q1
// the key's account, or a distributor's retailer (`account_id`); and for administrators
//   GET /admin/reports/commission-statement?account_id=&month=
//   GET /admin/reports/tds-statement?fy=&quarter=[&account_id=]  (without one: every deductee)
import { Router, type Request, type Response } from 'express';
import { badRequest, parseWith } from '../../http/errors.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { reportForClient, reportSubject } from '../shared/report-slots.js';
import {
  deducteesCsv,
  deducteesPdf,
  statementCsv,
  statementPdf,
  statementTitle,
} from './documents.js';
import { operatorParty } from '../engine/tax.js';
import { accountStatement, tdsByDeductee, type Period } from './statements.js';
import { monthQuery, quarterQuery } from './schemas.js';

/** The most rows a PDF statement lists (about 60 pages); its CSV lists every one. */
const PDF_MAX_ROWS = 3_000;

type Kind = 'commission' | 'tds';

function send(
  res: Response,
  format: 'json' | 'csv' | 'pdf',
  name: string,
  json: () => unknown,
  csv: () => string,
  pdf: () => Buffer,
): void {
  res.setHeader('Cache-Control', 'no-store');
  if (format === 'json') {
    res.json(json());
    return;
  }
  const pdf_format = format === 'pdf';
  res.setHeader('Content-Type', pdf_format ? 'application/pdf' : 'text/csv; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="${name}.${format}"`);
  res.end(pdf_format ? pdf() : csv());
}

const fileName = (kind: Kind, account_id: string | null, period: Period) =>
  `${kind === 'tds' ? 'tds-statement' : 'commission-statement'}-${account_id ?? 'all'}-${period.label.replace(/[^A-Za-z0-9-]+/g, '_')}`;

/** One account's statement, answered as JSON (`wrap` shapes it), CSV or PDF. */
async function serveStatement(
  ctx: PaymentsContext,
  req: Request,
  res: Response,
  kind: Kind,
  who: string,
  account_id: string,
  query: { period: Period; format: 'json' | 'csv' | 'pdf' },
  wrap: (data: unknown) => unknown,
): Promise<void> {
  const max_rows = query.format === 'pdf' ? PDF_MAX_ROWS : ctx.settings.reports.csv_max_rows;
  await reportForClient(ctx, req, res, who, async (pacer) => {
    const statement = await accountStatement(ctx, kind, account_id, query.period, max_rows, pacer);
    pacer.end();
    send(
      res,
      query.format,
      fileName(kind, account_id, query.period),
      () => wrap({ document: statementTitle(statement), ...statement }),
      () => statementCsv(statement),
      () => statementPdf(statement, ctx.clock.now()),
    );
  });
}

/**
 * One account's statement for another surface (the dashboard), from its raw query
 * (`month`/`from_month`/`to_month`, or `fy` and `quarter`; `format`): JSON, CSV or PDF.
 */
export async function serveAccountStatement(
  ctx: PaymentsContext,
  req: Request,
  res: Response,
  kind: Kind,
  account_id: string,
  raw: Record<string, unknown>,
): Promise<void> {
  const query = parseWith(kind === 'tds' ? quarterQuery : monthQuery, raw);
  await serveStatement(ctx, req, res, kind, account_id, account_id, query, (data) => data);
}

export function statementsRouter(ctx: PaymentsContext): { api: Router; admin: Router } {
  const { store, logger } = ctx;
  const api = Router();
  const forKey = (kind: Kind) => async (req: Request, res: Response) => {
    const { account } = authorize(store.state, req, res, logger);
    const query = parseWith(kind === 'tds' ? quarterQuery : monthQuery, req.query);
    const subject = reportSubject(ctx, account.id, query.account_id);
    await serveStatement(ctx, req, res, kind, account.id, subject, query, (data) => ({
      status: true,
      data,
    }));
  };
  api.get('/reports/commission-statement', forKey('commission'));
  api.get('/reports/tds-statement', forKey('tds'));

  const admin = Router();
  admin.get('/reports/commission-statement', async (req, res) => {
    const query = parseWith(monthQuery, req.query);
    if (!query.account_id)
      throw badRequest('account_id: a commission statement is one account’s', 'account_id');
    await serveStatement(ctx, req, res, 'commission', 'admin', query.account_id, query, (d) => d);
  });
  admin.get('/reports/tds-statement', async (req, res) => {
    const query = parseWith(quarterQuery, req.query);
    if (query.account_id) {
      await serveStatement(ctx, req, res, 'tds', 'admin', query.account_id, query, (d) => d);
      return;
    }
    await reportForClient(ctx, req, res, 'admin', async (pacer) => {
      const deps = { ...ctx, tds_rate_bp: ctx.settings.tax.tds.rate };
      const { rows, totals } = await tdsByDeductee(deps, query.period, pacer);
      pacer.end();
      const operator = operatorParty(ctx.pricing, ctx.settings);
      send(
        res,
        query.format,
        fileName('tds', null, query.period),
        () => ({
          document: `TDS statement (section 194H), ${query.period.label}`,
          period: query.period,
          operator,
          totals,
          rows,
        }),
        () => deducteesCsv(query.period, rows),
        () => deducteesPdf(operator, query.period, rows, totals, ctx.clock.now()),
      );
    });
  });
  return { api, admin };
}
