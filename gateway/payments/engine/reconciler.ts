// The reconciler: status checks of the transactions a provider left pending (or on hold at
// the provider), each due after its backoff, each claimed first so that one gateway asks at a
// time, acting only on the provider's answer (a final answer settles it, a 'not found' past
// its grace refunds it, checks run out into an operator's hold). It also adopts the pending
// transactions of before this start and, with several gateways, those another one created.
import { StoreUnavailableError } from '../../kernel/errors.js';
import { callWithTimeout, type Attempt } from '../../providers/chain.js';
import type { StatusResult } from '../../providers/types.js';
import type { Tx } from '../../store/types.js';
import type { TxnMoves } from './moves.js';
import { UNREAD, readThenPass, type PassRead } from './read-pass.js';
import type { PaymentTxn } from './tables.js';
import { backoffMs, checkable, lastInFlight, providerRequest } from './transactions.js';
import type { EngineDeps, EngineMemory } from './types.js';

export class Reconciler {
  private readonly checking = new Set<string>();
  /** A pass on the PostgreSQL store is reading its pending transactions (one at a time). */
  private reconciling = false;
  /** Pending from before this start: checked soon after a restart, whatever their schedule said. */
  private readonly from_before_start = new Set<string>();
  private readonly restart_check_ms: number;
  /** Pending transactions another gateway created (several gateways), with when this one learned of them. */
  private readonly learned: Map<string, number> | null;

  constructor(
    private readonly deps: Omit<EngineDeps, 'renderers' | 'hooks'>,
    private readonly memory: EngineMemory,
    private readonly moves: TxnMoves,
    private readonly track: (work: Promise<unknown>) => void,
    private readonly signal: AbortSignal,
    now_ms: number,
  ) {
    this.learned = deps.store.acrossGateways(() => new Map<string, number>());
    this.restart_check_ms = now_ms + deps.config.reconcile.first_check_ms;
  }

  /** The live transactions of before this start: the checkable ones are checked soon. */
  adopt(txns: readonly PaymentTxn[], now_ms: number): void {
    for (const txn of txns) {
      if (!checkable(txn)) continue;
      this.memory.pending.add(txn.id);
      this.from_before_start.add(txn.id);
      // Several gateways: another one may be submitting it right now (see reconcileDue).
      this.learned?.set(txn.id, now_ms);
    }
  }

  /**
   * Several gateways on one database (PostgreSQL store): the pending transactions any of them
   * created, from the store's index of transactions by status (live state: as many as are
   * pending). Each is checked by the gateway that claims it first (`check`).
   */
  async discover(): Promise<void> {
    const now_ms = this.deps.clock.now().getTime();
    const [pending, on_hold] = await Promise.all([
      this.deps.store.list('payment_txns', 'status', 'pending'),
      this.deps.store.list('payment_txns', 'status', 'on_hold'),
    ]);
    for (const txn of [...pending, ...on_hold]) {
      if (!checkable(txn) || this.memory.pending.has(txn.id)) continue;
      this.memory.pending.add(txn.id);
      this.learned?.set(txn.id, now_ms);
    }
  }

  /** One pass: status checks for pending transactions that are due (the engine's `reconcileDue`). */
  reconcileDue(now_ms: number): void {
    const store = this.deps.store;
    // The pending transactions are read in one read run (PostgreSQL: those the cache lacks, or
    // holds from before a durable read's mark, loaded without stopping the event loop), then
    // the pass works on what was read; with everything in memory (null), read as it goes.
    if (this.reconciling) return;
    const ids = [...this.memory.pending].filter(
      (id) => !this.memory.submitting.has(id) && !this.checking.has(id),
    );
    const pass = readThenPass(store, 'payment_txns', ids, (read) =>
      this.reconcileWith(now_ms, read),
    );
    if (!pass) return;
    this.reconciling = true;
    this.track(
      pass
        .catch((error: unknown) => {
          // A refusal by the store is part of its outage, logged by the store.
          if (!(error instanceof StoreUnavailableError))
            this.deps.logger.warn({ msg: 'pending transactions not read', err: error });
        })
        .finally(() => {
          this.reconciling = false;
        }),
    );
  }

  /**
   * One pass over the pending transactions, each read with `read` (undefined: gone; UNREAD:
   * became pending after the read, left for the next pass).
   */
  private reconcileWith(now_ms: number, read: PassRead<'payment_txns'>): void {
    for (const txn_id of this.memory.pending) {
      if (this.checking.size >= this.deps.config.reconcile.concurrency) return;
      if (this.memory.submitting.has(txn_id) || this.checking.has(txn_id)) continue;
      const txn = read(txn_id);
      if (txn === UNREAD) continue;
      if (!txn || !checkable(txn)) {
        this.memory.pending.delete(txn_id);
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
        this.moves.fail(
          tx,
          current,
          'no provider received this transaction',
          'never reached a provider',
        );
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
      this.moves.fail(
        tx,
        base,
        `${asked} has no record of this transaction`,
        `not found at ${asked}`,
      );
      return;
    }
    const still =
      answer?.outcome === 'pending' || answer?.outcome === 'on_hold'
        ? {
            ...resolveInFlight(answer.outcome, `by status check: ${answer.message}`),
            provider_ref: answer.provider_ref ?? checked.provider_ref,
          }
        : checked;
    this.scheduleCheck(tx, this.follow(tx, still, asked, answer), checked.checks, at);
  }

  /** The provider holds it for a review, or took it up again: the status follows, checks go on. */
  private follow(
    tx: Tx,
    still: PaymentTxn,
    asked: string,
    answer: StatusResult | null,
  ): PaymentTxn {
    const to =
      answer?.outcome === 'on_hold' ? 'on_hold' : answer?.outcome === 'pending' ? 'pending' : null;
    if (to === null || to === still.status || !answer) return still;
    return this.moves.move(
      tx,
      still,
      to,
      `${to === 'on_hold' ? 'on hold' : 'processing again'} at ${asked}: ${answer.message}`,
      {
        stage: 'awaiting_status',
        message: `${to === 'on_hold' ? 'on hold' : 'pending'} at ${asked}: ${answer.message}`,
      },
    );
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
      this.moves.succeed(
        tx,
        with_ref,
        `${answer.message} (status check ${count})`,
        answer.data ?? {},
      );
    else
      this.moves.fail(
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
    this.moves.move(
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
      const answer = await callWithTimeout(provider.timeout_ms, this.signal, (signal) =>
        provider.status({ ...providerRequest(txn), provider_ref: txn.provider_ref }, signal),
      );
      return {
        answer,
        error_text: answer === null ? `no answer in ${provider.timeout_ms} ms` : null,
      };
    } catch (error) {
      if (this.signal.aborted) return 'shutdown';
      return { answer: null, error_text: (error as Error).message.slice(0, 300) };
    }
  }
}
