// The one payment mechanism every service uses (recharge, money transfer and penny drops,
// PAN lookups, bill payments): idempotency → duplicate window → hold (durable before any provider call) → the
// provider chain → settle (capture + charges + commission), refund (void the hold), or keep
// pending for the reconciler. Answers are sent only after their commit is durable. Its parts:
// the duplicate window (duplicate-window.ts), the moves of a transaction's status (moves.ts),
// the reconciler's status checks (reconciler.ts), a payment as it is opened (opening.ts).
import { ServiceError, StoreFullError } from '../../kernel/errors.js';
import { balanceMicros } from '../../ledger/ledger.js';
import { ChainAbortedError, runChain, type Attempt } from '../../providers/chain.js';
import type {
  PaymentProvider,
  PaymentService,
  ProviderEvent,
  ProviderResult,
} from '../../providers/types.js';
import type { Tx } from '../../store/types.js';
import { IDEMPOTENCY_IN_FLIGHT, type IdempotencyRecord } from '../../store/state.js';
import { newId } from '../../util/ids.js';
import { DuplicateWindow } from './duplicate-window.js';
import { PAY_IDEMPOTENCY_PREFIX, idempotencyExpired, payIdempotencyId } from './idempotency.js';
import { withPostings } from './ledger-effect.js';
import { TxnMoves } from './moves.js';
import { newPendingTxn, openIntentHold, withFirstAttempt } from './opening.js';
import { Reconciler } from './reconciler.js';
import type { PaymentTxn, TxnStatus } from './tables.js';
import { lastInFlight, providerRequest } from './transactions.js';
import {
  txnAnswer,
  type Answer,
  type EngineDeps,
  type EngineHooks,
  type EngineMemory,
  type EventOutcome,
  type ManualMove,
  type PaymentIntent,
  type Renderer,
} from './types.js';
import { withSpan } from '../../telemetry/index.js';

export { providerRequest, txnAnswer };
export type { Answer, EngineDeps, EngineHooks, EventOutcome, ManualMove, PaymentIntent, Renderer };

/** What submit's commit decided: replay an earlier answer, or process this new transaction. */
type Opened =
  { replay: Answer | Promise<Answer> | PaymentTxn; txn: null } | { replay: null; txn: PaymentTxn };

export class PaymentEngine {
  /** Transactions a request is submitting right now: the reconciler leaves them alone. */
  private readonly submitting = new Set<string>();
  /** Idempotency key → the answer being produced, for a retry that arrives meanwhile. */
  private readonly answering = new Map<string, Promise<Answer>>();
  /** Pending transactions the reconciler must look at. */
  private readonly pending = new Set<string>();
  private readonly window: DuplicateWindow;
  private readonly moves: TxnMoves;
  private readonly reconciler: Reconciler;
  private readonly work = new Set<Promise<unknown>>();
  private readonly shutdown = new AbortController();
  /** Unsubscribes from the providers that tell of transactions on their own. */
  private readonly unlisten: Array<() => void> = [];

  constructor(private readonly deps: EngineDeps) {
    const now_ms = deps.clock.now().getTime();
    const memory: EngineMemory = {
      pending: this.pending,
      submitting: this.submitting,
      answering: this.answering,
    };
    this.window = new DuplicateWindow(deps.store, deps.config);
    this.moves = new TxnMoves(memory, deps.hooks, (service) => this.renderer(service));
    this.reconciler = new Reconciler(
      deps,
      memory,
      this.moves,
      (work) => this.track(work),
      this.shutdown.signal,
      now_ms,
    );
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
    const { store } = this.deps;
    // The live table holds the unfinished transactions (pending, on hold, waiting for the
    // customer's consent to a refund); finalized ones are history, and only those finalized
    // within the duplicate window can be recent: read from the index, only the fields the
    // window compares. Several gateways (PostgreSQL) keep the window in rows every gateway
    // reads in its transaction (payment_recent): nothing to read at start (Marks.restore).
    const [pending, on_hold, refund_pending, recent_final] = await Promise.all([
      store.list('payment_txns', 'status', 'pending'),
      store.list('payment_txns', 'status', 'on_hold'),
      store.list('payment_txns', 'status', 'refund_pending'),
      this.window.restore(now_ms),
    ]);
    this.start_window = { entries: recent_final.length, bytes: 0 };
    for (const txn of recent_final) this.start_window.bytes += JSON.stringify(txn).length;
    const live = [...pending, ...on_hold, ...refund_pending];
    this.reconciler.adopt(live, now_ms);
    this.window.noteAll([...live, ...recent_final], now_ms);
    this.loaded = true;
  }

  /**
   * Several gateways on one database (PostgreSQL store): the pending transactions any of them
   * created, each checked by the gateway that claims it first (reconciler.ts).
   */
  async discover(): Promise<void> {
    if (this.loaded) await this.reconciler.discover();
  }

  /** One pass: status checks for pending transactions that are due. Called by the scheduler. */
  reconcileDue(): void {
    if (!this.loaded) return;
    const now_ms = this.deps.clock.now().getTime();
    this.window.sweep(now_ms);
    this.reconciler.reconcileDue(now_ms);
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

    const opened = await withSpan('aihub.payments.hold', () =>
      this.deps.store.transact((tx) =>
        this.open(tx, intent, idempotency_id, answer_promise, providers[0]!.name),
      ),
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
              this.moves.fail(tx, current, `not sent: ${reason}`, `cancelled: ${reason}`);
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
    if (!idempotency_id && !intent.allow_duplicate) this.window.refuse(intent, tx);
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
    this.window.note(tx, txn);
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
    return withSpan('aihub.payments.commit', () =>
      this.settleChain(txn, attempts, chain, render, idempotency_id),
    );
  }

  /** The chain's outcome committed: the transaction's status, its money, the answer kept for a retry. */
  private settleChain(
    txn: PaymentTxn,
    attempts: Attempt[],
    chain: Awaited<ReturnType<typeof runChain>>,
    render: Renderer,
    idempotency_id: string | null,
  ): Promise<Answer> {
    return this.deps.store.transact((tx) => {
      const stored = tx.get('payment_txns', txn.id)!;
      // A provider's callback may have settled it while the chain ran: that answer stands.
      if (stored.stage === 'final') return this.storeAnswer(tx, stored, render, idempotency_id);
      let current: PaymentTxn = { ...stored, attempts: attempts.map((a) => ({ ...a })) };
      if (!chain.result) {
        current = this.moves.fail(
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
      return this.moves.succeed(tx, base, result.message, result.data ?? {});
    if (result.outcome === 'failed') {
      const declined = result.code
        ? { ...base, result: { ...base.result, decline_code: result.code } }
        : base;
      return this.moves.fail(
        tx,
        declined,
        `declined: ${result.message}`,
        `declined by ${provider}`,
      );
    }
    const next_at = new Date(
      tx.now.getTime() + this.deps.config.reconcile.first_check_ms,
    ).toISOString();
    const checked = { ...base, checks: { ...base.checks, next_at } };
    if (result.outcome === 'on_hold')
      return this.moves.move(tx, checked, 'on_hold', `on hold at ${provider}: ${result.message}`, {
        stage: 'awaiting_status',
        message: `on hold at ${provider}: ${result.message}; the amount stays held and the status is checked`,
      });
    // Accepted: it waits where it is (pending, or on hold when a callback put it there meanwhile).
    return this.moves.move(
      tx,
      checked,
      base.status,
      `accepted by ${provider}; awaiting the final status`,
      { stage: 'awaiting_status', message: `pending at ${provider}: ${result.message}` },
    );
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
        return applied(this.moves.succeed(tx, base, `${note} (callback)`, event.data ?? {}));
      case 'failed':
      case 'reversed': {
        if (current.status === 'success')
          return applied(this.moves.reverse(tx, base, 'provider', event.message));
        if (!live) return unchanged;
        const with_code = event.code
          ? { ...base, result: { ...base.result, decline_code: event.code } }
          : base;
        const reason = `failed at ${event.provider}: ${event.message}`;
        return applied(this.moves.fail(tx, with_code, reason, note, true));
      }
      case 'on_hold':
        if (current.status !== 'pending') return unchanged;
        return applied(
          this.moves.move(tx, this.nextCheckOf(tx, base), 'on_hold', `on hold at ${note}`, {
            stage: 'awaiting_status',
            message: `on hold at ${event.provider}: ${event.message}; the amount stays held and the status is checked`,
          }),
        );
      case 'pending':
        if (current.status !== 'on_hold') return unchanged;
        return applied(
          this.moves.move(
            tx,
            this.nextCheckOf(tx, base),
            'pending',
            `processing again at ${note}`,
            {
              stage: 'awaiting_status',
              message: `pending at ${event.provider}: ${event.message}`,
            },
          ),
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
      this.moves.reverse(tx, txn, 'admin', manual.reason),
    );
  }

  /** An operator refunds a held transaction or one waiting for consent: on_hold | refund_pending → refunded. */
  refundByAdmin(txn_id: string, manual: ManualMove): Promise<PaymentTxn> {
    return this.manually(txn_id, manual, ['on_hold', 'refund_pending'], (tx, txn) =>
      this.moves.refund(tx, txn, `refunded by an operator: ${manual.reason}`),
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
      this.moves.move(tx, txn, 'on_hold', `held by an operator: ${manual.reason}`, {
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
    return this.moves.refund(tx, txn, note);
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
   * Whether a stored idempotency record no longer applies: one of this engine's records, past
   * `payments.idempotency_window_ms`, and not the key of a request this process is still
   * answering. The lookup in `submit` and the pruner both ask this, with the store's clock.
   */
  idempotencyExpired(id: string, record: IdempotencyRecord, now_ms: number): boolean {
    if (!id.startsWith(PAY_IDEMPOTENCY_PREFIX) || this.answering.has(id)) return false;
    return idempotencyExpired(record, now_ms, this.deps.config.idempotency_window_ms);
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
      return this.moves.move(
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

function applied(txn: PaymentTxn): EventOutcome {
  return { txn, applied: true, reason: null };
}

function eventAttemptOutcome(event: ProviderEvent): Attempt['outcome'] {
  if (event.outcome === 'reversed') return 'failed';
  return event.outcome;
}
