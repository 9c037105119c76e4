// Bill payment's own bookkeeping in the engine's commits (registered in bills/service.ts).
import type { Tx } from '../../store/types.js';
import type { PaymentTxn, TxnStatus } from '../engine/tables.js';
import { UNDONE_STATUSES } from '../engine/transactions.js';

/**
 * A payment that failed, was refunded or was reversed by the biller frees its bill for another
 * attempt (inside the commit that moves it there).
 */
export function billsOnTransition(tx: Tx, txn: PaymentTxn, _from: TxnStatus): void {
  if (!UNDONE_STATUSES.has(txn.status) || txn.details.bill_id === undefined) return;
  const bill = tx.get('bill_fetches', String(txn.details.bill_id));
  if (bill?.paid_txn_id === txn.id) tx.set('bill_fetches', bill.id, { ...bill, paid_txn_id: null });
}
