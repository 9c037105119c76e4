// GET /api/reports/:report (the caller's account) and GET /admin/reports/:report (any or
// every account), as JSON or, with `?format=csv`, as CSV of the same rows. A CSV without
// page/limit holds every matching row up to `reports.csv_max_rows`; with them, the same page.
import { performance } from 'node:perf_hooks';
import { Router, type Request, type Response } from 'express';
import { Gauge, type Registry } from 'prom-client';
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
  csvLine,
  type ReportName,
  type ReportResult,
  type Row,
  type Scope,
} from './reports.js';
import type { Turns } from '../store/turns.js';

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

/**
 * The reports of one gateway in flight: per account (`admin` for administrators' reports),
 * running and queued together, and gateway-wide, `reports.max_running` running and at most
 * `reports.max_queued` waiting for them, first come first served.
 */
class ReportSlots {
  readonly per_account = new Map<string, number>();
  running = 0;
  /** Each waiting report's start: called with the slot a finished report hands over. */
  readonly queue: Array<() => void> = [];
  /** A moving mean of reports' durations (ms), for the Retry-After of a refusal. */
  mean_ms = 1_000;
}

const slots_by_context = new WeakMap<PaymentsContext, ReportSlots>();

function slotsOf(ctx: PaymentsContext): ReportSlots {
  let slots = slots_by_context.get(ctx);
  if (!slots) slots_by_context.set(ctx, (slots = new ReportSlots()));
  return slots;
}

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

/** The gateway's reports in flight and the time their reads took, at GET /metrics. */
export function registerReportMetrics(ctx: PaymentsContext, registry: Registry): void {
  const slots = slotsOf(ctx);
  const turns = ctx.store.reads.turns;
  const gauge = (name: string, help: string, value: () => number) => {
    const metric: Gauge = new Gauge({
      name,
      help,
      registers: [registry],
      collect: () => metric.set(value()),
    });
  };
  gauge(
    'aihub_reports_running',
    'Reports running now, every account together',
    () => slots.running,
  );
  gauge(
    'aihub_reports_queued',
    'Reports waiting for one of reports.max_running',
    () => slots.queue.length,
  );
  gauge(
    'aihub_reports_work_seconds',
    "Event-loop time reports' reads and downloads have taken since start",
    () => turns.work_ms / 1000,
  );
  gauge(
    'aihub_reports_turns_held',
    'Turns of report work held back to keep reports within reports.cpu_share of a busy gateway',
    () => turns.held,
  );
}

const tooMany = (message: string, retry_after_s: number) =>
  new ApiError(429, 'rate_limit_exceeded', message, null, null, {
    'Retry-After': String(retry_after_s),
  });

/**
 * Runs `fn` in one of `who`'s report slots and one of the gateway's: refused with 429 when
 * `who`'s are all taken, or when the gateway's are and its queue is full; otherwise it runs
 * now or waits its turn in the queue.
 */
export async function withReportSlot<T>(
  ctx: PaymentsContext,
  who: string,
  fn: () => Promise<T>,
): Promise<T> {
  const limits = ctx.settings.reports;
  const slots = slotsOf(ctx);
  const now_running = slots.per_account.get(who) ?? 0;
  if (now_running >= limits.max_concurrent_per_account)
    throw tooMany(
      `${now_running} reports of this account are running, the most allowed at once; retry when one is done`,
      1,
    );
  if (slots.running >= limits.max_running && slots.queue.length >= limits.max_queued) {
    // The queue's wait, from the mean report: every slot works through its share of it.
    const wait_s = (slots.mean_ms * (slots.queue.length + 1)) / limits.max_running / 1000;
    throw tooMany(
      `${slots.running} reports are running and ${slots.queue.length} waiting in this gateway, the most it takes; retry later`,
      Math.min(60, Math.max(1, Math.ceil(wait_s))),
    );
  }
  slots.per_account.set(who, now_running + 1);
  try {
    if (slots.running < limits.max_running) slots.running++;
    else await new Promise<void>((start) => slots.queue.push(start));
    const started = performance.now();
    try {
      return await fn();
    } finally {
      slots.mean_ms = 0.8 * slots.mean_ms + 0.2 * (performance.now() - started);
      // The slot goes to the first report waiting, or back to the gateway.
      const next = slots.queue.shift();
      if (next) next();
      else slots.running--;
    }
  } finally {
    const left = (slots.per_account.get(who) ?? 1) - 1;
    if (left === 0) slots.per_account.delete(who);
    else slots.per_account.set(who, left);
  }
}

/** Each report's query schema, built once (not per request). */
const QUERY_BY_REPORT = Object.fromEntries(
  REPORTS.map((report) => [report, reportQuerySchema(report)]),
) as { [R in ReportName]: ReturnType<typeof reportQuerySchema> };

function reportQuerySchema(report: ReportName) {
  return reportsQuery.extend({
    status: STATUS_BY_REPORT[report],
    method: z.enum(['GET', 'POST', 'PUT', 'DELETE']).optional(),
    protocol: z.enum(AI_PROTOCOLS).optional(),
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

/** CSV rows per write of a download: one write, one turn (see sendCsv). */
const CSV_ROWS_PER_WRITE = 256;

/** Resolves when `res` can take more (or is closed: nothing more will be sent). */
function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Sends rows as a CSV download a batch of rows at a time: each batch is written in a turn of
 * the store's background work (turns.ts), so a 10,000-row download is neither one string
 * built in one turn nor more than its share of a busy gateway, and it waits for a slow
 * client (backpressure) instead of piling its bytes up in memory.
 */
export async function sendCsv(
  res: Response,
  turns: Turns,
  name: string,
  columns: readonly string[],
  rows: readonly Row[],
): Promise<void> {
  res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="${name}.csv"`);
  res.setHeader('Cache-Control', 'no-store');
  const pacer = turns.pacer();
  try {
    res.write(`${columns.join(',')}\r\n`);
    for (let i = 0; i < rows.length && !res.destroyed; i += CSV_ROWS_PER_WRITE) {
      await pacer.next();
      let text = '';
      for (const row of rows.slice(i, i + CSV_ROWS_PER_WRITE)) text += csvLine(columns, row);
      if (!res.write(text)) {
        pacer.end();
        await drained(res);
      }
    }
  } finally {
    pacer.end();
  }
  res.end();
}

async function sendReport(
  ctx: PaymentsContext,
  res: Response,
  result: ReportResult,
  format: 'json' | 'csv',
  body: (result: ReportResult) => unknown,
): Promise<void> {
  res.setHeader('X-Total-Count', String(result.total));
  const turns = ctx.store.reads.turns;
  if (format === 'csv') return sendCsv(res, turns, result.report, result.columns, result.rows);
  const started = performance.now();
  res.json(body(result));
  turns.charge(performance.now() - started);
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
    await sendReport(ctx, res, result, format, (r) => ({ status: true, data: jsonView(r) }));
  });

  const admin = Router();
  admin.get('/reports/:report', async (req: Request, res: Response) => {
    const { report } = parseWith(reportParam, req.params);
    const account_id = typeof req.query.account_id === 'string' ? req.query.account_id : null;
    const { result, format } = await runReport(ctx, report, req.query as Record<string, unknown>, {
      account_id,
      admin: true,
    });
    await sendReport(ctx, res, result, format, (r) => ({
      object: 'report',
      account_id,
      ...jsonView(r),
    }));
  });
  return { api, admin };
}
