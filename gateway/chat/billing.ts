// The chat money path: reserve the worst case in memory before the upstream call (so
// concurrent requests can never spend the same balance), then post the actual cost in one
// durable commit with the usage record. One fsync per request. A crash loses only the
// reservation (it lives in memory): a request cut off before its commit is not billed; one
// cut off between its durable commit and its answer is billed and never answered.
import {
  availableMicros,
  balanceMicros,
  debitWallet,
  InsufficientBalanceError,
  recordReceivable,
  reserveMicros,
  type VolatileReservation,
} from '../ledger/ledger.js';
import type { RequestScope } from '../kernel/request-scope.js';
import type { Store, Tx } from '../store/types.js';
import type { KeyHold } from './key-hold.js';
import type { SharedReservations } from './reservations.js';
import { table, type State } from '../store/state.js';
import { targetPrice, type TierConfig } from './config.js';
import { costMicros } from './pricing.js';

declare module '../store/state.js' {
  interface Tables {
    /** account id → free-tier tokens used on one UTC day */
    chat_free_usage: Record<string, { day: string; tokens: number }>;
  }
}

export const AI_REVENUE = 'revenue:ai';

export type UsageStatus = 'ok' | 'client_closed' | 'upstream_error' | 'stream_error';

export interface Reservation {
  account_id: string;
  key_id: string;
  tier: TierConfig;
  request_id: string;
  /** The request's scope (kernel/request-scope.ts): the settlement's commit is counted in it. */
  scope?: RequestScope | undefined;
  /** The worst case, set aside in memory until the settlement posts the actual cost. */
  money: VolatileReservation;
  /** Free-tier tokens counted against today's allowance while the request runs. */
  free_tokens: number;
  /** A limited key's hold (chat/key-hold.ts): the settlement adds the cost to the key's spend. */
  key?: KeyHold | undefined;
}

export interface Settlement {
  cost_micros: number;
  balance_micros: number;
  /** Of cost_micros, what the wallet could not pay (an upstream counted more than the hold): owed, paid from the next credit. */
  receivable_micros: number;
  /** The target that answered has no known price (a model missing from the catalogue): the cost is not what it bills. */
  unpriced?: true;
}

export function utcDay(now_ms: number): string {
  return new Date(now_ms).toISOString().slice(0, 10);
}

export function secondsToNextUtcDay(now_ms: number): number {
  const next = new Date(now_ms);
  next.setUTCHours(24, 0, 0, 0);
  return Math.max(1, Math.ceil((next.getTime() - now_ms) / 1000));
}

export function freeTokensUsed(state: State, account_id: string, day: string): number {
  const row = table(state, 'chat_free_usage')[account_id];
  return row && row.day === day ? row.tokens : 0;
}

/** Reserves the worst case, synchronously; throws InsufficientBalanceError when the wallet cannot cover it. */
export function reserve(
  store: Store,
  input: {
    account_id: string;
    key_id: string;
    tier: TierConfig;
    request_id: string;
    scope?: RequestScope | undefined;
    worst_case_micros: number;
    free_tokens: number;
  },
): Reservation {
  const money = reserveMicros(store.state, input.account_id, input.worst_case_micros);
  return reservationOf(input, money);
}

/** The same, across gateways (PostgreSQL store): the worst case is a row every gateway sees (chat/reservations.ts). */
export async function reserveShared(
  shared: SharedReservations,
  input: {
    account_id: string;
    key_id: string;
    tier: TierConfig;
    request_id: string;
    scope?: RequestScope | undefined;
    worst_case_micros: number;
    free_tokens: number;
  },
  key?: { key_id: string; holdIn(tx: Tx): void },
): Promise<Reservation> {
  return reservationOf(
    input,
    await shared.reserve(
      input.account_id,
      input.request_id,
      input.worst_case_micros,
      key,
      input.scope,
    ),
  );
}

function reservationOf(
  input: {
    account_id: string;
    key_id: string;
    tier: TierConfig;
    request_id: string;
    scope?: RequestScope | undefined;
    free_tokens: number;
  },
  money: VolatileReservation,
): Reservation {
  return {
    account_id: input.account_id,
    key_id: input.key_id,
    tier: input.tier,
    request_id: input.request_id,
    scope: input.scope,
    free_tokens: input.free_tokens,
    money,
  };
}

export interface ActualUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Of prompt_tokens, read from the upstream's cache (billed at the cached price). */
  cached_tokens?: number;
  /** Of completion_tokens, spent on reasoning (shown; billed at the reasoning price, else as output). */
  reasoning_tokens?: number;
  /** Of prompt_tokens, written to the upstream's cache (billed at the cache-write price, else as input). */
  cache_write_tokens?: number;
  /** The counts are the gateway's estimate: the upstream reported no usage. */
  estimated?: boolean;
  status: UsageStatus;
  target: string | null;
  latency_ms: number;
  stream: boolean;
  /** The wire protocol the client spoke (chat, responses, messages, embeddings, completions); chat when absent. */
  protocol?: string;
}

/**
 * Posts the actual cost and writes the usage record in one commit; resolves once it is durable.
 * The balance answered is the wallet's right after this commit: read inside it on the
 * JSON-file store; on PostgreSQL from what the commit answered (the debit commutes with other
 * gateways' debits of the wallet, so the function does not read the exact balance).
 */
export async function settle(
  store: Store,
  reservation: Reservation,
  usage: ActualUsage,
  now_ms: number,
): Promise<Settlement> {
  const [settled, balance_micros] = await store.transactThenRead(
    (tx) => settleTx(tx, reservation, usage, now_ms),
    (state) => balanceMicros(state, reservation.account_id),
    { scope: reservation.scope },
  );
  return { ...settled, balance_micros };
}

function settleTx(
  tx: Tx,
  r: Reservation,
  usage: ActualUsage,
  now_ms: number,
): Omit<Settlement, 'balance_micros'> {
  // An answer is billed at the price of the target that gave it; a failure before any target answered, at the first one's.
  const price = targetPrice(r.tier, usage.target ?? r.tier.targets[0]!);
  const cost_micros = costMicros(
    price,
    usage.prompt_tokens,
    usage.completion_tokens,
    usage.cached_tokens ?? 0,
    usage.reasoning_tokens ?? 0,
    usage.cache_write_tokens ?? 0,
  );
  // A shared reservation leaves in this commit (0 if its lease lapsed and it was released meanwhile).
  const reserved_micros = r.money.releaseIn ? r.money.releaseIn(tx) : r.money.amount_micros;
  if (!r.money.releaseIn) r.money.release();
  const memo = `chat ${r.tier.id} ${usage.prompt_tokens}+${usage.completion_tokens} tokens`;
  // What was reserved is covered. Beyond it (an upstream that counted more than the worst
  // case) the wallet pays what it has, never going below zero, and the rest is recorded as
  // owed: the full cost is billed and the next credit pays the debt first.
  const covered_micros = Math.min(cost_micros, reserved_micros);
  // Only a cost beyond the reservation reads what the wallet has (exactly).
  const beyond_micros =
    cost_micros > covered_micros
      ? Math.min(
          cost_micros - covered_micros,
          Math.max(0, availableMicros(tx.state, r.account_id) - covered_micros),
        )
      : 0;
  const charged_micros = covered_micros + beyond_micros;
  r.key?.settleIn(tx, cost_micros);
  const receivable_micros = cost_micros - charged_micros;
  if (charged_micros > 0)
    debitWallet(tx, {
      account_id: r.account_id,
      amount_micros: charged_micros,
      to: AI_REVENUE,
      memo,
      ref: r.request_id,
    });
  if (receivable_micros > 0)
    recordReceivable(tx, {
      account_id: r.account_id,
      amount_micros: receivable_micros,
      to: AI_REVENUE,
      memo: `${memo}: beyond the wallet`,
      ref: r.request_id,
    });
  if (r.tier.daily_token_allowance !== null) {
    const day = utcDay(now_ms);
    const tokens = usage.prompt_tokens + usage.completion_tokens;
    if (tokens > 0)
      tx.set('chat_free_usage', r.account_id, {
        day,
        tokens: freeTokensUsed(tx.state, r.account_id, day) + tokens,
      });
  }
  tx.history({
    type: 'usage',
    ts: tx.now.toISOString(),
    request_id: r.request_id,
    account_id: r.account_id,
    key_id: r.key_id,
    tier: r.tier.tier,
    model: r.tier.id,
    target: usage.target,
    status: usage.status,
    stream: usage.stream,
    protocol: usage.protocol ?? 'chat',
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    ...(usage.cached_tokens ? { cached_tokens: usage.cached_tokens } : {}),
    ...(usage.reasoning_tokens ? { reasoning_tokens: usage.reasoning_tokens } : {}),
    ...(usage.estimated ? { usage_estimated: true } : {}),
    cost_micros,
    latency_ms: Math.round(usage.latency_ms * 1000) / 1000,
    ...(receivable_micros > 0 ? { receivable_micros } : {}),
  });
  return {
    cost_micros,
    receivable_micros,
    ...(price.unpriced ? { unpriced: true as const } : {}),
  };
}

export { InsufficientBalanceError };
