// The reconciliation pass: every `topups.reconcile.interval_ms`, the top-ups still waiting
// for their payment (created, or failed once: a retry on the same order may still pay) whose
// next check is due, at most `batch` of them, oldest due first, are asked about at the
// provider (fetchOrder): a payment whose webhook was lost is credited so, an order never paid
// expires. As the payments engine's status checks do (payments/engine/engine.ts), every
// gateway on a shared database takes part and claims each top-up before asking about it.
import { StoreUnavailableError } from '../kernel/errors.js';
import type { TopupService, ServiceDeps } from './service.js';
import type { Topup } from './tables.js';

const CLAIM = 'topup-reconcile';

export class Reconciler {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly service: TopupService,
  ) {}

  start(): void {
    if (this.timer || this.stopped || !this.deps.provider) return;
    this.timer = setInterval(() => this.tick(), this.deps.config.topups.reconcile.interval_ms);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass unless one is still running. */
  tick(): void {
    if (this.running || this.stopped || !this.deps.store.isLeader()) return;
    this.running = this.deps.store
      .background(() => this.pass())
      .catch((error: unknown) => {
        if (!(error instanceof StoreUnavailableError))
          this.deps.logger.error({ msg: 'top-up reconciliation failed', err: error });
      })
      .finally(() => {
        this.running = null;
      });
  }

  private async pass(): Promise<void> {
    const { store, clock, config } = this.deps;
    const now_ms = clock.now().getTime();
    // Created top-ups leave that status when they expire; failed ones stay failed, so they are
    // read by `awaiting` (set while a check is due): the pass reads the open ones only.
    const [created, failed] = await Promise.all([
      store.list('topups', 'status', 'created'),
      store.list('topups', 'awaiting', 'check'),
    ]);
    const due = [...created, ...failed]
      .filter((t) => t.checks.next_at !== null && Date.parse(t.checks.next_at) <= now_ms)
      .sort((a, b) => Date.parse(a.checks.next_at!) - Date.parse(b.checks.next_at!))
      .slice(0, config.topups.reconcile.batch);
    for (const topup of due) {
      if (this.stopped) return;
      await this.checkClaimed(topup);
    }
  }

  private async checkClaimed(seen: Topup): Promise<void> {
    const { store, config } = this.deps;
    const lease_ms = config.topups.timeout_ms * 3 + 60_000;
    await store.withClaim(
      { kind: CLAIM, id: seen.id, lease_ms },
      seen,
      async () => {
        const topup = await store.fetch('topups', seen.id);
        return topup && (topup.status === 'created' || topup.status === 'failed') ? topup : null;
      },
      (topup) => this.service.check(topup),
    );
  }
}
