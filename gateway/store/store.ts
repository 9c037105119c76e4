// The store: current state in memory (checkpointed as one lowdb JSON document) plus an
// append-only journal of committed transactions. A transaction runs synchronously on the
// single JavaScript thread, so mutations are serialized by construction (the one queue);
// its promise resolves only after its journal line is fsynced (group commit).
import { existsSync, rmSync, statSync } from 'node:fs';
import { ensurePrivateDataDir, mkdirPrivate } from './private-files.js';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { Archive, ARCHIVED_TABLES, isArchivedRow } from './archive.js';
import {
  checkpointEnd,
  checkpointHead,
  checkpointRow,
  DurableJsonLinesFile,
} from './durable-file.js';
import { JournalWriter, readJournalPlaced } from './journal.js';
import { JsonFileReads } from './reads.js';
import type {
  IndexOptions,
  Marks,
  PageOptions,
  Readiness,
  Store as StoreContract,
  StoreReads,
  StoreStats,
  TableIndex,
  Tx,
} from './types.js';
import { readLegacyState } from './legacy-state.js';
import { MemoryMarks } from './memory-marks.js';
import { acquireLock } from './lock.js';
import { DiskFullError, DiskReserve, formatBytes, freeBytes, START_ROOM_BYTES } from './disk.js';
import { isNoSpace } from './journal.js';
import { StoreFullError } from '../kernel/errors.js';
import { requestScope } from '../kernel/request-scope.js';
import {
  AGGREGATE_TABLES,
  applyOp,
  detachPrototypes,
  emptyState,
  rowOf,
  table,
  type HistoryRecord,
  type JournalRecord,
  type Op,
  type Posting,
  type Row,
  type State,
  type TableName,
  type Tables,
} from './state.js';

export interface StoreOptions {
  now?: () => Date;
  /** Write a checkpoint after this many journal records... */
  checkpoint_every_records?: number;
  /** ...or after this long with changes. */
  checkpoint_interval_ms?: number;
  segment_bytes?: number;
  /** Told about a torn last journal line that recovery dropped, and about a checkpoint that could not be written. */
  warn?: (message: string) => void;
  /** Called when the disk refused a write: memory is ahead of disk, so the process must stop. */
  onFatal?: (error: Error) => void;
  /** A checkpoint is written in parts of about this many characters, the event loop running between parts. */
  checkpoint_part_chars?: number;
  /** Bytes kept for the journal on the data dir's disk (the reserve file; default 64 MiB, 0: none). */
  disk_reserve_bytes?: number;
  /** A warning once the disk's free bytes (beside the reserve) fall below this (default 512 MiB). */
  disk_warn_free_bytes?: number;
  /** How often the disk's free space is looked at (the warning, and writes resuming after a full disk). */
  disk_check_interval_ms?: number;
}

/** The JSON-file store's disk, for /metrics. */
export interface DiskStats {
  free_bytes: number;
  reserve_bytes: number;
  /** Writes are refused (507) for want of room. */
  refusing: boolean;
  /** Commits refused for want of room so far. */
  refused_total: number;
}

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

type Indexes = Map<TableName, Array<MemoryIndex<TableName>>>;

/** What keeps up with every row change (and its undo): the tables' row orders and the indexes. */
interface RowTrackers {
  indexes: Indexes;
  orders: Map<TableName, RowOrder>;
}

/** Rows archived by commits whose journal lines are not indexed yet: still found by id. */
interface RecentlyArchivedRow {
  row: unknown;
  seq: number;
}
type RecentlyArchived = Map<string, RecentlyArchivedRow>;

const NO_ROWS: ReadonlyMap<string, unknown> = new Map();

class Transaction implements Tx {
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
class StagedRecord<T> implements Staged<T> {
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

/** The checkpoint (JSON lines, read as a stream). */
export const STATE_FILE = 'state.jsonl';
/** The one-document checkpoint of the format before it: read once, migrated, removed. */
export const LEGACY_STATE_FILE = 'state.json';
export const JOURNAL_DIR = 'journal';

export interface LoadedState {
  state: State;
  replayed: number;
  /** The data dir held a state.json of version 1: its finalized rows were moved to history. */
  migrated: boolean;
}

/**
 * Loads checkpoint + journal replay, and brings `archive` (when given) up to the journal's
 * end: the records after min(checkpoint, index manifest) are read once, each applied to the
 * state and/or indexed as each needs it. Used by the store and by `verify`.
 */
export async function loadState(
  data_dir: string,
  options: {
    repair: boolean;
    warn?: (message: string) => void;
    now: () => Date;
    archive?: Archive;
    up_to_seq?: number;
  },
): Promise<LoadedState> {
  let state: State;
  let migrated = false;
  const legacy = join(data_dir, LEGACY_STATE_FILE);
  if (!existsSync(join(data_dir, STATE_FILE)) && existsSync(legacy)) {
    // Streamed, finalized rows dropped on the way: a state.json past 512 MB migrates too.
    const read = await readLegacyState(legacy);
    if (!read) throw new Error(`checkpoint ${legacy} vanished while it was being opened`);
    state = read.state;
    migrated = true;
  } else {
    const db = new Low<State>(
      new DurableJsonLinesFile(join(data_dir, STATE_FILE)),
      emptyState(options.now().toISOString()),
    );
    await db.read();
    state = db.data;
  }
  detachPrototypes(state);
  let replayed = 0;
  const archive = options.archive;
  const from_seq = archive ? Math.min(state.seq, archive.seq) : state.seq;
  const journal = readJournalPlaced(join(data_dir, JOURNAL_DIR), from_seq, {
    repair: options.repair,
    ...(options.up_to_seq !== undefined ? { up_to_seq: options.up_to_seq } : {}),
    onTornLine: (file, line, bytes) =>
      options.warn?.(
        `dropped a torn last journal line (${bytes} bytes at ${file} line ${line}): a crash interrupted that write before it was acknowledged`,
      ),
  });
  for (const { record, place } of journal) {
    if (record.s > state.seq) {
      applyRecord(state, record);
      replayed++;
    }
    archive?.apply(record, place.segment, place.offset, place.length);
  }
  if (migrated) {
    // Version 1 kept finalized rows in the document: they are history now (every one is in
    // the journal line that finalized it, which the indexes, built from the first record,
    // point at).
    state.version = 2;
    for (const name of ARCHIVED_TABLES) {
      const rows = state.tables[name as TableName] as Record<string, unknown> | undefined;
      if (!rows) continue;
      for (const id of Object.keys(rows)) if (isArchivedRow(name, rows[id])) delete rows[id];
    }
  }
  return { state, replayed, migrated };
}

export function applyRecord(state: State, record: JournalRecord): void {
  for (const op of record.ops) applyOp(state, op);
  state.seq = record.s;
}

export class FileStore implements StoreContract {
  private closed = false;
  private checkpointing: Promise<void> | null = null;
  private checkpoint_seq: number;
  private checkpoint_timer: NodeJS.Timeout | null = null;

  /** Characters of journal appended since the last checkpoint began, and that checkpoint's size. */
  private journal_chars_since = 0;
  private checkpoint_chars = 0;
  /** Checkpoints written so far (tests and the bench read it). */
  checkpoints = 0;

  /** Indexes by table (for each row change) and by table and field (for indexBy). */
  private readonly indexes: Indexes = new Map();
  private readonly indexes_by_field = new Map<string, MemoryIndex<TableName>>();
  /** Every table's row order, built at open from the loaded document. */
  private readonly orders = new Map<TableName, RowOrder>();
  private readonly trackers: RowTrackers = { indexes: this.indexes, orders: this.orders };
  private in_transaction = false;
  /** History reads through the indexes (the interface a second backend implements too). */
  readonly reads: StoreReads = new JsonFileReads(this);
  /** Records appended, waiting for their place in the journal to be indexed. */
  private readonly awaiting_place: JournalRecord[] = [];
  private readonly recently_archived: RecentlyArchived = new Map();
  /** 'full': the disk had no room for the journal; writes are refused (507) until it has. */
  private disk_state: 'ok' | 'full' = 'ok';
  /** Commits published and not yet durable, in order: undone if the disk refuses them. */
  private readonly unacked: Array<Staged<unknown>> = [];
  /** Bumped whenever commits are undone for want of room: a checkpoint begun before does not publish. */
  private refusals = 0;
  private refused_total = 0;
  private disk_timer: NodeJS.Timeout | null = null;
  /** A low-space warning was logged (again once the disk had room above the threshold). */
  private disk_warned = false;
  /** A checkpoint was skipped for want of room (said once until one is written). */
  private checkpoint_skipped = false;
  private readonly lookup = <T extends TableName>(name: T, id: string): Row<T> | undefined => {
    const recent = this.recently_archived.get(`${name}\u0000${id}`);
    if (recent) return recent.row as Row<T>;
    return this.archive.archivedRow(name, id) as Row<T> | undefined;
  };

  private constructor(
    readonly data_dir: string,
    readonly state: State,
    private readonly file: DurableJsonLinesFile,
    private readonly journal: JournalWriter,
    /** History on disk and its indexes. */
    readonly archive: Archive,
    private readonly releaseLock: () => void,
    /** Room on the disk kept for the journal. */
    private readonly reserve: DiskReserve,
    private readonly options: Required<
      Pick<
        StoreOptions,
        'now' | 'checkpoint_every_records' | 'checkpoint_part_chars' | 'disk_warn_free_bytes'
      >
    > &
      Pick<StoreOptions, 'warn'>,
  ) {
    this.checkpoint_seq = state.seq;
    for (const name of Object.keys(state.tables) as TableName[])
      this.orders.set(name, new RowOrder(Object.keys(state.tables[name] ?? {})));
  }

  /**
   * Opens the data dir. A disk without the room to start (the journal's reserve plus
   * START_ROOM_BYTES) is a DiskFullError: one line naming the disk and the room needed.
   */
  static async open(data_dir: string, options: StoreOptions = {}): Promise<FileStore> {
    const reserve = new DiskReserve(data_dir, options.disk_reserve_bytes ?? 0);
    try {
      return await FileStore.openIn(data_dir, reserve, options);
    } catch (error) {
      if (isNoSpace(error))
        throw new DiskFullError(data_dir, reserve.target_bytes + START_ROOM_BYTES);
      throw error;
    }
  }

  private static async openIn(
    data_dir: string,
    reserve: DiskReserve,
    options: StoreOptions,
  ): Promise<FileStore> {
    ensurePrivateDataDir(data_dir); // 0700, and no file in it open to group or others
    mkdirPrivate(join(data_dir, JOURNAL_DIR));
    const releaseLock = acquireLock(data_dir);
    try {
      reserve.claim(); // the journal's room first: a start on a disk without it writes nothing more
      const now = options.now ?? (() => new Date());
      const archive = await Archive.open(data_dir, join(data_dir, JOURNAL_DIR), {
        ...(options.warn ? { warn: options.warn } : {}),
      });
      const file = new DurableJsonLinesFile(join(data_dir, STATE_FILE));
      file.removeStaleTemps();
      const { state, migrated } = await loadState(data_dir, {
        repair: true,
        warn: options.warn,
        now,
        archive,
      });
      let store: FileStore | null = null;
      const journal = await JournalWriter.open(join(data_dir, JOURNAL_DIR), state.seq, {
        segment_bytes: options.segment_bytes ?? 64 * 1024 * 1024,
        onDurable: (seq) => {
          store?.acknowledged(seq);
          store?.maybeCheckpoint();
        },
        onPlaced: (first_seq, segment, starts) => store?.placed(first_seq, segment, starts),
        onFatal: (error) => {
          store?.markClosed();
          (options.onFatal ?? defaultFatal)(error);
        },
        onNoSpace: (error) => store?.noRoom(error) ?? false,
        onRefused: (durable_seq, error) => store!.refuseUnacked(durable_seq, error),
      });
      store = new FileStore(data_dir, state, file, journal, archive, releaseLock, reserve, {
        now,
        checkpoint_every_records: options.checkpoint_every_records ?? 20_000,
        checkpoint_part_chars: options.checkpoint_part_chars ?? 256 * 1024,
        disk_warn_free_bytes: options.disk_warn_free_bytes ?? 512 * 1024 * 1024,
        warn: options.warn,
      });
      store.checkpoint_chars = existsSync(join(data_dir, STATE_FILE))
        ? statSync(join(data_dir, STATE_FILE)).size
        : 0;
      if (migrated) {
        // The first start of a data dir of version 1: the new checkpoint and the indexes
        // are written before anything else, then the old document goes.
        await store.checkpoint();
        rmSync(join(data_dir, LEGACY_STATE_FILE), { force: true });
        options.warn?.(
          `migrated ${join(data_dir, LEGACY_STATE_FILE)} (version 1) to ${STATE_FILE} with history indexes`,
        );
      }
      const interval_ms = options.checkpoint_interval_ms ?? 60_000;
      store.checkpoint_timer = setInterval(() => store!.maybeCheckpoint(true), interval_ms);
      store.checkpoint_timer.unref();
      store.watchDisk();
      store.disk_timer = setInterval(
        () => store!.watchDisk(),
        options.disk_check_interval_ms ?? 1_000,
      );
      store.disk_timer.unref();
      return store;
    } catch (error) {
      releaseLock();
      throw error;
    }
  }

  /** Resolves once the journal is durable up to record `seq` (what an index manifest waits for). */
  private readonly durableUpTo = (seq: number): Promise<void> => this.journal.waitDurable(seq);

  /**
   * Journal lines placed (written; their fdatasync in flight, no one waiting on them told
   * yet): their records are indexed, and rows they archived are found there from now on.
   */
  private placed(first_seq: number, segment: number, starts: readonly number[]): void {
    const awaiting = this.awaiting_place;
    const count = starts.length - 1;
    for (let i = 0; i < count; i++) {
      const record = awaiting[i];
      if (!record || record.s !== first_seq + i)
        throw new Error(
          `invariant: journal placed record ${first_seq + i} but ${record?.s} was waiting`,
        );
      this.archive.apply(record, segment, starts[i]!, starts[i + 1]! - starts[i]! - 1);
      if (this.recently_archived.size === 0) continue;
      for (const op of record.ops) {
        if (op.o !== 'set' || !isArchivedRow(op.t, op.v)) continue;
        const key = `${op.t}\u0000${op.id}`;
        if (this.recently_archived.get(key)?.seq === record.s) this.recently_archived.delete(key);
      }
    }
    // One splice per group (a shift per record moved the rest of the array each time).
    awaiting.splice(0, count);
  }

  /**
   * Runs `fn` as one atomic transaction. If it throws, every change it made is undone and the
   * promise rejects with that error. Otherwise the promise resolves with fn's result once the
   * transaction is durable. A transaction that changes nothing still waits for every earlier
   * commit, so what it read was durable when it is answered.
   */
  transact<T>(fn: (tx: Tx) => T): Promise<T> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    let staged: Staged<T>;
    try {
      staged = this.stage(fn);
    } catch (error) {
      return Promise.reject(error);
    }
    if (!staged.record) return this.journal.waitDurable(this.state.seq).then(() => staged.result);
    // The request's scope: a refusal then says truthfully whether it had changed anything.
    const scope = requestScope();
    if (this.disk_state === 'full') {
      // No room to make it durable: undone at once (it was the last staged), nothing recorded.
      staged.undo();
      this.refused_total++;
      return Promise.reject(new StoreFullError(undefined, scope));
    }
    this.unacked.push(staged);
    return this.publish(staged).then(
      () => {
        if (scope) scope.committed++;
        return staged.result;
      },
      (error: unknown) => {
        // A refusal made in the journal's callback is re-made for this writer's request.
        throw error instanceof StoreFullError ? new StoreFullError(undefined, scope) : error;
      },
    );
  }

  /** Commits up to `seq` are durable: no refusal can undo them now. */
  private acknowledged(seq: number): void {
    let n = 0;
    while (n < this.unacked.length && this.unacked[n]!.record!.s <= seq) n++;
    if (n > 0) this.unacked.splice(0, n);
  }

  /**
   * A journal group found the disk full: writes are refused from now on (the commits in
   * flight are written into the reserve's room, which is given back to the disk here).
   */
  private noRoom(error: Error): boolean {
    this.enterFull(error);
    return this.reserve.release();
  }

  private enterFull(error: Error): void {
    if (this.disk_state === 'full') return;
    this.disk_state = 'full';
    this.options.warn?.(
      `the disk of data dir ${this.data_dir} is full (${error.message}): writes are refused (507 insufficient_storage) ` +
        `until it has ${formatBytes(this.reserve.target_bytes + START_ROOM_BYTES)} free again; reads go on`,
    );
  }

  /**
   * Even the reserve's room was not enough: the commits after `durable_seq` are undone, last
   * first, so that memory is what the disk holds, and their writers get a StoreFullError.
   */
  private refuseUnacked(durable_seq: number, error: Error): Error {
    this.enterFull(error);
    let keep = this.unacked.length;
    while (keep > 0 && this.unacked[keep - 1]!.record!.s > durable_seq)
      this.unacked[--keep]!.undo();
    this.refused_total += this.unacked.length - keep;
    this.unacked.length = keep;
    const awaiting = this.awaiting_place;
    while (awaiting.length > 0 && awaiting.at(-1)!.s > durable_seq) awaiting.pop();
    this.refusals++;
    if (this.state.seq !== durable_seq)
      throw new Error(
        `invariant: undone to record ${this.state.seq}, the journal is durable to ${durable_seq}`,
      );
    return new StoreFullError();
  }

  /** Looks at the disk: the low-space warning, and writes resuming once the reserve fits again. */
  private watchDisk(): void {
    let free: number;
    try {
      free = freeBytes(this.data_dir);
    } catch {
      return;
    }
    const warn_at = this.options.disk_warn_free_bytes;
    if (free < warn_at && !this.disk_warned) {
      this.disk_warned = true;
      this.options.warn?.(
        `the disk of data dir ${this.data_dir} has ${formatBytes(free)} free, below store.disk_warn_free_bytes (${formatBytes(warn_at)}); ` +
          `when it is full, writes are refused (507) until space is freed`,
      );
    } else if (free >= warn_at) this.disk_warned = false;
    if (this.disk_state !== 'full' || this.closed) return;
    if (free < this.reserve.missing_bytes + START_ROOM_BYTES) return;
    try {
      this.reserve.fill();
    } catch (error) {
      if (!isNoSpace(error))
        this.options.warn?.(`could not restore the journal's reserve: ${(error as Error).message}`);
      return;
    }
    this.disk_state = 'ok';
    this.options.warn?.(
      `the disk of data dir ${this.data_dir} has room again (${formatBytes(free)} free; the journal's reserve restored): writes resume`,
    );
  }

  /** The data dir's disk for /metrics. */
  diskStats(): DiskStats {
    let free_bytes = 0;
    try {
      free_bytes = freeBytes(this.data_dir);
    } catch {
      // reported as 0
    }
    return {
      free_bytes,
      reserve_bytes: this.reserve.held_bytes,
      refusing: this.disk_state === 'full',
      refused_total: this.refused_total,
    };
  }

  /** Ready unless closed or refusing writes for want of room (a probe looks at the disk first). */
  readiness(): Promise<Readiness> {
    if (this.closed) return Promise.resolve({ ready: false, reason: 'the store is closed' });
    if (this.disk_state === 'full') this.watchDisk();
    if (this.disk_state === 'full')
      return Promise.resolve({
        ready: false,
        reason: `the disk of data dir ${this.data_dir} is full: writes are refused until ${formatBytes(this.reserve.target_bytes + START_ROOM_BYTES)} is free`,
      });
    return Promise.resolve({ ready: true });
  }

  /**
   * Runs `fn` against the state as one transaction and gives it the next sequence number,
   * without writing it anywhere: the caller publishes it (`publish`) or undoes it (`undo`,
   * in reverse order of staging). Throws, with every change undone, when `fn` throws.
   * @internal
   */
  stage<T>(fn: (tx: Tx) => T): Staged<T> {
    const tx = new Transaction(this.state, this.options.now(), this.trackers, this.lookup);
    let result: T;
    this.in_transaction = true;
    try {
      result = fn(tx);
    } catch (error) {
      tx.rollback();
      throw error;
    } finally {
      this.in_transaction = false;
    }
    if (tx.ops.length === 0)
      return new StagedRecord(result, null, '', tx, this.state, this.recently_archived);
    const seq = this.state.seq + 1;
    const record: JournalRecord = { s: seq, t: tx.now.toISOString(), ops: tx.ops };
    let line: string;
    try {
      line = `${JSON.stringify(record)}\n`;
    } catch (error) {
      // A value that cannot be written (nested too deep for JSON.stringify): nothing happened.
      tx.rollback();
      throw error;
    }
    this.state.seq = seq;
    return new StagedRecord(result, record, line, tx, this.state, this.recently_archived);
  }

  /** Appends a staged record to the journal (and its history to the indexes once placed). @internal */
  publish(staged: Pick<Staged<unknown>, 'record' | 'line' | 'archived'>): Promise<void> {
    const record = staged.record!;
    this.awaiting_place.push(record);
    if (staged.archived.size > 0)
      for (const [key, row] of staged.archived)
        this.recently_archived.set(key, { row, seq: record.s });
    this.journal_chars_since += staged.line.length;
    return this.journal.append(staged.line, record.s);
  }

  // What the rooms need that differs from PostgreSQL's (types.ts): one process, all in memory.
  preload<T>(_fn: (state: State) => T): Promise<T> | null {
    return null;
  }

  transactThenRead<T, R>(fn: (tx: Tx) => T, after: (state: State) => R): Promise<[T, R]> {
    return this.transact((tx): [T, R] => {
      const result = fn(tx);
      return [result, after(tx.state)];
    });
  }

  marks<T extends TableName>(_name: T): Marks<T> {
    return new MemoryMarks<T>();
  }

  acrossGateways<T>(_make: () => T): T | null {
    return null;
  }

  /** This process runs the background work (status checks, webhooks, pruning). */
  isLeader(): boolean {
    return true;
  }

  liveGateways(): number {
    return 1;
  }

  /** Signed-request claims are this process's own memory's business (always true here). */
  claimShared(_key: string, _until_ms: number, _now_ms: number): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** No database to check the encryption key against (the data dir's secrets are checked at start). */
  sharedKeyCheck(_sealed: string, _replace = false): Promise<string | null> {
    return Promise.resolve(null);
  }

  /** One process: every item is this one's to work. */
  claim(_kind: string, ids: readonly string[], _lease_ms: number): Promise<string[]> {
    return Promise.resolve([...ids]);
  }

  release(_kind: string, _ids: readonly string[]): Promise<void> {
    return Promise.resolve();
  }

  /** One process: the item is this one's to work, as its caller read it. */
  withClaim<R>(
    _item: { kind: string; id: string; lease_ms: number },
    seen: R,
    _reread: () => Promise<R | null>,
    work: (row: R) => Promise<void>,
  ): Promise<void> {
    return work(seen);
  }

  sharedStats(): StoreStats | null {
    return null;
  }

  background<T>(fn: () => Promise<T>): Promise<T> {
    return fn();
  }

  /**
   * Waits until every commit made so far is durable, so that what is read next was on disk
   * before it is shown (a read's barrier; the same wait as a transaction that changes nothing).
   */
  readDurable(): Promise<void> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return this.journal.waitDurable(this.state.seq);
  }

  /**
   * Runs `fn` on the state outside a transaction (a request's reads before or after its
   * commits). With `fresh`, what it reads is durable and current first (`readDurable`). On
   * the PostgreSQL store `fn` runs on the gateway's cache and what it misses is loaded before
   * it runs again (docs/store-postgres.md, "Reads outside transactions"); the rooms read
   * through this, `fetch`, `list`, `count`, `page` and `scan`, never `state` directly.
   */
  read<T>(fn: (state: State) => T, options: { fresh?: boolean } = {}): Promise<T> {
    if (options.fresh) return this.readDurable().then(() => fn(this.state));
    try {
      return Promise.resolve(fn(this.state));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One row as committed now (a live row, or a finalized one from history). */
  fetch<T extends TableName>(name: T, id: string): Promise<Row<T> | undefined> {
    return this.readDurable().then(() => this.get(name, id));
  }

  /** The live rows of `name` whose `field` is `key` (an index declared with `indexBy`), as committed now. */
  async list<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    key: string,
  ): Promise<Array<Row<T>>> {
    await this.readDurable();
    return [...this.indexBy(name, field).rows(key)];
  }

  /** How many live rows `name` holds, as committed now. */
  async count(name: TableName): Promise<number> {
    await this.readDurable();
    return this.liveCount(name);
  }

  /** A page of a table's live rows in creation order (`newest_first`: the reverse), as committed now. */
  async page<T extends TableName>(name: T, options: PageOptions): Promise<Array<Row<T>>> {
    await this.readDurable();
    const rows: Array<Row<T>> = [];
    if (options.limit <= 0) return rows;
    for (const row of this.walkRows(name, {
      newest_first: options.newest_first ?? false,
      skip: options.offset,
    })) {
      rows.push(row);
      if (rows.length >= options.limit) break;
    }
    return rows;
  }

  /**
   * A table's ids in creation order (oldest first), `chunk` at a time, as they were when the
   * scan began (rows created later wait for the next scan; an id may since have been deleted:
   * read its row in the transaction that acts on it). Pruning and re-sealing walk tables so.
   */
  async *scan(name: TableName, chunk = 1_000): AsyncGenerator<string[]> {
    await this.readDurable();
    const { ids, count } = this.rowIds(name);
    for (let from = 0; from < count; from += chunk)
      yield ids.slice(from, Math.min(count, from + chunk));
  }

  async below(
    name: TableName,
    field: string,
    value: number | string,
    limit: number,
  ): Promise<string[]> {
    await this.readDurable();
    const found: Array<[string, number | string]> = [];
    const rows = table(this.state, name) as Record<string, Record<string, unknown>>;
    for (const id of Object.keys(rows)) {
      const at = rows[id]?.[field];
      if ((typeof at === 'number' || typeof at === 'string') && at < value) found.push([id, at]);
    }
    return found
      .sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
      .slice(0, limit)
      .map(([id]) => id);
  }

  /** A live row, or (for tables whose final rows are history) a finalized one from the archive. */
  get<T extends TableName>(name: T, id: string): Row<T> | undefined {
    const rows = table(this.state, name) as Record<string, Row<T>>;
    if (Object.hasOwn(rows, id)) return rows[id];
    return ARCHIVED_TABLES.has(name) ? this.lookup(name, id) : undefined;
  }

  /** The live rows of a table (never history: finalized payment transactions are in `archive`). */
  rows<T extends TableName>(name: T): Tables[T] {
    return table(this.state, name);
  }

  /**
   * The table's ids in creation order as they are now, to walk over many event-loop turns
   * without listing the table's keys at once: the first `count` entries of `ids` (an id may
   * since have been deleted: check its row). Rows created later are not included.
   */
  rowIds(name: TableName): { ids: readonly string[]; count: number } {
    const order = this.orders.get(name);
    return order ? { ids: order.ids, count: order.ids.length } : { ids: [], count: 0 };
  }

  /** How many live rows the table holds, without listing them (its row order's live ids). */
  liveCount(name: TableName): number {
    const order = this.orders.get(name);
    return order ? order.ids.length - order.dead.size : 0;
  }

  /**
   * Walks a table's live rows in creation order (`newest_first`: the reverse), from the
   * `skip`-th live row on, reading the row order and the rows it yields only: an admin list's
   * page costs the page (plus the ids of rows deleted since the last compaction that it
   * passes; a table none of whose rows is ever deleted, such as accounts, skips in one step).
   * The caller stops when it has its page; rows created while it walks are not included.
   */
  *walkRows<T extends TableName>(
    name: T,
    options: { newest_first?: boolean; skip?: number } = {},
  ): Generator<Row<T>> {
    const order = this.orders.get(name);
    if (!order) return;
    const rows = table(this.state, name) as Record<string, Row<T>>;
    const { ids, dead } = order;
    const count = ids.length;
    let skip = Math.max(0, options.skip ?? 0);
    // With nothing dead, the skip-th live row is the skip-th id.
    let i = dead.size === 0 ? skip : 0;
    if (dead.size === 0) skip = 0;
    for (; i < count; i++) {
      const id = ids[options.newest_first ? count - 1 - i : i]!;
      if (!Object.hasOwn(rows, id)) continue;
      if (skip > 0) {
        skip--;
        continue;
      }
      yield rows[id]!;
    }
  }

  /**
   * The index of `name` by the string field `field` of its rows: built from the table the
   * first time it is asked for (one pass over the table), then kept in step with every
   * commit and rollback. Ask for it at start-up so that no request pays for the pass.
   */
  indexBy<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    _options: IndexOptions = {},
  ): TableIndex<T> {
    const name_field = `${name}\u0000${field}`;
    let index = this.indexes_by_field.get(name_field);
    if (!index) {
      // Built from a half-done transaction, a rollback of its earlier changes would miss it.
      if (this.in_transaction)
        throw new Error(
          `invariant: index ${name}.${field} first asked for inside a transaction; build it at start-up`,
        );
      index = new MemoryIndex<TableName>(
        () => table(this.state, name) as Record<string, Row<TableName>>,
        field,
      );
      this.indexes_by_field.set(name_field, index);
      this.indexes.set(name, [...(this.indexes.get(name) ?? []), index]);
    }
    return index as unknown as TableIndex<T>;
  }

  /** Number of fsync groups so far (tests use it to see group commit at work). */
  get commit_groups(): number {
    return this.journal.groups;
  }

  private maybeCheckpoint(by_timer = false): void {
    if (this.closed || this.checkpointing || this.disk_state === 'full') return;
    const behind = this.state.seq - this.checkpoint_seq;
    if (behind === 0) return;
    // Writing a checkpoint costs CPU in proportion to the document: by count, one is taken
    // only once the journal has grown by half the last one's size too, so that a large
    // document under heavy writes is not rewritten every few seconds (amortized, each
    // journal character pays for at most two characters of checkpoint). The timer still
    // takes one every checkpoint_interval_ms while anything changed.
    if (
      !by_timer &&
      (behind < this.options.checkpoint_every_records ||
        this.journal_chars_since < this.checkpoint_chars / 2)
    )
      return;
    if (!this.roomForCheckpoint()) return;
    // A checkpoint that cannot be written loses nothing (the journal holds every record) and
    // is tried again at the next trigger; the process goes on.
    this.checkpointing = this.checkpoint()
      .catch((error: unknown) => {
        if (!this.closed)
          this.options.warn?.(
            `could not write the checkpoint (${(error as Error).message}); the journal holds everything, the next checkpoint tries again`,
          );
      })
      .finally(() => {
        this.checkpointing = null;
      });
  }

  /**
   * Whether the disk has room for a checkpoint and its index write-out (about twice the last
   * checkpoint plus the journal since, a generous guess): one that would fill the disk is not
   * begun, so that it never takes the room the journal writes into next (the reserve is the
   * journal's in any case; a checkpoint that fails removes what it wrote).
   */
  private roomForCheckpoint(): boolean {
    const need = 2 * (this.checkpoint_chars + this.journal_chars_since) + START_ROOM_BYTES;
    let free = Infinity;
    try {
      free = freeBytes(this.data_dir);
    } catch {
      // unknown: tried
    }
    if (free >= need) {
      this.checkpoint_skipped = false;
      return true;
    }
    if (!this.checkpoint_skipped)
      this.options.warn?.(
        `no checkpoint written: it needs about ${formatBytes(need)} and the disk of data dir ${this.data_dir} has ${formatBytes(free)} free; the journal holds everything, it is tried again when there is room`,
      );
    this.checkpoint_skipped = true;
    return false;
  }

  /**
   * Writes the document while requests go on. A checkpoint of record `seq` must, with the
   * journal records after `seq` replayed onto it, give the state of the last record. So:
   * - the parts that non-idempotent ops change (balances, which postings add to, and the
   *   AGGREGATE_TABLES) and `meta` are serialized at once, exactly as of `seq`;
   * - every other table is written row by row over many event-loop turns (a synchronous
   *   copy of the whole document stalled every request: 6 s for 200,000 payment
   *   transactions). A row may thus be written as of a later record; replaying set and del
   *   ops is idempotent and in order, so every row ends as the last record left it, and a
   *   row created or deleted meanwhile is created or deleted again by replay.
   * The file replaces the old checkpoint only once every record whose effects it may hold
   * is durable: it never holds a change the journal could still lose.
   */
  private async checkpoint(): Promise<void> {
    const state = this.state;
    const part_chars = this.options.checkpoint_part_chars;
    this.journal_chars_since = 0;
    let seq = state.seq;
    let written = 0;
    const refusals = this.refusals;
    await this.file.writeParts(
      async (emit) => {
        // Everything but the tables (format, seq, meta, balances), and the aggregate tables,
        // in this one synchronous step: the checkpoint is of the record current now.
        seq = state.seq;
        const lines = checkpointHead(state);
        const names = Object.keys(state.tables) as TableName[];
        for (const name of names) {
          if (!AGGREGATE_TABLES.has(name)) continue;
          const rows = state.tables[name] as Record<string, unknown>;
          for (const id of Object.keys(rows)) lines.push(checkpointRow(name, id, rows[id]));
        }
        let part = lines.join('');
        let line_count = lines.length;
        // The row orders as they are now (rows created later are the journal's to replay).
        const lists = new Map<TableName, { ids: string[]; count: number }>();
        for (const name of names) {
          const order = this.orders.get(name);
          if (!order || AGGREGATE_TABLES.has(name)) continue;
          order.compact();
          lists.set(name, { ids: order.ids, count: order.ids.length });
        }
        for (const name of names) {
          const list = lists.get(name);
          const rows = state.tables[name] as Record<string, unknown> | undefined;
          if (!list || !rows) continue;
          for (let i = 0; i < list.count; i++) {
            const id = list.ids[i]!;
            if (!Object.hasOwn(rows, id)) continue; // deleted or archived (now, or before the checkpoint began)
            part += checkpointRow(name, id, rows[id]);
            line_count++;
            if (part.length >= part_chars) {
              written += part.length;
              await emit(part);
              part = '';
            }
          }
        }
        part += checkpointEnd(line_count + 1);
        written += part.length;
        await emit(part);
      },
      async () => {
        await this.journal.waitDurable(this.state.seq);
        // Commits undone meanwhile (a full disk) may have left rows in it that never were.
        if (this.refusals !== refusals)
          throw new Error('commits were refused for want of room while it was written');
      },
    );
    this.checkpoint_seq = seq;
    this.checkpoint_chars = written;
    this.checkpoints++;
    // The indexes as of every record placed so far (the journal after them is indexed again
    // at open); the manifest waits until those records are durable.
    await this.archive.sync(this.durableUpTo);
  }

  private markClosed(): void {
    this.closed = true;
  }

  /** Waits for in-flight commits, writes a final checkpoint and releases the lock. */
  async close(): Promise<void> {
    if (this.checkpoint_timer) clearInterval(this.checkpoint_timer);
    if (this.disk_timer) clearInterval(this.disk_timer);
    const was_closed = this.closed;
    this.closed = true;
    try {
      await this.journal.close();
      if (this.checkpointing) await this.checkpointing;
      try {
        if (!was_closed && this.state.seq !== this.checkpoint_seq) await this.checkpoint();
        else if (!was_closed) await this.archive.sync(this.durableUpTo);
      } catch (error) {
        // No room for the last checkpoint: the journal holds everything, the next start replays it.
        if (!isNoSpace(error)) throw error;
        this.options.warn?.(
          `no checkpoint written at close (${(error as Error).message}); the journal holds everything`,
        );
      }
    } finally {
      this.archive.close();
      this.releaseLock();
    }
  }
}

export class StoreClosedError extends Error {
  override name = 'StoreClosedError';
  constructor() {
    super('the store is closed');
  }
}

export { StoreUnavailableError } from '../kernel/errors.js';

function defaultFatal(error: Error): never {
  process.stderr.write(
    `AIHub gateway: the store could not write to disk (${error.message}); stopping so that nothing unacknowledged is served\n`,
  );
  process.exit(70);
}

/** The checkpoint on disk as it is (no journal replay): tests and tools. */
export function readCheckpoint(data_dir: string): Promise<State | null> {
  return new DurableJsonLinesFile(join(data_dir, STATE_FILE)).read();
}

/** The JSON-file store under its old name (`Store.open`): tests and tools open data dirs so. */
export const Store = FileStore;
