// What a transaction's postings moved, kept on the transaction (`ledger`, `posting_ids`) as
// the engine makes them, whatever ledger accounts they touch: the hold and its capture, the
// charges, the commission and whatever else a service or a fee rule posts. A reversal posts
// the negation of it, one posting per account it belongs to (so GST, TDS or a distributor's
// override are undone exactly, without a rule of their own), and the reports sum it.
import { holdAccount, walletAccount } from '../../ledger/ledger.js';
import type { Posting } from '../../store/state.js';
import type { PaymentTxn } from './tables.js';

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
 * (while live), or on success the amount to `pay_to`, the charges to `revenue:<service>` and
 * the commission from `commission:<service>` (a failure moved nothing, net).
 */
export function ledgerOf(txn: PaymentTxn): LedgerEffect {
  if (txn.ledger) return txn.ledger;
  const owner = txn.account_id;
  const wallet = walletAccount(owner);
  const held = txn.amount_micros + txn.charges_micros;
  if (txn.stage !== 'final')
    return held === 0
      ? []
      : [
          [owner, holdAccount(owner), held],
          [owner, wallet, -held],
        ];
  if (txn.status !== 'success') return [];
  const effect: LedgerEffect = [
    [owner, txn.pay_to, txn.amount_micros],
    [owner, wallet, txn.commission_micros - held],
  ];
  if (txn.charges_micros > 0) effect.push([owner, `revenue:${txn.service}`, txn.charges_micros]);
  if (txn.commission_micros > 0)
    effect.push([owner, `commission:${txn.service}`, -txn.commission_micros]);
  return effect.filter(([, , micros]) => micros !== 0);
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
