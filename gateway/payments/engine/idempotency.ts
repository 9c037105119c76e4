// The payment engine's idempotency records: their ids in the store's `idempotency` table and
// the one rule that says when a record no longer applies. The engine's lookup and the pruner
// both decide with `idempotencyExpired`, so pruning never changes an answer. An answered
// record is history (the store moves it out of the live document in the commit that records
// the answer, and `tx.get` finds it there): the pruner only ever sees keys left in flight.
import type { IdempotencyRecord } from '../../store/state.js';

/**
 * The engine's records are `pay:<account_id>:<key>`. The table also holds other rooms'
 * records (`admin-credit:<reference>`, `admin-debit:<reference>`, `web-topup:...`), which have
 * no window ("one reference, one credit"): they are never expired here.
 */
export const PAY_IDEMPOTENCY_PREFIX = 'pay:';

export function payIdempotencyId(account_id: string, key: string): string {
  return `${PAY_IDEMPOTENCY_PREFIX}${account_id}:${key}`;
}

/**
 * Whether a record is past `payments.idempotency_window_ms`, counted from its first use.
 * A window of 0 keeps every record forever; a record whose time does not parse is kept.
 */
export function idempotencyExpired(
  record: Pick<IdempotencyRecord, 'created_at'>,
  now_ms: number,
  window_ms: number,
): boolean {
  if (window_ms === 0) return false;
  return now_ms - Date.parse(record.created_at) >= window_ms;
}
