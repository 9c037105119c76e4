// The top-ups room's commands: start a top-up (limits, daily cap, the provider's order), read
// one, and apply what a verified webhook says, each credit only after the provider's own
// fetch agrees. The reconciliation pass is in reconcile.ts; the transactions in postings.ts.
import type { Config } from '../config.js';
import { ApiError, notFound } from '../http/errors.js';
import { indiaTime } from '../kernel/india-time.js';
import type { Clock } from '../kernel/clock.js';
import type { Logger } from '../log.js';
import type { Store, Tx } from '../store/types.js';
import { newId } from '../util/ids.js';
import { microsToUnits } from '../util/money.js';
import { priceTopup, type PricedTopup } from './fees.js';
import { webhookPath } from './paths.js';
import {
  auditTopup,
  creditTopup,
  moveTopup,
  paymentKey,
  raiseAlert,
  restoreDispute,
  reverseTopup,
  type CreditOutcome,
} from './postings.js';
import type { TopupView } from './room.js';
import type { Topup, TopupAlert, TopupStatus } from './tables.js';
import { RECENT_TOPUPS, rememberRecent, withChecks } from './tables.js';
import {
  ProviderCallError,
  type CreatedOrder,
  type ProviderPayment,
  type TopupEvent,
  type TopupMethod,
  type TopupProvider,
} from './types.js';

export interface ServiceDeps {
  config: Config;
  store: Store;
  logger: Logger;
  clock: Clock;
  public_url: () => string;
  provider: TopupProvider | null;
  /** Credits into virtual accounts (virtual-accounts/service.ts). */
  virtual_accounts?: {
    credited(
      provider: TopupProvider,
      event: Extract<TopupEvent, { type: 'virtual_account.credited' }>,
    ): Promise<void>;
  };
}

const TOPUP_ID = /^tup_[0-9a-f]{24}$/;

export function topupView(topup: Topup): TopupView {
  return {
    topup_id: topup.id,
    provider: topup.provider,
    order_id: topup.order_id,
    amount: microsToUnits(topup.amount_micros),
    fee: microsToUnits(topup.fee_micros),
    fee_gst: microsToUnits(topup.fee_gst_micros),
    total: microsToUnits(topup.amount_micros + topup.fee_micros),
    currency: topup.currency,
    status: topup.status,
    reversed: microsToUnits(topup.reversed_micros),
    owed: microsToUnits(topup.owed_micros),
    note: topup.note,
    checkout: topup.status === 'created' || topup.status === 'failed' ? topup.checkout : null,
    created_at: topup.created_at,
    updated_at: topup.updated_at,
  };
}

/** A top-up as recorded before its order: created, waiting for the provider's order id. */
function newTopup(
  tx: Tx,
  input: {
    topup_id: string;
    account_id: string;
    provider: TopupProvider;
    priced: PricedTopup;
    input: { method: TopupMethod | null };
    config: Config;
  },
): Topup {
  const at = tx.now.toISOString();
  const first_after_ms = input.config.topups.reconcile.first_after_ms;
  return {
    id: input.topup_id,
    account_id: input.account_id,
    provider: input.provider.name,
    order_id: null,
    amount_micros: input.priced.amount_micros,
    fee_micros: input.priced.fee_micros,
    fee_gst_micros: input.priced.fee_gst_micros,
    fee_tax: input.priced.tax,
    method: input.input.method,
    currency: input.config.currency,
    status: 'created',
    payment_id: null,
    reversed_micros: 0,
    owed_micros: 0,
    checkout: null,
    note: 'waiting for the payment gateway’s order',
    created_at: at,
    updated_at: at,
    checks: { count: 0, next_at: new Date(tx.now.getTime() + first_after_ms).toISOString() },
    history: [{ status: 'created', at, note: 'top-up started' }],
  };
}

export class TopupService {
  constructor(private readonly deps: ServiceDeps) {}

  /** The configured provider, or the refusal that says how this deployment is funded instead. */
  requireProvider(): TopupProvider {
    if (this.deps.provider) return this.deps.provider;
    throw new ApiError(
      409,
      'topups_not_configured',
      this.deps.config.mode === 'sandbox'
        ? 'no payment gateway is configured: in sandbox mode the /wallet page credits a simulated payment'
        : 'no payment gateway is configured (topups.provider): fund the wallet by bank transfer as the /wallet page explains',
    );
  }

  async create(
    account_id: string,
    input: { amount_micros: number; method: TopupMethod | null },
  ): Promise<Topup> {
    const { config, store } = this.deps;
    const provider = this.requireProvider();
    const priced = priceTopup(config, input.amount_micros, input.method);
    const topup_id = newId('tup');
    // Recorded (and counted against the day's cap) before the provider is asked, so that an
    // order always has its top-up, whatever happens after the call.
    const customer = await store.transact((tx) => {
      const account = tx.get('accounts', account_id);
      if (!account) throw notFound(`no account ${account_id}`, 'account_not_found');
      this.countToday(tx, account_id, input.amount_micros);
      tx.set(
        'topups',
        topup_id,
        newTopup(tx, { topup_id, account_id, provider, priced, input, config }),
      );
      rememberRecent(tx, account_id, topup_id);
      auditTopup(
        tx,
        'topup.created',
        account_id,
        `${topup_id} ${provider.name} ${microsToUnits(priced.total_micros)} ${config.currency}`,
      );
      return { name: account.name, email: account.email };
    });
    const public_url = this.deps.public_url();
    let order: CreatedOrder;
    try {
      order = await provider.createOrder({
        topup_id,
        account_id,
        amount_micros: priced.total_micros,
        currency: config.currency,
        customer,
        return_url: `${public_url}/wallet?topup=${topup_id}`,
        notify_url: `${public_url}${webhookPath(provider.name)}`,
      });
    } catch (error) {
      await this.orderRefused(provider, topup_id, error);
    }
    return store.transact((tx) => {
      const topup = tx.get('topups', topup_id)!;
      tx.set('topup_orders', paymentKey(provider.name, order.order_id), topup_id);
      const next: Topup = {
        ...topup,
        order_id: order.order_id,
        checkout: order.checkout,
        note: `waiting for the payment of order ${order.order_id}`,
      };
      tx.set('topups', topup_id, next);
      auditTopup(tx, 'topup.order', account_id, `${topup_id} order ${order.order_id}`);
      return next;
    });
  }

  /** The provider made no order: the top-up failed (no longer counted against the cap), and a 502. */
  private async orderRefused(
    provider: TopupProvider,
    topup_id: string,
    error: unknown,
  ): Promise<never> {
    const reason = error instanceof Error ? error.message : String(error);
    this.deps.logger.warn({
      msg: 'top-up order refused',
      topup_id,
      provider: provider.name,
      reason,
    });
    await this.deps.store.transact((tx) => {
      const topup = tx.get('topups', topup_id)!;
      this.uncountToday(tx, topup);
      moveTopup(
        tx,
        { ...topup, checks: { ...topup.checks, next_at: null } },
        'failed',
        'the payment gateway made no order',
      );
    });
    throw new ApiError(
      502,
      'provider_error',
      'the payment gateway did not make an order; nothing was charged, try again',
    );
  }

  /** The daily cap: what the account started today (India time) and did not fail, plus this. */
  private countToday(tx: Tx, account_id: string, amount_micros: number): void {
    const cap = this.deps.config.topups.daily_cap;
    const key = `${account_id}:${indiaTime(tx.now).date}`;
    const today = tx.get('topup_daily', key) ?? 0;
    if (cap !== null && today + amount_micros > cap)
      throw new ApiError(
        400,
        'daily_cap_exceeded',
        `amount: at most ${microsToUnits(cap)} ${this.deps.config.currency} a day may be topped up; ${microsToUnits(Math.max(0, cap - today))} is left today`,
        'amount',
        'invalid_request_error',
      );
    tx.set('topup_daily', key, today + amount_micros);
  }

  /** A top-up that will never be paid no longer counts against its day's cap. */
  uncountToday(tx: Tx, topup: Topup): void {
    const key = `${topup.account_id}:${indiaTime(new Date(topup.created_at)).date}`;
    const today = tx.get('topup_daily', key);
    if (today === undefined) return;
    const left = today - topup.amount_micros;
    if (left > 0) tx.set('topup_daily', key, left);
    else tx.del('topup_daily', key);
  }

  /** One of the account's own top-ups; an id of another account's is as unknown as a made-up one. */
  async get(account_id: string, topup_id: string): Promise<Topup | null> {
    if (!TOPUP_ID.test(topup_id)) return null;
    const topup = await this.deps.store.fetch('topups', topup_id);
    return topup && topup.account_id === account_id ? topup : null;
  }

  /** The account's latest top-ups, newest first: reads only the rows it returns (topup_recent). */
  async recent(account_id: string, limit: number): Promise<Topup[]> {
    const { store } = this.deps;
    const ids = (await store.fetch('topup_recent', account_id)) ?? [];
    const rows = await Promise.all(
      ids
        .slice(0, Math.max(1, Math.min(RECENT_TOPUPS, limit)))
        .map((id) => store.fetch('topups', id)),
    );
    return rows.filter((row): row is Topup => row !== undefined && row !== null);
  }

  /**
   * Top-ups now in `status`, the latest to enter it first: of the last STATUS_WINDOW to enter
   * it, those still there (reads only those rows, never every top-up of that status).
   */
  async withStatus(status: TopupStatus, limit: number): Promise<Topup[]> {
    const { store } = this.deps;
    const ids = (await store.fetch('topup_by_status', status)) ?? [];
    const rows: Topup[] = [];
    for (let at = 0; at < ids.length && rows.length < limit; at += 50) {
      const chunk = await Promise.all(
        ids.slice(at, at + 50).map((id) => store.fetch('topups', id)),
      );
      for (const row of chunk)
        if (row && row.status === status && rows.length < limit) rows.push(row);
    }
    return rows;
  }

  async alerts(limit: number): Promise<TopupAlert[]> {
    return this.deps.store.page('topup_alerts', {
      newest_first: true,
      offset: 0,
      limit: Math.max(1, Math.min(500, limit)),
    });
  }

  /** Applies one verified webhook event. Throws ProviderCallError when the check with the provider could not be made (the webhook is then refused, so the provider sends it again). */
  async apply(event: TopupEvent): Promise<void> {
    const provider = this.requireProvider();
    if (event.type === 'virtual_account.credited' && this.deps.virtual_accounts)
      return this.deps.virtual_accounts.credited(provider, event);
    switch (event.type) {
      case 'payment.captured':
        return this.captured(provider, event.order_id, event.payment_id, 'webhook');
      case 'payment.failed':
        return this.failed(provider, event.order_id, event.reason);
      case 'refund.processed':
      case 'dispute.created':
        return this.reversed(provider, event);
      case 'dispute.won':
        return this.disputeWon(provider, event);
      case 'virtual_account.credited':
      case 'ignored':
        this.deps.logger.info({
          msg: 'top-up webhook event not acted on',
          provider: provider.name,
          event: event.type === 'ignored' ? event.name : event.type,
          event_id: event.event_id,
        });
        return;
    }
  }

  /** A payment the webhook says was captured: credited only as the provider's own fetch has it. */
  async captured(
    provider: TopupProvider,
    order_id: string,
    payment_id: string,
    source: 'webhook' | 'reconcile',
  ): Promise<void> {
    const topup_id = await this.deps.store.fetch(
      'topup_orders',
      paymentKey(provider.name, order_id),
    );
    if (topup_id === undefined) {
      this.deps.logger.warn({
        msg: 'top-up payment for an unknown order',
        provider: provider.name,
        order_id,
        payment_id,
      });
      await this.deps.store.transact((tx) =>
        raiseAlert(tx, {
          provider: provider.name,
          reason: 'unknown_order',
          topup_id: null,
          account_id: null,
          order_id,
          payment_id,
          detail: 'a captured payment for an order no top-up made',
        }),
      );
      return;
    }
    const payment = await provider.fetchPayment(payment_id);
    await this.creditChecked(provider, topup_id, order_id, payment_id, payment, source);
  }

  /**
   * The fee was priced, before paying, for the method the customer named (or the default
   * rate); the checkout lets the customer pay by another. The customer paid what was shown and
   * the wallet gets what was shown; where the method paid by carries another fee, the operator
   * is told (a `fee_method_mismatch` alert: the fee collected differs from the fee table).
   */
  private checkFeeMethod(tx: Tx, topup_id: string, payment: ProviderPayment): void {
    const topup = tx.get('topups', topup_id);
    if (!topup || payment.method === null || payment.method === topup.method) return;
    let expected: number;
    try {
      expected = priceTopup(this.deps.config, topup.amount_micros, payment.method).fee_micros;
    } catch {
      return; // the limits changed since: the fee table no longer prices this amount
    }
    if (expected === topup.fee_micros) return;
    raiseAlert(tx, {
      provider: topup.provider,
      reason: 'fee_method_mismatch',
      topup_id,
      account_id: topup.account_id,
      order_id: topup.order_id,
      payment_id: payment.payment_id,
      detail: `paid by ${payment.method}, whose fee is ${microsToUnits(expected)} ${topup.currency}; the fee charged was ${microsToUnits(topup.fee_micros)} ${topup.currency} (priced for ${topup.method ?? 'the default rate'})`,
    });
  }

  /** Credits `topup_id` for what the provider answered about `payment_id` (null: it knows none). */
  async creditChecked(
    provider: TopupProvider,
    topup_id: string,
    order_id: string,
    payment_id: string,
    payment: ProviderPayment | null,
    source: 'webhook' | 'reconcile',
  ): Promise<CreditOutcome> {
    const outcome = await this.deps.store.transact((tx): CreditOutcome => {
      if (payment) {
        const credited = creditTopup(tx, topup_id, payment);
        if (credited === 'credited') this.checkFeeMethod(tx, topup_id, payment);
        return credited;
      }
      const topup = tx.get('topups', topup_id);
      raiseAlert(tx, {
        provider: provider.name,
        reason: 'unknown_payment',
        topup_id,
        account_id: topup?.account_id ?? null,
        order_id,
        payment_id,
        detail: `${provider.name} knows no payment ${payment_id}`,
      });
      return 'refused';
    });
    const log = outcome === 'refused' ? this.deps.logger.warn : this.deps.logger.info;
    log.call(this.deps.logger, {
      msg: `top-up ${outcome}`,
      topup_id,
      provider: provider.name,
      payment_id,
      source,
    });
    return outcome;
  }

  private async failed(provider: TopupProvider, order_id: string, reason: string): Promise<void> {
    const topup_id = await this.deps.store.fetch(
      'topup_orders',
      paymentKey(provider.name, order_id),
    );
    if (topup_id === undefined) return;
    await this.deps.store.transact((tx) => {
      const topup = tx.get('topups', topup_id);
      // Only an unpaid top-up: a failed attempt after another one paid changes nothing.
      if (topup?.status === 'created') moveTopup(tx, topup, 'failed', `payment failed: ${reason}`);
    });
  }

  /** A refund or a dispute of a payment that credited a top-up: debited back once per its id. */
  private async reversed(
    provider: TopupProvider,
    event: Extract<TopupEvent, { type: 'refund.processed' | 'dispute.created' }>,
  ): Promise<void> {
    const { store } = this.deps;
    const credited = await store.fetch(
      'topup_payments',
      paymentKey(provider.name, event.payment_id),
    );
    const kind = event.type === 'refund.processed' ? 'refund' : 'dispute';
    const id = event.type === 'refund.processed' ? event.refund_id : event.dispute_id;
    const payment = credited ? await provider.fetchPayment(event.payment_id) : null;
    const problem = !credited
      ? 'unknown_payment'
      : !payment || payment.currency !== event.currency
        ? 'reversal_mismatch'
        : kind === 'refund' && payment.refunded_micros < event.amount_micros
          ? 'reversal_mismatch'
          : null;
    await store.transact((tx) => {
      if (problem || !credited) {
        raiseAlert(tx, {
          provider: provider.name,
          reason: problem ?? 'unknown_payment',
          topup_id: credited?.topup_id ?? null,
          account_id: credited?.account_id ?? null,
          order_id: null,
          payment_id: event.payment_id,
          detail: `${kind} ${id} of ${microsToUnits(event.amount_micros)} ${event.currency} not applied: ${credited ? 'the provider does not confirm it' : 'no top-up was credited by this payment'}`,
        });
        return;
      }
      reverseTopup(tx, credited.topup_id, { kind, id, amount_micros: event.amount_micros });
    });
  }

  /** A dispute won: its reversal given back once; one never applied here is listed for the operator. */
  private async disputeWon(
    provider: TopupProvider,
    event: Extract<TopupEvent, { type: 'dispute.won' }>,
  ): Promise<void> {
    await this.deps.store.transact((tx) => {
      if (restoreDispute(tx, provider.name, event.dispute_id) !== 'unknown') return;
      const credited = tx.get('topup_payments', paymentKey(provider.name, event.payment_id));
      raiseAlert(tx, {
        provider: provider.name,
        reason: 'unknown_dispute',
        topup_id: credited?.topup_id ?? null,
        account_id: credited?.account_id ?? null,
        order_id: null,
        payment_id: event.payment_id,
        detail: `dispute ${event.dispute_id} won, but no reversal of it was applied here: nothing returned`,
      });
    });
  }

  /** Asks the provider about one pending top-up's order; credits, expires or schedules the next check. */
  async check(topup: Topup): Promise<void> {
    const { config, store, clock } = this.deps;
    const provider = this.requireProvider();
    const now_ms = clock.now().getTime();
    const age_ms = now_ms - Date.parse(topup.created_at);
    const expire = age_ms >= config.topups.reconcile.expire_after_ms;
    if (topup.order_id !== null) {
      let order;
      try {
        order = await provider.fetchOrder(topup.order_id);
      } catch (error) {
        if (!(error instanceof ProviderCallError)) throw error;
        this.deps.logger.warn({
          msg: 'top-up status check failed',
          topup_id: topup.id,
          reason: error.message,
        });
        order = null;
      }
      const paid = order?.payments.find((p) => p.status === 'captured' || p.status === 'refunded');
      if (order && paid) {
        await this.creditChecked(
          provider,
          topup.id,
          topup.order_id,
          paid.payment_id,
          paid,
          'reconcile',
        );
        return;
      }
    }
    await store.transact((tx) => {
      const row = tx.get('topups', topup.id);
      if (!row || (row.status !== 'created' && row.status !== 'failed')) return;
      const count = row.checks.count + 1;
      if (expire) {
        const stopped = { ...row, checks: { count, next_at: null }, checkout: null };
        if (row.status === 'created') {
          this.uncountToday(tx, row);
          moveTopup(tx, stopped, 'expired', 'never paid');
        } else tx.set('topups', row.id, withChecks(stopped));
        return;
      }
      const backoff_ms = Math.min(
        config.topups.reconcile.interval_ms * 2 ** Math.min(count, 4),
        config.topups.reconcile.expire_after_ms,
      );
      tx.set(
        'topups',
        row.id,
        withChecks({
          ...row,
          checks: { count, next_at: new Date(now_ms + backoff_ms).toISOString() },
        }),
      );
    });
  }
}

/**
 * Whether a `topup_daily` row (`<account>:<India date>`) no longer applies: the cap counts
 * only today's (countToday), and a day that is over never becomes today again. The payments
 * room's pruning pass deletes such rows (topups/index.ts hands it this target).
 */
export function dailyRowOver(id: string, now: Date): boolean {
  const day = id.slice(id.lastIndexOf(':') + 1);
  return day < indiaTime(now).date;
}
