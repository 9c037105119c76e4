// The postings of a payment's success, in the commit that makes it final: the capture of its
// hold (the amount to `pay_to`; a fee-only payment's hold released and its fee charged),
// its charges (taxable value to revenue:<service>, GST to its own accounts), its commission
// (credited net, the TDS to tds:194h, naming its slab) and its distributor's override (the
// same, from override:<service> to the distributor's wallet). Every id lands in `postings`,
// so a reversal that mirrors each of them gives back every part, taxes included.
import { captureHold, creditWallet, debitWallet } from '../../ledger/ledger.js';
import type { Tx } from '../../store/types.js';
import type { Earning, PaymentTxn } from './tables.js';
import { taxEntries } from './tax.js';

export const TDS_ACCOUNT = 'tds:194h';

export function postSuccess(tx: Tx, txn: PaymentTxn): PaymentTxn['postings'] {
  const tax = txn.tax;
  const fee_in_amount = txn.pay_to.startsWith('revenue:');
  if (tax && fee_in_amount) {
    // A fee-only payment (PAN, penny drop): the hold is released and the fee taken as a charge
    // with its GST split, so that, like every fee, it is a posting of the account's wallet
    // (the statements read fees from the wallet's history).
    const released = captureHold(tx, txn.hold_id, {
      amount_micros: 0,
      to: txn.pay_to,
      memo: `${txn.service} ${txn.id}`,
    });
    const charged = debitWallet(tx, {
      account_id: txn.account_id,
      amount_micros: txn.amount_micros,
      to: txn.pay_to,
      memo: `${txn.service} charges ${txn.id}`,
      ref: txn.id,
      ...taxed(txn.pay_to, tax),
    });
    return { ...txn.postings, capture: released.id, charges: charged.id };
  }
  const capture = captureHold(tx, txn.hold_id, {
    amount_micros: txn.amount_micros,
    to: txn.pay_to,
    memo: `${txn.service} ${txn.id}`,
  });
  const postings: PaymentTxn['postings'] = { ...txn.postings, capture: capture.id };
  if (txn.charges_micros > 0) {
    const revenue = `revenue:${txn.service}`;
    postings.charges = debitWallet(tx, {
      account_id: txn.account_id,
      amount_micros: txn.charges_micros,
      to: revenue,
      memo: `${txn.service} charges ${txn.id}`,
      ref: txn.id,
      ...(tax ? taxed(revenue, tax) : {}),
    }).id;
  }
  if (txn.commission_micros > 0) {
    const earning = txn.earning;
    postings.commission = creditWallet(tx, {
      account_id: txn.account_id,
      amount_micros: txn.commission_micros - (earning?.tds_micros ?? 0),
      from: `commission:${txn.service}`,
      memo: `${txn.service} commission ${txn.id}`,
      ref: txn.id,
      ...(earning ? withheld(earning, txn) : {}),
    }).id;
  }
  const override = txn.override;
  if (override && override.gross_micros > 0) {
    postings.override = creditWallet(tx, {
      account_id: override.account_id,
      amount_micros: override.gross_micros - override.tds_micros,
      from: `override:${txn.service}`,
      memo: `${txn.service} override commission ${txn.id} (retailer ${txn.account_id})`,
      ref: txn.id,
      ...withheld(override, txn),
    }).id;
  }
  return postings;
}

function taxed(revenue: string, tax: NonNullable<PaymentTxn['tax']>) {
  return {
    split: taxEntries(revenue, tax),
    meta: {
      gst_rate_bp: tax.rate_bp,
      place_of_supply: tax.place_of_supply,
      supply: tax.supply,
    },
  };
}

function withheld(earning: Earning, txn: PaymentTxn) {
  return {
    withheld: earning.tds_micros > 0 ? [[TDS_ACCOUNT, earning.tds_micros] as const] : [],
    meta: {
      kind: earning.account_id === txn.account_id ? 'commission' : 'override',
      slab: earning.slab,
      gross_micros: earning.gross_micros,
      tds_micros: earning.tds_micros,
      tds_rate_bp: earning.tds_rate_bp,
      txn_id: txn.id,
      service: txn.service,
      txn_account_id: txn.account_id,
      amount_micros: txn.amount_micros,
    },
  };
}
