// GET /api/reports/:report (the caller's account) and GET /admin/reports/:report (any or
// every account), as JSON or, with `?format=csv`, as CSV of the same rows. A CSV without
// page/limit holds every matching row (as many as X-Total-Count says); with them, the same
// page (a limit of at most `reports.csv_max_rows`).
// A CSV is streamed as its rows are read (its total counted first, for X-Total-Count, both
// passes as of one snapshot of the history), and a report whose client goes away is dropped
// from the queue, or stopped at its next turn.
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { badRequest, parseWith } from '../../http/errors.js';
import { balanceMicros, heldMicros } from '../../ledger/ledger.js';
import type { Pacer } from '../../store/turns.js';
import { microsToUnits } from '../../util/money.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { TXN_STATUSES, type TxnStatus } from '../engine/tables.js';
import { MOBILE_PATTERN, normalizeMobile } from '../identity/mobile.js';
import { streamCsv, type Row } from '../shared/csv.js';
import {
  downloadsWaiting,
  reportForClient,
  reportSubject,
  withReportSlot,
} from '../shared/report-slots.js';
import { historyQuery, reportsQuery } from './schemas.js';
import {
  REPORTS,
  aiUsageRows,
  apiLogRows,
  commissionRows,
  reportAiUsage,
  reportApiLogs,
  reportCommissions,
  reportTransactions,
  reportWallet,
  transactionRows,
  walletRows,
  type Paging,
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
  transactions: z.enum(TXN_STATUSES).optional(),
  commissions: z.enum(['success']).optional(),
  wallet: z.never({ error: 'does not apply to the wallet report' }).optional(),
  'api-logs': z
    .string()
    .regex(/^([1-5]\d\d|[1-5]xx)$/, 'must be an HTTP status (404) or a class (2xx, 4xx, 5xx)')
    .optional(),
  'ai-usage': z.enum(['ok', 'client_closed', 'upstream_error', 'stream_error']).optional(),
};

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
  signal?: AbortSignal,
): Promise<{ result: ReportResult; format: 'json' | 'csv' }> {
  const { query, plan, paging } = planReport(ctx, report, raw, scope);
  const run = async () => {
    const pacer = ctx.store.reads.turns.pacer(signal);
    try {
      await ctx.store.readDurable();
      return { result: await plan.run(paging, pacer), format: query.format };
    } finally {
      pacer.end();
    }
  };
  return withReportSlot(ctx, slotOwner(scope), run, signal);
}

const slotOwner = (scope: Scope) => (scope.admin ? 'admin' : (scope.account_id ?? 'admin'));

/** Each report's query schema, built once (not per request). */
const QUERY_BY_REPORT = Object.fromEntries(
  REPORTS.map((report) => [report, reportQuerySchema(report)]),
) as { [R in ReportName]: ReturnType<typeof reportQuerySchema> };

function reportQuerySchema(report: ReportName) {
  return reportsQuery.extend({
    status: STATUS_BY_REPORT[report],
    method: z.enum(['GET', 'POST', 'PUT', 'DELETE']).optional(),
    protocol: z.string().max(32).optional(),
  });
}

/** A report's query, validated against what that report takes, and the page it asks for. */
function parseReportQuery(ctx: PaymentsContext, report: ReportName, raw: Record<string, unknown>) {
  const query = parseWith(QUERY_BY_REPORT[report], raw);
  if (query.from !== undefined && query.to !== undefined && query.from > query.to)
    throw badRequest('from: must not be after to', 'from');
  if (query.method && report !== 'api-logs')
    throw badRequest('method: applies to the api-logs report only', 'method');
  if (query.protocol && report !== 'ai-usage')
    throw badRequest('protocol: applies to the ai-usage report only', 'protocol');
  // The chat room's protocol names, handed in by main.ts (payments does not import chat).
  if (
    query.protocol !== undefined &&
    ctx.ai_protocols &&
    !ctx.ai_protocols.includes(query.protocol)
  )
    throw badRequest(`protocol: must be one of ${ctx.ai_protocols.join(', ')}`, 'protocol');
  const csv = query.format === 'csv';
  const max = csv ? ctx.settings.reports.csv_max_rows : JSON_MAX_LIMIT;
  if (query.limit !== undefined && query.limit > max)
    throw badRequest(
      `limit: must be at most ${max}${csv ? '' : ' (a CSV download takes more)'}`,
      'limit',
    );
  const paging = {
    page: query.page ?? 1,
    // A whole download is every row, streamed (never cut short of its X-Total-Count).
    limit: query.limit ?? (csv && query.page === undefined ? Number.MAX_SAFE_INTEGER : 50),
    order: query.order,
  };
  return { query, paging, number: searchNumber(query.number ?? query.mobile) };
}

/** The filters a report does not take, named (400). */
function checkFilters(
  report: ReportName,
  query: { service?: string | undefined; txn_id?: string | undefined },
  number: string | undefined,
  scope: Scope,
): void {
  if (report === 'api-logs' && number !== undefined)
    throw badRequest('number: does not apply to the api-logs report', 'number');
  if (report !== 'ai-usage') return;
  if (number !== undefined || query.service !== undefined || query.txn_id !== undefined)
    throw badRequest(
      'number, service and txn_id: do not apply to the ai-usage report',
      number !== undefined ? 'number' : query.service !== undefined ? 'service' : 'txn_id',
    );
  if (scope.account_id === null)
    throw badRequest('account_id: the ai-usage report is kept per account; name one', 'account_id');
}

/** A report's two ways of running over one validated query, each in turns of a pacer. */
interface ReportPlan {
  /** Its totals and one page (the JSON answer; with limit 0, the totals alone). */
  run(paging: Paging, pacer: Pacer): Promise<ReportResult>;
  /** Its page's rows alone, in order, a batch at a time (a CSV download). */
  rows(paging: Paging, pacer: Pacer): AsyncGenerator<Row[]>;
}

/** Validates a report's query (400 before any slot is taken) and says how to run it. */
function planReport(
  ctx: PaymentsContext,
  report: ReportName,
  raw: Record<string, unknown>,
  scope: Scope,
): { query: ReturnType<typeof parseReportQuery>['query']; paging: Paging; plan: ReportPlan } {
  const { query, paging, number } = parseReportQuery(ctx, report, raw);
  checkFilters(report, query, number, scope);
  const store = ctx.store;
  const filter = {
    service: query.service,
    from: query.from,
    to: query.to,
    txn_id: query.txn_id,
    number,
  };
  let plan: ReportPlan;
  switch (report) {
    case 'transactions': {
      const txns = {
        ...filter,
        status: query.status as TxnStatus | undefined,
      };
      plan = {
        run: (p, pacer) => reportTransactions(store, txns, p, scope, pacer),
        rows: (p, pacer) => transactionRows(store, txns, p, scope, pacer),
      };
      break;
    }
    case 'commissions':
      plan = {
        run: (p, pacer) => reportCommissions(store, filter, p, scope, pacer),
        rows: (p, pacer) => commissionRows(store, filter, p, scope, pacer),
      };
      break;
    case 'wallet':
      plan = {
        run: (p, pacer) => reportWallet(store, filter, p, scope, pacer),
        rows: (p, pacer) => walletRows(store, filter, p, scope, pacer),
      };
      break;
    case 'api-logs': {
      const logs = { ...filter, status: query.status, method: query.method };
      plan = {
        run: (p, pacer) => reportApiLogs(store, logs, p, scope, pacer),
        rows: (p, pacer) => apiLogRows(store, logs, p, scope, pacer),
      };
      break;
    }
    case 'ai-usage': {
      const usage = {
        from: query.from,
        to: query.to,
        protocol: query.protocol,
        status: query.status,
      };
      plan = {
        run: (p, pacer) => reportAiUsage(store, usage, p, scope, pacer),
        rows: (p, pacer) => aiUsageRows(store, usage, p, scope, pacer),
      };
      break;
    }
  }
  return { query, paging, plan };
}

/**
 * Answers one report request: validated first (400 before a slot is taken), then run in a
 * report slot, as JSON or as a streamed CSV (its total counted first, for X-Total-Count, and
 * its rows read as of the same snapshot). When the client goes away, a queued report leaves
 * the queue unrun and a running one stops at its next turn; nothing more is sent.
 */
export async function serveReport(
  ctx: PaymentsContext,
  req: IncomingMessage,
  res: Response,
  report: ReportName,
  raw: Record<string, unknown>,
  scope: Scope,
  body: (result: ReportResult) => unknown,
): Promise<void> {
  // Every read of this answer is as of one snapshot, taken by its first read: a CSV's count
  // pass and rows pass see the same rows, so X-Total-Count is exactly the rows sent.
  const as_of = ctx.store.reads.snapshot();
  const { query, paging, plan } = planReport(ctx, report, raw, { ...scope, as_of });
  await reportForClient(ctx, req, res, slotOwner(scope), async (pacer, signal, slot) => {
    if (query.format === 'csv') {
      const counted = await plan.run({ ...paging, limit: 0 }, pacer);
      res.setHeader('X-Total-Count', String(counted.total));
      const download = {
        pacer,
        signal,
        stall_ms: ctx.settings.reports.client_stall_ms,
        waiting: downloadsWaiting(ctx),
        slot,
      };
      await streamCsv(res, download, report, counted.columns, plan.rows(paging, pacer));
      return;
    }
    const result = await plan.run(paging, pacer);
    pacer.end();
    res.setHeader('X-Total-Count', String(result.total));
    const started = performance.now();
    res.json(body(result));
    ctx.store.reads.turns.charge(performance.now() - started);
  });
}

const reportParam = z.object({
  report: z.enum(REPORTS, { error: `must be one of ${REPORTS.join(', ')}` }),
});

function jsonView(result: ReportResult) {
  const { columns, rows, ...rest } = result;
  return { ...rest, columns, rows };
}

export function reportsRouter(ctx: PaymentsContext): { api: Router; admin: Router } {
  const { store, logger, config } = ctx;
  const api = Router();
  api.get('/reports/:report', async (req: Request, res: Response) => {
    const { account } = authorize(store.state, req, res, logger);
    const { report } = parseWith(reportParam, req.params);
    const subject = reportSubject(ctx, account.id, req.query.account_id);
    await serveReport(
      ctx,
      req,
      res,
      report,
      req.query as Record<string, unknown>,
      { account_id: subject },
      (r) => ({ status: true, data: jsonView(r) }),
    );
  });

  // The wallet's history: the wallet report of the caller's account, with its balances now.
  api.get('/wallet/history', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const query = parseWith(historyQuery, req.query);
    if (query.from !== undefined && query.to !== undefined && query.from > query.to)
      throw badRequest('from: must not be after to', 'from');
    const filter = { from: query.from, to: query.to, txn_id: query.txn_id };
    const result = await reportForClient(ctx, req, res, account.id, (pacer) =>
      reportWallet(store, filter, query, { account_id: account.id }, pacer),
    );
    if (!result) return; // the client left
    const now = await store.read(
      (s) => ({ balance: balanceMicros(s, account.id), held: heldMicros(s, account.id) }),
      { fresh: true },
    );
    res.json({
      status: true,
      data: {
        currency: config.currency,
        opening_balance: microsToUnits(result.opening_micros ?? 0),
        closing_balance: microsToUnits(result.closing_micros ?? 0),
        balance: microsToUnits(now.balance),
        held: microsToUnits(now.held),
        total: result.total,
        page: query.page,
        limit: query.limit,
        entries: result.rows,
      },
    });
  });
  const admin = Router();
  admin.get('/reports/:report', async (req: Request, res: Response) => {
    const { report } = parseWith(reportParam, req.params);
    const account_id = typeof req.query.account_id === 'string' ? req.query.account_id : null;
    await serveReport(
      ctx,
      req,
      res,
      report,
      req.query as Record<string, unknown>,
      { account_id, admin: true },
      (r) => ({ object: 'report', account_id, ...jsonView(r) }),
    );
  });
  return { api, admin };
}
