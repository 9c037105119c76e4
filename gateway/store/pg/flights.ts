// The PostgreSQL store's write batches in flight: the keys each holds until its answer (a
// transaction touching one waits for it), when one counts as stalled (a row locked by another
// transaction: it no longer holds back the next batch), and the platform shard each adds to.

/**
 * A batch in flight this long is counted as stalled (waiting on a lock another transaction
 * holds): it no longer holds back the next batch. The latency a commit has on a loaded
 * machine is well under it; a stall past it costs the other wallets this much once.
 */
export const STALL_MS = 50;

export interface Flight {
  keys: ReadonlySet<string>;
  done: Promise<void>;
  /** When it was sent (performance.now()). */
  sent_at: number;
  /** Kicks the queue when the flight turns stalled (cleared when it returns). */
  timer: NodeJS.Timeout | null;
}

export class Flights {
  private readonly flights = new Set<Flight>();
  /**
   * Shards of the platform's accounts: each batch in flight adds to a shard no other batch of
   * this gateway holds at that moment (the lowest free number), so two of its commits never
   * wait for each other's shard row.
   */
  private readonly slots_used = new Set<number>();

  constructor(
    private readonly pipeline_depth: number,
    private readonly stall_ms: number,
    /** Runs the queue again (a flight turned stalled). */
    private readonly kick: () => void,
  ) {}

  /** Batches in flight. */
  get size(): number {
    return this.flights.size;
  }

  /** The lowest shard number no batch in flight holds. */
  takeSlot(): number {
    let slot = 0;
    while (this.slots_used.has(slot)) slot++;
    this.slots_used.add(slot);
    return slot;
  }

  /** Batches in flight not yet stalled (sent less than stall_ms ago). */
  live(): number {
    if (this.flights.size < this.pipeline_depth) return this.flights.size;
    const now = performance.now();
    let live = 0;
    for (const flight of this.flights) if (now - flight.sent_at < this.stall_ms) live++;
    return live;
  }

  /** A flight for `keys`, sent now; the queue is kicked again if it is still out at stall_ms. */
  add(keys: ReadonlySet<string>): { flight: Flight; settle: () => void } {
    let settle!: () => void;
    const flight: Flight = {
      keys,
      done: new Promise<void>((r) => (settle = r)),
      sent_at: performance.now(),
      timer: null,
    };
    flight.timer = setTimeout(() => this.kick(), this.stall_ms + 1);
    flight.timer.unref();
    this.flights.add(flight);
    return { flight, settle };
  }

  /**
   * A flight returned: its keys and slot are free, the queue runs again. The jobs blocked on
   * keys of other flights still out stay blocked (pump checks their keys against the flights
   * in flight): clearing every job's block here ran each again at every landing, to block
   * again on the same keys.
   */
  landed(flight: Flight, settle: () => void, slot: number): void {
    if (flight.timer) clearTimeout(flight.timer);
    this.slots_used.delete(slot);
    this.flights.delete(flight);
    settle();
  }

  /** Whether a batch in flight holds one of `keys`. */
  holds(keys: ReadonlySet<string>): boolean {
    for (const flight of this.flights)
      for (const key of keys) if (flight.keys.has(key)) return true;
    return false;
  }

  /** Waits for the batches in flight now (what was committed before a read is in what it reads). */
  async quiesce(): Promise<void> {
    while (this.flights.size > 0) await Promise.all([...this.flights].map((f) => f.done));
  }
}
