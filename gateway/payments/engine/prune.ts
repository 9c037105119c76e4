// The pruning pass: deletes rows of the store document that no reader will ever use again
// (payment idempotency records past their window, DMT monthly usage of months that are over),
// so that the document and every checkpoint stay bounded. Each table says when one of its
// rows no longer applies with the very predicate its readers use; the pass only deletes.
//
// It never holds the thread for long: each commit examines at most 10 × batch_size rows and
// deletes at most batch_size of them (`tx.del`, journaled like any change), then the pass
// waits for that commit and one event-loop turn before the next. Requests interleave freely:
// every row is judged again inside the commit that deletes it. The rows are walked in the
// store's row order (no listing of a table's keys at once); a table whose rows cannot expire
// (no idempotency window) is not given to the pruner at all.
import type { Logger } from '../../log.js';
import type { Store, Tx } from '../../store/types.js';
import { rowOf, table as tableOf, type Row, type TableName } from '../../store/state.js';

export interface PruneTarget<T extends TableName = TableName> {
  table: T;
  /** Decided inside the deleting commit; must be exactly the readers' notion of "no longer applies". */
  expired(id: string, row: Row<T>, tx: Tx): boolean;
}

export type PruneCounts = Partial<Record<TableName, number>>;

/** A target typed by its table (the pruner keeps targets of different tables in one list). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- one list holds targets of different tables; each was typed by its own table when made
export function pruneTarget<T extends TableName>(target: PruneTarget<T>): PruneTarget<any> {
  return target;
}

const SCAN_PER_DELETE = 10;

export class Pruner {
  private running: Promise<PruneCounts> | null = null;
  private stopped = false;

  constructor(
    private readonly deps: {
      store: Store;
      logger: Logger;
      targets: Array<ReturnType<typeof pruneTarget>>;
      batch_size: number;
    },
  ) {}

  /** One pass over every target table; a pass already running is joined, not doubled. */
  run(): Promise<PruneCounts> {
    if (this.stopped) return Promise.resolve({});
    this.running ??= this.pass().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** No new pass; the one running stops after its current commit. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.running) await this.running.catch(() => undefined);
  }

  private async pass(): Promise<PruneCounts> {
    const { store, logger, targets, batch_size } = this.deps;
    const started_ms = performance.now();
    const counts: PruneCounts = {};
    let commits = 0;
    for (const target of targets) {
      const table: TableName = target.table;
      // The ids as they are now, in creation order (oldest, most likely expired, first), a
      // page at a time; rows added later wait for the next pass.
      for await (const ids of store.scan(table, batch_size * SCAN_PER_DELETE)) {
        let next = 0;
        while (next < ids.length && !this.stopped) {
          const from = next;
          const { deleted, scanned } = await store.transact((tx) => {
            let deleted = 0;
            let i = from;
            for (; i < ids.length && deleted < batch_size; i++) {
              const id = ids[i]!;
              // Live rows only: a row of an archived table that became final is history,
              // and its id, left dead in the row order, must not be read back from there.
              const row = rowOf(tableOf(tx.state, table) as Record<string, Row<TableName>>, id);
              if (row === undefined || !target.expired(id, row, tx)) continue;
              tx.del(table, id);
              deleted++;
            }
            return { deleted, scanned: i - from };
          });
          next = from + scanned;
          if (deleted > 0) {
            counts[table] = (counts[table] ?? 0) + deleted;
            commits++;
          }
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        if (this.stopped) break;
      }
    }
    if (commits > 0) {
      logger.info({
        msg: 'payments prune',
        deleted: counts,
        commits,
        ms: Math.round(performance.now() - started_ms),
      });
    }
    return counts;
  }
}
