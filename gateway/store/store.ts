// The store: current state in memory (checkpointed as one lowdb JSON document) plus an
// append-only journal of committed transactions. A transaction runs synchronously on the
// single JavaScript thread, so mutations are serialized by construction (the one queue);
// its promise resolves only after its journal line is fsynced (group commit).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { DurableJsonFile } from './durable-file.js';
import { JournalWriter, readJournal } from './journal.js';
import { acquireLock } from './lock.js';
import {
  applyOp,
  emptyState,
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
  /** Told once about a torn last journal line that recovery dropped. */
  warn?: (message: string) => void;
  /** Called when the disk refused a write: memory is ahead of disk, so the process must stop. */
  onFatal?: (error: Error) => void;
}

/** What a transaction function sees: the state to read, and the only ways to change it. */
export interface Tx {
  readonly state: State;
  readonly now: Date;
  get<T extends TableName>(name: T, id: string): Row<T> | undefined;
  set<T extends TableName>(name: T, id: string, value: Row<T>): void;
  del(name: TableName, id: string): void;
  post(posting: Posting): void;
  history(record: HistoryRecord): void;
  setAdminTokenHash(hash: string | null): void;
}

class Transaction implements Tx {
  readonly ops: Op[] = [];
  private readonly undos: Array<() => void> = [];
  constructor(
    readonly state: State,
    readonly now: Date,
  ) {}

  private apply(op: Op): void {
    this.undos.push(applyOp(this.state, op));
    this.ops.push(op);
  }
  get<T extends TableName>(name: T, id: string): Row<T> | undefined {
    return (table(this.state, name) as Record<string, Row<T>>)[id];
  }
  set<T extends TableName>(name: T, id: string, value: Row<T>): void {
    this.apply({ o: 'set', t: name, id, v: value });
  }
  del(name: TableName, id: string): void {
    this.apply({ o: 'del', t: name, id });
  }
  post(posting: Posting): void {
    this.apply({ o: 'post', p: posting });
  }
  history(record: HistoryRecord): void {
    this.apply({ o: 'hist', r: record });
  }
  setAdminTokenHash(hash: string | null): void {
    this.apply({ o: 'meta', k: 'admin_token_hash', v: hash });
  }
  rollback(): void {
    for (let i = this.undos.length - 1; i >= 0; i--) this.undos[i]!();
  }
}

export const STATE_FILE = 'state.json';
export const JOURNAL_DIR = 'journal';

/** Loads checkpoint + journal replay. Used by the store and by `verify`. */
export async function loadState(
  data_dir: string,
  options: { repair: boolean; warn?: (message: string) => void; now: () => Date },
): Promise<{ state: State; db: Low<State>; replayed: number }> {
  const db = new Low<State>(new DurableJsonFile<State>(join(data_dir, STATE_FILE)), emptyState(options.now().toISOString()));
  await db.read();
  const state = db.data;
  if (state.format !== 'aihub-state' || state.version !== 1 || typeof state.seq !== 'number') {
    throw new Error(`checkpoint ${join(data_dir, STATE_FILE)} is not an AIHub state document of version 1`);
  }
  let replayed = 0;
  const journal = readJournal(join(data_dir, JOURNAL_DIR), state.seq, {
    repair: options.repair,
    onTornLine: (file, line, bytes) =>
      options.warn?.(`dropped a torn last journal line (${bytes} bytes at ${file} line ${line}): a crash interrupted that write before it was acknowledged`),
  });
  for (const record of journal) {
    applyRecord(state, record);
    replayed++;
  }
  return { state, db, replayed };
}

export function applyRecord(state: State, record: JournalRecord): void {
  for (const op of record.ops) applyOp(state, op);
  state.seq = record.s;
}

export class Store {
  private closed = false;
  private checkpointing: Promise<void> | null = null;
  private checkpoint_seq: number;
  private checkpoint_timer: NodeJS.Timeout | null = null;

  private constructor(
    readonly data_dir: string,
    readonly state: State,
    private readonly db: Low<State>,
    private readonly journal: JournalWriter,
    private readonly releaseLock: () => void,
    private readonly options: Required<Pick<StoreOptions, 'now' | 'checkpoint_every_records'>>,
  ) {
    this.checkpoint_seq = state.seq;
  }

  static async open(data_dir: string, options: StoreOptions = {}): Promise<Store> {
    mkdirSync(join(data_dir, JOURNAL_DIR), { recursive: true });
    const releaseLock = acquireLock(data_dir);
    try {
      const now = options.now ?? (() => new Date());
      const { state, db } = await loadState(data_dir, { repair: true, warn: options.warn, now });
      let store: Store | null = null;
      const journal = await JournalWriter.open(join(data_dir, JOURNAL_DIR), state.seq, {
        segment_bytes: options.segment_bytes ?? 64 * 1024 * 1024,
        onDurable: () => store?.maybeCheckpoint(),
        onFatal: (error) => {
          store?.markClosed();
          (options.onFatal ?? defaultFatal)(error);
        },
      });
      store = new Store(data_dir, state, db, journal, releaseLock, {
        now,
        checkpoint_every_records: options.checkpoint_every_records ?? 20_000,
      });
      const interval_ms = options.checkpoint_interval_ms ?? 60_000;
      store.checkpoint_timer = setInterval(() => store!.maybeCheckpoint(true), interval_ms);
      store.checkpoint_timer.unref();
      return store;
    } catch (error) {
      releaseLock();
      throw error;
    }
  }

  /**
   * Runs `fn` as one atomic transaction. If it throws, every change it made is undone and the
   * promise rejects with that error. Otherwise the promise resolves with fn's result once the
   * transaction is durable. A transaction that changes nothing still waits for every earlier
   * commit, so what it read was durable when it is answered.
   */
  transact<T>(fn: (tx: Tx) => T): Promise<T> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    const tx = new Transaction(this.state, this.options.now());
    let result: T;
    try {
      result = fn(tx);
    } catch (error) {
      tx.rollback();
      return Promise.reject(error);
    }
    if (tx.ops.length === 0) return this.journal.waitDurable(this.state.seq).then(() => result);
    const seq = this.state.seq + 1;
    this.state.seq = seq;
    const line = `${JSON.stringify({ s: seq, t: tx.now.toISOString(), ops: tx.ops } satisfies JournalRecord)}\n`;
    return this.journal.append(line, seq).then(() => result);
  }

  get<T extends TableName>(name: T, id: string): Row<T> | undefined {
    return (table(this.state, name) as Record<string, Row<T>>)[id];
  }

  rows<T extends TableName>(name: T): Tables[T] {
    return table(this.state, name);
  }

  /** Number of fsync groups so far (tests use it to see group commit at work). */
  get commit_groups(): number {
    return this.journal.groups;
  }

  private maybeCheckpoint(by_timer = false): void {
    if (this.closed || this.checkpointing) return;
    const behind = this.state.seq - this.checkpoint_seq;
    if (behind === 0) return;
    if (!by_timer && behind < this.options.checkpoint_every_records) return;
    this.checkpointing = this.checkpoint().finally(() => {
      this.checkpointing = null;
    });
  }

  /**
   * Snapshots the document now (synchronously, so it is exactly the state after record
   * `seq`), and writes it only once every record up to `seq` is durable: a checkpoint never
   * holds a change the journal could still lose.
   */
  private async checkpoint(): Promise<void> {
    const seq = this.state.seq;
    const snapshot = structuredClone(this.state);
    await this.journal.waitDurable(seq);
    this.db.data = snapshot;
    await this.db.write();
    this.checkpoint_seq = seq;
  }

  private markClosed(): void {
    this.closed = true;
  }

  /** Waits for in-flight commits, writes a final checkpoint and releases the lock. */
  async close(): Promise<void> {
    if (this.checkpoint_timer) clearInterval(this.checkpoint_timer);
    const was_closed = this.closed;
    this.closed = true;
    try {
      await this.journal.close();
      if (this.checkpointing) await this.checkpointing;
      if (!was_closed && this.state.seq !== this.checkpoint_seq) await this.checkpoint();
    } finally {
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

function defaultFatal(error: Error): never {
  process.stderr.write(`AIHub gateway: the store could not write to disk (${error.message}); stopping so that nothing unacknowledged is served\n`);
  process.exit(70);
}
