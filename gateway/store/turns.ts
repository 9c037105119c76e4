// Turns for background work: the long reads of reports (every account's whole history) run a
// chunk at a time, and this decides when the next chunk may run. It is one per store, so the
// budget is gateway-wide however many reports are in flight:
// - one chunk per grant, each grant a later turn of the event loop (setImmediate), so requests'
//   I/O is served between any two chunks;
// - while other work is busy (it took more than OTHERS_BUSY of the time between chunks in a
//   window during the last BUSY_HOLD_MS: the time from one chunk's end to the next grant is
//   the event loop serving everything else), background work takes at most `share` of the loop's time: a
//   token bucket, refilled at `share` per millisecond, which each chunk's measured time
//   drains; an empty bucket waits (a timer) until it refills;
// - on an otherwise idle gateway the bucket does not hold chunks back (a lone report runs at
//   full speed, still one chunk per turn).
// A chunk's time is measured from its grant to the same reader's next request for a turn (or
// its end): a reader runs synchronously in between. A reader whose client went away (its
// pacer's signal aborted) is stopped at its next turn: `next()` rejects with the signal's reason.
import { performance } from 'node:perf_hooks';

export interface TurnBudget {
  /** The share of the event loop's time background reads may take while other work runs, (0, 1]. */
  share: number;
  /** The most work the bucket lends ahead (ms): one burst of chunks on a busy loop. */
  burst_ms: number;
}

export const DEFAULT_TURN_BUDGET: TurnBudget = { share: 0.05, burst_ms: 4 };

/** Other work above this share of the time between chunks and chunks holds background work to its share. */
const OTHERS_BUSY = 0.2;
/** How often that share is judged (ms). */
const WINDOW_MS = 50;
/** How long a busy verdict holds (ms): the budget is lifted after this long without other work. */
const BUSY_HOLD_MS = 1_000;

/**
 * One reader's turns: `next()` before each chunk, `end()` when it is done or stops to wait for
 * something else (a slow client): the time until its next `next()` is then not counted.
 */
export interface Pacer {
  /** Rejects with the signal's reason once the pacer's signal is aborted (before or after the wait). */
  next(): Promise<void>;
  end(): void;
}

export class Turns {
  private budget: TurnBudget = DEFAULT_TURN_BUDGET;
  /** The last grant handed out: grants are chained, one at a time, gateway-wide. */
  private chain: Promise<void> = Promise.resolve();
  /** Milliseconds of work the bucket holds (negative: owed). */
  private credit_ms: number;
  private refilled_at = performance.now();
  /** The current window: background work in it, other work between chunks, and the last verdict. */
  private window_started = performance.now();
  private window_work_ms = 0;
  private window_other_ms = 0;
  /** Until when other work counts as busy (the last busy window, held for BUSY_HOLD_MS). */
  private busy_until = 0;
  /** When the last chunk ended (a pacer's next() or end()). */
  private last_closed = 0;
  /** Background work measured in all (ms), for /metrics and tests. */
  work_ms = 0;
  /** Grants that waited for the bucket to refill. */
  held = 0;

  constructor() {
    this.credit_ms = this.budget.burst_ms;
  }

  configure(budget: TurnBudget): void {
    this.budget = budget;
    this.credit_ms = Math.min(this.credit_ms, budget.burst_ms);
  }

  /**
   * A reader of its own; its chunks are measured and paced with every other reader's. With a
   * `signal`, the reader stops at its next turn once the signal is aborted (its client left).
   */
  pacer(signal?: AbortSignal): Pacer {
    let granted_at: number | null = null;
    const close = () => {
      if (granted_at === null) return;
      this.last_closed = performance.now();
      this.charge(this.last_closed - granted_at);
      granted_at = null;
    };
    return {
      next: () => {
        close();
        if (signal?.aborted) return Promise.reject(signal.reason as Error);
        const turn = this.chain.then(() => this.grant());
        this.chain = turn;
        return turn.then(() => {
          // Aborted while waiting: the grant goes unused and the next reader's follows it.
          signal?.throwIfAborted();
          granted_at = performance.now();
        });
      },
      end: close,
    };
  }

  /** Counts `ms` of background work done outside a pacer's chunks (building or sending an answer). */
  charge(ms: number): void {
    this.refill();
    this.credit_ms -= ms;
    this.work_ms += ms;
    this.window_work_ms += ms;
  }

  private refill(): void {
    const now = performance.now();
    this.credit_ms = Math.min(
      this.budget.burst_ms,
      this.credit_ms + (now - this.refilled_at) * this.budget.share,
    );
    this.refilled_at = now;
  }

  /** Whether other work took more than OTHERS_BUSY of the time between chunks and chunks, last window. */
  private othersBusy(): boolean {
    const now = performance.now();
    if (now - this.window_started >= WINDOW_MS) {
      const seen = this.window_other_ms + this.window_work_ms;
      // Busy stays busy for BUSY_HOLD_MS: a busy gateway's loop waits on I/O now and then,
      // and a window that happened to see little of its work must not lift the budget.
      if (seen > 0 && this.window_other_ms / seen > OTHERS_BUSY)
        this.busy_until = now + BUSY_HOLD_MS;
      this.window_started = now;
      this.window_work_ms = 0;
      this.window_other_ms = 0;
    }
    return now < this.busy_until;
  }

  private grant(): Promise<void> {
    this.refill();
    if (!this.othersBusy()) this.credit_ms = Math.max(this.credit_ms, 0); // idle: no debt
    const owed = -this.credit_ms;
    if (owed <= 0) {
      const asked = performance.now();
      return new Promise((resolve) =>
        setImmediate(() => {
          // What the loop did from the last chunk's end (or this ask) to now was other work.
          this.window_other_ms += performance.now() - Math.max(asked, this.last_closed);
          resolve();
        }),
      );
    }
    this.held++;
    const wait_ms = Math.ceil(owed / this.budget.share);
    return new Promise((resolve) => setTimeout(resolve, wait_ms));
  }
}
