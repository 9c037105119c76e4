// The database as an operator sees it in the log during an outage: one line when it starts,
// a line at most every `every_ms` while it lasts, and one when it ends with its counts (how
// long, how many requests were refused), instead of a warning per refused statement (the
// chaos run counted ~56,000 a minute per gateway). Each line carries `event`
// (`store_outage_started` | `store_outage_continues` | `store_outage_ended`): count by it.
export type OutageLog = (message: string, fields: Record<string, unknown>) => void;

/** The interval of the lines while an outage lasts. */
export const OUTAGE_LOG_EVERY_MS = 10_000;
/**
 * An outage ends once statements succeed and none failed for this long: as a server shuts
 * down, a statement on a connection it has not closed yet still succeeds between failures,
 * and a flapping database is one outage, not one per flap.
 */
export const OUTAGE_SETTLE_MS = 1_000;

const reasonOf = (error: unknown): string =>
  String((error as Error)?.message ?? error).slice(0, 300);

export class Outage {
  private since_ms: number | null = null;
  private last_line_ms = 0;
  private last_failure_ms = 0;
  /** The first success after the last failure (the outage's end, once it settles). */
  private first_ok_ms: number | null = null;
  /** Requests (statements answered to a caller) refused since the outage began. */
  private refused = 0;
  /** Statements that failed since it began (background ones included). */
  private failures = 0;
  /** Outages seen since start, and requests refused in them (/metrics). */
  readonly totals = { outages: 0, refused: 0 };

  constructor(
    private readonly log: OutageLog,
    private readonly every_ms = OUTAGE_LOG_EVERY_MS,
    private readonly now_ms: () => number = Date.now,
  ) {}

  /** Whether an outage is in course. */
  get down(): boolean {
    return this.since_ms !== null;
  }

  /** A statement failed for want of the database; `refused` requests were answered 503 for it. */
  failed(error: unknown, refused = 0): void {
    const now = this.now_ms();
    this.last_failure_ms = now;
    this.first_ok_ms = null;
    this.refused += refused;
    this.totals.refused += refused;
    this.failures++;
    if (this.since_ms === null) {
      this.since_ms = now;
      this.last_line_ms = now;
      this.totals.outages++;
      this.log('the database is unavailable: what needs it is refused (503) until it is back', {
        event: 'store_outage_started',
        reason: reasonOf(error),
      });
      return;
    }
    if (now - this.last_line_ms < this.every_ms) return;
    this.last_line_ms = now;
    this.log('the database is still unavailable', {
      event: 'store_outage_continues',
      duration_ms: now - this.since_ms,
      refused: this.refused,
      failures: this.failures,
      reason: reasonOf(error),
    });
  }

  /** A statement succeeded: the outage in course, if any, is over once no failure came for OUTAGE_SETTLE_MS. */
  served(): void {
    if (this.since_ms === null) return;
    const now = this.now_ms();
    this.first_ok_ms ??= now;
    if (now - this.last_failure_ms < OUTAGE_SETTLE_MS) return;
    this.log('the database is back', {
      event: 'store_outage_ended',
      duration_ms: this.first_ok_ms - this.since_ms,
      refused: this.refused,
      failures: this.failures,
    });
    this.since_ms = null;
    this.first_ok_ms = null;
    this.refused = 0;
    this.failures = 0;
  }
}
