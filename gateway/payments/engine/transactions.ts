// Pure functions over payment transactions: state transitions and the public view.
import { microsToUnits } from '../../util/money.js';
import type { Attempt } from '../../providers/chain.js';
import type { Earning, PaymentTxn, TxnStatus } from './tables.js';
import { taxView } from './tax.js';

/** A commission as it reads: gross, the TDS withheld (rate in %), what was credited, the slab. */
export function earningView(earning: Earning) {
  return {
    gross: microsToUnits(earning.gross_micros),
    tds: microsToUnits(earning.tds_micros),
    tds_rate: earning.tds_rate_bp / 100,
    net: microsToUnits(earning.gross_micros - earning.tds_micros),
    slab: earning.slab,
  };
}

/**
 * The fee's GST split and the commission's TDS, as every view of a transaction shows them
 * (the commission only once it is earned: on success).
 */
export function taxFields(txn: PaymentTxn) {
  return {
    ...(txn.tax ? { tax: taxView(txn.tax) } : {}),
    ...(txn.earning && txn.status === 'success'
      ? { commission_breakup: earningView(txn.earning) }
      : {}),
  };
}

export class TransitionError extends Error {
  override name = 'TransitionError';
}

/** pending → success | failed; final states never change (a reversal is a new posting, not an edit). */
export function transition(txn: PaymentTxn, to: TxnStatus, at: string, note: string): PaymentTxn {
  if (txn.status !== 'pending')
    throw new TransitionError(
      `transaction ${txn.id} is ${txn.status} already; it cannot become ${to}`,
    );
  if (to === 'pending') {
    return { ...txn, updated_at: at, history: [...txn.history, { status: 'pending', at, note }] };
  }
  return {
    ...txn,
    status: to,
    stage: 'final',
    updated_at: at,
    finalized_at: at,
    checks: { ...txn.checks, next_at: null },
    history: [...txn.history, { status: to, at, note }],
  };
}

export function attemptView(attempt: Attempt) {
  return {
    provider: attempt.provider,
    started_at: attempt.started_at,
    finished_at: attempt.finished_at,
    outcome: attempt.outcome,
    ...(attempt.error_kind ? { error: attempt.error_kind } : {}),
    message: attempt.message,
    ...(attempt.latency_ms !== undefined ? { latency_ms: attempt.latency_ms } : {}),
  };
}

/** What GET /api/transactions/:txn_id and webhooks show. */
export function txnView(txn: PaymentTxn) {
  const core = {
    txn_id: txn.id,
    service: txn.service,
    status: txn.status,
    message: txn.message,
    amount: microsToUnits(txn.amount_micros),
    charges: microsToUnits(txn.charges_micros),
    commission: txn.status === 'success' ? microsToUnits(txn.commission_micros) : 0,
    number: txn.subject,
  };
  const source = { provider: txn.provider, provider_ref: txn.provider_ref };
  return {
    ...core,
    ...txn.details,
    ...source,
    // Fields the provider answered (config `data_fields`, named by the operator), then ours
    // again: a provider field named like one of ours cannot change it (keys keep their place).
    ...txn.result,
    ...core,
    ...source,
    ...taxFields(txn),
    client_ref: txn.client_ref,
    created_at: txn.created_at,
    updated_at: txn.updated_at,
    finalized_at: txn.finalized_at,
    history: txn.history,
    attempts: txn.attempts.map(attemptView),
    status_checks: {
      count: txn.checks.count,
      last_at: txn.checks.last_at,
      next_at: txn.checks.next_at,
      last_result: txn.checks.last_result,
      stalled: txn.checks.stalled,
    },
    refund: txn.refund
      ? {
          posting_id: txn.refund.posting_id,
          amount: microsToUnits(txn.refund.amount_micros),
          at: txn.refund.at,
          wallet_history: `/api/wallet/history?txn_id=${txn.id}`,
        }
      : null,
    postings: txn.postings,
  };
}

/** The delay before the next status check: doubling from `first_ms`, capped at `max_ms`. */
export function backoffMs(checks_done: number, first_ms: number, max_ms: number): number {
  const exponent = Math.min(checks_done, 40);
  return Math.min(max_ms, first_ms * 2 ** exponent);
}
