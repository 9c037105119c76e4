// Pure functions over payment transactions: state transitions and the public view.
import { microsToUnits } from '../../util/money.js';
import type { Attempt } from '../../providers/chain.js';
import type { ProviderRequest } from '../../providers/types.js';
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

/**
 * Every move a transaction's status may make, and nothing else: the one table the engine,
 * the admin's actions, provider callbacks and the DMT refund all go through (docs/payments-api.md,
 * "Statuses and transitions", shows it). A live status may also "move" to itself: a note in its
 * history (accepted by a provider, still on hold), no change of status and no webhook.
 */
export const TRANSITIONS: Readonly<Record<TxnStatus, readonly TxnStatus[]>> = {
  pending: ['pending', 'success', 'failed', 'refund_pending', 'on_hold'],
  on_hold: ['on_hold', 'pending', 'success', 'failed', 'refund_pending', 'refunded'],
  refund_pending: ['refunded'],
  success: ['reversed'],
  failed: [],
  refunded: [],
  reversed: [],
};

/** Final statuses: the row is history (archived); of them only success moves again. */
export const FINAL_STATUSES: ReadonlySet<TxnStatus> = new Set([
  'success',
  'failed',
  'refunded',
  'reversed',
]);

/** The money of these is back in the wallet (or, refund_pending, on its way back): not a payment that stands. */
export const UNDONE_STATUSES: ReadonlySet<TxnStatus> = new Set([
  'failed',
  'refund_pending',
  'refunded',
  'reversed',
]);

export function canTransition(from: TxnStatus, to: TxnStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Where a live status waits (the stage of the row), unless the caller says otherwise. */
const WAITS_AT: Partial<Record<TxnStatus, PaymentTxn['stage']>> = {
  pending: 'awaiting_status',
  on_hold: 'awaiting_operator',
  refund_pending: 'awaiting_consent',
};

/**
 * The transaction moved to `to`, or a TransitionError when the table does not allow the move.
 * A final status finalizes the row (a final row finalized again is a new version of it,
 * `revision` + 1); a live one sets where it waits (`stage`, overridable: an on_hold the
 * provider reported keeps its status checks, `awaiting_status`). Money is the caller's: this
 * only decides whether the move is allowed and what the row says.
 */
export function transition(
  txn: PaymentTxn,
  to: TxnStatus,
  at: string,
  note: string,
  options: { stage?: PaymentTxn['stage'] } = {},
): PaymentTxn {
  if (!canTransition(txn.status, to))
    throw new TransitionError(
      `transaction ${txn.id} is ${txn.status}; it cannot become ${to}${TRANSITIONS[txn.status].length === 0 ? ' (final)' : ` (from ${txn.status}: ${TRANSITIONS[txn.status].join(', ')})`}`,
    );
  const history = [...txn.history, { status: to, at, note }];
  if (FINAL_STATUSES.has(to)) {
    const again = txn.stage === 'final';
    return {
      ...txn,
      status: to,
      stage: 'final',
      updated_at: at,
      finalized_at: at,
      checks: { ...txn.checks, next_at: null },
      history,
      ...(again ? { revision: (txn.revision ?? 0) + 1 } : {}),
    };
  }
  const stage = options.stage ?? (to === txn.status ? txn.stage : WAITS_AT[to]!);
  return {
    ...txn,
    status: to,
    stage,
    updated_at: at,
    history,
    ...(stage === 'awaiting_status' ? {} : { checks: { ...txn.checks, next_at: null } }),
  };
}

/**
 * The answer's sentence for a transaction that is neither a success nor pending: on hold,
 * failed (refunded, or waiting for the customer's consent), refunded or reversed. `what`:
 * "recharge", "transfer", "bill payment"...
 */
export function settledText(txn: PaymentTxn, what: string): string {
  switch (txn.status) {
    case 'on_hold':
      return `${what} is on hold: ${txn.message}`;
    case 'refunded':
      return `${what} refunded: ${txn.message}`;
    case 'reversed':
      return `${what} reversed: ${txn.message}`;
    default:
      return `${what} failed: ${txn.message}`;
  }
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
    reversal: txn.reversal
      ? {
          posting_id: txn.reversal.posting_id,
          at: txn.reversal.at,
          by: txn.reversal.by,
          reason: txn.reversal.reason,
          wallet: microsToUnits(txn.reversal.wallet_micros),
          commission_taken_back: microsToUnits(txn.reversal.commission_micros),
        }
      : null,
    postings: txn.postings,
    posting_ids: txn.posting_ids ?? null,
  };
}

/** The delay before the next status check: doubling from `first_ms`, capped at `max_ms`. */
export function backoffMs(checks_done: number, first_ms: number, max_ms: number): number {
  const exponent = Math.min(checks_done, 40);
  return Math.min(max_ms, first_ms * 2 ** exponent);
}

/** The reconciler asks providers about these: pending, and on hold at the provider (checks go on). */
export function checkable(txn: PaymentTxn): boolean {
  return txn.status === 'pending' || (txn.status === 'on_hold' && txn.stage === 'awaiting_status');
}

/** The provider call still in flight (its last attempt), if any. */
export function lastInFlight(txn: PaymentTxn): Attempt | undefined {
  const last = txn.attempts[txn.attempts.length - 1];
  return last?.outcome === 'in_flight' ? last : undefined;
}

/** What a provider is asked about a transaction (its submit, its status, its refund). */
export function providerRequest(txn: PaymentTxn): ProviderRequest {
  return {
    txn_id: txn.id,
    service: txn.service,
    amount_micros: txn.amount_micros,
    subject: txn.subject,
    params: txn.provider_params,
    submitted_at: txn.created_at,
  };
}
