// What the payment engine's callers and its parts speak: a service's intent, the answer it
// renders, the hooks a service gives the engine, a manual move, an event's outcome, and the
// memory the engine's parts share (engine.ts, moves.ts, reconciler.ts).
import type { Clock } from '../../kernel/clock.js';
import type { Logger } from '../../log.js';
import type { PaymentProvider, PaymentService } from '../../providers/types.js';
import type { Store, Tx } from '../../store/types.js';
import type { Account } from '../../store/state.js';
import type { PaymentsConfig } from '../config.js';
import type { PaymentTxn, TxnStatus } from './tables.js';
import { UNDONE_STATUSES } from './transactions.js';

/** What a service asks the engine to do; the money fields mean what they mean on the transaction it becomes. */
export interface PaymentIntent extends Pick<
  PaymentTxn,
  | 'amount_micros'
  | 'charges_micros'
  | 'commission_micros'
  | 'pay_to'
  | 'subject'
  | 'details'
  | 'provider_params'
  | 'client_ref'
  | 'tax'
  | 'earning'
  | 'override'
> {
  account: Account;
  service: PaymentService;
  /** From the Idempotency-Key header or the body's client_ref. */
  idempotency_key: string | null;
  /** Hash of the canonical request: the same key with another request is a conflict. */
  request_hash: string;
  allow_duplicate: boolean;
  /**
   * Runs inside the commit that opens the hold, before it: a service's own limit (DMT's
   * monthly limit) is checked and reserved atomically with the hold. Throwing refuses the
   * request and undoes everything. Released by the service's final hook when the transaction fails.
   */
  reserve?: (tx: Tx, txn_id: string) => void;
}

/** An HTTP answer, stored as the idempotent reply. */
export interface Answer {
  http_status: number;
  body: unknown;
}

export type Renderer = (txn: PaymentTxn, balance_micros: number) => Answer;

/**
 * The answer each money service gives for its transaction: ok unless it failed (failed,
 * refund_pending, refunded, reversed), a message, its id, the service's data.
 */
export function txnAnswer(txn: PaymentTxn, message: string, data: Record<string, unknown>): Answer {
  return {
    http_status: 200,
    body: { status: !UNDONE_STATUSES.has(txn.status), message, txn_id: txn.id, data },
  };
}

export interface EngineHooks {
  /**
   * Called inside the commit of every change of a transaction's status, `from` the status it
   * had: a service's own bookkeeping, then the webhook of the new status.
   */
  onTransition(tx: Tx, txn: PaymentTxn, from: TxnStatus): void;
  /**
   * Whether a payment that a provider accepted and that then failed waits for the customer's
   * consent before its money goes back to the wallet (refund_pending; a DMT transfer), instead
   * of being refunded at once (failed).
   */
  refundNeedsConsent?(txn: PaymentTxn): boolean;
}

/** Who moves a transaction by hand, and why: written with the move, in its history and the audit log. */
export interface ManualMove {
  reason: string;
  /** Writes the audit record in the move's own commit. */
  audit?: (tx: Tx, txn: PaymentTxn) => void;
}

/** What the engine did with a provider's event. */
export interface EventOutcome {
  txn: PaymentTxn | null;
  applied: boolean;
  /** Why nothing changed (unknown transaction, another provider's, already in that status, not allowed now). */
  reason: string | null;
}

/** What the engine's parts share of its memory (one engine's, this process's). */
export interface EngineMemory {
  /** Pending transactions the reconciler must look at. */
  readonly pending: Set<string>;
  /** Transactions a request is submitting right now: the reconciler leaves them alone. */
  readonly submitting: Set<string>;
  /** Idempotency key → the answer being produced, for a retry that arrives meanwhile. */
  readonly answering: Map<string, Promise<Answer>>;
}

/** What the engine is built with (payments/index.ts); its parts take what they use of it. */
export interface EngineDeps {
  store: Store;
  logger: Logger;
  clock: Clock;
  config: PaymentsConfig;
  providers: Record<PaymentService, PaymentProvider[]>;
  renderers: Partial<Record<PaymentService, Renderer>>;
  hooks: EngineHooks;
}
