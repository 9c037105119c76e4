// What a top-up does inside a store transaction: its state moves, its postings, its audit
// entries and the operator's alerts. Each function runs in `store.transact` (and may run again
// on PostgreSQL when another gateway committed first): it reads what it decides on through
// `tx.get`, so that two gateways crediting one payment cannot both commit.
import {
  FUNDING_TOPUP,
  availableMicros,
  creditWallet,
  debitWallet,
  recordReceivable,
} from '../ledger/ledger.js';
import { taxEntries } from '../payments/engine/tax.js';
import type { Tx } from '../store/types.js';
import { newId } from '../util/ids.js';
import { microsToUnits } from '../util/money.js';
import {
  rememberStatus,
  withChecks,
  type Topup,
  type TopupAlert,
  type TopupStatus,
} from './tables.js';
import type { PayerDetails, ProviderPayment, TopupProviderName } from './types.js';

/** Where a top-up's convenience fee (its taxable value) goes; its GST goes to gst:* (both on the month's GST invoice). */
export const TOPUP_FEE_REVENUE = 'revenue:topup';
const HISTORY_LIMIT = 50;

/** The audit log's line for a top-up's step (the same record the dashboard's audit writes). */
export function auditTopup(
  tx: Tx,
  action: string,
  account_id: string | null,
  detail: string,
): void {
  tx.history({
    type: 'audit',
    ts: tx.now.toISOString(),
    actor: 'topups',
    action,
    account_id,
    detail: detail.slice(0, 500),
  });
}

/** The top-up with its status moved (history kept, bounded) and audited. */
export function moveTopup(tx: Tx, topup: Topup, status: TopupStatus, note: string): Topup {
  const at = tx.now.toISOString();
  const next: Topup = withChecks({
    ...topup,
    status,
    note: note.slice(0, 300),
    updated_at: at,
    history: [...topup.history, { status, at, note: note.slice(0, 300) }].slice(-HISTORY_LIMIT),
  });
  tx.set('topups', topup.id, next);
  if (status !== topup.status) rememberStatus(tx, status, topup.id);
  auditTopup(tx, `topup.${status}`, topup.account_id, `${topup.id} ${topup.provider} ${note}`);
  return next;
}

/** Something the operator must see (GET /admin/topups/alerts), with its audit line. Nothing is credited. */
export function raiseAlert(
  tx: Tx,
  alert: Omit<TopupAlert, 'id' | 'at' | 'detail'> & { detail: string },
): void {
  const row: TopupAlert = {
    ...alert,
    id: newId('tal'),
    at: tx.now.toISOString(),
    detail: alert.detail.slice(0, 500),
  };
  tx.set('topup_alerts', row.id, row);
  auditTopup(
    tx,
    `topup.alert.${alert.reason}`,
    alert.account_id,
    `${alert.provider} order ${alert.order_id ?? '-'} payment ${alert.payment_id ?? '-'}: ${row.detail}`,
  );
}

export const paymentKey = (provider: TopupProviderName, payment_id: string) =>
  `${provider}:${payment_id}`;

export type CreditOutcome = 'credited' | 'duplicate' | 'refused';

/**
 * Credits a top-up for a payment the provider itself confirmed (captured, this order, this
 * amount and currency), once per provider payment id: the `topup_payments` row written here
 * is what a second webhook, a reconciliation pass or another gateway finds.
 */
export function creditTopup(
  tx: Tx,
  topup_id: string,
  payment: ProviderPayment,
  payer?: PayerDetails,
): CreditOutcome {
  const topup = tx.get('topups', topup_id);
  if (!topup) throw new Error(`invariant: top-up ${topup_id} vanished`);
  const key = paymentKey(topup.provider, payment.payment_id);
  const seen = tx.get('topup_payments', key);
  const alert = (reason: string, detail: string) =>
    raiseAlert(tx, {
      provider: topup.provider,
      reason,
      topup_id: topup.id,
      account_id: topup.account_id,
      order_id: topup.order_id,
      payment_id: payment.payment_id,
      detail,
    });
  if (seen) {
    if (seen.topup_id === topup.id) return 'duplicate';
    alert('replayed_payment', `payment already credited to top-up ${seen.topup_id}`);
    return 'refused';
  }
  if (topup.payment_id !== null) {
    alert('second_payment', `top-up already paid by ${topup.payment_id}; refund this one`);
    return 'refused';
  }
  const mismatch = paymentMismatch(topup, payment);
  if (mismatch) {
    alert(mismatch.reason, mismatch.detail);
    moveTopup(tx, topup, 'flagged', `not credited: ${mismatch.detail}`);
    return 'refused';
  }
  const total = topup.amount_micros + topup.fee_micros;
  creditWallet(tx, {
    account_id: topup.account_id,
    amount_micros: topup.amount_micros,
    from: FUNDING_TOPUP,
    memo: `Top-up ${topup.id} (${topup.provider} ${payment.payment_id})`,
    ref: topup.id,
    ...(topup.fee_tax ? { withheld: taxEntries(TOPUP_FEE_REVENUE, topup.fee_tax) } : {}),
  });
  tx.set('topup_payments', key, {
    key,
    topup_id: topup.id,
    account_id: topup.account_id,
    amount_micros: total,
    at: tx.now.toISOString(),
  });
  moveTopup(
    tx,
    { ...topup, payment_id: payment.payment_id, checkout: null, ...(payer ? { payer } : {}) },
    'credited',
    `${microsToUnits(topup.amount_micros)} ${topup.currency} credited (${payment.payment_id})`,
  );
  return 'credited';
}

/** Why a confirmed payment does not pay this top-up, or null when it does. */
function paymentMismatch(
  topup: Topup,
  payment: ProviderPayment,
): { reason: string; detail: string } | null {
  const total = topup.amount_micros + topup.fee_micros;
  if (payment.order_id !== topup.order_id)
    return {
      reason: 'order_mismatch',
      detail: `payment is for order ${payment.order_id ?? 'none'}, not ${topup.order_id ?? 'none'}`,
    };
  if (payment.status !== 'captured' && payment.status !== 'refunded')
    return { reason: 'status_mismatch', detail: `payment is ${payment.status}, not captured` };
  if (payment.currency !== topup.currency)
    return {
      reason: 'currency_mismatch',
      detail: `paid in ${payment.currency}, the top-up is in ${topup.currency}`,
    };
  if (payment.amount_micros !== total)
    return {
      reason: 'amount_mismatch',
      detail: `paid ${microsToUnits(payment.amount_micros)}, the top-up asks ${microsToUnits(total)}`,
    };
  return null;
}

export interface Reversal {
  kind: 'refund' | 'dispute';
  /** The provider's refund or dispute id: a reversal is once per id. */
  id: string;
  amount_micros: number;
}

/**
 * Takes a refund or a dispute back from the wallet of the top-up it paid, once per refund or
 * dispute id: never more than the customer paid for the top-up (amount and fee) less what was
 * already taken back, debited as far as the wallet covers it; the rest is owed (receivable, as
 * AI usage past the wallet is). The fee stays earned (its GST invoiced): a refund of it to the
 * customer's card is taken from the wallet like the amount.
 */
export function reverseTopup(
  tx: Tx,
  topup_id: string,
  reversal: Reversal,
): 'reversed' | 'duplicate' {
  const topup = tx.get('topups', topup_id);
  if (!topup) throw new Error(`invariant: top-up ${topup_id} vanished`);
  const key = `${topup.provider}:${reversal.kind}:${reversal.id}`;
  if (tx.get('topup_payments', key)) return 'duplicate';
  const taken = Math.min(
    reversal.amount_micros,
    topup.amount_micros + topup.fee_micros - topup.reversed_micros,
  );
  const paid = Math.max(0, Math.min(taken, availableMicros(tx.state, topup.account_id)));
  const owed = taken - paid;
  const memo = `${reversal.kind === 'refund' ? 'Refund' : 'Dispute'} ${reversal.id} of top-up ${topup.id}`;
  if (paid > 0)
    debitWallet(tx, {
      account_id: topup.account_id,
      amount_micros: paid,
      to: FUNDING_TOPUP,
      memo,
      ref: topup.id,
    });
  if (owed > 0)
    recordReceivable(tx, {
      account_id: topup.account_id,
      amount_micros: owed,
      to: FUNDING_TOPUP,
      memo: `${memo}: owed beyond the wallet`,
      ref: topup.id,
    });
  tx.set('topup_payments', key, {
    key,
    topup_id: topup.id,
    account_id: topup.account_id,
    amount_micros: reversal.amount_micros,
    taken_micros: taken,
    owed_micros: owed,
    at: tx.now.toISOString(),
  });
  const units = (micros: number) => `${microsToUnits(micros)} ${topup.currency}`;
  moveTopup(
    tx,
    {
      ...topup,
      reversed_micros: topup.reversed_micros + taken,
      owed_micros: topup.owed_micros + owed,
    },
    reversal.kind === 'refund' ? 'refunded' : 'disputed',
    `${reversal.kind} ${reversal.id}: ${units(paid)} debited${owed > 0 ? `, ${units(owed)} owed` : ''}`,
  );
  return 'reversed';
}

/**
 * A dispute the operator won: what its reversal took (paid from the wallet, or owed) comes back
 * to the wallet, once per dispute id (a credit that pays what is owed first, as every credit
 * does). 'unknown': no reversal of that dispute was applied here (nothing to give back).
 */
export function restoreDispute(
  tx: Tx,
  provider: TopupProviderName,
  dispute_id: string,
): 'restored' | 'duplicate' | 'unknown' {
  const taken_key = `${provider}:dispute:${dispute_id}`;
  const won_key = `${provider}:dispute-won:${dispute_id}`;
  const reversal = tx.get('topup_payments', taken_key);
  if (!reversal) return 'unknown';
  if (tx.get('topup_payments', won_key)) return 'duplicate';
  const topup = tx.get('topups', reversal.topup_id);
  if (!topup) throw new Error(`invariant: top-up ${reversal.topup_id} vanished`);
  const taken = reversal.taken_micros ?? 0;
  const owed = reversal.owed_micros ?? 0;
  if (taken > 0)
    creditWallet(tx, {
      account_id: topup.account_id,
      amount_micros: taken,
      from: FUNDING_TOPUP,
      memo: `Dispute ${dispute_id} of top-up ${topup.id} won: returned`,
      ref: topup.id,
    });
  tx.set('topup_payments', won_key, {
    key: won_key,
    topup_id: topup.id,
    account_id: topup.account_id,
    amount_micros: taken,
    at: tx.now.toISOString(),
  });
  const reversed_micros = Math.max(0, topup.reversed_micros - taken);
  moveTopup(
    tx,
    { ...topup, reversed_micros, owed_micros: Math.max(0, topup.owed_micros - owed) },
    // Nothing taken any more: credited again; else what still stands (a refund, or another dispute).
    reversed_micros === 0
      ? 'credited'
      : topup.history.some((step) => step.status === 'refunded')
        ? 'refunded'
        : 'disputed',
    `dispute ${dispute_id} won: ${microsToUnits(taken)} ${topup.currency} returned to the wallet`,
  );
  return 'restored';
}
