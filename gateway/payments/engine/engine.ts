// The one payment mechanism every service uses (recharge, money transfer and penny drops,
// PAN lookups, bill payments): idempotency → duplicate window → hold (durable before any provider call) → the
// provider chain → settle (capture + charges + commission), refund (void the hold), or keep
// pending for the reconciler. Answers are sent only after their commit is durable.
import type { Logger } from '../../log.js';
import type { Clock } from '../../kernel/clock.js';
import { ServiceError, StoreFullError, StoreUnavailableError } from '../../kernel/errors.js';
import {
  InsufficientBalanceError,
  balanceMicros,
  openHold,
  postReversal,
  voidHold,
  holdAccount,
  walletAccount,
} from '../../ledger/ledger.js';
import {
  ChainAbortedError,
  callWithTimeout,
  runChain,
  type Attempt,
} from '../../providers/chain.js';
import type {
  PaymentProvider,
  PaymentService,
  ProviderEvent,
  ProviderRequest,
  ProviderResult,
  StatusResult,
} from '../../providers/types.js';
import type { Marks, Store, Tx } from '../../store/types.js';
import {
  IDEMPOTENCY_IN_FLIGHT,
  rowOf,
  table,
  type Account,
  type IdempotencyRecord,
  type Posting,
} from '../../store/state.js';
import { newId } from '../../util/ids.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsConfig } from '../config.js';
import { PAY_IDEMPOTENCY_PREFIX, idempotencyExpired, payIdempotencyId } from './idempotency.js';
import { ledgerByOwner, ledgerOf, withPostings } from './ledger-effect.js';
import { postSuccess } from './settle.js';
import type { PaymentTxn, TxnStatus } from './tables.js';
import { UNDONE_STATUSES, backoffMs, transition } from './transactions.js';

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

/** What submit's commit decided: replay an earlier answer, or process this new transaction. */
type Opened =
  { replay: Answer | Promise<Answer> | PaymentTxn; txn: null } | { replay: null; txn: PaymentTxn };

/** A pending transaction a reconcile pass did not read (it became pending after the read). */
const UNREAD = Symbol('unread');

export class PaymentEngine {
  /** Transactions a request is submitting right now: the reconciler leaves them alone. */
  private readonly submitting = new Set<string>();
  /** Idempotency key → the answer being produced, for a retry that arrives meanwhile. */
  private readonly answering = new Map<string, Promise<Answer>>();
  /** account:service:subject:amount → latest transaction id, for the duplicate window. */
  private readonly recent: Marks<'payment_recent'>;
  /** Pending transactions the reconciler must look at. */
  private readonly pending = new Set<string>();
  private readonly checking = new Set<string>();
  /** A pass on the PostgreSQL store is reading its pending transactions (one at a time). */
  private reconciling = false;
  private readonly work = new Set<Promise<unknown>>();
  private readonly shutdown = new AbortController();
  /** Pending from before this start: checked soon after a restart, whatever their schedule said. */
  private readonly from_before_start = new Set<string>();
  private readonly restart_check_ms: number;
  /** Pending transactions another gateway created (several gateways), with when this one learned of them. */
  private readonly learned: Map<string, number> | null;
  /** Unsubscribes from the providers that tell of transactions on their own. */
  private readonly unlisten: Array<() => void> = [];

  constructor(
    private readonly deps: {
      store: Store;
      logger: Logger;
      clock: Clock;
      config: PaymentsConfig;
      providers: Record<PaymentService, PaymentProvider[]>;
      renderers: Partial<Record<PaymentService, Renderer>>;
      hooks: EngineHooks;
    },
  ) {
    const now_ms = deps.clock.now().getTime();
    this.recent = deps.store.marks('payment_recent');
    this.learned = deps.store.acrossGateways(() => new Map<string, number>());
    this.restart_check_ms = now_ms + deps.config.reconcile.first_check_ms;
    this.ready = this.load(now_ms);
    for (const list of Object.values(deps.providers))
      for (const provider of list) {
        const off = provider.listen?.((event) => {
          const work = this.applyEvent(event).catch((error: unknown) =>
            deps.logger.error({ msg: 'provider event failed', txn_id: event.txn_id, err: error }),
          );
          this.track(work);
        });
        if (off) this.unlisten.push(off);
      }
  }

  /** What this engine learns from the store at start: pending transactions, the duplicate window. */
  private readonly ready: Promise<void>;
  /** What the start read of the duplicate window held: transactions, and their size as JSON (/metrics). */
  start_window = { entries: 0, bytes: 0 };
  private loaded = false;

  private async load(now_ms: number): Promise<void> {
    const { store, config } = this.deps;
    // The live table holds the unfinished transactions (pending, on hold, waiting for the
    // customer's consent to a refund); finalized ones are history, and only those finalized
    // within the duplicate window can be recent: read from the index, only the fields the
    // window compares. Several gateways (PostgreSQL) keep the window in rows every gateway
    // reads in its transaction (payment_recent): nothing to read at start (Marks.restore).
    const window_ms = config.duplicate_window_ms;
    const [pending, on_hold, refund_pending, recent_final] = await Promise.all([
      store.list('payment_txns', 'status', 'pending'),
      store.list('payment_txns', 'status', 'on_hold'),
      store.list('payment_txns', 'status', 'refund_pending'),
      window_ms === 0 ? [] : this.recent.restore(() => store.reads.recentSince(now_ms - window_ms)),
    ]);
    this.start_window = { entries: recent_final.length, bytes: 0 };
    for (const txn of recent_final) this.start_window.bytes += JSON.stringify(txn).length;
    for (const txn of [...pending, ...on_hold, ...refund_pending]) {
      if (!checkable(txn)) continue;
      this.pending.add(txn.id);
      this.from_before_start.add(txn.id);
      // Several gateways: another one may be submitting it right now (see reconcileDue).
      this.learned?.set(txn.id, now_ms);
    }
    for (const txn of [...pending, ...on_hold, ...refund_pending, ...recent_final]) {
      const at_ms = Date.parse(txn.created_at);
      if (window_ms > 0 && now_ms - at_ms < window_ms)
        this.recent.note(this.recentKeyOf(txn), { txn_id: txn.id, at_ms });
    }
    this.loaded = true;
  }

  /**
   * Several gateways on one database (PostgreSQL store): the pending transactions any of them
   * created, from the store's index of transactions by status (live state: as many as are
   * pending). Each is checked by the gateway that claims it first (`check`).
   */
  async discover(): Promise<void> {
    if (!this.loaded) return;
    const now_ms = this.deps.clock.now().getTime();
    const [pending, on_hold] = await Promise.all([
      this.deps.store.list('payment_txns', 'status', 'pending'),
      this.deps.store.list('payment_txns', 'status', 'on_hold'),
    ]);
    for (const txn of [...pending, ...on_hold]) {
      if (!checkable(txn) || this.pending.has(txn.id)) continue;
      this.pending.add(txn.id);
      this.learned?.set(txn.id, now_ms);
    }
  }

  get pending_count(): number {
    return this.pending.size;
  }

  // ---- the request path -------------------------------------------------------------

  async submit(intent: PaymentIntent): Promise<Answer> {
    await this.ready;
    if (this.shutdown.signal.aborted)
      throw new ServiceError(
        'unavailable',
        'shutting_down',
        'the gateway is shutting down; retry shortly',
      );
    const providers = this.deps.providers[intent.service];
    if (providers.length === 0)
      throw new ServiceError(
        'unavailable',
        'no_provider',
        `no ${intent.service} provider is configured`,
      );
    const render = this.renderer(intent.service);
    const idempotency_id = intent.idempotency_key
      ? payIdempotencyId(intent.account.id, intent.idempotency_key)
      : null;
    let resolveAnswer: (answer: Answer) => void = () => {};
    const answer_promise = new Promise<Answer>((resolve) => (resolveAnswer = resolve));

    const opened = await this.deps.store.transact((tx) =>
      this.open(tx, intent, idempotency_id, answer_promise, providers[0]!.name),
    );

    if (opened.replay) {
      const replay = await opened.replay;
      if ('http_status' in replay) return replay;
      const current = this.deps.store.get('payment_txns', replay.id)!;
      return render(current, balanceMicros(this.deps.store.state, current.account_id));
    }

    const txn = opened.txn;
    const work = this.process(txn, providers, render, idempotency_id, true);
    this.track(work);
    try {
      const answer = await work;
      resolveAnswer(answer);
      return answer;
    } catch (error) {
      const current = this.deps.store.get('payment_txns', txn.id)!;
      resolveAnswer(render(current, balanceMicros(this.deps.store.state, current.account_id)));
      // The transaction's opening commit is durable: "nothing was changed" would not be true.
      if (error instanceof StoreFullError)
        throw new StoreFullError(
          `the gateway's disk is full: transaction ${txn.id} was opened (its amount held) and stays ${current.status}; its outcome is recorded once space is freed; look it up by its id`,
        );
      throw error;
    } finally {
      if (idempotency_id) this.answering.delete(idempotency_id);
      this.submitting.delete(txn.id);
    }
  }

  /**
   * Several payments of one service opened in ONE commit (every hold, then `reserve` once for
   * them all: a limit checked and taken for the whole), then sent to the providers one after
   * another. Once one fails, those not yet sent are failed unsent: their holds are voided, no
   * money left the wallet. A transfer above the per-transfer limit is sent so, as legs. Each is
   * an ordinary transaction (no idempotency key, no duplicate window of its own: the caller
   * answers for the whole). Returns the transactions as each stood after its turn.
   */
  async submitMany(
    intents: readonly PaymentIntent[],
    reserve?: (tx: Tx, txn_ids: string[]) => void,
  ): Promise<PaymentTxn[]> {
    const service = intents[0]!.service;
    if (this.shutdown.signal.aborted)
      throw new ServiceError(
        'unavailable',
        'shutting_down',
        'the gateway is shutting down; retry shortly',
      );
    const providers = this.deps.providers[service];
    if (providers.length === 0)
      throw new ServiceError('unavailable', 'no_provider', `no ${service} provider is configured`);
    const render = this.renderer(service);
    const opened = await this.deps.store.transact((tx) => {
      const at = tx.now.toISOString();
      const txns = intents.map((intent) => {
        const txn_id = newId('txn');
        const hold = openIntentHold(tx, intent, txn_id);
        const txn = newPendingTxn(intent, txn_id, hold.id, at);
        tx.set('payment_txns', txn.id, txn);
        return txn;
      });
      reserve?.(
        tx,
        txns.map((t) => t.id),
      );
      for (const txn of txns) {
        this.pending.add(txn.id);
        this.submitting.add(txn.id);
      }
      tx.onUndo(() => {
        for (const txn of txns) {
          this.pending.delete(txn.id);
          this.submitting.delete(txn.id);
        }
      });
      return txns;
    });
    const results: PaymentTxn[] = [];
    let stopped: string | null = null;
    for (const [i, txn] of opened.entries()) {
      try {
        if (stopped === null) {
          const work = this.process(txn, providers, render, null);
          this.track(work);
          await work;
        } else {
          const reason = stopped;
          await this.deps.store.transact((tx) => {
            const current = tx.get('payment_txns', txn.id)!;
            if (current.status === 'pending')
              this.fail(tx, current, `not sent: ${reason}`, `cancelled: ${reason}`);
          });
        }
      } finally {
        this.submitting.delete(txn.id);
      }
      const current = this.deps.store.get('payment_txns', txn.id)!;
      if (stopped === null && current.status === 'failed') stopped = `part ${i + 1} failed`;
      results.push(current);
    }
    return results;
  }

  /**
   * The submit's commit: a replay of what the idempotency key already answered (or is
   * answering), or a new pending transaction with its hold and the key marked in flight.
   */
  private open(
    tx: Tx,
    intent: PaymentIntent,
    idempotency_id: string | null,
    answer_promise: Promise<Answer>,
    first_provider: string,
  ): Opened {
    if (idempotency_id) {
      const seen = tx.get('idempotency', idempotency_id);
      // A record past its window no longer applies: the key starts afresh (and is overwritten below).
      if (seen && !this.idempotencyExpired(idempotency_id, seen, tx.now.getTime())) {
        if (seen.request_hash !== intent.request_hash) {
          throw new ServiceError(
            'conflict',
            'idempotency_conflict',
            'this idempotency key was used for a different request',
            'Idempotency-Key',
          );
        }
        if (seen.status !== IDEMPOTENCY_IN_FLIGHT)
          return { replay: { http_status: seen.status, body: seen.body }, txn: null };
        const txn_id = (seen.body as { txn_id: string }).txn_id;
        const answering = this.answering.get(idempotency_id);
        return { replay: answering ?? tx.get('payment_txns', txn_id)!, txn: null };
      }
    }
    if (!idempotency_id && !intent.allow_duplicate) this.refuseDuplicate(intent, tx);
    const txn_id = newId('txn');
    intent.reserve?.(tx, txn_id);
    const mark = tx.posting_count;
    const hold = openIntentHold(tx, intent, txn_id);
    const at = tx.now.toISOString();
    const txn = withFirstAttempt(
      withPostings(newPendingTxn(intent, txn_id, hold.id, at), tx.postingsSince(mark)),
      first_provider,
    );
    tx.set('payment_txns', txn.id, txn);
    if (idempotency_id) {
      tx.set('idempotency', idempotency_id, {
        key: idempotency_id,
        request_hash: intent.request_hash,
        status: IDEMPOTENCY_IN_FLIGHT,
        body: { txn_id },
        created_at: at,
      });
      this.answering.set(idempotency_id, answer_promise);
      // Undone with the commit (with the PostgreSQL store, a run that another gateway's
      // commit beat is undone and run again): no later request may wait on this answer.
      tx.onUndo(() => {
        if (this.answering.get(idempotency_id) === answer_promise)
          this.answering.delete(idempotency_id);
      });
    }
    // In-memory bookkeeping last: nothing after it can throw and roll the commit back. The
    // duplicate window is marks every gateway's twin reads (rows with several gateways).
    if (this.deps.config.duplicate_window_ms > 0)
      this.recent.set(tx, this.recentKeyOf(txn), { txn_id: txn.id, at_ms: tx.now.getTime() });
    this.pending.add(txn.id);
    this.submitting.add(txn.id);
    tx.onUndo(() => {
      this.pending.delete(txn.id);
      this.submitting.delete(txn.id);
    });
    return { replay: null, txn };
  }

  private async process(
    txn: PaymentTxn,
    providers: PaymentProvider[],
    render: Renderer,
    idempotency_id: string | null,
    /** The first attempt was recorded in flight by the commit that opened the transaction. */
    first_recorded = false,
  ): Promise<Answer> {
    const attempts: Attempt[] = [];
    const request = providerRequest(txn);
    let chain: Awaited<ReturnType<typeof runChain>> | undefined;
    try {
      chain = await runChain(providers, request, {
        now: () => this.deps.clock.now(),
        signal: this.shutdown.signal,
        beforeAttempt: async (attempt, index) => {
          attempts.push(attempt);
          if (index === 0 && first_recorded && txn.attempts[0]?.provider === attempt.provider)
            return;
          await this.update(txn.id, (current) => ({
            ...current,
            attempts: attempts.map((a) => ({ ...a })),
          }));
        },
        afterAttempt: () => {},
      });
    } catch (error) {
      if (!(error instanceof ChainAbortedError)) throw error;
      // Shutting down mid-call: leave it pending; after the restart the reconciler asks the provider.
      return this.deps.store.transact((tx) => {
        const current = tx.get('payment_txns', txn.id)!;
        // Settled meanwhile (a provider's callback): nothing to leave pending.
        if (current.stage === 'final') return this.storeAnswer(tx, current, render, idempotency_id);
        const next: PaymentTxn = {
          ...current,
          attempts: attempts.map((a) => ({ ...a })),
          message:
            'pending: the gateway restarted while a provider was being asked; the status will be checked',
          checks: { ...current.checks, next_at: tx.now.toISOString() },
        };
        tx.set('payment_txns', next.id, next);
        return this.storeAnswer(tx, next, render, idempotency_id);
      });
    }
    return this.deps.store.transact((tx) => {
      const stored = tx.get('payment_txns', txn.id)!;
      // A provider's callback may have settled it while the chain ran: that answer stands.
      if (stored.stage === 'final') return this.storeAnswer(tx, stored, render, idempotency_id);
      let current: PaymentTxn = { ...stored, attempts: attempts.map((a) => ({ ...a })) };
      if (!chain.result) {
        current = this.fail(
          tx,
          current,
          'every provider failed or timed out',
          'all providers unavailable',
        );
      } else {
        current = this.applyResult(tx, current, chain.result, chain.provider);
      }
      return this.storeAnswer(tx, current, render, idempotency_id);
    });
  }

  private storeAnswer(
    tx: Tx,
    txn: PaymentTxn,
    render: Renderer,
    idempotency_id: string | null,
  ): Answer {
    const answer = render(txn, balanceMicros(tx.state, txn.account_id));
    if (idempotency_id) {
      const record = tx.get('idempotency', idempotency_id)!;
      tx.set('idempotency', idempotency_id, {
        ...record,
        status: answer.http_status,
        body: answer.body,
      });
    }
    return answer;
  }

  // ---- outcomes (inside a transaction) -----------------------------------------------

  private applyResult(
    tx: Tx,
    txn: PaymentTxn,
    result: ProviderResult,
    provider: string,
  ): PaymentTxn {
    const base: PaymentTxn = {
      ...txn,
      provider,
      provider_ref: result.provider_ref ?? txn.provider_ref,
    };
    if (result.outcome === 'success')
      return this.succeed(tx, base, result.message, result.data ?? {});
    if (result.outcome === 'failed') {
      const declined = result.code
        ? { ...base, result: { ...base.result, decline_code: result.code } }
        : base;
      return this.fail(tx, declined, `declined: ${result.message}`, `declined by ${provider}`);
    }
    const next_at = new Date(
      tx.now.getTime() + this.deps.config.reconcile.first_check_ms,
    ).toISOString();
    const checked = { ...base, checks: { ...base.checks, next_at } };
    if (result.outcome === 'on_hold')
      return this.move(tx, checked, 'on_hold', `on hold at ${provider}: ${result.message}`, {
        stage: 'awaiting_status',
        message: `on hold at ${provider}: ${result.message}; the amount stays held and the status is checked`,
      });
    // Accepted: it waits where it is (pending, or on hold when a callback put it there meanwhile).
    return this.move(
      tx,
      checked,
      base.status,
      `accepted by ${provider}; awaiting the final status`,
      { stage: 'awaiting_status', message: `pending at ${provider}: ${result.message}` },
    );
  }

  /**
   * The one way a transaction's status changes (the table in transactions.ts decides whether
   * it may): the row moved, `money` run with every posting it makes recorded on the row
   * (ledger-effect.ts), the row stored, the reconciler's set kept, and the hooks told (the
   * service's bookkeeping, the webhook). A move to the same live status is a note in its history.
   */
  private move(
    tx: Tx,
    txn: PaymentTxn,
    to: TxnStatus,
    note: string,
    step: {
      stage?: PaymentTxn['stage'];
      message?: string;
      money?: (moved: PaymentTxn) => Partial<PaymentTxn>;
    } = {},
  ): PaymentTxn {
    const from = txn.status;
    let next = transition(txn, to, tx.now.toISOString(), note, { stage: step.stage });
    if (step.message !== undefined) next = { ...next, message: step.message };
    if (step.money) {
      const mark = tx.posting_count;
      next = { ...next, ...step.money(next) };
      next = withPostings(next, tx.postingsSince(mark));
    }
    tx.set('payment_txns', next.id, next);
    if (next.stage === 'final') this.answerOrphanKey(tx, next);
    const was_checked = this.pending.has(next.id);
    if (checkable(next)) this.pending.add(next.id);
    else this.pending.delete(next.id);
    tx.onUndo(() => {
      if (was_checked) this.pending.add(next.id);
      else this.pending.delete(next.id);
    });
    if (from !== to) this.deps.hooks.onTransition(tx, next, from);
    return next;
  }

  private succeed(
    tx: Tx,
    txn: PaymentTxn,
    message: string,
    data: Record<string, string | number>,
  ): PaymentTxn {
    const with_data = { ...txn, result: { ...txn.result, ...data } };
    return this.move(tx, with_data, 'success', message, {
      message: 'success',
      money: (moved) => ({ postings: postSuccess(tx, moved) }),
    });
  }

  /**
   * A payment that did not go through. Refunded at once (failed) unless a provider accepted it
   * first (`accepted`) and its service wants the customer's consent for the refund
   * (refund_pending: the hold stays until the customer's OTP).
   */
  private fail(
    tx: Tx,
    txn: PaymentTxn,
    reason: string,
    note: string,
    accepted = false,
  ): PaymentTxn {
    if (accepted && this.deps.hooks.refundNeedsConsent?.(txn))
      return this.move(tx, txn, 'refund_pending', note, {
        message: `${reason}; the amount stays held until the customer confirms its refund with an OTP (POST /api/dmt/refund/${txn.id}/otp)`,
      });
    return this.move(tx, txn, 'failed', note, {
      message: `${reason}; the amount was refunded`,
      money: (moved) => this.refundHold(tx, moved),
    });
  }

  /** The hold released back to the wallet, and the refund named on the transaction. */
  private refundHold(tx: Tx, txn: PaymentTxn): Partial<PaymentTxn> {
    const refund = voidHold(tx, txn.hold_id, `refund of ${txn.service} ${txn.id}`);
    const wallet = walletAccount(txn.account_id);
    const amount_micros = refund.entries.find(([account]) => account === wallet)?.[1] ?? 0;
    return {
      postings: { ...txn.postings, refund: refund.id },
      refund: { posting_id: refund.id, amount_micros, at: tx.now.toISOString() },
    };
  }

  /**
   * A success undone (the operator or bank reversed it, or an operator here did): one posting
   * per account the transaction's postings belonged to, each the exact negation of what they
   * moved for it (the amount and charges back, the commission taken back, and whatever else
   * was posted); a wallet that cannot pay its part owes the rest (receivable).
   */
  private reverse(tx: Tx, txn: PaymentTxn, by: 'provider' | 'admin', reason: string): PaymentTxn {
    const who = by === 'admin' ? 'an operator' : (txn.provider ?? 'the provider');
    return this.move(tx, txn, 'reversed', `reversed by ${who}: ${reason}`, {
      message: `reversed by ${who} (${reason}); the amount was returned to the wallet and the commission taken back`,
      money: (moved) => {
        const at = tx.now.toISOString();
        const own = [walletAccount(moved.account_id), `receivable:${moved.account_id}`];
        let first: string | null = null;
        let wallet_micros = 0;
        let commission_micros = 0;
        for (const [owner, entries] of ledgerByOwner(ledgerOf(moved))) {
          const posting = postReversal(tx, {
            account_id: owner || moved.account_id,
            entries: capturedFromWallet(entries, owner || moved.account_id),
            memo: `reversal of ${moved.service} ${moved.id}`,
            ref: moved.id,
            meta: reversalMeta(moved, owner || moved.account_id),
          });
          first ??= posting.id;
          for (const [account, micros] of posting.entries) {
            if (own.includes(account)) wallet_micros += micros;
            if (account.startsWith('commission:')) commission_micros += micros;
          }
        }
        if (first === null) return { reversal: null };
        return {
          postings: { ...moved.postings, reversal: first },
          refund:
            wallet_micros > 0 ? { posting_id: first, amount_micros: wallet_micros, at } : null,
          reversal: { posting_id: first, at, by, reason, wallet_micros, commission_micros },
        };
      },
    });
  }

  // ---- events and manual moves ----------------------------------------------------------

  /**
   * What a provider says on its own about one of its transactions (a callback, the sandbox's
   * later news), applied as the status table allows: a final answer settles a pending or held
   * transaction, `reversed` (or `failed`) about a success reverses it, `on_hold` and `pending`
   * move a live one. Anything else changes nothing and says why (a duplicate callback is harmless).
   */
  applyEvent(event: ProviderEvent): Promise<EventOutcome> {
    return this.deps.store.transact((tx): EventOutcome => {
      const current = tx.get('payment_txns', event.txn_id);
      if (!current) return { txn: null, applied: false, reason: 'no such transaction' };
      const asked = current.provider ?? lastInFlight(current)?.provider ?? null;
      if (asked !== event.provider)
        return {
          txn: current,
          applied: false,
          reason: `the transaction is with ${asked ?? 'no provider'}, not ${event.provider}`,
        };
      const at = tx.now.toISOString();
      const in_flight = lastInFlight(current);
      const base: PaymentTxn = {
        ...current,
        provider: event.provider,
        provider_ref: event.provider_ref ?? current.provider_ref,
        attempts: current.attempts.map((a) =>
          a === in_flight && event.outcome !== 'pending'
            ? {
                ...a,
                outcome: eventAttemptOutcome(event),
                message: `by callback: ${event.message}`,
                finished_at: at,
              }
            : a,
        ),
      };
      return this.eventMove(tx, current, base, event);
    });
  }

  /** The move an event makes of a transaction (`base`: it, with the event's reference), if the table allows one. */
  private eventMove(
    tx: Tx,
    current: PaymentTxn,
    base: PaymentTxn,
    event: ProviderEvent,
  ): EventOutcome {
    const live = current.status === 'pending' || current.status === 'on_hold';
    const note = `${event.provider}: ${event.message}`;
    const unchanged: EventOutcome = {
      txn: current,
      applied: false,
      reason: `the transaction is ${current.status}`,
    };
    switch (event.outcome) {
      case 'success':
        if (!live) return unchanged;
        return applied(this.succeed(tx, base, `${note} (callback)`, event.data ?? {}));
      case 'failed':
      case 'reversed': {
        if (current.status === 'success')
          return applied(this.reverse(tx, base, 'provider', event.message));
        if (!live) return unchanged;
        const with_code = event.code
          ? { ...base, result: { ...base.result, decline_code: event.code } }
          : base;
        const reason = `failed at ${event.provider}: ${event.message}`;
        return applied(this.fail(tx, with_code, reason, note, true));
      }
      case 'on_hold':
        if (current.status !== 'pending') return unchanged;
        return applied(
          this.move(tx, this.nextCheckOf(tx, base), 'on_hold', `on hold at ${note}`, {
            stage: 'awaiting_status',
            message: `on hold at ${event.provider}: ${event.message}; the amount stays held and the status is checked`,
          }),
        );
      case 'pending':
        if (current.status !== 'on_hold') return unchanged;
        return applied(
          this.move(tx, this.nextCheckOf(tx, base), 'pending', `processing again at ${note}`, {
            stage: 'awaiting_status',
            message: `pending at ${event.provider}: ${event.message}`,
          }),
        );
    }
  }

  /** The transaction with its next status check due after the first interval. */
  private nextCheckOf(tx: Tx, txn: PaymentTxn): PaymentTxn {
    const next_at = new Date(
      tx.now.getTime() + this.deps.config.reconcile.first_check_ms,
    ).toISOString();
    return { ...txn, checks: { ...txn.checks, stalled: false, next_at } };
  }

  /** An operator reverses a success (the operator or bank confirmed it out of band): success → reversed. */
  reverseByAdmin(txn_id: string, manual: ManualMove): Promise<PaymentTxn> {
    return this.manually(txn_id, manual, ['success'], (tx, txn) =>
      this.reverse(tx, txn, 'admin', manual.reason),
    );
  }

  /** An operator refunds a held transaction or one waiting for consent: on_hold | refund_pending → refunded. */
  refundByAdmin(txn_id: string, manual: ManualMove): Promise<PaymentTxn> {
    return this.manually(txn_id, manual, ['on_hold', 'refund_pending'], (tx, txn) =>
      this.refundInTx(tx, txn, `refunded by an operator: ${manual.reason}`),
    );
  }

  /** An operator stops a pending transaction for a look (status checks stop): pending → on_hold. */
  holdByAdmin(txn_id: string, manual: ManualMove): Promise<PaymentTxn> {
    if (this.submitting.has(txn_id))
      throw new ServiceError(
        'conflict',
        'transaction_in_flight',
        `transaction ${txn_id} is being submitted to a provider right now; try again in a moment`,
      );
    return this.manually(txn_id, manual, ['pending'], (tx, txn) =>
      this.move(tx, txn, 'on_hold', `held by an operator: ${manual.reason}`, {
        stage: 'awaiting_operator',
        message: `on hold: ${manual.reason}; the amount stays held until an operator acts`,
      }),
    );
  }

  /**
   * The customer's consent given (the DMT refund OTP, checked in the caller's commit):
   * refund_pending → refunded, the hold released to the wallet.
   */
  refundWithConsent(tx: Tx, txn: PaymentTxn, note: string): PaymentTxn {
    return this.refundInTx(tx, txn, note);
  }

  private refundInTx(tx: Tx, txn: PaymentTxn, note: string): PaymentTxn {
    return this.move(tx, txn, 'refunded', note, {
      message: `${note}; the amount was refunded`,
      money: (moved) => this.refundHold(tx, moved),
    });
  }

  /** A manual move in one commit with its audit record: 404 unknown, 409 from another status. */
  private manually(
    txn_id: string,
    manual: ManualMove,
    from: readonly TxnStatus[],
    act: (tx: Tx, txn: PaymentTxn) => PaymentTxn,
  ): Promise<PaymentTxn> {
    return this.deps.store.transact((tx) => {
      const txn = tx.get('payment_txns', txn_id);
      if (!txn) throw new ServiceError('not_found', 'transaction_not_found', 'no such transaction');
      if (!from.includes(txn.status))
        throw new ServiceError(
          'conflict',
          'transition_not_allowed',
          `transaction ${txn.id} is ${txn.status}; this applies to ${from.join(' or ')} transactions`,
        );
      const moved = act(tx, txn);
      manual.audit?.(tx, moved);
      return moved;
    });
  }

  private update(txn_id: string, change: (txn: PaymentTxn) => PaymentTxn): Promise<PaymentTxn> {
    return this.deps.store.transact((tx) => {
      const next = change(tx.get('payment_txns', txn_id)!);
      tx.set('payment_txns', txn_id, next);
      return next;
    });
  }

  // ---- idempotency records ---------------------------------------------------------------

  /**
   * In the commit that makes `txn` final: if its idempotency key is still in flight and no
   * request of this gateway is answering it (the gateway that took the request stopped
   * before answering, and the reconciler settled it), the key gets the answer a retry would
   * have been given (the final transaction), so that it leaves the live document for
   * history like every answered key. A request still answering records its own answer.
   */
  private answerOrphanKey(tx: Tx, txn: PaymentTxn): void {
    if (!txn.idempotency_key) return;
    const id = payIdempotencyId(txn.account_id, txn.idempotency_key);
    if (this.answering.has(id)) return;
    // In flight means live: a final record is history already, and no concern of this.
    const record = rowOf(table(tx.state, 'idempotency'), id);
    if (record?.status !== IDEMPOTENCY_IN_FLIGHT) return;
    if ((record.body as { txn_id?: unknown } | null)?.txn_id !== txn.id) return;
    const answer = this.renderer(txn.service)(txn, balanceMicros(tx.state, txn.account_id));
    tx.set('idempotency', id, { ...record, status: answer.http_status, body: answer.body });
  }

  /**
   * Whether a stored idempotency record no longer applies: one of this engine's records, past
   * `payments.idempotency_window_ms`, and not the key of a request this process is still
   * answering. The lookup in `submit` and the pruner both ask this, with the store's clock.
   */
  idempotencyExpired(id: string, record: IdempotencyRecord, now_ms: number): boolean {
    if (!id.startsWith(PAY_IDEMPOTENCY_PREFIX) || this.answering.has(id)) return false;
    return idempotencyExpired(record, now_ms, this.deps.config.idempotency_window_ms);
  }

  // ---- the duplicate window -------------------------------------------------------------

  private recentKey(
    account_id: string,
    service: string,
    subject: string,
    amount_micros: number,
  ): string {
    return `${account_id}:${service}:${subject}:${amount_micros}`;
  }

  private recentKeyOf(
    txn: Pick<PaymentTxn, 'account_id' | 'service' | 'subject' | 'amount_micros'>,
  ): string {
    return this.recentKey(txn.account_id, txn.service, txn.subject, txn.amount_micros);
  }

  /** A pending or successful twin within the window is a likely double submission; a failed one is not. */
  private refuseDuplicate(intent: PaymentIntent, tx: Tx): void {
    const window_ms = this.deps.config.duplicate_window_ms;
    if (window_ms === 0) return;
    const now_ms = tx.now.getTime();
    const key = this.recentKey(
      intent.account.id,
      intent.service,
      intent.subject,
      intent.amount_micros,
    );
    // Several gateways: the row is read in this transaction (a twin committed on another
    // gateway meanwhile makes the commit conflict, and this runs again on it).
    const seen = this.recent.get(tx, key);
    if (!seen || now_ms - seen.at_ms >= window_ms) return;
    const twin = tx.get('payment_txns', seen.txn_id);
    if (!twin || twin.status === 'failed') return;
    throw new ServiceError(
      'conflict',
      'duplicate_transaction',
      `the same ${intent.service} (${intent.subject}, ${microsToUnits(intent.amount_micros)}) was submitted ${Math.round((now_ms - seen.at_ms) / 1000)} s ago as ${twin.id}; send allow_duplicate: true to repeat it on purpose, or an Idempotency-Key to retry safely`,
      'allow_duplicate',
    );
  }

  // ---- the reconciler ---------------------------------------------------------------------

  /** One pass: status checks for pending transactions that are due. Called by the scheduler. */
  reconcileDue(): void {
    if (!this.loaded) return;
    const now_ms = this.deps.clock.now().getTime();
    const window_ms = this.deps.config.duplicate_window_ms;
    this.recent.sweep((seen) => now_ms - seen.at_ms >= window_ms);
    const store = this.deps.store;
    // The pending transactions are read in one read run (PostgreSQL: those the cache lacks, or
    // holds from before a durable read's mark, loaded without stopping the event loop), then
    // the pass works on what was read; with everything in memory (null), read as it goes.
    if (this.reconciling) return;
    const ids = [...this.pending].filter(
      (id) => !this.submitting.has(id) && !this.checking.has(id),
    );
    const read = store.preload(() => new Map(ids.map((id) => [id, store.get('payment_txns', id)])));
    if (!read) return this.reconcileWith(now_ms, (id) => store.get('payment_txns', id));
    this.reconciling = true;
    const pass = read
      .then((rows) => this.reconcileWith(now_ms, (id) => (rows.has(id) ? rows.get(id) : UNREAD)))
      .catch((error: unknown) => {
        // A refusal by the store is part of its outage, logged by the store.
        if (!(error instanceof StoreUnavailableError))
          this.deps.logger.warn({ msg: 'pending transactions not read', err: error });
      })
      .finally(() => {
        this.reconciling = false;
      });
    this.track(pass);
  }

  /**
   * One pass over the pending transactions, each read with `read` (undefined: gone; UNREAD:
   * became pending after the read, left for the next pass).
   */
  private reconcileWith(
    now_ms: number,
    read: (id: string) => PaymentTxn | undefined | typeof UNREAD,
  ): void {
    for (const txn_id of this.pending) {
      if (this.checking.size >= this.deps.config.reconcile.concurrency) return;
      if (this.submitting.has(txn_id) || this.checking.has(txn_id)) continue;
      const txn = read(txn_id);
      if (txn === UNREAD) continue;
      if (!txn || !checkable(txn)) {
        this.pending.delete(txn_id);
        this.learned?.delete(txn_id);
        continue;
      }
      if (txn.checks.stalled) continue;
      // Another gateway's transaction with no check scheduled is still being submitted there:
      // it is taken over only once that submission has had every provider's timeout (its
      // gateway died), never while a provider may still be answering it.
      const learned_ms = this.learned?.get(txn_id);
      if (
        learned_ms !== undefined &&
        txn.checks.next_at === null &&
        now_ms < learned_ms + this.takeoverMs(txn)
      )
        continue;
      let due_ms = txn.checks.next_at === null ? 0 : Date.parse(txn.checks.next_at);
      if (this.from_before_start.has(txn_id)) due_ms = Math.min(due_ms, this.restart_check_ms);
      if (due_ms > now_ms) continue;
      this.from_before_start.delete(txn_id);
      this.checking.add(txn_id);
      const work = this.check(txn).catch((error: unknown) => {
        this.deps.logger.error({ msg: 'status check failed', txn_id, err: error });
      });
      this.track(
        work.finally(() => {
          this.checking.delete(txn_id);
        }),
      );
    }
  }

  private takeoverMs(txn: PaymentTxn): number {
    return (
      this.deps.config.reconcile.first_check_ms +
      this.deps.providers[txn.service].reduce((sum, provider) => sum + provider.timeout_ms, 0)
    );
  }

  /**
   * Asks the provider that has (or may have) the transaction, and acts only on its answer.
   * Several gateways: the check is claimed first (one gateway asks at a time; a claim lapses
   * with its gateway), and the transaction read again once it is.
   */
  private async check(seen: PaymentTxn): Promise<void> {
    const { store } = this.deps;
    const lease_ms = this.takeoverMs(seen) + 60_000;
    await store.withClaim(
      { kind: 'reconcile', id: seen.id, lease_ms },
      seen,
      async () => {
        const txn = await store.fetch('payment_txns', seen.id);
        // Whatever a check applies to (pending, or on hold awaiting a status: checkable).
        return txn && checkable(txn) ? txn : null;
      },
      (txn) => this.checkClaimed(txn),
    );
  }

  private async checkClaimed(txn: PaymentTxn): Promise<void> {
    const asked = txn.provider ?? lastInFlight(txn)?.provider ?? null;
    if (!asked) {
      // No provider was ever called (the process stopped between the hold and the first call,
      // or every call failed before it reached anyone): refunding is certain, not blind.
      await this.deps.store.transact((tx) => {
        const current = tx.get('payment_txns', txn.id)!;
        if (current.status !== 'pending') return;
        this.fail(tx, current, 'no provider received this transaction', 'never reached a provider');
      });
      return;
    }
    const asking = await this.askStatus(txn, asked);
    if (asking === 'shutdown') return;
    const { answer, error_text } = asking;
    await this.deps.store.transact((tx) => this.applyCheck(tx, txn.id, asked, answer, error_text));
  }

  /** In the check's commit: a final answer settles the transaction, a 'not found' past its
   * grace refunds it, anything else counts the check and schedules the next one. */
  private applyCheck(
    tx: Tx,
    txn_id: string,
    asked: string,
    answer: StatusResult | null,
    error_text: string | null,
  ): void {
    const { config } = this.deps;
    const current = tx.get('payment_txns', txn_id);
    if (!current || !checkable(current)) return;
    const at = tx.now.toISOString();
    const checked: PaymentTxn = {
      ...current,
      provider: current.provider ?? asked,
      checks: {
        ...current.checks,
        count: current.checks.count + 1,
        last_at: at,
        last_result: answer ? answer.outcome : `error: ${error_text}`,
      },
    };
    const in_flight = lastInFlight(checked);
    const resolveInFlight = (outcome: Attempt['outcome'], message: string): PaymentTxn => {
      if (!in_flight) return checked;
      const attempts = checked.attempts.map((a) =>
        a === in_flight ? { ...a, outcome, message, finished_at: at } : a,
      );
      return { ...checked, attempts };
    };
    if (answer && (answer.outcome === 'success' || answer.outcome === 'failed')) {
      const base = resolveInFlight(answer.outcome, `by status check: ${answer.message}`);
      this.settleByCheck(tx, base, asked, answer, checked.checks.count);
      return;
    }
    const started = in_flight?.started_at ?? current.created_at;
    if (
      answer?.outcome === 'not_found' &&
      tx.now.getTime() - Date.parse(started) >= config.reconcile.not_found_grace_ms
    ) {
      const base = resolveInFlight('unavailable', `by status check: ${answer.message}`);
      this.fail(tx, base, `${asked} has no record of this transaction`, `not found at ${asked}`);
      return;
    }
    const still =
      answer?.outcome === 'pending' || answer?.outcome === 'on_hold'
        ? {
            ...resolveInFlight(answer.outcome, `by status check: ${answer.message}`),
            provider_ref: answer.provider_ref ?? checked.provider_ref,
          }
        : checked;
    // The provider holds it for a review, or took it up again: the status follows, checks go on.
    const to =
      answer?.outcome === 'on_hold' ? 'on_hold' : answer?.outcome === 'pending' ? 'pending' : null;
    const moved =
      to !== null && to !== still.status && answer
        ? this.move(
            tx,
            still,
            to,
            `${to === 'on_hold' ? 'on hold' : 'processing again'} at ${asked}: ${answer.message}`,
            {
              stage: 'awaiting_status',
              message: `${to === 'on_hold' ? 'on hold' : 'pending'} at ${asked}: ${answer.message}`,
            },
          )
        : still;
    this.scheduleCheck(tx, moved, checked.checks, at);
  }

  /** A status check's final answer (success or failed) settles the transaction. */
  private settleByCheck(
    tx: Tx,
    base: PaymentTxn,
    asked: string,
    answer: Extract<StatusResult, { outcome: 'success' | 'failed' }>,
    count: number,
  ): void {
    const code = answer.outcome === 'failed' ? answer.code : undefined;
    const with_ref = {
      ...base,
      provider_ref: answer.provider_ref ?? base.provider_ref,
      result: code ? { ...base.result, decline_code: code } : base.result,
    };
    if (answer.outcome === 'success')
      this.succeed(tx, with_ref, `${answer.message} (status check ${count})`, answer.data ?? {});
    else
      this.fail(
        tx,
        with_ref,
        `failed at ${asked}: ${answer.message}`,
        `failed at ${asked} (status check ${count})`,
        true,
      );
  }

  /**
   * Still pending (or on hold at the provider): the next check after its backoff; once checks
   * run out, none, and the transaction goes on hold for an operator (its money stays held).
   */
  private scheduleCheck(tx: Tx, still: PaymentTxn, checks: PaymentTxn['checks'], at: string): void {
    const { config, logger } = this.deps;
    const stalled = checks.count >= config.reconcile.max_checks;
    const delay_ms = backoffMs(
      checks.count,
      config.reconcile.first_check_ms,
      config.reconcile.max_backoff_ms,
    );
    const next: PaymentTxn = {
      ...still,
      stage: 'awaiting_status',
      updated_at: at,
      checks: {
        ...checks,
        stalled,
        next_at: stalled ? null : new Date(tx.now.getTime() + delay_ms).toISOString(),
      },
    };
    if (!stalled) {
      tx.set('payment_txns', next.id, next);
      return;
    }
    this.move(
      tx,
      next,
      'on_hold',
      `status checks exhausted after ${checks.count}; an operator must act`,
      {
        stage: 'awaiting_operator',
        message: `on hold: ${still.provider ?? 'the provider'} gave no final status after ${checks.count} checks; the amount stays held until an operator re-checks or refunds it`,
      },
    );
    logger.error({
      msg: 'status checks exhausted; the transaction needs an operator',
      txn_id: next.id,
      checks: next.checks.count,
    });
  }

  /** The status `asked` gives of `txn`, or why there is none; 'shutdown' when the engine stopped meanwhile. */
  private async askStatus(
    txn: PaymentTxn,
    asked: string,
  ): Promise<{ answer: StatusResult | null; error_text: string | null } | 'shutdown'> {
    const provider = this.deps.providers[txn.service].find((p) => p.name === asked);
    if (!provider) return { answer: null, error_text: `provider ${asked} is no longer configured` };
    try {
      const answer = await callWithTimeout(provider.timeout_ms, this.shutdown.signal, (signal) =>
        provider.status({ ...providerRequest(txn), provider_ref: txn.provider_ref }, signal),
      );
      return {
        answer,
        error_text: answer === null ? `no answer in ${provider.timeout_ms} ms` : null,
      };
    } catch (error) {
      if (this.shutdown.signal.aborted) return 'shutdown';
      return { answer: null, error_text: (error as Error).message.slice(0, 300) };
    }
  }

  /**
   * Re-arms the status checks of a transaction on hold (or pending with its checks run out, a
   * row from before holds), at once and from a count of zero: on_hold → pending. Never a
   * blind refund: only the provider's answer settles it.
   */
  recheck(txn_id: string, manual: ManualMove): Promise<PaymentTxn> {
    return this.manually(txn_id, manual, ['pending', 'on_hold'], (tx, txn) => {
      const rearmed: PaymentTxn = {
        ...txn,
        checks: { ...txn.checks, stalled: false, count: 0, next_at: tx.now.toISOString() },
      };
      if (txn.status === 'pending') {
        const next = {
          ...rearmed,
          stage: 'awaiting_status' as const,
          updated_at: tx.now.toISOString(),
        };
        tx.set('payment_txns', next.id, next);
        this.pending.add(next.id);
        return next;
      }
      return this.move(
        tx,
        rearmed,
        'pending',
        `status checks re-armed by an operator: ${manual.reason}`,
        {
          stage: 'awaiting_status',
          message: 'pending: status checks re-armed by an operator',
        },
      );
    });
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  private track(work: Promise<unknown>): void {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.work.add(settled);
    void settled.then(() => this.work.delete(settled));
  }

  /** Aborts provider calls in flight (their transactions stay pending) and waits for their commits. */
  async stop(): Promise<void> {
    for (const off of this.unlisten.splice(0)) off();
    this.shutdown.abort();
    while (this.work.size > 0) await Promise.all([...this.work]);
  }

  private renderer(service: PaymentService): Renderer {
    const render = this.deps.renderers[service];
    if (!render) throw new Error(`no renderer for ${service}`);
    return render;
  }
}

/** The reconciler asks providers about these: pending, and on hold at the provider (checks go on). */
function checkable(txn: PaymentTxn): boolean {
  return txn.status === 'pending' || (txn.status === 'on_hold' && txn.stage === 'awaiting_status');
}

function applied(txn: PaymentTxn): EventOutcome {
  return { txn, applied: true, reason: null };
}

function eventAttemptOutcome(event: ProviderEvent): Attempt['outcome'] {
  if (event.outcome === 'reversed') return 'failed';
  return event.outcome;
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

function lastInFlight(txn: PaymentTxn): Attempt | undefined {
  const last = txn.attempts[txn.attempts.length - 1];
  return last?.outcome === 'in_flight' ? last : undefined;
}

/** The hold of a payment's amount plus charges; a wallet too low is the caller's 402. */
function openIntentHold(
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
function withFirstAttempt(txn: PaymentTxn, provider: string): PaymentTxn {
  const at = txn.created_at;
  return {
    ...txn,
    attempts: [{ provider, started_at: at, finished_at: null, outcome: 'in_flight', message: '' }],
  };
}

/** A transaction as it is accepted: pending, its amount held, no provider asked yet. */
function newPendingTxn(
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

/**
 * What a reversal posting says of what it reverses, for the statements' lines (their amounts
 * are always what the posting moved): the transaction, its amount, and the owner's part of
 * it (the commission's or override's slab and TDS rate; the fee's GST rate and place).
 */
function reversalMeta(txn: PaymentTxn, owner: string): NonNullable<Posting['meta']> {
  const earning =
    owner === txn.account_id
      ? txn.earning
      : txn.override?.account_id === owner
        ? txn.override
        : undefined;
  return {
    kind: 'reversal',
    txn_id: txn.id,
    service: txn.service,
    txn_account_id: txn.account_id,
    amount_micros: txn.amount_micros,
    ...(earning ? { slab: earning.slab, tds_rate_bp: earning.tds_rate_bp } : {}),
    ...(txn.tax && owner === txn.account_id
      ? { gst_rate_bp: txn.tax.rate_bp, place_of_supply: txn.tax.place_of_supply }
      : {}),
  };
}

/**
 * A success's entries with what it took from its owner's hold counted as taken from the
 * wallet: its hold is resolved (captured), so giving that part back goes to the wallet. A
 * transaction whose hold was opened by another step (a split transfer's part: its holds are
 * opened with the transfer) shows the capture but not the opening; reversing it gave a 500
 * ("a hold still open cannot be reversed") before.
 */
function capturedFromWallet(
  entries: ReadonlyArray<[string, number]>,
  owner: string,
): Array<[string, number]> {
  const net = new Map<string, number>();
  for (const [account, micros] of entries) {
    const as = account === holdAccount(owner) ? walletAccount(owner) : account;
    net.set(as, (net.get(as) ?? 0) + micros);
  }
  return [...net];
}
