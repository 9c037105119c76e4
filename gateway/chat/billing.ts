// The chat money path: hold the worst case before the upstream call, settle to the actual
// usage after it, in ledger holds, so concurrent requests can never spend the same balance.
// Every function here runs inside a store transaction or reads committed state; none
// touches files or the network.
import { balanceMicros, captureHold, debitWallet, InsufficientBalanceError, openHold, voidHold } from '../ledger/ledger.js';
import type { Store, Tx } from '../store/store.js';
import { table, type Hold, type State } from '../store/state.js';
import type { TierConfig } from './config.js';
import { costMicros } from './pricing.js';

declare module '../store/state.js' {
  interface Tables {
    /** account id → free-tier tokens used on one UTC day */
    chat_free_usage: Record<string, { day: string; tokens: number }>;
  }
}

export const CHAT_HOLD_PURPOSE = 'chat';
export const AI_REVENUE = 'revenue:ai';

export type UsageStatus = 'ok' | 'client_closed' | 'upstream_error' | 'stream_error';

export interface Reservation {
  account_id: string;
  key_id: string;
  tier: TierConfig;
  request_id: string;
  hold: Hold | null;
  /** Free-tier tokens counted against today's allowance while the request runs. */
  free_tokens: number;
  /** Resolves when the hold is durable. The answer waits for it (and for the settlement). */
  committed: Promise<unknown>;
}

export interface Settlement {
  cost_micros: number;
  balance_micros: number;
  /** Actual cost the wallet could not cover (an upstream counted more than the hold). */
  uncovered_micros: number;
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

/**
 * Opens the hold for the worst case. The hold is applied to the in-memory state at once
 * (the single mutation queue), so the next request already sees the reduced balance; its
 * durability is awaited before the answer, together with the settlement's.
 * Throws InsufficientBalanceError when the wallet cannot cover the worst case.
 */
export async function reserve(
  store: Store,
  input: { account_id: string; key_id: string; tier: TierConfig; request_id: string; worst_case_micros: number; free_tokens: number },
): Promise<Reservation> {
  const base = { account_id: input.account_id, key_id: input.key_id, tier: input.tier, request_id: input.request_id, free_tokens: input.free_tokens };
  if (input.worst_case_micros === 0) return { ...base, hold: null, committed: Promise.resolve() };
  let hold: Hold | null = null;
  const committed = store.transact((tx) => {
    hold = openHold(tx, { account_id: input.account_id, amount_micros: input.worst_case_micros, purpose: CHAT_HOLD_PURPOSE, ref: input.request_id });
    return hold;
  });
  // The transaction function runs synchronously when the store accepts it; if it threw, or
  // if a store ever queues it, waiting on the commit gives the hold or the error.
  if (hold === null) hold = await committed;
  committed.catch(() => undefined);
  return { ...base, hold, committed };
}

export interface ActualUsage {
  prompt_tokens: number;
  completion_tokens: number;
  status: UsageStatus;
  target: string | null;
  latency_ms: number;
  stream: boolean;
}

/**
 * Captures the actual cost from the hold (releasing the rest) and writes the usage record,
 * in one commit. Resolves once both the hold and the settlement are durable.
 */
export async function settle(store: Store, reservation: Reservation, usage: ActualUsage, now_ms: number): Promise<Settlement> {
  const settlement = store.transact((tx) => settleTx(tx, reservation, usage, now_ms));
  await reservation.committed;
  return settlement;
}

function settleTx(tx: Tx, r: Reservation, usage: ActualUsage, now_ms: number): Settlement {
  const cost_micros = costMicros(r.tier, usage.prompt_tokens, usage.completion_tokens);
  const held_micros = r.hold?.amount_micros ?? 0;
  const memo = `chat ${r.tier.id} ${usage.prompt_tokens}+${usage.completion_tokens} tokens`;
  if (r.hold) {
    if (cost_micros === 0) voidHold(tx, r.hold.id, `${memo}: nothing to pay`);
    else captureHold(tx, r.hold.id, { amount_micros: Math.min(cost_micros, held_micros), to: AI_REVENUE, memo });
  }
  let charged_micros = Math.min(cost_micros, held_micros);
  if (cost_micros > held_micros) {
    // The upstream counted more than the estimate; charge what the wallet holds, never below zero.
    const extra_micros = Math.min(cost_micros - held_micros, balanceMicros(tx.state, r.account_id));
    if (extra_micros > 0) debitWallet(tx, { account_id: r.account_id, amount_micros: extra_micros, to: AI_REVENUE, memo: `${memo} (beyond the hold)`, ref: r.request_id });
    charged_micros += extra_micros;
  }
  if (r.tier.daily_token_allowance !== null) {
    const day = utcDay(now_ms);
    const tokens = usage.prompt_tokens + usage.completion_tokens;
    if (tokens > 0) tx.set('chat_free_usage', r.account_id, { day, tokens: freeTokensUsed(tx.state, r.account_id, day) + tokens });
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
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cost_micros: charged_micros,
    latency_ms: Math.round(usage.latency_ms * 1000) / 1000,
    ...(cost_micros > charged_micros ? { uncovered_micros: cost_micros - charged_micros } : {}),
  });
  return { cost_micros: charged_micros, balance_micros: balanceMicros(tx.state, r.account_id), uncovered_micros: cost_micros - charged_micros };
}

/**
 * At start-up no chat request is in flight, so every open chat hold was left by a process
 * that stopped mid-request: release them (nothing reached a client that was billed).
 */
export async function releaseStaleHolds(store: Store): Promise<number> {
  const stale = Object.values(table(store.state, 'holds')).filter((hold) => hold.purpose === CHAT_HOLD_PURPOSE).map((hold) => hold.id);
  if (stale.length === 0) return 0;
  await store.transact((tx) => {
    for (const id of stale) if (tx.get('holds', id)) voidHold(tx, id, 'chat request interrupted by a gateway restart');
  });
  return stale.length;
}

export { InsufficientBalanceError };
