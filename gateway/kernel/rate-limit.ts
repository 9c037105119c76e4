// The gateway's one rate limiter: token buckets per key (an API key, an email, a client
// address), in memory. A bucket holds at most `max` tokens and an event spends one. Two ways
// for tokens to come back, for the two kinds of limit the gateway has:
// - `steady`: the bucket refills continuously at `max` per `window_ms`, so a key may burst to
//   its limit and then runs at the rate (requests per minute on /v1);
// - `sliding`: each spent token comes back `window_ms` after it was spent, so no window of
//   that length ever holds more than `max` events (failed logins, sign-ups per address): a
//   lockout lasts until the oldest counted event leaves the window.
// A restart forgets every bucket, which an attacker cannot trigger. The key table is bounded:
// at `max_keys`, full (idle) buckets are dropped first, then the oldest half.
// Several gateways on one database each keep their own buckets; a limit that must hold for
// the whole deployment (failed logins, sign-ups) is shared out among the live gateways
// (`shared_by`): each enforces floor(limit / gateways), at least 1, so that a client spread
// over N gateways gets the limit, not N times it (docs/store-postgres.md).
export interface RateRule {
  /** Events allowed in a burst (the bucket's size); 0 turns the limit off. */
  max: number;
  window_ms: number;
  refill: 'steady' | 'sliding';
}

function checkMax(max: number): void {
  if (!Number.isInteger(max) || max < 0)
    throw new RangeError(`rate limit max must be a whole number ≥ 0, not ${max}`);
}

export interface RateDecision {
  ok: boolean;
  /** Whole seconds until one more event would be allowed (for `Retry-After`); 0 when allowed now. */
  retry_after_s: number;
  remaining: number;
}

interface Bucket {
  /** steady: tokens as of updated_ms. */
  tokens: number;
  updated_ms: number;
  /** sliding: when each counted token was spent, oldest first (at most `max`). */
  spent: number[];
}

/**
 * This gateway's share of a limit that holds for the whole deployment: floor(limit /
 * gateways), at least 1 (0 stays off). Together N gateways admit at most the limit, or N when
 * there are more gateways than the limit allows events.
 */
export function deploymentShare(limit: number, gateways: number): number {
  if (limit === 0) return 0;
  return Math.max(1, Math.floor(limit / Math.max(1, gateways)));
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private per_ms: number;
  private readonly now_ms: () => number;
  private readonly max_keys: number;
  /** The limit for the whole deployment; `rule.max` is this gateway's share of it. */
  private limit: number;
  private readonly shared_by: (() => number) | undefined;

  constructor(
    private rule: RateRule,
    options: {
      now_ms?: () => number;
      max_keys?: number;
      /** The live gateways sharing this limit (Store.liveGateways): each enforces its share. */
      shared_by?: () => number;
    } = {},
  ) {
    checkMax(rule.max);
    if (!(rule.window_ms > 0))
      throw new RangeError(`rate limit window must be > 0 ms, not ${rule.window_ms}`);
    this.per_ms = rule.max / rule.window_ms;
    this.now_ms = options.now_ms ?? Date.now;
    this.max_keys = options.max_keys ?? 100_000;
    this.limit = rule.max;
    this.shared_by = options.shared_by;
  }

  /** The limit now in force on this gateway (events per window). */
  get max(): number {
    this.followShare();
    return this.rule.max;
  }

  /**
   * Changes the limit (a gateway's share when the number of gateways changes). A steady
   * bucket holding more tokens than the new limit keeps the new limit; tokens spent stay spent.
   */
  setMax(max: number): void {
    checkMax(max);
    this.limit = max;
    this.followShare();
  }

  /** Puts this gateway's share of the limit in force (the whole limit when it is not shared). */
  private followShare(): void {
    const max = this.shared_by ? deploymentShare(this.limit, this.shared_by()) : this.limit;
    if (max === this.rule.max) return;
    this.rule = { ...this.rule, max };
    this.per_ms = max / this.rule.window_ms;
  }

  /** Spends a token when one is there; says how long to wait when none is. */
  take(key: string, now_ms = this.now_ms()): RateDecision {
    this.followShare();
    if (this.rule.max === 0)
      return { ok: true, retry_after_s: 0, remaining: Number.POSITIVE_INFINITY };
    const bucket = this.bucket(key, now_ms);
    const tokens = this.tokens(bucket, now_ms);
    if (tokens < 1)
      return { ok: false, retry_after_s: this.wait(bucket, tokens, now_ms), remaining: 0 };
    this.spend(key, bucket, now_ms);
    return { ok: true, retry_after_s: 0, remaining: Math.floor(tokens - 1) };
  }

  /** Seconds until another event is allowed, or 0 when it is allowed now; spends nothing. */
  retryAfterSeconds(key: string, now_ms = this.now_ms()): number {
    this.followShare();
    if (this.rule.max === 0) return 0;
    const bucket = this.buckets.get(key);
    if (!bucket) return 0;
    const tokens = this.tokens(bucket, now_ms);
    return tokens >= 1 ? 0 : this.wait(bucket, tokens, now_ms);
  }

  /**
   * Takes a slot for an attempt whose outcome is known only later (a password check): spent
   * now, before the check, so that parallel attempts cannot all pass the check before any is
   * counted; `release()` gives it back when the attempt turns out not to count (a right
   * password). A refusal takes nothing and its release does nothing.
   */
  claim(key: string, now_ms = this.now_ms()): RateDecision & { release(): void } {
    const decision = this.take(key, now_ms);
    if (!decision.ok || this.rule.max === 0) return { ...decision, release: () => {} };
    let released = false;
    return {
      ...decision,
      release: () => {
        if (released) return;
        released = true;
        this.giveBack(key, now_ms);
      },
    };
  }

  /** Returns the token `claim` spent at `spent_ms` (a sliding bucket forgets that event). */
  private giveBack(key: string, spent_ms: number): void {
    const bucket = this.buckets.get(key);
    if (!bucket) return;
    if (this.rule.refill === 'steady') {
      bucket.tokens = Math.min(this.rule.max, bucket.tokens + 1);
      return;
    }
    const at = bucket.spent.lastIndexOf(spent_ms);
    if (at !== -1) bucket.spent.splice(at, 1);
  }

  /** Counts an event that already happened (a failed login): spends a token, if one is left. */
  record(key: string, now_ms = this.now_ms()): void {
    this.followShare();
    if (this.rule.max === 0) return;
    const bucket = this.bucket(key, now_ms);
    if (this.rule.refill === 'sliding') {
      this.tokens(bucket, now_ms);
      bucket.spent.push(now_ms);
      if (bucket.spent.length > this.rule.max)
        bucket.spent.splice(0, bucket.spent.length - this.rule.max);
      this.touch(key, bucket);
    } else {
      const tokens = this.tokens(bucket, now_ms);
      if (tokens >= 1) this.spend(key, bucket, now_ms);
    }
  }

  /** Forgets a key (a successful login clears its failures). */
  reset(key: string): void {
    this.buckets.delete(key);
  }

  private bucket(key: string, now_ms: number): Bucket {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.max_keys) this.prune(now_ms);
      bucket = { tokens: this.rule.max, updated_ms: now_ms, spent: [] };
      this.buckets.set(key, bucket);
    }
    return bucket;
  }

  /** The tokens there now; a sliding bucket drops the spent tokens that came back. */
  private tokens(bucket: Bucket, now_ms: number): number {
    if (this.rule.refill === 'steady') {
      bucket.tokens = Math.min(
        this.rule.max,
        bucket.tokens + (now_ms - bucket.updated_ms) * this.per_ms,
      );
      bucket.updated_ms = now_ms;
      return bucket.tokens;
    }
    const from_ms = now_ms - this.rule.window_ms;
    let back = 0;
    while (back < bucket.spent.length && bucket.spent[back]! <= from_ms) back++;
    if (back > 0) bucket.spent.splice(0, back);
    return this.rule.max - bucket.spent.length;
  }

  private spend(key: string, bucket: Bucket, now_ms: number): void {
    if (this.rule.refill === 'steady') bucket.tokens -= 1;
    else {
      bucket.spent.push(now_ms);
      this.touch(key, bucket);
    }
  }

  /** A sliding bucket moves to the young end of the table when it counts an event. */
  private touch(key: string, bucket: Bucket): void {
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
  }

  private wait(bucket: Bucket, tokens: number, now_ms: number): number {
    const wait_ms =
      this.rule.refill === 'steady'
        ? (1 - tokens) / this.per_ms
        : bucket.spent[bucket.spent.length - this.rule.max]! + this.rule.window_ms - now_ms;
    return Math.max(1, Math.ceil(wait_ms / 1000));
  }

  private full(bucket: Bucket, now_ms: number): boolean {
    return this.tokens(bucket, now_ms) >= this.rule.max;
  }

  private prune(now_ms: number): void {
    for (const [key, bucket] of this.buckets)
      if (this.full(bucket, now_ms)) this.buckets.delete(key);
    // Still full of active keys: forget the oldest half rather than grow without bound.
    if (this.buckets.size >= this.max_keys) {
      let drop = Math.max(1, Math.floor(this.buckets.size / 2));
      for (const key of this.buckets.keys()) {
        if (drop-- <= 0) break;
        this.buckets.delete(key);
      }
    }
  }
}
