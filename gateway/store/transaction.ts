// A transaction of the JSON-file store: its function's changes applied to the state in memory
// as ops (each with its undo, the row trackers following), and the staged record it becomes,
// its journal line written or, when the disk refuses it, undone (store/store.ts).
import { ARCHIVED_TABLES, isArchivedRow } from './archive.js';
import { RowOrder, type RowTrackers } from './memory-index.js';
import {
  applyOp,
  rowOf,
  table,
  type HistoryRecord,
  type JournalRecord,
  type Op,
  type Posting,
  type Row,
  type State,
  type TableName,
} from './state.js';
import type { Tx } from './types.js';

/** Rows archived by commits whose journal lines are not indexed yet: still found by id. */
export interface RecentlyArchivedRow {
  row: unknown;
  seq: number;
}
export type RecentlyArchived = Map<string, RecentlyArchivedRow>;

const NO_ROWS: ReadonlyMap<string, unknown> = new Map();

export class Transaction implements Tx {
  readonly ops: Op[] = [];
  private readonly undos: Array<() => void> = [];
  /** Rows this transaction archived, by `table\0id` (made on the first: most archive none). */
  private archived_rows: Map<string, unknown> | null = null;
  /** Postings made through `post` (made on the first: most commits post none or few). */
  private postings: Posting[] | null = null;
  constructor(
    readonly state: State,
    readonly now: Date,
    private readonly trackers: RowTrackers,
    private readonly lookup: <T extends TableName>(name: T, id: string) => Row<T> | undefined,
  ) {}

  private apply(op: Op): void {
    if (op.o === 'set' || op.o === 'del') this.applyToRow(op);
    else this.undos.push(applyOp(this.state, op));
    this.ops.push(op);
  }

  /** A set or del: the row trackers follow it (and the rows it archives, in an archived table). */
  private applyToRow(op: Extract<Op, { o: 'set' | 'del' }>): void {
    const { t: name, id } = op;
    const rows = table(this.state, name) as Record<string, Row<TableName>>;
    const before = rowOf(rows, id);
    const undo = applyOp(this.state, op);
    const after = rowOf(rows, id);
    // Only a table whose final rows are history can archive one (no key made for the others).
    const archived_key = ARCHIVED_TABLES.has(name) ? `${name}\u0000${id}` : null;
    const had_archived = archived_key !== null && this.archived.has(archived_key);
    const archived_before = had_archived ? this.archived.get(archived_key) : undefined;
    if (archived_key !== null) {
      if (op.o === 'set' && isArchivedRow(name, op.v))
        (this.archived_rows ??= new Map()).set(archived_key, op.v);
      else this.archived_rows?.delete(archived_key);
    }
    let order = this.trackers.orders.get(name);
    if (!order) this.trackers.orders.set(name, (order = new RowOrder([])));
    order.changed(id, before, after);
    const indexes = this.trackers.indexes.get(name);
    if (indexes) for (const index of indexes) index.move(id, before, after);
    this.undos.push(() => {
      undo();
      if (archived_key !== null) {
        if (had_archived) this.archived_rows!.set(archived_key, archived_before);
        else this.archived_rows?.delete(archived_key);
      }
      order.changed(id, after, before);
      if (indexes) for (const index of indexes) index.move(id, after, before);
    });
  }
  /** Rows this transaction archived, by `table\0id`. */
  get archived(): ReadonlyMap<string, unknown> {
    return this.archived_rows ?? NO_ROWS;
  }
  get<T extends TableName>(name: T, id: string): Row<T> | undefined {
    const rows = table(this.state, name) as Record<string, Row<T>>;
    if (Object.hasOwn(rows, id)) return rows[id];
    if (!ARCHIVED_TABLES.has(name)) return undefined;
    const key = `${name}\u0000${id}`;
    if (this.archived.has(key)) return this.archived.get(key) as Row<T>;
    return this.lookup(name, id);
  }
  set<T extends TableName>(name: T, id: string, value: Row<T>): void {
    this.apply({ o: 'set', t: name, id, v: value });
  }
  del(name: TableName, id: string): void {
    this.apply({ o: 'del', t: name, id });
  }
  post(posting: Posting): void {
    this.apply({ o: 'post', p: posting });
    (this.postings ??= []).push(posting);
  }
  get posting_count(): number {
    return this.postings?.length ?? 0;
  }
  postingsSince(from: number): Posting[] {
    return this.postings?.slice(from) ?? [];
  }
  history(record: HistoryRecord): void {
    this.apply({ o: 'hist', r: record });
  }
  setAdminTokenHash(hash: string | null): void {
    this.apply({ o: 'meta', k: 'admin_token_hash', v: hash });
  }
  add(name: TableName, id: string, n: number): void {
    this.apply({ o: 'add', t: name, id, n });
  }
  covers(
    ledger_account: string,
    micros: number,
    less: ReadonlyArray<[TableName, string]> = [],
  ): boolean {
    let value = this.state.balances[ledger_account] ?? 0;
    for (const [name, id] of less) {
      // Read without making the table (a read must leave the document as it was).
      const rows = this.state.tables[name] as Record<string, unknown> | undefined;
      const counter = rows ? rowOf(rows, id) : undefined;
      value -= typeof counter === 'number' ? counter : 0;
    }
    return value >= micros;
  }
  onUndo(undo: () => void): void {
    this.undos.push(undo);
  }
  rollback(): void {
    for (let i = this.undos.length - 1; i >= 0; i--) this.undos[i]!();
  }
}

/** A transaction run against the replica, not yet committed: `commit` or `undo` it. */
export interface Staged<T> {
  result: T;
  /** null: the function changed nothing. */
  record: JournalRecord | null;
  line: string;
  archived: ReadonlyMap<string, unknown>;
  undo: () => void;
}

/** A staged transaction: one object per commit, its undo a method (no closure per commit). */
export class StagedRecord<T> implements Staged<T> {
  /** What `recently_archived` held before this record's archived rows were noted there. */
  private replaced: Array<[string, RecentlyArchivedRow | undefined]> | null = null;
  constructor(
    readonly result: T,
    readonly record: JournalRecord | null,
    readonly line: string,
    private readonly tx: Transaction,
    private readonly state: State,
    private readonly recent: RecentlyArchived,
  ) {
    // Rows this record archived are found by id at once, also by the transactions staged
    // after it and before it is published (a PostgreSQL write batch stages all its jobs
    // first: the second use of one admin credit reference in a batch must see the first).
    if (record && tx.archived.size > 0) {
      this.replaced = [];
      for (const [key, row] of tx.archived) {
        this.replaced.push([key, recent.get(key)]);
        recent.set(key, { row, seq: record.s });
      }
    }
  }
  get archived(): ReadonlyMap<string, unknown> {
    return this.tx.archived;
  }
  undo(): void {
    if (!this.record) return;
    this.tx.rollback();
    this.state.seq = this.record.s - 1;
    if (this.replaced)
      for (let i = this.replaced.length - 1; i >= 0; i--) {
        const [key, before] = this.replaced[i]!;
        if (before) this.recent.set(key, before);
        else this.recent.delete(key);
      }
  }
}
