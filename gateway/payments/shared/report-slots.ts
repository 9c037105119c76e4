// A report run for a client, as every report of the room runs (the reports, the wallet
// history, the statements, the GST documents): in a report slot, fairly shared between the
// accounts and bounded per account and per gateway (429 beyond), its reads in turns of a
// pacer that stops when the client leaves; and whose report a key may read (reportSubject).
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Response } from 'express';
import { Counter, type Registry } from 'prom-client';
import { clientGone, ClientGoneError } from '../../http/client-gone.js';
import { ApiError, badRequest } from '../../http/errors.js';
import { scrapedGauge } from '../../http/metrics.js';
import type { Pacer } from '../../store/turns.js';
import type { PaymentsContext } from '../context.js';

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

/** The count of CSV downloads waiting now for their client (a download's `waiting`, for /metrics). */
export function downloadsWaiting(ctx: PaymentsContext): { count: number } {
  return slotsOf(ctx).waiting_client;
}

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
