// The admin's credits and debits of a wallet: once per reference. The same reference again
// with the same account and amount is a duplicate (nothing moves); with another, a conflict.
import { ApiError, conflict } from '../http/errors.js';
import {
  FUNDING_TOPUP,
  InsufficientBalanceError,
  creditWallet,
  debitWallet,
} from '../ledger/ledger.js';
import type { Tx } from '../store/types.js';
import { microsToUnits } from '../util/money.js';
import { requireAccount } from './accounts.js';
import { sha256Hex } from './keys.js';

export interface Adjustment {
  direction: 'credit' | 'debit';
  account_id: string;
  amount: number;
  reference: string;
  memo?: string | undefined;
}

/** Inside a transaction: moves the money unless the reference was used; true for a duplicate. */
export function adjustWallet(tx: Tx, adjustment: Adjustment): boolean {
  const { direction, account_id, amount, reference } = adjustment;
  const idempotency_key = `admin-${direction}:${reference}`;
  const request_hash = sha256Hex(`${account_id}:${amount}`);
  requireAccount(tx, account_id);
  const seen = tx.get('idempotency', idempotency_key);
  if (seen) {
    if (seen.request_hash !== request_hash) {
      throw conflict(
        `reference ${reference} was used already for another ${direction}`,
        'reference_conflict',
        'reference',
      );
    }
    return true;
  }
  const memo = adjustment.memo ?? `admin ${direction} ${reference}`;
  try {
    if (direction === 'credit')
      creditWallet(tx, {
        account_id,
        amount_micros: amount,
        from: FUNDING_TOPUP,
        memo,
        ref: reference,
      });
    else
      debitWallet(tx, {
        account_id,
        amount_micros: amount,
        to: 'revenue:adjustment',
        memo,
        ref: reference,
      });
  } catch (error) {
    if (error instanceof InsufficientBalanceError) {
      throw new ApiError(
        402,
        'insufficient_balance',
        `the balance ${microsToUnits(error.balance_micros)} is lower than ${microsToUnits(error.required_micros)}`,
      );
    }
    throw error;
  }
  tx.set('idempotency', idempotency_key, {
    key: idempotency_key,
    request_hash,
    status: 200,
    body: null,
    created_at: tx.now.toISOString(),
  });
  return false;
}
