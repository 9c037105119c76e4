// Bill payment's own bookkeeping in the engine's commits (registered in payments/index.ts).
import type { Tx } from '../../store/store.js';
import type { PaymentTxn } from '../engine/tables.js';

/** A failed payment frees its bill for another attempt (inside the commit that makes it final). */
export function billsOnFinal(tx: Tx, txn: PaymentTxn): void {
  if (txn.status !== 'failed' || txn.details.bill_id === undefined) return;
  const bill = tx.get('bill_fetches', String(txn.details.bill_id));
  if (bill?.paid_txn_id === txn.id) tx.set('bill_fetches', bill.id, { ...bill, paid_txn_id: null });
}
