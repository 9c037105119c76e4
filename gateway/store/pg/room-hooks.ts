// What the PostgreSQL store does where the rooms' needs differ from one process's (the
// contract's `preload`, `transactThenRead`, `marks`, `acrossGateways`; types.ts): several
// gateways share the database, each with a cache of it, so what a room's synchronous steps
// read is loaded first, a balance is read after its commit, marks are rows, and what other
// gateways must see or take over is built. PgStore delegates to these in one line each.
import type { State, TableName } from '../state.js';
import type { Marks, Store, TransactOptions, Tx } from '../types.js';

/** A read run: what `fn` reads that the cache lacks is loaded without stopping the event loop. */
export function preloadRows<T>(store: Store, fn: (state: State) => T): Promise<T> {
  return store.read(fn);
}

/** The commit first, then `after` on the cache as the commit's answer left it. */
export async function transactThenRead<T, R>(
  store: Store,
  fn: (tx: Tx) => T,
  after: (state: State) => R,
  options?: TransactOptions,
): Promise<[T, R]> {
  const result = await store.transact(fn, options);
  return [result, await store.read(after)];
}

/** Marks as rows of their table, read and written in the transaction; the room's pruner deletes them. */
export function rowMarks<T extends TableName>(name: T): Marks<T> {
  return {
    get: (tx, key) => tx.get(name, key),
    set: (tx, key, mark) => tx.set(name, key, mark),
    restore: () => Promise.resolve([]),
    note: () => {},
    sweep: () => {},
  };
}

/** Several gateways: what the others must see or take over is built. */
export function acrossGateways<T>(make: () => T): T {
  return make();
}
