// A background pass over rows (the reconciler's pending transactions, the webhooks' due
// deliveries), read in one read run first where the store loads what it reads (PostgreSQL:
// those its cache lacks, loaded without stopping the event loop), at once where everything is
// in memory (Store.preload).
import type { Row, TableName } from '../../store/state.js';
import type { Store } from '../../store/types.js';

/** A row the pass's read run did not read (it became due after the read): left for the next pass. */
export const UNREAD = Symbol('unread');

export type PassRead<T extends TableName> = (id: string) => Row<T> | undefined | typeof UNREAD;

/**
 * Runs `pass` over the rows `ids` of `name`: after their read run (the promise of the pass,
 * which the caller tracks), or at once, reading as it goes (null: the pass ran already).
 */
export function readThenPass<T extends TableName>(
  store: Store,
  name: T,
  ids: readonly string[],
  pass: (read: PassRead<T>) => void,
): Promise<void> | null {
  const rows = store.preload(() => new Map(ids.map((id) => [id, store.get(name, id)])));
  if (!rows) {
    pass((id) => store.get(name, id));
    return null;
  }
  return rows.then((read) => pass((id) => (read.has(id) ? read.get(id) : UNREAD)));
}
