// A fixed-window counter per client address, bounded in memory.
export class WindowLimiter {
  private readonly windows = new Map<string, { started_ms: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly window_ms: number,
    private readonly max_keys = 10_000,
  ) {}

  /** Counts one event; returns the seconds to wait when over the limit, else 0. */
  hit(key: string, now_ms: number): number {
    if (this.limit === 0) return 0;
    let window = this.windows.get(key);
    if (!window || now_ms - window.started_ms >= this.window_ms) {
      if (this.windows.size >= this.max_keys) {
        for (const [k, w] of this.windows) if (now_ms - w.started_ms >= this.window_ms) this.windows.delete(k);
        if (this.windows.size >= this.max_keys) this.windows.clear();
      }
      window = { started_ms: now_ms, count: 0 };
      this.windows.set(key, window);
    }
    window.count++;
    if (window.count <= this.limit) return 0;
    return Math.max(1, Math.ceil((window.started_ms + this.window_ms - now_ms) / 1000));
  }
}
