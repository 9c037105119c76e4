// A PostgreSQL gateway's cache, and the runs of functions on it (docs/store-postgres.md, "A
// gateway is a cache" and "Transactions").
//
// The cache holds rows (with the version each was read at, or "absent"), customer balances
// (with versions), platform balances (sums of shards), index sets (the ids of a table's rows
// with one field value, with the index key's version) and the meta. A function runs
// synchronously on a view of it (`state`, proxies) inside a Run, which records what it read
// (the read set: each key with its version), what it missed (keys the cache does not know:
// the run is undone, they are loaded, it runs again), its guards (money checks that commute)
// and, for a transaction, its writes (staged into the cache, undone if the run is).
import { assertMicros } from '../../util/money.js';
import {
  InvariantError,
  isCustomerLedgerAccount,
  type HistoryRecord,
  type Op,
  type Posting,
  type Row,
  type State,
  type TableName,
} from '../state.js';
import type { Tx } from '../types.js';
import {
  SEP,
  USAGE_TABLE,
  balanceKey,
  indexKey,
  isCustomerBalance,
  poolKey,
  rowKey,
  splitIndexKey,
  splitRowKey,
  VALIDATED_TABLES,
  PRESUMED_ABSENT_TABLES,
} from './keys.js';

/** A cache entry: a row, a balance (customer `b` or platform `p`) or an index set. */
export type Entry = RowEntry | BalanceEntry | SetEntry;
interface Common {
  /** The load sequence number it was read at (fresh reads and readDurable compare it). */
  loaded: number;
  /** Written by a batch not yet committed (never evicted; stale marks do not apply). */
  staged: boolean;
  /** Read since the last eviction sweep passed it (second chance). */
  used: boolean;
}
export interface RowEntry extends Common {
  kind: 'r';
  present: boolean;
  value: unknown;
  /** -1: not versioned (usage totals: read outside transactions only). */
  ver: number;
  /**
   * The load sequence number at which this gateway's commit deleting the row was answered: a
   * deleted row has no version to compare, so a load sent before that answer (its snapshot
   * may predate the delete) must not bring the row back.
   */
  deleted_at?: number;
}
export interface BalanceEntry extends Common {
  kind: 'b' | 'p';
  micros: number;
  ver: number;
}
export interface SetEntry extends Common {
  kind: 'i';
  ids: Set<string>;
  ver: number;
}

/** A money check kept as a condition of the commit: Σ coefficient × cell ≥ min on the values before the batch. */
export interface Guard {
  cells: Array<[key: string, coefficient: number]>;
  min: number;
}

/** A history record's or posting's effect on aggregates, collected per run. */
export type RunOp = Op | { o: 'add'; t: TableName; id: string; n: number };

/** What a function's run did to the cache. */
export class Run {
  /** Keys read with the version read (rows, customer balances, index keys). */
  readonly reads = new Map<string, number>();
  /** Platform balances read, with the value read (validated by value: their shards have no version). */
  readonly pool_reads = new Map<string, number>();
  readonly misses = new Set<string>();
  readonly guards: Guard[] = [];
  /** Keys this run wrote (rows, counters, balances). */
  readonly written = new Set<string>();
  /** Deltas this run made to balances and counters (guards count them). */
  readonly deltas = new Map<string, number>();
  /** Counters this run set or deleted outright (a guard over one reads it exactly instead). */
  readonly absolute = new Set<string>();
  /** Every key the run touched: its reads, writes, guard cells, index keys whose sets it changed. */
  readonly keys = new Set<string>();
  /** Index keys whose sets this run changed (announced to other gateways for announced tables). */
  readonly announce = new Set<string>();
  readonly ops: RunOp[] = [];
  readonly undos: Array<() => void> = [];
  /**
   * Load what it misses at once (the event loop waiting) instead of recording it: set for a
   * run whose function missed in two rounds already, so that a function whose keys change
   * from run to run (a row under a new random id, then its index key) still ends.
   */
  sync_loads = false;
  /** It read a value a batch not yet committed wrote (its answer waits for that commit). */
  read_staged = false;
  constructor(
    readonly kind: 'tx' | 'read',
    /** Entries of validated tables loaded before this sequence number are misses (a fresh read). */
    readonly fresh_from = 0,
    /** The batch this run joins (a transaction's). */
    readonly batch: BatchState | null = null,
  ) {}

  miss(key: string): void {
    this.misses.add(key);
  }

  rollback(): void {
    for (let i = this.undos.length - 1; i >= 0; i--) this.undos[i]!();
    this.undos.length = 0;
  }

  /** A run whose function threw: its writes undone, its reads kept (checked with its batch). */
  keepReadsOnly(): void {
    this.rollback();
    this.written.clear();
    this.deltas.clear();
    this.ops.length = 0;
    this.guards.length = 0;
    this.announce.clear();
  }
}

/** What the runs kept in a batch so far add up to (a new run reads through it). */
export class BatchState {
  readonly written = new Set<string>();
  readonly deltas = new Map<string, number>();
  readonly absolute = new Set<string>();
  readonly keys = new Set<string>();

  add(run: Run): void {
    for (const key of run.written) this.written.add(key);
    for (const [key, delta] of run.deltas)
      this.deltas.set(key, (this.deltas.get(key) ?? 0) + delta);
    for (const key of run.absolute) this.absolute.add(key);
    for (const key of run.keys) this.keys.add(key);
  }
}

/** A declared index (`indexBy`). */
interface Declared {
  field: string;
  in_transactions: boolean;
}

const WALK_REFUSED =
  'walks a whole table inside a store run: on the PostgreSQL store read pages (store.list, store.page, store.scan)';

export class PgCache {
  readonly entries = new Map<string, Entry>();
  /** Incremented by every load: entries remember theirs. */
  load_seq = 1;
  /** readDurable(): entries of validated tables loaded before this are stale for reads outside runs. */
  durable_mark = 0;
  /** The run executing now (functions run synchronously: one at a time). */
  current: Run | null = null;
  readonly meta: State['meta'];
  readonly state: State;
  /** The declared indexes by table. */
  readonly declared = new Map<string, Declared[]>();
  /** `table␟field␟id` → the key of the complete set holding id. */
  private readonly member = new Map<string, string>();
  /** Entries evicted, rows loaded (counters). */
  evicted = 0;

  constructor(
    meta: State['meta'],
    readonly max_entries: number,
    /** Loads keys synchronously (a read outside any run that missed): the event loop waits. */
    private readonly blocking: (keys: Set<string>) => void,
  ) {
    this.meta = meta;
    const tables = new Proxy(Object.create(null) as Record<string, unknown>, {
      get: (_target, name) => (typeof name === 'string' ? this.tableView(name) : undefined),
      has: () => true,
      ownKeys: () => [],
      getOwnPropertyDescriptor: () => undefined,
      set: () => false,
      defineProperty: () => false,
      deleteProperty: () => false,
    });
    const balances = new Proxy(Object.create(null) as Record<string, number>, {
      get: (_target, name) => (typeof name === 'string' ? this.readBalance(name) : undefined),
      has: (_target, name) => typeof name === 'string',
      getOwnPropertyDescriptor: (_target, name) =>
        typeof name === 'string'
          ? { value: this.readBalance(name), writable: true, enumerable: true, configurable: true }
          : undefined,
      ownKeys: () => {
        throw new Error(`balances ${WALK_REFUSED}`);
      },
      set: () => false,
      defineProperty: () => false,
      deleteProperty: () => false,
    });
    this.state = {
      format: 'aihub-state',
      version: 2,
      seq: 0,
      meta: this.meta,
      balances,
      tables: tables as State['tables'],
    };
  }

  private readonly views = new Map<string, Record<string, unknown>>();

  /** A table as the rooms see it: rows read through the cache, never walked. */
  private tableView(name: string): Record<string, unknown> {
    let view = this.views.get(name);
    if (view) return view;
    view = new Proxy(Object.create(null) as Record<string, unknown>, {
      get: (_target, id) => (typeof id === 'string' ? this.readRow(name, id) : undefined),
      has: (_target, id) => typeof id === 'string' && this.readRow(name, id) !== undefined,
      getOwnPropertyDescriptor: (_target, id) => {
        if (typeof id !== 'string') return undefined;
        const value = this.readRow(name, id);
        return value === undefined
          ? undefined
          : { value, writable: true, enumerable: true, configurable: true };
      },
      ownKeys: () => {
        throw new Error(`table ${name}: ${WALK_REFUSED}`);
      },
      set: () => {
        throw new Error(`table ${name}: rows change only through tx.set and tx.del`);
      },
      defineProperty: () => {
        throw new Error(`table ${name}: rows change only through tx.set and tx.del`);
      },
      deleteProperty: () => {
        throw new Error(`table ${name}: rows change only through tx.set and tx.del`);
      },
    });
    this.views.set(name, view);
    return view;
  }

  declare(table: string, field: string, in_transactions: boolean): void {
    const list = this.declared.get(table) ?? [];
    const found = list.find((d) => d.field === field);
    if (found) found.in_transactions ||= in_transactions;
    else list.push({ field, in_transactions });
    this.declared.set(table, list);
  }

  // ---- reads ---------------------------------------------------------------------------

  /** Whether an entry may serve a read: known, and current enough for the read. */
  private usable(entry: Entry | undefined, validated: boolean, run: Run | null): entry is Entry {
    if (!entry) return false;
    if (entry.staged || !validated) return true;
    const from = run ? run.fresh_from : this.durable_mark;
    return entry.loaded >= from;
  }

  /** The entry for `key`, loaded first when a read outside any run misses it. */
  private entryFor(key: string, validated: boolean): Entry | undefined {
    const run = this.current;
    let entry = this.entries.get(key);
    if (run && run.batch && (run.written.has(key) || run.batch.written.has(key))) {
      run.read_staged = true;
      return entry;
    }
    if (!this.usable(entry, validated, run)) {
      if (run && !this.missed(run, key)) return undefined;
      if (!run) this.blocking(new Set([key]));
      entry = this.entries.get(key);
      if (!entry) throw new Error(`invariant: ${key} was loaded but is not in the cache`);
    }
    if (run && entry.staged) run.read_staged = true;
    entry.used = true;
    return entry;
  }

  /**
   * A run's miss of `key`: recorded (the run is undone, the key loaded, the run again), or for
   * a run with `sync_loads` loaded now. True when the entry is in the cache now.
   */
  private missed(run: Run, key: string): boolean {
    if (!run.sync_loads) {
      run.miss(key);
      return false;
    }
    this.blocking(new Set([key]));
    return true;
  }

  readRow(table: string, id: string): unknown {
    const key = rowKey(table, id);
    const run = this.current;
    if (run?.kind === 'tx' && PRESUMED_ABSENT_TABLES.has(table) && !this.entries.has(key)) {
      // Absent as far as this run knows: the commit checks it (keys.ts, PRESUMED_ABSENT_TABLES).
      if (!run.reads.has(key)) run.reads.set(key, 0);
      run.keys.add(key);
      return undefined;
    }
    const entry = this.entryFor(key, VALIDATED_TABLES.has(table));
    if (!entry || entry.kind !== 'r') return undefined;
    if (run && !run.written.has(key) && !run.batch?.written.has(key)) {
      if (entry.ver >= 0 && !run.reads.has(key)) run.reads.set(key, entry.ver);
      run.keys.add(key);
    }
    return entry.present ? entry.value : undefined;
  }

  readBalance(account: string): number {
    const customer = isCustomerBalance(account);
    const key = customer ? balanceKey(account) : poolKey(account);
    const run = this.current;
    const entry = this.entryFor(key, true);
    if (!entry || entry.kind === 'r' || entry.kind === 'i') return 0;
    if (run && !run.written.has(key) && !run.batch?.written.has(key)) {
      if (customer) {
        if (!run.reads.has(key)) run.reads.set(key, entry.ver);
        run.keys.add(key);
      } else if (!run.pool_reads.has(key)) run.pool_reads.set(key, entry.micros);
    }
    // A platform balance is the shards' sum as loaded plus what this batch adds (never staged).
    if (!customer && run) return entry.micros + this.delta(run, key);
    return entry.micros;
  }

  /** The ids of `table`'s rows whose `field` is `value`, in the order they entered. */
  readIndex(table: string, field: string, value: string): ReadonlySet<string> {
    const key = indexKey(table, field, value);
    const run = this.current;
    if (run?.kind === 'tx') {
      const declared = this.declared.get(table)?.find((d) => d.field === field);
      if (!declared?.in_transactions)
        throw new Error(
          `index ${table}.${field} is read inside a transaction: declare it with indexBy(${table}, ${field}, { in_transactions: true })`,
        );
    }
    const entry = this.entryFor(key, true);
    if (!entry || entry.kind !== 'i') return NO_IDS;
    if (run && !run.reads.has(key)) run.reads.set(key, entry.ver);
    run?.keys.add(key);
    return entry.ids;
  }

  /** A cell's value without recording a read (a guard's): a miss when unknown. */
  private peek(key: string): number {
    const run = this.current!;
    let entry = this.entries.get(key);
    if (!entry || (!entry.staged && entry.loaded < run.fresh_from)) {
      if (!this.missed(run, key)) return 0;
      entry = this.entries.get(key)!;
    }
    if (entry.kind === 'r') return entry.present ? Number(entry.value) || 0 : 0;
    if (entry.kind === 'i') return 0;
    return entry.micros + (entry.kind === 'p' ? this.delta(run, key) : 0);
  }

  /** Records the version of the committed value under a cell's staged changes (a customer balance or a row). */
  private readBase(run: Run, key: string): void {
    const entry = this.entries.get(key);
    if (!entry || entry.kind === 'i' || entry.kind === 'p' || run.reads.has(key)) return;
    if (entry.ver < 0) return;
    run.reads.set(key, entry.ver);
    run.keys.add(key);
  }

  private delta(run: Run, key: string): number {
    return (run.batch?.deltas.get(key) ?? 0) + (run.deltas.get(key) ?? 0);
  }

  /**
   * The money check that lets debits commute: whether `account`'s balance less the counters
   * `less` is at least `micros`. A yes becomes a guard the commit checks on the current values;
   * a no is an exact read of every cell (a refusal is answered only on committed values).
   */
  covers(account: string, micros: number, less: ReadonlyArray<[TableName, string]>): boolean {
    const run = this.current;
    if (!run) throw new Error('invariant: covers() outside a run');
    const cells: Array<[string, number]> = [
      [isCustomerBalance(account) ? balanceKey(account) : poolKey(account), 1],
      ...less.map(([table, id]): [string, number] => [rowKey(table, id), -1]),
    ];
    let value = 0;
    for (const [key, coefficient] of cells) value += coefficient * this.peek(key);
    if (run.misses.size > 0) return false;
    const ok = value >= micros;
    const commutes =
      ok &&
      cells.every(
        ([key]) =>
          key[0] !== 'p' && !run.absolute.has(key) && !(run.batch?.absolute.has(key) ?? false),
      );
    if (!commutes) {
      // Exact reads: a refusal, or a cell written outright in this batch.
      this.readBalance(account);
      for (const [table, id] of less) this.readRow(table, id);
      // A refusal is answered only on committed values. A cell this run or its batch already
      // changed (a settlement drops its reservation from `chat_reserved`, then debits) is not
      // read above, yet its value is a cached base plus those changes, and the base may be
      // stale (another gateway released its reservations since): the commit checks the
      // base's version too, so a refusal made on a stale base is run again on current values
      // instead of answered (a settlement refused for money its own reservation held).
      if (!ok) for (const [key] of cells) this.readBase(run, key);
      return ok;
    }
    let moved = 0;
    for (const [key, coefficient] of cells) moved += coefficient * this.delta(run, key);
    run.guards.push({ cells, min: micros - moved });
    for (const [key] of cells) run.keys.add(key);
    return ok;
  }

  // ---- writes (a transaction's run) ------------------------------------------------------

  private stage(run: Run, key: string, entry: Entry): void {
    const before = this.entries.get(key);
    this.entries.set(key, entry);
    run.undos.push(() => {
      if (before) this.entries.set(key, before);
      else this.entries.delete(key);
    });
  }

  setRow(run: Run, table: string, id: string, value: unknown): void {
    if (table === USAGE_TABLE)
      throw new Error('usage totals change through usage records (tx.history), not tx.set');
    const key = rowKey(table, id);
    const before = this.entries.get(key);
    const old = before?.kind === 'r' ? before : undefined;
    this.moveIndexes(run, table, id, old, value);
    this.stage(run, key, {
      kind: 'r',
      present: value !== undefined,
      value,
      ver: old?.ver ?? 0,
      loaded: old?.loaded ?? this.load_seq,
      staged: true,
      used: true,
    });
    run.written.add(key);
    run.keys.add(key);
    run.absolute.add(key);
    run.ops.push(
      value === undefined
        ? { o: 'del', t: table as TableName, id }
        : { o: 'set', t: table as TableName, id, v: value },
    );
  }

  /** Adds `n` to a counter row (absent is 0; 0 deletes it). Its value must be known: a miss loads it. */
  addCounter(run: Run, table: string, id: string, n: number): void {
    assertMicros(n);
    const key = rowKey(table, id);
    let entry = this.entries.get(key);
    if (!entry || entry.kind !== 'r') {
      if (!this.missed(run, key)) return;
      entry = this.entries.get(key);
      if (entry?.kind !== 'r') throw new Error(`invariant: ${key} was loaded but is not a row`);
    }
    const next = (entry.present ? Number(entry.value) || 0 : 0) + n;
    this.stage(run, key, {
      ...entry,
      present: next !== 0,
      value: next === 0 ? undefined : next,
      staged: true,
      used: true,
    });
    run.written.add(key);
    run.keys.add(key);
    run.deltas.set(key, (run.deltas.get(key) ?? 0) + n);
    run.ops.push({ o: 'add', t: table as TableName, id, n });
  }

  post(run: Run, posting: Posting): void {
    let sum = 0;
    for (const [account, amount] of posting.entries) {
      assertMicros(amount);
      sum += amount;
      if (!isCustomerBalance(account)) continue;
      const key = balanceKey(account);
      let entry = this.entries.get(key);
      if (!entry || entry.kind !== 'b') {
        if (!this.missed(run, key)) continue;
        entry = this.entries.get(key);
        if (entry?.kind !== 'b')
          throw new Error(`invariant: ${key} was loaded but is not a balance`);
      }
      if (entry.micros + amount < 0 && isCustomerLedgerAccount(account))
        throw new InvariantError(`posting ${posting.id} would take ${account} below zero`);
    }
    if (sum !== 0)
      throw new InvariantError(`posting ${posting.id} does not balance: entries sum to ${sum}`);
    if (run.misses.size > 0) return;
    for (const [account, amount] of posting.entries) {
      if (isCustomerBalance(account)) {
        const key = balanceKey(account);
        const entry = this.entries.get(key) as BalanceEntry;
        this.stage(run, key, { ...entry, micros: entry.micros + amount, staged: true, used: true });
        run.written.add(key);
        run.keys.add(key);
        run.deltas.set(key, (run.deltas.get(key) ?? 0) + amount);
      } else {
        const key = poolKey(account);
        run.deltas.set(key, (run.deltas.get(key) ?? 0) + amount);
      }
    }
    run.ops.push({ o: 'post', p: posting });
  }

  history(run: Run, record: HistoryRecord): void {
    run.ops.push({ o: 'hist', r: record });
    // The usage totals change in the database (added to by the commit): the cached ones are
    // dropped, to be read again.
    if (record.type === 'usage' && typeof record.account_id === 'string') {
      const key = rowKey(USAGE_TABLE, record.account_id);
      const before = this.entries.get(key);
      if (before) {
        this.entries.delete(key);
        run.undos.push(() => this.entries.set(key, before));
      }
    }
  }

  setMeta(run: Run, hash: string | null): void {
    const before = this.meta.admin_token_hash;
    this.meta.admin_token_hash = hash;
    run.undos.push(() => {
      this.meta.admin_token_hash = before;
    });
    run.ops.push({ o: 'meta', k: 'admin_token_hash', v: hash });
  }

  /**
   * Keeps cached index sets in step with a row's change (and its undo). An index read inside
   * transactions: a cached set is changed in place (the batch reads its own change) and the
   * key joins the run's keys (locked, checked); any other index: a cached set of either key is
   * dropped (a read outside runs loads it again). Index keys of announced tables are announced.
   */
  private moveIndexes(
    run: Run,
    table: string,
    id: string,
    old: RowEntry | undefined,
    value: unknown,
  ): void {
    const declared = this.declared.get(table);
    if (!declared) return;
    for (const { field, in_transactions } of declared) {
      const member_key = `${table}${SEP}${field}${SEP}${id}`;
      const from_key: string | null = old
        ? old.present
          ? keyOf(old.value, field)
          : null
        : splitMember(this.member.get(member_key));
      const to_key = value === undefined ? null : keyOf(value, field);
      if (from_key === to_key) continue;
      for (const [key, into] of [
        [from_key, false],
        [to_key, true],
      ] as const) {
        if (key === null) continue;
        const ikey = indexKey(table, field, key);
        run.announce.add(ikey);
        if (in_transactions) this.moveMember(run, ikey, member_key, id, into);
        else this.dropStaged(run, ikey);
      }
    }
  }

  private moveMember(run: Run, key: string, member_key: string, id: string, into: boolean): void {
    run.keys.add(key);
    const entry = this.entries.get(key);
    if (!entry || entry.kind !== 'i') return;
    run.written.add(key);
    const had = entry.ids.has(id);
    if (into === had) return;
    const was_staged = entry.staged;
    entry.staged = true;
    if (into) {
      entry.ids.add(id);
      this.member.set(member_key, key);
    } else {
      entry.ids.delete(id);
      this.member.delete(member_key);
    }
    run.undos.push(() => {
      entry.staged = was_staged;
      if (into) {
        entry.ids.delete(id);
        this.member.delete(member_key);
      } else {
        entry.ids.add(id);
        this.member.set(member_key, key);
      }
    });
  }

  /** Drops a cached set a run changed without tracking (its undo puts it back). */
  private dropStaged(run: Run, key: string): void {
    const entry = this.entries.get(key);
    if (entry?.kind !== 'i') return;
    this.dropSet(key);
    run.undos.push(() => this.putSetEntry(key, entry));
  }

  // ---- loads and commits -----------------------------------------------------------------

  /**
   * A row read from the database (or absent: value undefined). `sent` is the load sequence
   * number when the query that read it was sent (a load's answer; omitted for a commit's).
   */
  putRow(table: string, id: string, value: unknown, ver: number, sent?: number): void {
    const key = rowKey(table, id);
    const current = this.entries.get(key);
    if (current?.staged) return; // a batch in flight wrote it: its answer says what it is
    if (current?.kind === 'r') {
      // A load sent before a commit of this row and answered after it: its value is older
      // than the entry's (versions come from one sequence). It must not replace it: a split
      // transfer's answer read a leg as `pending` after the leg had committed `success`.
      if (current.ver > ver && ver > 0) return;
      // The same for a row this gateway deleted, which has no version left to compare.
      if (current.deleted_at !== undefined && sent !== undefined && sent < current.deleted_at)
        return;
    }
    this.entries.set(key, {
      kind: 'r',
      present: value !== undefined,
      value,
      ver,
      loaded: this.load_seq,
      staged: false,
      used: true,
    });
  }

  /** A commit's answer for a row it wrote: its new version and value, or deleted (version 0). */
  putCommitted(table: string, id: string, ver: number, value: string | null): void {
    const entry = this.entries.get(rowKey(table, id));
    if (entry?.kind !== 'r') return;
    entry.ver = ver;
    if (value !== null) {
      entry.value = JSON.parse(value);
      entry.present = true;
      delete entry.deleted_at;
    } else if (ver === 0) {
      entry.present = false;
      entry.value = undefined;
      entry.deleted_at = this.load_seq;
    }
  }

  putBalance(kind: 'b' | 'p', account: string, micros: number, ver: number): void {
    const key = kind === 'b' ? balanceKey(account) : poolKey(account);
    const current = this.entries.get(key);
    if (current?.staged) return;
    // As for rows: an older answer never replaces a newer balance (pools carry no version).
    if (kind === 'b' && current?.kind === 'b' && current.ver > ver && ver > 0) return;
    this.entries.set(key, { kind, micros, ver, loaded: this.load_seq, staged: false, used: true });
  }

  putSet(table: string, field: string, value: string, ids: Set<string>, ver: number): void {
    const key = indexKey(table, field, value);
    const current = this.entries.get(key);
    if (current?.staged) return;
    // A set loaded before a commit changed it and answered after: its version is older (an
    // index key's versions only grow; 0 is a key never changed). It must not replace it.
    if (current?.kind === 'i' && current.ver > ver) return;
    this.putSetEntry(key, {
      kind: 'i',
      ids,
      ver,
      loaded: this.load_seq,
      staged: false,
      used: true,
    });
  }

  private putSetEntry(key: string, entry: SetEntry): void {
    this.dropSet(key);
    this.entries.set(key, entry);
    const [table, field] = splitIndexKey(key);
    for (const id of entry.ids) this.member.set(`${table}${SEP}${field}${SEP}${id}`, key);
  }

  /** Forgets an index set (and which ids it held). */
  dropSet(key: string): void {
    const entry = this.entries.get(key);
    if (entry?.kind !== 'i') return;
    const [table, field] = splitIndexKey(key);
    for (const id of entry.ids) {
      const member_key = `${table}${SEP}${field}${SEP}${id}`;
      if (this.member.get(member_key) === key) this.member.delete(member_key);
    }
    this.entries.delete(key);
  }

  /** Drops a key another gateway changed (an announcement), unless a batch in flight holds it. */
  invalidate(key: string): boolean {
    const entry = this.entries.get(key);
    if (!entry || entry.staged) return false;
    if (entry.kind === 'i') this.dropSet(key);
    else this.entries.delete(key);
    return true;
  }

  /** Drops every entry of an announced table (the listener reconnected: something may have been missed). */
  invalidateAnnounced(): number {
    let dropped = 0;
    for (const [key, entry] of this.entries) {
      if (entry.staged) continue;
      const table =
        key[0] === 'r' ? splitRowKey(key)[0] : key[0] === 'i' ? splitIndexKey(key)[0] : null;
      if (table === null || VALIDATED_TABLES.has(table)) continue;
      if (entry.kind === 'i') this.dropSet(key);
      else this.entries.delete(key);
      dropped++;
    }
    return dropped;
  }

  /** Marks a committed batch's entries as committed (versions from the answer set them). */
  settle(keys: Iterable<string>): void {
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (entry) {
        entry.staged = false;
        entry.loaded = this.load_seq;
      }
    }
  }

  /** Evicts least recently used entries beyond the bound (second chance; staged ones stay). */
  evict(): void {
    if (this.entries.size <= this.max_entries) return;
    let passes = 0;
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= this.max_entries * 0.9) return;
      if (++passes > this.max_entries * 2) return;
      if (entry.staged) continue;
      if (entry.used) {
        entry.used = false;
        this.entries.delete(key);
        this.entries.set(key, entry); // to the back
        continue;
      }
      if (entry.kind === 'i') this.dropSet(key);
      else this.entries.delete(key);
      this.evicted++;
    }
  }
}

const NO_IDS: ReadonlySet<string> = new Set();

function keyOf(row: unknown, field: string): string | null {
  const value =
    typeof row === 'object' && row !== null ? (row as Record<string, unknown>)[field] : undefined;
  return typeof value === 'string' ? value : null;
}

function splitMember(key: string | undefined): string | null {
  return key === undefined ? null : splitIndexKey(key)[2];
}

/** A transaction function's `tx` on the PostgreSQL store: reads and writes through the cache in its run. */
export class CacheTx implements Tx {
  constructor(
    private readonly cache: PgCache,
    private readonly run: Run,
    readonly now: Date,
  ) {}
  get state(): State {
    return this.cache.state;
  }
  get<T extends TableName>(name: T, id: string): Row<T> | undefined {
    return this.cache.readRow(name, id) as Row<T> | undefined;
  }
  set<T extends TableName>(name: T, id: string, value: Row<T>): void {
    this.cache.setRow(this.run, name, id, value);
  }
  del(name: TableName, id: string): void {
    this.cache.setRow(this.run, name, id, undefined);
  }
  add(name: TableName, id: string, n: number): void {
    this.cache.addCounter(this.run, name, id, n);
  }
  post(posting: Posting): void {
    this.cache.post(this.run, posting);
  }
  /** The postings this run made (its ops in order: a posting a miss cut short is not there). */
  private postings(): Posting[] {
    return this.run.ops.flatMap((op) => (op.o === 'post' ? [op.p] : []));
  }
  get posting_count(): number {
    return this.postings().length;
  }
  postingsSince(from: number): Posting[] {
    return this.postings().slice(from);
  }
  history(record: HistoryRecord): void {
    this.cache.history(this.run, record);
  }
  setAdminTokenHash(hash: string | null): void {
    this.cache.setMeta(this.run, hash);
  }
  onUndo(undo: () => void): void {
    this.run.undos.push(undo);
  }
  covers(account: string, micros: number, less: ReadonlyArray<[TableName, string]> = []): boolean {
    return this.cache.covers(account, micros, less);
  }
}
