// A key's own rates (issue #39), under the account's: `requests_per_minute` is a token bucket
// per key beside the account-wide one (rate.ts), `tokens_per_minute` a bucket the settled
// tokens are taken from (a request is admitted while the key's bucket is not empty, and
// what it used is taken after it: the next ones wait). Each gateway enforces its share of
// them, as it does the account's (room.rateShare). In memory, as every rate of the gateway.
import { ApiError } from '../http/errors.js';
import { RateLimiter } from '../kernel/rate-limit.js';
import type { ApiKey } from '../store/state.js';
import type { ChatRoom } from './room.js';

/** Keys whose token bucket is remembered (a bucket is dropped when full, the oldest first past this). */
const MAX_TOKEN_BUCKETS = 100_000;

interface TokenBucket {
  tokens: number;
  updated_ms: number;
}

class KeyRates {
  /** One limiter per distinct requests_per_minute (a limiter's buckets share one size). */
  private readonly requests = new Map<number, RateLimiter>();
  private readonly tokens = new Map<string, TokenBucket>();

  constructor(private readonly room: ChatRoom) {}

  private share(limit: number): number {
    return Math.max(1, Math.ceil(limit / this.room.rateShare().gateways));
  }

  takeRequest(key: ApiKey): void {
    const rpm = key.requests_per_minute;
    if (!rpm || rpm >= this.room.config.rate_limit.requests_per_minute) return;
    let limiter = this.requests.get(rpm);
    if (!limiter) {
      limiter = new RateLimiter(
        { max: rpm, window_ms: 60_000, refill: 'steady' },
        { now_ms: () => this.room.now_ms() },
      );
      this.requests.set(rpm, limiter);
    }
    limiter.setMax(this.share(rpm));
    const decision = limiter.take(key.id);
    if (!decision.ok)
      throw refusal(`this key's own limit of ${rpm} requests per minute`, decision.retry_after_s);
  }

  /** The key's token bucket now (refilled for the time since it was last looked at). */
  private bucket(key_id: string, tpm: number): TokenBucket {
    const now_ms = this.room.now_ms();
    const max = this.share(tpm);
    const found = this.tokens.get(key_id) ?? { tokens: max, updated_ms: now_ms };
    found.tokens = Math.min(max, found.tokens + ((now_ms - found.updated_ms) * max) / 60_000);
    found.updated_ms = now_ms;
    return found;
  }

  checkTokens(key: ApiKey): void {
    const tpm = key.tokens_per_minute;
    if (!tpm) return;
    const bucket = this.bucket(key.id, tpm);
    if (bucket.tokens > 0) return;
    const wait_s = Math.max(1, Math.ceil((-bucket.tokens + 1) / (this.share(tpm) / 60)));
    throw refusal(`this key's own limit of ${tpm} tokens per minute`, wait_s);
  }

  spendTokens(key: ApiKey, used: number): void {
    const tpm = key.tokens_per_minute;
    if (!tpm || used <= 0) return;
    const bucket = this.bucket(key.id, tpm);
    bucket.tokens -= used;
    this.tokens.delete(key.id);
    this.tokens.set(key.id, bucket);
    if (this.tokens.size > MAX_TOKEN_BUCKETS) this.tokens.delete(this.tokens.keys().next().value!);
  }
}

function refusal(what: string, retry_after_s: number): ApiError {
  return new ApiError(
    429,
    'rate_limit_exceeded',
    `${what} is reached; retry after ${retry_after_s} s`,
    null,
    'rate_limit_exceeded',
    { 'retry-after': String(retry_after_s) },
  );
}

const rates = new WeakMap<ChatRoom, KeyRates>();

function ratesOf(room: ChatRoom): KeyRates {
  let found = rates.get(room);
  if (!found) rates.set(room, (found = new KeyRates(room)));
  return found;
}

/** Before the account's rate: the key's own requests and tokens per minute (429 when spent). */
export function takeKeyRates(room: ChatRoom, key: ApiKey): void {
  if (!key.requests_per_minute && !key.tokens_per_minute) return;
  const own = ratesOf(room);
  own.checkTokens(key);
  own.takeRequest(key);
}

/** After the settlement: the tokens a request used, taken from its key's bucket. */
export function spendKeyTokens(room: ChatRoom, key: ApiKey | undefined, used: number): void {
  if (key?.tokens_per_minute) ratesOf(room).spendTokens(key, used);
}
