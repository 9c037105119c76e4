// Step 5: the worst case held. Prompt plus every choice's whole output limit, at the price
// of the dearest target, within the free tier's daily allowance; in memory (or, with the
// PostgreSQL store, where every gateway sees it), never journaled.
import { ApiError } from '../../http/errors.js';
import {
  freeTokensUsed,
  InsufficientBalanceError,
  reserve,
  reserveShared,
  secondsToNextUtcDay,
  utcDay,
} from '../billing.js';
import { targetPrice, type TierConfig } from '../config.js';
import {
  assertModelAllowed,
  holdKeyInMemory,
  holdKeyInTx,
  keyRecord,
  sharedKeyHold,
} from '../key-hold.js';
import { worstCostMicros } from '../pricing.js';
import type { SharedReservations } from '../reservations.js';
import type { RequestScope } from '../../kernel/request-scope.js';
import type { ApiKey } from '../../store/state.js';
import { InsufficientBalanceRefusal } from '../refusals.js';
import type { ChatRoom } from '../room.js';

export interface HoldRequest {
  account_id: string;
  key_id: string;
  tier: TierConfig;
  request_id: string;
  /** The request's scope: its hold and settlement are counted in it (kernel/request-scope.ts). */
  scope: RequestScope;
  prompt_tokens_estimate: number;
  /** The output limit asked for (0: a request without output, embeddings). */
  max_output_tokens: number;
  /** The field that sets the output limit, named in the 402's advice. */
  cap_field: string;
  choices?: number;
}

/**
 * Reserves the worst case of a request (prompt plus at most `max_output_tokens` per choice),
 * within the free tier's daily allowance; throws the 429 or 402 the client should see.
 */
export async function hold(room: ChatRoom, request: HoldRequest) {
  const { account_id, key_id, tier, request_id, scope, prompt_tokens_estimate, cap_field } =
    request;
  const choices = request.choices ?? 1;
  const key = keyRecord(room.deps.store.state, key_id);
  assertModelAllowed(key, tier.id);
  let max_output_tokens = request.max_output_tokens;
  let free_tokens = 0;
  if (tier.daily_token_allowance !== null)
    ({ max_output_tokens, free_tokens } = freeAllowance(
      room,
      tier,
      account_id,
      prompt_tokens_estimate,
      max_output_tokens,
      choices,
    ));
  // Each of the n choices may use the whole output limit, at the price of the dearest target.
  const worst_case_micros = worstCaseMicros(
    tier,
    prompt_tokens_estimate,
    max_output_tokens * choices,
  );
  const limit = keyLimitCheck(room, key, worst_case_micros);
  try {
    const input = { account_id, key_id, tier, request_id, scope, worst_case_micros, free_tokens };
    const reservation = room.shared_reservations
      ? await holdShared(room.shared_reservations, input, limit)
      : holdHere(room, input, limit);
    return { reservation, free_tokens, max_output_tokens };
  } catch (error) {
    if (error instanceof InsufficientBalanceError) {
      const what =
        max_output_tokens > 0
          ? `prompt plus ${max_output_tokens} output tokens; set ${cap_field} lower to hold less`
          : `${prompt_tokens_estimate} input tokens`;
      throw new InsufficientBalanceRefusal(what, {
        request_id,
        currency: room.currency,
        public_url: room.deps.public_url(),
        balance_micros: error.balance_micros,
        required_micros: worst_case_micros,
      });
    }
    throw error;
  }
}

type HoldInput = Parameters<typeof reserve>[1];
type LimitCheck = ReturnType<typeof keyLimitCheck>;

/** The figures a limited key's hold is checked on; null for a key without a limit. */
function keyLimitCheck(room: ChatRoom, key: ApiKey | undefined, worst_case_micros: number) {
  if (key?.limit_micros == null) return null;
  return {
    key,
    worst_case_micros,
    now_ms: room.now_ms(),
    utc_offset: room.deps.config.keys.utc_offset,
    currency: room.currency,
  };
}

/** The JSON-file store: the key's hold, then the wallet's, both in memory in one synchronous step. */
function holdHere(room: ChatRoom, input: HoldInput, limit: LimitCheck) {
  const key = limit ? holdKeyInMemory(room.deps.store.state, limit) : null;
  try {
    const reservation = reserve(room.deps.store, input);
    reservation.key = key ?? undefined;
    return reservation;
  } catch (error) {
    key?.release();
    throw error;
  }
}

/** PostgreSQL: the key's hold in the reservation's own transaction, given back with its row. */
async function holdShared(shared: SharedReservations, input: HoldInput, limit: LimitCheck) {
  if (!limit) return reserveShared(shared, input);
  const reservation = await reserveShared(shared, input, {
    key_id: limit.key.id,
    holdIn: (tx) => holdKeyInTx(tx, limit),
  });
  reservation.key = sharedKeyHold(limit.key.id, limit.utc_offset);
  return reservation;
}

/** The free tier: the output limit today's allowance leaves for `choices` choices, and the tokens to count against it. */
function freeAllowance(
  room: ChatRoom,
  tier: TierConfig,
  account_id: string,
  prompt_tokens_estimate: number,
  max_output_tokens: number,
  choices: number,
) {
  const allowance = tier.daily_token_allowance ?? 0;
  const now_ms = room.now_ms();
  const left =
    allowance -
    freeTokensUsed(room.deps.store.state, account_id, utcDay(now_ms)) -
    room.reservedFree(account_id);
  const retry = { 'retry-after': String(secondsToNextUtcDay(now_ms)) };
  if (left <= prompt_tokens_estimate) {
    throw new ApiError(
      429,
      'daily_token_allowance_exceeded',
      `today's allowance of ${allowance} ${tier.id} tokens is spent; it renews at 00:00 UTC, or use a paid tier`,
      null,
      'rate_limit_exceeded',
      retry,
    );
  }
  const limit = Math.min(max_output_tokens, Math.floor((left - prompt_tokens_estimate) / choices));
  if (max_output_tokens > 0 && limit < 1) {
    throw new ApiError(
      429,
      'daily_token_allowance_exceeded',
      `today's allowance of ${allowance} ${tier.id} tokens cannot cover ${choices} choices; ask for fewer, or use a paid tier`,
      'n',
      'rate_limit_exceeded',
      retry,
    );
  }
  return { max_output_tokens: limit, free_tokens: prompt_tokens_estimate + limit * choices };
}

/** The most any of the tier's targets may charge (a fallback may be priced above the first target). */
function worstCaseMicros(
  tier: TierConfig,
  prompt_tokens: number,
  completion_tokens: number,
): number {
  return Math.max(
    ...tier.targets.map((target) =>
      worstCostMicros(targetPrice(tier, target), prompt_tokens, completion_tokens),
    ),
  );
}
