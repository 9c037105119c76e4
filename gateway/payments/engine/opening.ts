// A payment as it is opened, in the submit's commit: the hold of its amount plus charges,
// the new pending transaction, and the chain's first call recorded in flight.
import { InsufficientBalanceError, openHold } from '../../ledger/ledger.js';
import { ServiceError } from '../../kernel/errors.js';
import type { Tx } from '../../store/types.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentTxn } from './tables.js';
import type { PaymentIntent } from './types.js';

/** The hold of a payment's amount plus charges; a wallet too low is the caller's 402. */
export function openIntentHold(
  tx: Tx,
  intent: PaymentIntent,
  txn_id: string,
): ReturnType<typeof openHold> {
  try {
    return openHold(tx, {
      account_id: intent.account.id,
      amount_micros: intent.amount_micros + intent.charges_micros,
      purpose: `${intent.service} ${txn_id}`,
      ref: txn_id,
    });
  } catch (error) {
    if (error instanceof InsufficientBalanceError) {
      throw new ServiceError(
        'insufficient_balance',
        'insufficient_balance',
        `wallet balance ${microsToUnits(error.balance_micros)} is lower than the ${microsToUnits(error.required_micros)} this needs; top up the wallet`,
      );
    }
    throw error;
  }
}

/**
 * The chain's first call (always its first provider) recorded in flight in the commit that
 * opens the transaction, durable with the hold before the call is made: no commit of its own
 * before the call. A crash before the call leaves it in flight there, and the reconciler asks
 * that provider (a "not found" past its grace refunds it), as after a crash during the call.
 */
export function withFirstAttempt(txn: PaymentTxn, provider: string): PaymentTxn {
  const at = txn.created_at;
  return {
    ...txn,
    attempts: [{ provider, started_at: at, finished_at: null, outcome: 'in_flight', message: '' }],
  };
}

/** A transaction as it is accepted: pending, its amount held, no provider asked yet. */
export function newPendingTxn(
  intent: PaymentIntent,
  txn_id: string,
  hold_id: string,
  at: string,
): PaymentTxn {
  return {
    id: txn_id,
    account_id: intent.account.id,
    service: intent.service,
    status: 'pending',
    stage: 'submitting',
    amount_micros: intent.amount_micros,
    charges_micros: intent.charges_micros,
    commission_micros: intent.commission_micros,
    ...(intent.tax ? { tax: intent.tax } : {}),
    ...(intent.earning ? { earning: intent.earning } : {}),
    ...(intent.override ? { override: intent.override } : {}),
    pay_to: intent.pay_to,
    subject: intent.subject,
    details: intent.details,
    provider_params: intent.provider_params,
    hold_id,
    provider: null,
    provider_ref: null,
    result: {},
    message: 'accepted; the amount is held while providers are asked',
    attempts: [],
    history: [{ status: 'pending', at, note: 'accepted; amount held' }],
    checks: { count: 0, next_at: null, last_at: null, last_result: null, stalled: false },
    postings: { hold: hold_id },
    // Kept from the first posting on (empty, not absent: absent is a row from before).
    ledger: [],
    posting_ids: [],
    refund: null,
    idempotency_key: intent.idempotency_key,
    client_ref: intent.client_ref,
    created_at: at,
    updated_at: at,
    finalized_at: null,
  };
}
