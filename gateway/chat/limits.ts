// Requests-per-minute per API key: a token bucket that holds a minute's worth of requests
// and refills continuously, so a key may burst up to its limit and then runs at the rate.
export interface RateDecision {
  ok: boolean;
  /** Whole seconds until one more request would be allowed (for `Retry-After`). */
  retry_after_s: number;
  remaining: number;
}

interface Bucket {
  tokens: number;
  updated_ms: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly per_ms: number;

  constructor(
    private readonly requests_per_minute: number,
    private readonly now_ms: () => number,
    /** Buckets kept at most; full (idle) ones are dropped first when it is reached. */
    private readonly max_buckets = 100_000,
  ) {
    this.per_ms = requests_per_minute / 60_000;
  }

  take(key: string): RateDecision {
    const now = this.now_ms();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.max_buckets) this.prune(now);
      bucket = { tokens: this.requests_per_minute, updated_ms: now };
      this.buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(this.requests_per_minute, bucket.tokens + (now - bucket.updated_ms) * this.per_ms);
      bucket.updated_ms = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true, retry_after_s: 0, remaining: Math.floor(bucket.tokens) };
    }
    return { ok: false, retry_after_s: Math.max(1, Math.ceil((1 - bucket.tokens) / this.per_ms / 1000)), remaining: 0 };
  }

  private prune(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.updated_ms) * this.per_ms >= this.requests_per_minute) this.buckets.delete(key);
    }
    // Still full of active keys: forget the oldest half rather than grow without bound.
    if (this.buckets.size >= this.max_buckets) {
      let drop = this.buckets.size / 2;
      for (const key of this.buckets.keys()) {
        if (drop-- <= 0) break;
        this.buckets.delete(key);
      }
    }
  }
}
