// A circuit breaker per upstream target. Closed: requests flow. After `failure_threshold`
// consecutive failures it opens and the router skips the target for `cooldown_ms`; then
// one probe request may try it (half-open): success closes the circuit, failure reopens it.
export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerOptions {
  failure_threshold: number;
  cooldown_ms: number;
}

export class CircuitBreaker {
  private consecutive_failures = 0;
  private opened_at_ms = 0;
  private probe_in_flight = false;
  private current: BreakerState = 'closed';

  constructor(
    private readonly options: BreakerOptions,
    private readonly now_ms: () => number,
  ) {}

  get state(): BreakerState {
    return this.current;
  }

  /** Whether a request may go to this target now; in half-open, only one probe at a time. */
  tryAcquire(): boolean {
    if (this.current === 'closed') return true;
    if (this.current === 'open') {
      if (this.now_ms() - this.opened_at_ms < this.options.cooldown_ms) return false;
      this.current = 'half_open';
    }
    if (this.probe_in_flight) return false;
    this.probe_in_flight = true;
    return true;
  }

  onSuccess(): void {
    this.consecutive_failures = 0;
    this.probe_in_flight = false;
    this.current = 'closed';
  }

  onFailure(): void {
    this.probe_in_flight = false;
    this.consecutive_failures++;
    if (
      this.current === 'half_open' ||
      this.consecutive_failures >= this.options.failure_threshold
    ) {
      this.current = 'open';
      this.opened_at_ms = this.now_ms();
    }
  }

  /** The attempt ended without telling anything about the target (the client left, the request was refused as invalid). */
  onNeutral(): void {
    this.probe_in_flight = false;
    if (this.current === 'half_open') this.current = 'open';
  }

  /** Milliseconds until an open circuit lets a probe through. */
  retryAfterMs(): number {
    if (this.current !== 'open') return 0;
    return Math.max(0, this.options.cooldown_ms - (this.now_ms() - this.opened_at_ms));
  }
}
