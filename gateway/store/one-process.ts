// The fleet part of the storage contract (StoreFleet, store/types.ts) as one process alone
// answers it: nobody else shares the store, so this process is the leader, every claim is
// its own, a signature is its memory's business and there is no database to agree a key with.
// The JSON-file store (store/store.ts) extends it.
import { MemoryMarks } from './memory-marks.js';
import type { State, TableName } from './state.js';
import type { Marks, StoreFleet, StoreStats, TransactOptions, Tx } from './types.js';

export abstract class OneProcess implements StoreFleet {
  abstract transact<T>(fn: (tx: Tx) => T, options?: TransactOptions): Promise<T>;
  abstract transactThenRead<T, R>(
    fn: (tx: Tx) => T,
    after: (state: State) => R,
    options?: TransactOptions,
  ): Promise<[T, R]>;

  /** Everything is in memory: null, `fn` not run (the caller reads at once, synchronously). */
  preload<T>(_fn: (state: State) => T): Promise<T> | null {
    return null;
  }

  /** Marks in this process's memory, undone with the transaction that set them. */
  marks<T extends TableName>(_name: T): Marks<T> {
    return new MemoryMarks<T>();
  }

  /** Nobody else sees or takes over this process's work. */
  acrossGateways<T>(_make: () => T): T | null {
    return null;
  }

  isLeader(): boolean {
    return true;
  }

  liveGateways(): number {
    return 1;
  }

  claim(_kind: string, ids: readonly string[], _lease_ms: number): Promise<string[]> {
    return Promise.resolve([...ids]);
  }

  release(_kind: string, _ids: readonly string[]): Promise<void> {
    return Promise.resolve();
  }

  /** The item is this process's to work, as its caller read it. */
  withClaim<R>(
    _item: { kind: string; id: string; lease_ms: number },
    seen: R,
    _reread: () => Promise<R | null>,
    work: (row: R) => Promise<void>,
  ): Promise<void> {
    return work(seen);
  }

  /** Signed-request claims are this process's own memory's business (always true here). */
  claimShared(_key: string, _until_ms: number, _now_ms: number): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** No database to check the encryption key against (the data dir's secrets are checked at start). */
  sharedKeyCheck(_sealed: string, _replace = false): Promise<string | null> {
    return Promise.resolve(null);
  }

  sharedStats(): StoreStats | null {
    return null;
  }

  background<T>(fn: () => Promise<T>): Promise<T> {
    return fn();
  }
}
