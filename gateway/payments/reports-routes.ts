// GET /api/reports/:report (the caller's account) and GET /admin/reports/:report (any or
// every account), as JSON or, with `?format=csv`, as CSV of the same rows. A CSV without
// page/limit holds every matching row up to `reports.csv_max_rows`; with them, the same page.
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError, badRequest, parseWith } from '../http/errors.js';
import { authorize } from './auth.js';
import type { PaymentsContext } from './context.js';
import { reportsQuery } from './schemas.js';
import { MOBILE_PATTERN, normalizeMobile } from './validators.js';
import {
  REPORTS,
  reportAiUsage,
  reportApiLogs,
  reportCommissions,
  reportTransactions,
  reportWallet,
  toCsv,
  type ReportName,
  type ReportResult,
  type Scope,
} from './reports.js';

const JSON_MAX_LIMIT = 500;

/** A mobile number in any usual form (+91 98765 43210) becomes its ten digits; other numbers lose their spaces. */
function searchNumber(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const mobile = normalizeMobile(raw);
  return MOBILE_PATTERN.test(mobile) ? mobile : raw.replace(/\s/g, '').toUpperCase();
}

const STATUS_BY_REPORT: Record<ReportName, z.ZodType<string | undefined>> = {
  transactions: z.enum(['pending', 'success', 'failed']).optional(),
  commissions: z.enum(['success']).optional(),
  wallet: z.never({ error: 'does not apply to the wallet report' }).optional(),
  'api-logs': z
    .string()
    .regex(/^([1-5]\d\d|[1-5]xx)$/, 'must be an HTTP status (404) or a class (2xx, 4xx, 5xx)')
    .optional(),
  'ai-usage': z.enum(['ok', 'client_closed', 'upstream_error', 'stream_error']).optional(),
};

/** The wire protocols of /v1 (the chat room's names; payments does not import chat). */
const AI_PROTOCOLS = ['chat', 'responses', 'messages', 'embeddings', 'completions'] as const;

/** Reports running per account (`admin` for administrators' reports), by context. */
const running_reports = new WeakMap<PaymentsContext, Map<string, number>>();

/**
 * Runs one report unless the account already has `reports.max_concurrent_per_account`
 * running: a report reads history, and no key may hold the gateway's disk and event loop
 * with many at once (429, Retry-After: 1).
 */
export function runReport(
  ctx: PaymentsContext,
  report: ReportName,
  raw: Record<string, unknown>,
  scope: Scope,
): Promise<{ result: ReportResult; format: 'json' | 'csv' }> {
  return withReportSlot(ctx, scope.admin ? 'admin' : (scope.account_id ?? 'admin'), () =>
    computeReport(ctx, report, raw, scope),
  );
}

/** Runs `fn` in one of `who`'s report slots, or refuses with 429 when they are all taken. */
export async function withReportSlot<T>(
  ctx: PaymentsContext,
  who: string,
  fn: () => Promise<T>,
): Promise<T> {
  let running = running_reports.get(ctx);
  if (!running) running_reports.set(ctx, (running = new Map()));
  const now_running = running.get(who) ?? 0;
  if (now_running >= ctx.settings.reports.max_concurrent_per_account) {
    throw new ApiError(
      429,
      'rate_limit_exceeded',
      `${now_running} reports of this account are running, the most allowed at once; retry when one is done`,
      null,
      null,
      { 'Retry-After': '1' },
    );
  }
  running.set(who, now_running + 1);
  try {
    return await fn();
  } finally {
    const left = (running.get(who) ?? 1) - 1;
    if (left === 0) running.delete(who);
    else running.set(who, left);
  }
}

/** A report's query, validated against what that report takes, and the page it asks for. */
function parseReportQuery(ctx: PaymentsContext, report: ReportName, raw: Record<string, unknown>) {
  const query = parseWith(
    reportsQuery.extend({
      status: STATUS_BY_REPORT[report],
      method: z.enum(['GET', 'POST', 'PUT', 'DELETE']).optional(),
      protocol: z.enum(AI_PROTOCOLS).optional(),
    }),
    raw,
  );
  if (query.from !== undefined && query.to !== undefined && query.from > query.to)
    throw badRequest('from: must not be after to', 'from');
  if (query.method && report !== 'api-logs')
    throw badRequest('method: applies to the api-logs report only', 'method');
  if (query.protocol && report !== 'ai-usage')
    throw badRequest('protocol: applies to the ai-usage report only', 'protocol');
  const csv = query.format === 'csv';
  const max = csv ? ctx.settings.reports.csv_max_rows : JSON_MAX_LIMIT;
  if (query.limit !== undefined && query.limit > max)
    throw badRequest(
      `limit: must be at most ${max}${csv ? '' : ' (a CSV download takes more)'}`,
      'limit',
    );
  const paging = {
    page: query.page ?? 1,
    limit: query.limit ?? (csv && query.page === undefined ? max : 50),
    order: query.order,
  };
  return { query, paging, number: searchNumber(query.number ?? query.mobile) };
}

async function computeReport(
  ctx: PaymentsContext,
  report: ReportName,
  raw: Record<string, unknown>,
  scope: Scope,
): Promise<{ result: ReportResult; format: 'json' | 'csv' }> {
  const { query, paging, number } = parseReportQuery(ctx, report, raw);
  const store = ctx.store;
  await store.readDurable();
  const filter = {
    service: query.service,
    from: query.from,
    to: query.to,
    txn_id: query.txn_id,
    number,
  };
  let result: ReportResult;
  switch (report) {
    case 'transactions':
      result = await reportTransactions(
        store,
        { ...filter, status: query.status as 'pending' | 'success' | 'failed' | undefined },
        paging,
        scope,
      );
      break;
    case 'commissions':
      result = await reportCommissions(store, filter, paging, scope);
      break;
    case 'wallet':
      result = await reportWallet(store, filter, paging, scope);
      break;
    case 'api-logs':
      if (number !== undefined)
        throw badRequest('number: does not apply to the api-logs report', 'number');
      result = await reportApiLogs(
        store,
        { ...filter, status: query.status, method: query.method },
        paging,
        scope,
      );
      break;
    case 'ai-usage':
      if (number !== undefined || query.service !== undefined || query.txn_id !== undefined)
        throw badRequest(
          'number, service and txn_id: do not apply to the ai-usage report',
          number !== undefined ? 'number' : query.service !== undefined ? 'service' : 'txn_id',
        );
      if (scope.account_id === null)
        throw badRequest(
          'account_id: the ai-usage report is kept per account; name one',
          'account_id',
        );
      result = await reportAiUsage(
        store,
        { from: query.from, to: query.to, protocol: query.protocol, status: query.status },
        paging,
        scope,
      );
      break;
  }
  return { result, format: query.format };
}

function sendReport(
  res: Response,
  result: ReportResult,
  format: 'json' | 'csv',
  body: (result: ReportResult) => unknown,
): void {
  res.setHeader('X-Total-Count', String(result.total));
  if (format === 'csv') {
    res.setHeader('Content-Type', 'text/csv; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="${result.report}.csv"`);
    res.setHeader('Cache-Control', 'no-store');
    res.send(toCsv(result.columns, result.rows));
    return;
  }
  res.json(body(result));
}

const reportParam = z.object({
  report: z.enum(REPORTS, { error: `must be one of ${REPORTS.join(', ')}` }),
});

function jsonView(result: ReportResult) {
  const { columns, rows, ...rest } = result;
  return { ...rest, columns, rows };
}

export function reportsRouter(ctx: PaymentsContext): { api: Router; admin: Router } {
  const { store, logger } = ctx;
  const api = Router();
  api.get('/reports/:report', async (req: Request, res: Response) => {
    const { account } = authorize(store.state, req, res, logger);
    const { report } = parseWith(reportParam, req.params);
    if (req.query.account_id !== undefined)
      throw badRequest(
        'account_id: reports of other accounts are for administrators (GET /admin/reports/...)',
        'account_id',
      );
    const { result, format } = await runReport(ctx, report, req.query as Record<string, unknown>, {
      account_id: account.id,
    });
    sendReport(res, result, format, (r) => ({ status: true, data: jsonView(r) }));
  });

  const admin = Router();
  admin.get('/reports/:report', async (req: Request, res: Response) => {
    const { report } = parseWith(reportParam, req.params);
    const account_id = typeof req.query.account_id === 'string' ? req.query.account_id : null;
    const { result, format } = await runReport(ctx, report, req.query as Record<string, unknown>, {
      account_id,
      admin: true,
    });
    sendReport(res, result, format, (r) => ({ object: 'report', account_id, ...jsonView(r) }));
  });
  return { api, admin };
}
