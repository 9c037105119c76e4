// Audit records of admin calls the store refused (the database down, issue #36): an admin
// call's record is written after its answer (logs.ts, auditMiddleware), so during an outage
// it failed and was lost. Now it is held in memory, bounded, and written when the store is
// back, with one log line when the holding starts and one when the records were written.
// Held records are lost if the gateway stops before the database returns: the line
// `audit_held` said so, and `audit_written` counts what was written and dropped.
import type { Logger } from '../log.js';
import { StoreFullError, StoreUnavailableError } from '../kernel/errors.js';
import type { HistoryRecord } from '../store/state.js';
import type { Store } from '../store/types.js';

/** Records held at most (the oldest are kept: a flood of refused calls past it is counted). */
export const AUDIT_BACKLOG_MAX = 10_000;
/** Records written per transaction when the store is back. */
const FLUSH_BATCH = 500;
const RETRY_MS = 1_000;

export class AuditBacklog {
  private readonly held: HistoryRecord[] = [];
  private dropped = 0;
  private written = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly max = AUDIT_BACKLOG_MAX,
    private readonly retry_ms = RETRY_MS,
  ) {}

  /** Records held now (tests, metrics). */
  get size(): number {
    return this.held.length;
  }

  /** Writes a record, or holds it when the store refuses it. */
  write(record: HistoryRecord): void {
    this.store
      .transact((tx) => tx.history(record))
      .catch((error: unknown) => this.refused([record], error));
  }

  private refused(records: HistoryRecord[], error: unknown): void {
    if (!(error instanceof StoreUnavailableError || error instanceof StoreFullError)) {
      if ((error as Error).name !== 'StoreClosedError')
        this.logger.warn({ msg: 'could not write an audit record', err: error });
      return;
    }
    if (this.held.length === 0 && this.written === 0 && this.dropped === 0)
      this.logger.warn({
        msg: 'audit records of admin calls are held in memory until the store is back',
        event: 'audit_held',
      });
    for (const record of records)
      if (this.held.length < this.max) this.held.push(record);
      else this.dropped++;
    this.schedule();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.retry_ms);
    this.timer.unref();
  }

  /** Writes what is held, a batch per transaction; a refusal waits for the next try. */
  private async flush(): Promise<void> {
    while (this.held.length > 0) {
      const batch = this.held.slice(0, FLUSH_BATCH);
      try {
        await this.store.transact((tx) => {
          for (const record of batch) tx.history(record);
        });
      } catch (error) {
        if (error instanceof StoreUnavailableError || error instanceof StoreFullError)
          return this.schedule();
        this.logger.warn({ msg: 'could not write held audit records', err: error });
        return;
      }
      this.held.splice(0, batch.length);
      this.written += batch.length;
    }
    this.logger.info({
      msg: 'audit records held while the store was unavailable were written',
      event: 'audit_written',
      written: this.written,
      dropped: this.dropped,
    });
    this.written = 0;
    this.dropped = 0;
  }
}
