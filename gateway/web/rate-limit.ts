// A sliding-window counter of failures per key (an email, an IP address), in memory: a
// restart forgets it, which an attacker cannot trigger. The map is bounded, so a flood of
// distinct keys evicts the oldest entries instead of growing without limit.
export interface LimitRule {
  max: number;
  window_ms: number;
}

export class FailureLimiter {
  private readonly hits = new Map<string, number[]>();

  constructor(
    private readonly rule: LimitRule,
    private readonly max_keys = 50_000,
  ) {}

  private recent(key: string, now_ms: number): number[] {
    const list = this.hits.get(key);
    if (!list) return [];
    const from = now_ms - this.rule.window_ms;
    const kept = list.filter((at) => at > from);
    if (kept.length === 0) this.hits.delete(key);
    else this.hits.set(key, kept);
    return kept;
  }

  /** Seconds until another attempt is allowed, or 0 when it is allowed now. */
  retryAfterSeconds(key: string, now_ms: number): number {
    const list = this.recent(key, now_ms);
    if (list.length < this.rule.max) return 0;
    const oldest_counted = list[list.length - this.rule.max]!;
    return Math.max(1, Math.ceil((oldest_counted + this.rule.window_ms - now_ms) / 1000));
  }

  record(key: string, now_ms: number): void {
    const list = this.recent(key, now_ms);
    list.push(now_ms);
    if (list.length > this.rule.max) list.splice(0, list.length - this.rule.max);
    this.hits.delete(key);
    this.hits.set(key, list);
    while (this.hits.size > this.max_keys) {
      const oldest = this.hits.keys().next().value as string;
      this.hits.delete(oldest);
    }
  }

  reset(key: string): void {
    this.hits.delete(key);
  }
}
