// The JSON-file store: current state in memory (checkpointed as one JSON Lines document) plus
// an append-only journal of committed transactions. A transaction runs synchronously on the
// single JavaScript thread, so mutations are serialized by construction (the one queue);
// its promise resolves only after its journal line is fsynced (group commit). Its parts:
// transaction.ts (a transaction's ops and undo), memory-index.ts (indexes and row orders),
// load-state.ts (checkpoint + journal replay at open), journal.ts, archive.ts and reads.ts
// (history), disk.ts (the full-disk reserve), one-process.ts (the fleet part of the contract,
// trivial for one process). This file opens the data dir, commits, reads the live tables,
// writes checkpoints and watches the disk.
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDataDir, mkdirPrivate } from './private-files.js';
import { Archive, ARCHIVED_TABLES, isArchivedRow } from './archive.js';
import type { HistoryTags } from './history-tags.js';
import {
  checkpointEnd,
  checkpointHead,
  checkpointRow,
  DurableJsonLinesFile,
} from './durable-file.js';
import { JournalWriter } from './journal.js';
import { JOURNAL_DIR, LEGACY_STATE_FILE, loadState, STATE_FILE } from './load-state.js';
import { MemoryIndex, RowOrder, type Indexes, type RowTrackers } from './memory-index.js';
import { OneProcess } from './one-process.js';
import { JsonFileReads } from './reads.js';
import { StagedRecord, Transaction, type RecentlyArchived, type Staged } from './transaction.js';
import type {
  IndexOptions,
  PageOptions,
  Readiness,
  Store as StoreContract,
  StoreReads,
  TableIndex,
  TransactOptions,
  Tx,
} from './types.js';
import { acquireLock } from './lock.js';
import { DiskFullError, DiskReserve, formatBytes, freeBytes, START_ROOM_BYTES } from './disk.js';
import { isNoSpace } from './fs-durable.js';
import { StoreFullError } from '../kernel/errors.js';
import { requestScope } from '../kernel/request-scope.js';
import {
  AGGREGATE_TABLES,
  table,
  type JournalRecord,
  type Row,
  type State,
  type TableName,
  type Tables,
} from './state.js';

/** Tests and tools read a data dir through these, under the store's name. */
export { loadState, readCheckpoint } from './load-state.js';
export { JOURNAL_DIR, LEGACY_STATE_FILE, STATE_FILE };

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
  /** What the rooms tag history with (payments/history-tags.ts); default none. */
  history_tags?: HistoryTags;
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

export class FileStore extends OneProcess implements StoreContract {
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
    super();
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
        ...(options.history_tags ? { history_tags: options.history_tags } : {}),
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
  transact<T>(fn: (tx: Tx) => T, options?: TransactOptions): Promise<T> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    let staged: Staged<T>;
    try {
      staged = this.stage(fn);
    } catch (error) {
      return Promise.reject(error);
    }
    if (!staged.record) return this.journal.waitDurable(this.state.seq).then(() => staged.result);
    // The request's scope: a refusal then says truthfully whether it had changed anything.
    const scope = options?.scope ?? requestScope();
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

  /** One process: `after` reads what this very transaction left (nobody else commits between). */
  transactThenRead<T, R>(
    fn: (tx: Tx) => T,
    after: (state: State) => R,
    options?: TransactOptions,
  ): Promise<[T, R]> {
    return this.transact((tx): [T, R] => {
      const result = fn(tx);
      return [result, after(tx.state)];
    }, options);
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

/** The JSON-file store under its old name (`Store.open`): tests and tools open data dirs so. */
export const Store = FileStore;
