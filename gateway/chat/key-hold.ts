// A key's limits on the chat path (issue #39): the tiers it may call, and its spending limit
// held in the same step that holds the wallet. A limited key's worst case is held against
// what its period has left beside the wallet's reservation: in memory on the JSON-file store
// (one process sees every spender; its spend is a row the settlement writes), and on
// PostgreSQL as `held_micros` of the key's `key_spend` row, written in the reservation's own
// transaction and given back by the commit that drops the reservation (a settlement, a
// release, a lapsed lease), so no gateway spends past the limit.
import {
  addHeld,
  addSpend,
  keySpendOf,
  offsetMs,
  periodsAt,
  spentAgainstLimit,
  type KeySpend,
} from '../accounts/key-limits.js';
import { ApiError } from '../http/errors.js';
import { rowOf, table, type ApiKey, type State } from '../store/state.js';
import type { Tx } from '../store/types.js';
import { microsToUnits } from '../util/money.js';

/** What a request holds against its key's limit, settled or released with its reservation. */
export interface KeyHold {
  readonly key_id: string;
  /** Gives the hold back (a request that ends without a settlement); only the first call counts. */
  release(): void;
  /** In the settlement's commit: the hold given back and the actual cost added to the key's spend. */
  settleIn(tx: Tx, cost_micros: number): void;
}

/** The key's row as the chat path read it at authentication (absent: revoked or deleted since). */
export function keyRecord(state: State, key_id: string): ApiKey | undefined {
  return rowOf(table(state, 'keys'), key_id);
}

/** 403 `model_not_allowed`: the key may not call this tier. */
export function assertModelAllowed(key: ApiKey | undefined, tier_id: string): void {
  if (!key?.models || key.models.includes(tier_id)) return;
  throw new ApiError(
    403,
    'model_not_allowed',
    `this API key may not use ${tier_id}; it may use ${key.models.join(', ')}`,
    'model',
    'permission_error',
  );
}

/** Whether a key lists a tier (its /v1/models shows only those). */
export function keyAllows(key: ApiKey | undefined, tier_id: string): boolean {
  return !key?.models || key.models.includes(tier_id);
}

/** An instant as the configured zone's wall clock, with its offset: 2026-12-08T00:00:00+05:30. */
export function localTime(at_ms: number, utc_offset: string): string {
  const local = new Date(at_ms + offsetMs(utc_offset)).toISOString().slice(0, 19);
  return `${local}${utc_offset}`;
}

const PERIOD_NAMES = { daily: 'day', weekly: 'week', monthly: 'month' } as const;

/** 402 `key_limit_exceeded`: the key's period has not enough left for the request's worst case. */
export class KeyLimitExceeded extends ApiError {
  constructor(
    key: ApiKey,
    figures: { spent_micros: number; worst_case_micros: number; currency: string },
    reset: { ends_ms: number; now_ms: number; utc_offset: string } | null,
  ) {
    const limit = microsToUnits(key.limit_micros ?? 0);
    const per = key.limit_reset ? ` per ${PERIOD_NAMES[key.limit_reset]}` : '';
    const left = microsToUnits(Math.max(0, (key.limit_micros ?? 0) - figures.spent_micros));
    const when = reset
      ? `; it resets at ${localTime(reset.ends_ms, reset.utc_offset)}`
      : "; it does not reset: ask the account's owner to raise it";
    super(
      402,
      'key_limit_exceeded',
      `this API key's limit of ${limit} ${figures.currency}${per} cannot cover this request: ${left} ${figures.currency} left, and it may cost up to ${microsToUnits(figures.worst_case_micros)} ${figures.currency}${when} (the account's wallet is not the limit: other keys may still spend it)`,
      null,
      'insufficient_quota',
      reset
        ? { 'retry-after': String(Math.max(1, Math.ceil((reset.ends_ms - reset.now_ms) / 1000))) }
        : {},
    );
  }
}

interface LimitCheck {
  key: ApiKey;
  worst_case_micros: number;
  now_ms: number;
  utc_offset: string;
  currency: string;
}

/** Throws KeyLimitExceeded unless `spent` plus `held` plus the worst case fits the limit. */
function check(input: LimitCheck, row: KeySpend | undefined, held_micros: number): void {
  const { key, worst_case_micros, now_ms, utc_offset } = input;
  const periods = periodsAt(now_ms, offsetMs(utc_offset));
  const spent_micros = spentAgainstLimit(key, row, periods) + held_micros;
  if (spent_micros + worst_case_micros <= key.limit_micros!) return;
  const reset = key.limit_reset
    ? { ends_ms: periods[key.limit_reset].ends_ms, now_ms, utc_offset }
    : null;
  throw new KeyLimitExceeded(
    key,
    { spent_micros, worst_case_micros, currency: input.currency },
    reset,
  );
}

// The JSON-file store: holds in memory, beside the wallet's volatile reservations.
const volatile = new WeakMap<State, Map<string, number>>();

function heldOf(state: State): Map<string, number> {
  let map = volatile.get(state);
  if (!map) volatile.set(state, (map = new Map()));
  return map;
}

/** Holds a limited key's worst case in memory (synchronous: no other spender runs in between); null without a limit. */
export function holdKeyInMemory(state: State, input: LimitCheck): KeyHold | null {
  const { key, worst_case_micros } = input;
  if (key.limit_micros == null) return null;
  const map = heldOf(state);
  check(input, keySpendOf(state, key.id), map.get(key.id) ?? 0);
  const move = (delta: number) => {
    const left = (map.get(key.id) ?? 0) + delta;
    if (left > 0) map.set(key.id, left);
    else map.delete(key.id);
  };
  move(worst_case_micros);
  let released = false;
  const offset_ms = offsetMs(input.utc_offset);
  return {
    key_id: key.id,
    release() {
      if (released) return;
      released = true;
      move(-worst_case_micros);
    },
    settleIn(tx, cost_micros) {
      if (!released) {
        released = true;
        move(-worst_case_micros);
        tx.onUndo(() => {
          released = false;
          move(worst_case_micros);
        });
      }
      addSpend(tx, key.id, cost_micros, offset_ms);
    },
  };
}

/**
 * PostgreSQL: the check and the hold inside the reservation's transaction (the key's row is
 * read there, so a concurrent hold on another gateway conflicts and runs again on the new
 * figure); the reservation's row names the key, and dropping it gives the hold back (keyHeldDropped).
 */
export function holdKeyInTx(tx: Tx, input: LimitCheck): void {
  const row = tx.get('key_spend', input.key.id);
  check(input, row, row?.held_micros ?? 0);
  if (input.worst_case_micros > 0) addHeld(tx, input.key.id, input.worst_case_micros);
}

/** A dropped reservation's hold on its key, given back in the commit that drops it. */
export function keyHeldDropped(tx: Tx, key_id: string, amount_micros: number): void {
  if (amount_micros > 0) addHeld(tx, key_id, -amount_micros);
}

/** The hold of a shared reservation: released with its row; the settlement adds the cost. */
export function sharedKeyHold(key_id: string, utc_offset: string): KeyHold {
  const offset_ms = offsetMs(utc_offset);
  return {
    key_id,
    release() {},
    settleIn(tx, cost_micros) {
      addSpend(tx, key_id, cost_micros, offset_ms);
    },
  };
}
