// The postings of a successful payment: the one place that decides how a success moves money
// (the amount to its destination, the platform's charges, the customer's commission). The
// engine calls it inside the commit that makes the transaction a success and records
// whatever it posts (ledger-effect.ts), so a later reversal undoes exactly that. Every
// posting names the transaction as its `ref`.
import { captureHold, creditWallet, debitWallet } from '../../ledger/ledger.js';
import type { Tx } from '../../store/store.js';
import type { PaymentTxn } from './tables.js';

/** Posts a success's money and returns the postings to name on the transaction. */
export function postSuccess(tx: Tx, txn: PaymentTxn): PaymentTxn['postings'] {
  const capture = captureHold(tx, txn.hold_id, {
    amount_micros: txn.amount_micros,
    to: txn.pay_to,
    memo: `${txn.service} ${txn.id}`,
  });
  const postings: PaymentTxn['postings'] = { ...txn.postings, capture: capture.id };
  if (txn.charges_micros > 0) {
    postings.charges = debitWallet(tx, {
      account_id: txn.account_id,
      amount_micros: txn.charges_micros,
      to: `revenue:${txn.service}`,
      memo: `${txn.service} charges ${txn.id}`,
      ref: txn.id,
    }).id;
  }
  if (txn.commission_micros > 0) {
    postings.commission = creditWallet(tx, {
      account_id: txn.account_id,
      amount_micros: txn.commission_micros,
      from: `commission:${txn.service}`,
      memo: `${txn.service} commission ${txn.id}`,
      ref: txn.id,
    }).id;
  }
  return postings;
}
