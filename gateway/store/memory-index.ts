// The JSON-file store's in-memory bookkeeping of its tables, kept in step with every row change
// and its undo: indexes of rows by a string field (`Store.indexBy`), and each table's ids in
// creation order (what a checkpoint, a page or a scan walks without listing a table's keys).
import type { Row, TableName } from './state.js';
import type { TableIndex } from './types.js';

/**
 * The ids of a table's rows by the value of one string field (`account_id`, say), kept in
 * step with every change: a list of one account's rows reads that account's rows, not the
 * whole table (200,000 payment transactions: 150 ms per list on the event loop before).
 * Ids are in the order they entered the index: creation order for rows created in order.
 * Rows are replaced, never changed in place (as everywhere in the store), so the row before
 * a change still has the key it was indexed under.
 */
export class MemoryIndex<T extends TableName> implements TableIndex<T> {
  private readonly by_key = new Map<string, Set<string>>();

  /** @internal */ constructor(
    private readonly rows_of: () => Record<string, Row<T>>,
    readonly field: string,
  ) {
    const rows = rows_of();
    for (const id of Object.keys(rows)) this.move(id, undefined, rows[id]);
  }

  private keyOf(row: Row<T> | undefined): string | null {
    const value = row === undefined ? undefined : (row as Record<string, unknown>)[this.field];
    return typeof value === 'string' ? value : null;
  }

  /** @internal */ move(id: string, before: Row<T> | undefined, after: Row<T> | undefined): void {
    const from = this.keyOf(before);
    const to = this.keyOf(after);
    if (from === to) return;
    if (from !== null) {
      const ids = this.by_key.get(from);
      ids?.delete(id);
      if (ids?.size === 0) this.by_key.delete(from);
    }
    if (to !== null) {
      let ids = this.by_key.get(to);
      if (!ids) this.by_key.set(to, (ids = new Set()));
      ids.add(id);
    }
  }

  ids(key: string): ReadonlySet<string> {
    return this.by_key.get(key) ?? NO_IDS;
  }

  /** The rows whose field is `key`. */
  *rows(key: string): Generator<Row<T>> {
    const rows = this.rows_of();
    for (const id of this.ids(key)) yield rows[id]!;
  }
}

const NO_IDS: ReadonlySet<string> = new Set();

/**
 * A table's ids in the order its rows were created, for the checkpoint to walk in parts:
 * listing a large object's keys is one long synchronous step (Object.keys: 17 ms for
 * 100,000 rows, 330 ms for a million here), this is not. A deleted row's id stays in the
 * list, marked dead, until dead ids are half of it; a row re-created meanwhile is revived
 * in place, so an id is never listed twice.
 */
export class RowOrder {
  ids: string[];
  readonly dead = new Set<string>();

  constructor(ids: string[]) {
    this.ids = ids;
  }

  /** @internal */ changed(id: string, before: unknown, after: unknown): void {
    if (before === undefined && after !== undefined) {
      if (!this.dead.delete(id)) this.ids.push(id);
    } else if (before !== undefined && after === undefined) {
      this.dead.add(id);
    }
  }

  /** Drops the dead ids once they are half the list (amortized: one pass per that many deletions). */
  compact(): void {
    if (this.dead.size < 1_024 || this.dead.size * 2 < this.ids.length) return;
    const dead = this.dead;
    // A new array: a checkpoint walking the old one goes on with it undisturbed.
    this.ids = this.ids.filter((id) => !dead.has(id));
    dead.clear();
  }
}

export type Indexes = Map<TableName, Array<MemoryIndex<TableName>>>;

/** What keeps up with every row change (and its undo): the tables' row orders and the indexes. */
export interface RowTrackers {
  indexes: Indexes;
  orders: Map<TableName, RowOrder>;
}
