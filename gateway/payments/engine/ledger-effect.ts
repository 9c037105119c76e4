// What a transaction's postings moved, kept on the transaction (`ledger`, `posting_ids`) as
// the engine makes them, whatever ledger accounts they touch: the hold and its capture, the
// charges, the commission and whatever else a service or a fee rule posts. A reversal posts
// the negation of it, one posting per account it belongs to (so GST, TDS or a distributor's
// override are undone exactly, without a rule of their own), and the reports sum it.
import { holdAccount, walletAccount } from '../../ledger/ledger.js';
import type { Posting } from '../../store/state.js';
import { TDS_ACCOUNT } from './settle.js';
import type { PaymentTxn } from './tables.js';
import { taxEntries } from './tax.js';

export type LedgerEffect = NonNullable<PaymentTxn['ledger']>;
type Triple = LedgerEffect[number];

/** The transaction with `postings` (made by one of its steps) added to what it has moved. */
export function withPostings(txn: PaymentTxn, postings: readonly Posting[]): PaymentTxn {
  if (postings.length === 0) return txn;
  const net = new Map<string, Triple>();
  const add = (owner: string, account: string, micros: number) => {
    const key = `${owner}\u0000${account}`;
    const was = net.get(key);
    net.set(key, [owner, account, (was?.[2] ?? 0) + micros]);
  };
  for (const [owner, account, micros] of ledgerOf(txn)) add(owner, account, micros);
  for (const posting of postings)
    for (const [account, micros] of posting.entries) add(posting.account_id ?? '', account, micros);
  return {
    ...txn,
    ledger: [...net.values()]
      .filter(([, , micros]) => micros !== 0)
      .sort((a, b) => a[0].localeCompare(b[0]) || a[1].localeCompare(b[1])),
    posting_ids: [...(txn.posting_ids ?? []), ...postings.map((p) => p.id)],
  };
}

/**
 * What the transaction has moved so far, as [owner account, ledger account, micro-units]
 * triples. Rows from before the engine kept it moved what the engine then posted: the hold
 * (while live), or on success what `postSuccess` posts (settle.ts: the amount to `pay_to`,
 * the charges to revenue with their GST, the commission net of its TDS, a distributor's
 * override); a failure moved nothing, net.
 */
export function ledgerOf(txn: PaymentTxn): LedgerEffect {
  if (txn.ledger) return txn.ledger;
  const owner = txn.account_id;
  const held = txn.amount_micros + txn.charges_micros;
  if (txn.stage !== 'final')
    return held === 0
      ? []
      : [
          [owner, holdAccount(owner), held],
          [owner, walletAccount(owner), -held],
        ];
  if (txn.status !== 'success') return [];
  const net =
    txn.commission_micros > 0 ? txn.commission_micros - (txn.earning?.tds_micros ?? 0) : 0;
  const effect: LedgerEffect = [[owner, walletAccount(owner), net - held]];
  const override = txn.override && txn.override.gross_micros > 0 ? txn.override : null;
  for (const [account, micros] of platformEffect(txn))
    effect.push([
      override && account === `override:${txn.service}` ? override.account_id : owner,
      account,
      micros,
    ]);
  if (override) {
    effect.push([
      override.account_id,
      walletAccount(override.account_id),
      override.gross_micros - override.tds_micros,
    ]);
    if (override.tds_micros > 0)
      effect.push([override.account_id, TDS_ACCOUNT, override.tds_micros]);
  }
  return effect.filter(([, , micros]) => micros !== 0);
}

/**
 * What a success posted to the platform's accounts (not the wallets), as `postSuccess` posts
 * it: the amount to `pay_to` (a fee-only payment's fee split into its taxable value and GST),
 * the charges to revenue (with their GST), the commission from its expense account with the
 * TDS withheld on it. A distributor's override is added by `ledgerOf` (it is the distributor's).
 */
function platformEffect(txn: PaymentTxn): Array<[string, number]> {
  const effect: Array<[string, number]> = [];
  const fee_in_amount = txn.pay_to.startsWith('revenue:');
  if (txn.tax && fee_in_amount) effect.push(...taxEntries(txn.pay_to, txn.tax));
  else effect.push([txn.pay_to, txn.amount_micros]);
  if (txn.charges_micros > 0) {
    const revenue = `revenue:${txn.service}`;
    if (txn.tax && !fee_in_amount) effect.push(...taxEntries(revenue, txn.tax));
    else effect.push([revenue, txn.charges_micros]);
  }
  if (txn.commission_micros > 0) {
    effect.push([`commission:${txn.service}`, -txn.commission_micros]);
    if (txn.earning?.tds_micros) effect.push([TDS_ACCOUNT, txn.earning.tds_micros]);
  }
  if (txn.override && txn.override.gross_micros > 0)
    effect.push([`override:${txn.service}`, -txn.override.gross_micros]);
  return effect;
}

/** The effect grouped by the account each part belongs to (one reversal posting each): owner → entries. */
export function ledgerByOwner(effect: LedgerEffect): Map<string, Array<[string, number]>> {
  const groups = new Map<string, Array<[string, number]>>();
  for (const [owner, account, micros] of effect) {
    let group = groups.get(owner);
    if (!group) groups.set(owner, (group = []));
    group.push([account, micros]);
  }
  return groups;
}
