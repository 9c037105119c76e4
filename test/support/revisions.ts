// Finalized transactions finalized again, as the payments engine does when a success is
// reversed days later: the row set final once more with `revision` and its new status.
import type { Store } from '../../gateway/store/types.ts';

export async function reviseTxns(store: Store, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    await store.transact((tx) => {
      const txn = tx.get('payment_txns', id);
      if (!txn) throw new Error(`no transaction ${id}`);
      const at = tx.now.toISOString();
      tx.set('payment_txns', id, {
        ...txn,
        status: 'reversed',
        revision: (txn.revision ?? 0) + 1,
        updated_at: at,
        finalized_at: at,
        history: [...txn.history, { status: 'reversed', at, note: 'reversed by the operator' }],
      });
    });
  }
}
