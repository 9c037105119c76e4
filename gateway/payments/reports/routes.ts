// GET /api/reports/:report (the caller's account) and GET /admin/reports/:report (any or
// every account), as JSON or, with `?format=csv`, as CSV of the same rows. A CSV without
// page/limit holds every matching row (as many as X-Total-Count says); with them, the same
// page (a limit of at most `reports.csv_max_rows`).
// A CSV is streamed as its rows are read (its total counted first, for X-Total-Count, both
// passes as of one snapshot of the history), and a report whose client goes away is dropped
// from the queue, or stopped at its next turn.
import { TXN_STATUSES, type TxnStatus } from '../engine/tables.js';
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Router, type Request, type Response } from 'express';
import { Counter, type Registry } from 'prom-client';
import { scrapedGauge } from '../../http/metrics.js';
import { z } from 'zod';
import { clientGone, ClientGoneError, drained } from '../../http/client-gone.js';
import { ApiError, badRequest, parseWith } from '../../http/errors.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { reportsQuery } from './schemas.js';
import { MOBILE_PATTERN, normalizeMobile } from '../identity/mobile.js';
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
  csvLine,
  type Paging,
  type ReportName,
  type ReportResult,
  type Row,
  type Scope,
} from './reports.js';
import type { Pacer } from '../../store/turns.js';

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

/** The wire protocols of /v1 (the chat room's names; payments does not import chat). */
const AI_PROTOCOLS = ['chat', 'responses', 'messages', 'embeddings', 'completions'] as const;

/**
 * The reports of one gateway in flight: per account (`admin` for administrators' reports),
 * running and waiting together, at most `reports.max_concurrent_per_account`; and
 * gateway-wide, `reports.max_running` running and at most `reports.max_queued` waiting for
 * them. Shared fairly: a freed slot goes to the waiting report whose account runs the fewest
 * reports now (an account with none first; among equals, the one that waited longest), and a
 * download stalled on its client (waiting for 'drain') keeps its slot only until a report of
 * another account needs one: then that report takes it at once, and the download waits its
 * turn again when its client reads on. So neither one account's reports nor downloads nobody
 * reads can keep another account's report waiting.
 */
class ReportSlots {
  readonly per_account = new Map<string, number>();
  /** Running now (slots held, stalled downloads included), per account. */
  readonly running_by = new Map<string, number>();
  running = 0;
  /** Each waiting report: whose it is, and its start (called once it holds a slot). */
  readonly queue: Array<{ who: string; start: () => void }> = [];
  /** Running downloads stalled on their client: each gives its slot up when asked (`release`). */
  readonly stalled: Array<{ who: string; release: () => void }> = [];
  /** A moving mean of reports' durations (ms), for the Retry-After of a refusal. */
  mean_ms = 1_000;
  /** Reports that got a slot and ran (or began to). */
  started = 0;
  /** Reports whose client went away while they waited in the queue (dropped unrun) or ran (stopped). */
  cancelled = { queued: 0, running: 0 };
  /** CSV downloads waiting now for their client to take what was written ('drain'). */
  readonly waiting_client = { count: 0 };

  runningOf(who: string): number {
    return this.running_by.get(who) ?? 0;
  }

  private count(who: string, by: 1 | -1): void {
    const n = this.runningOf(who) + by;
    if (n <= 0) this.running_by.delete(who);
    else this.running_by.set(who, n);
  }

  /** `who` holds one more running slot. */
  take(who: string): void {
    this.running++;
    this.count(who, 1);
  }

  /** The waiting report that gets the next slot (fewest running first, then the oldest), or -1. */
  private fairest(except?: string): number {
    let best = -1;
    this.queue.forEach((entry, i) => {
      if (entry.who === except) return;
      if (best === -1 || this.runningOf(entry.who) < this.runningOf(this.queue[best]!.who))
        best = i;
    });
    return best;
  }

  /** `who` gives a running slot back; free slots go to the waiting reports, fairly. */
  give(who: string, max_running: number): void {
    this.running--;
    this.count(who, -1);
    while (this.running < max_running && this.queue.length > 0) {
      const [next] = this.queue.splice(this.fairest(), 1);
      this.take(next!.who);
      next!.start();
    }
  }

  /** `from`'s slot passes to the fairest waiting report of another account: true when one waited. */
  handOver(from: string): boolean {
    const at = this.fairest(from);
    if (at === -1) return false;
    const [next] = this.queue.splice(at, 1);
    this.count(from, -1);
    this.count(next!.who, 1);
    next!.start();
    return true;
  }

  /** A slot for `who` taken from a download of another account stalled on its client: true when there was one. */
  takeStalled(who: string): boolean {
    const at = this.stalled.findIndex((entry) => entry.who !== who);
    if (at === -1) return false;
    const [victim] = this.stalled.splice(at, 1);
    victim!.release();
    this.count(victim!.who, -1);
    this.count(who, 1);
    return true;
  }
}

/** A report's running slot, as a download uses it while its client takes nothing. */
export interface ReportSlot {
  /** The download waits for its client: its slot may go to another account's waiting report. */
  stall(): void;
  /** The client reads on: the download holds a slot again (waiting its fair turn if it gave it up). */
  unstall(): Promise<void>;
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

/** The gateway's reports in flight and the time their reads took, at GET /metrics. */
export function registerReportMetrics(ctx: PaymentsContext, registry: Registry): void {
  const slots = slotsOf(ctx);
  const turns = ctx.store.reads.turns;
  const gauge = (name: string, help: string, value: () => number) =>
    scrapedGauge(registry, name, help, value);
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
    'aihub_reports_downloads_waiting',
    'CSV downloads holding their slot while their client takes what was written',
    () => slots.waiting_client.count,
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
  new Counter({
    name: 'aihub_reports_started_total',
    help: 'Reports that got a running slot and began to run',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(slots.started);
    },
  });
  new Counter({
    name: 'aihub_reports_cancelled_total',
    help: 'Reports whose client went away first: dropped from the queue unrun, or stopped while running',
    labelNames: ['stage'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ stage: 'queued' }, slots.cancelled.queued);
      this.inc({ stage: 'running' }, slots.cancelled.running);
    },
  });
}

const tooMany = (message: string, retry_after_s: number) =>
  new ApiError(429, 'rate_limit_exceeded', message, null, null, {
    'Retry-After': String(retry_after_s),
  });

/**
 * Runs `fn` in one of `who`'s report slots and one of the gateway's: refused with 429 when
 * `who`'s are all taken, or when the gateway's are and its queue is full; otherwise it runs
 * now or waits its turn in the queue. When `signal` aborts (the client went away) while it
 * waits, it leaves the queue unrun and rejects with the signal's reason; `fn` itself stops at
 * its next turn (its pacer carries the same signal).
 */
export async function withReportSlot<T>(
  ctx: PaymentsContext,
  who: string,
  fn: (slot: ReportSlot) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  signal?.throwIfAborted();
  const limits = ctx.settings.reports;
  const slots = slotsOf(ctx);
  const now_running = slots.per_account.get(who) ?? 0;
  if (now_running >= limits.max_concurrent_per_account)
    throw tooMany(
      `${now_running} reports of this account are running, the most allowed at once; retry when one is done`,
      1,
    );
  const free = () =>
    slots.running < limits.max_running || slots.stalled.some((entry) => entry.who !== who);
  if (!free() && slots.queue.length >= limits.max_queued) {
    // The queue's wait, from the mean report: every slot works through its share of it.
    const wait_s = (slots.mean_ms * (slots.queue.length + 1)) / limits.max_running / 1000;
    throw tooMany(
      `${slots.running} reports are running and ${slots.queue.length} waiting in this gateway, the most it takes; retry later`,
      Math.min(60, Math.max(1, Math.ceil(wait_s))),
    );
  }
  slots.per_account.set(who, now_running + 1);
  // A slot now (a free one, or one a stalled download of another account gives up), else a
  // place in the queue. Waiting again after a stall, a client that leaves counts as running.
  const acquire = async (first: boolean) => {
    if (slots.running < limits.max_running) slots.take(who);
    else if (!slots.takeStalled(who)) await waitInQueue(slots, who, signal, first);
  };
  try {
    await acquire(true);
    const slot = heldSlot(slots, who, () => acquire(false));
    slots.started++;
    const started = performance.now();
    try {
      return await fn(slot);
    } catch (error) {
      if (signal?.aborted || error instanceof ClientGoneError) slots.cancelled.running++;
      throw error;
    } finally {
      slots.mean_ms = 0.8 * slots.mean_ms + 0.2 * (performance.now() - started);
      // The slot goes to a waiting report (fairly: see ReportSlots), or back to the gateway.
      if (slot.end()) slots.give(who, limits.max_running);
    }
  } finally {
    const left = (slots.per_account.get(who) ?? 1) - 1;
    if (left === 0) slots.per_account.delete(who);
    else slots.per_account.set(who, left);
  }
}

/**
 * The slot `who`'s report holds, as its download stalls and goes on: stalled, it is listed
 * for another account's report to take (or handed over at once to one that waits); going
 * on, it takes a slot again with `reacquire` if it lost its own. `end` says whether it still
 * holds one to give back.
 */
function heldSlot(
  slots: ReportSlots,
  who: string,
  reacquire: () => Promise<void>,
): ReportSlot & { end(): boolean } {
  let held = true;
  let stalled: { who: string; release: () => void } | null = null;
  const unlist = () => {
    const at = stalled ? slots.stalled.indexOf(stalled) : -1;
    if (at !== -1) slots.stalled.splice(at, 1);
    stalled = null;
  };
  return {
    stall() {
      if (!held || stalled) return;
      if (slots.handOver(who))
        held = false; // another account waits: its turn now
      else
        slots.stalled.push((stalled = { who, release: () => ((held = false), (stalled = null)) }));
    },
    async unstall() {
      unlist();
      if (held) return;
      await reacquire();
      held = true;
    },
    end() {
      unlist();
      return held;
    },
  };
}

/**
 * Waits in the queue until a slot is handed over (see ReportSlots), or leaves it when
 * `signal` aborts.
 */
function waitInQueue(
  slots: ReportSlots,
  who: string,
  signal: AbortSignal | undefined,
  count_cancel: boolean,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const leave = () => {
      const at = slots.queue.indexOf(entry);
      if (at !== -1) slots.queue.splice(at, 1);
      if (count_cancel) slots.cancelled.queued++;
      reject(signal!.reason as Error);
    };
    const entry = {
      who,
      start: () => {
        signal?.removeEventListener('abort', leave);
        resolve();
      },
    };
    slots.queue.push(entry);
    signal?.addEventListener('abort', leave, { once: true });
  });
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

/** How a CSV download runs: its turns, its client's signal, how long it waits for a client that takes nothing. */
export interface Download {
  pacer: Pacer;
  signal: AbortSignal;
  stall_ms: number;
  /** Counts the downloads waiting for their client now (for /metrics). */
  waiting?: { count: number };
  /** The download's report slot: another account's report may take it while the client takes nothing. */
  slot?: ReportSlot;
}

/**
 * Writes a CSV download as its rows are read: each batch (at most a chunk of rows: 16
 * transactions, 256 index entries of the other reports) is written when it has been read, in
 * the turn that read it, so a 10,000-row download is neither one string nor more than its
 * share of a busy gateway. When `res` pushes back, the download waits for 'drain' before it
 * reads on (its pacer ended meanwhile: a slow client's wait is not report work), so memory
 * holds a batch, never the download. Stops (rejects with the signal's reason) when `signal`
 * aborts, and drops a client that takes nothing for `stall_ms` (a ClientGoneError): a
 * download holds a report slot, and a client that stops reading must not hold it for ever.
 * A read that fails mid-download drops the connection too (the client sees a cut body).
 */
export async function streamCsv(
  res: Response,
  { pacer, signal, stall_ms, waiting, slot }: Download,
  name: string,
  columns: readonly string[],
  batches: AsyncIterable<Row[]>,
): Promise<void> {
  res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="${name}.csv"`);
  res.setHeader('Cache-Control', 'no-store');
  let ready = res.write(`${columns.join(',')}\r\n`);
  const reader = batches[Symbol.asyncIterator]();
  try {
    for (;;) {
      // The next batch is read only once the last one has left (never while `res` pushes back).
      if (!ready) {
        pacer.end();
        slot?.stall(); // a client that takes nothing keeps no other account's report waiting
        if (waiting) waiting.count++;
        let moved: boolean;
        try {
          moved = await drained(res, signal, stall_ms);
        } finally {
          if (waiting) waiting.count--;
        }
        signal.throwIfAborted();
        if (!moved)
          throw new ClientGoneError(`the client took none of the download for ${stall_ms} ms`);
        await slot?.unstall(); // a slot again (its fair turn, if it gave its own up) before it reads on
      }
      const step = await reader.next();
      if (step.done) break;
      let text = '';
      for (const row of step.value) text += csvLine(columns, row);
      ready = res.write(text);
    }
  } catch (error) {
    // Cut short (the client left, or a read failed): the connection is dropped, never ended,
    // so that a partial download cannot pass for a whole one.
    res.destroy();
    throw error;
  } finally {
    await reader.return?.();
  }
  res.end();
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
        waiting: slotsOf(ctx).waiting_client,
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

/**
 * Runs `fn` as one of `who`'s reports for the client of `req`/`res`: in a report slot, after
 * the durable state is read, its reads in turns of a pacer that stops when the client
 * leaves (a queued report then leaves the queue unrun). Resolves null when the client left
 * first: there is nothing to answer, and the response's socket is freed.
 */
export async function reportForClient<T>(
  ctx: PaymentsContext,
  req: IncomingMessage,
  res: Response,
  who: string,
  fn: (pacer: Pacer, signal: AbortSignal, slot: ReportSlot) => Promise<T>,
): Promise<T | null> {
  const signal = clientGone(req, res);
  const run = async (slot: ReportSlot) => {
    const pacer = ctx.store.reads.turns.pacer(signal);
    try {
      await ctx.store.readDurable();
      return await fn(pacer, signal, slot);
    } finally {
      pacer.end();
    }
  };
  try {
    return await withReportSlot(ctx, who, run, signal);
  } catch (error) {
    if (!signal.aborted && !(error instanceof ClientGoneError)) throw error;
    if (!res.destroyed) res.destroy();
    return null;
  }
}

/**
 * Whose report a key may read: its own account's, or (a distributor) one of its retailers'
 * (`account_id`); any other account's is for administrators.
 */
export function reportSubject(ctx: PaymentsContext, caller: string, asked: unknown): string {
  if (asked === undefined || asked === caller) return caller;
  const member = typeof asked === 'string' ? ctx.store.get('network', asked) : undefined;
  if (member?.parent_id === caller) return member.account_id;
  throw badRequest(
    'account_id: reports of other accounts are for administrators (GET /admin/reports/...), or for the distributor of a retailer',
    'account_id',
  );
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
