// What every step of the /v1 pipeline reads: the gateway's parts (store, logger, clock), the
// chat config, the engines and their router, the metrics, and the little state the room keeps
// in memory (the rate limiter, requests in flight, free-tier tokens held). Built once by
// createChat (chat/index.ts); each step is a function of the room and the request.
import type { IncomingMessage } from 'node:http';
import { Registry } from 'prom-client';
import type { RoomDeps } from '../deps.js';
import { RateLimiter } from '../kernel/rate-limit.js';
import { clientAddressOf, plainAddress, type TrustProxy } from '../accounts/ip-whitelist.js';
import { gatewayId } from '../http/metrics.js';
import { Router } from '../llm/router.js';
import type { Engine } from '../llm/types.js';
import type { ChatConfig } from './config.js';
import { ChatMetrics } from './metrics.js';
import { DEFAULT_LEASE_MS, SharedReservations } from './reservations.js';

export class ChatRoom {
  readonly router: Router;
  readonly metrics: ChatMetrics;
  readonly limiter: RateLimiter;
  readonly currency: string;
  /** Chat requests holding a reservation now (bounded by `max_in_flight`). */
  in_flight = 0;
  /** With the PostgreSQL store: reservations every gateway sees (null: volatile, this process only). */
  readonly shared_reservations: SharedReservations | null;
  readonly client_address: (req: IncomingMessage) => string | undefined;
  /** Free-tier tokens held by requests in flight, per account. */
  private readonly reserved_free = new Map<string, number>();

  constructor(
    readonly deps: RoomDeps,
    readonly config: ChatConfig,
    readonly engines: Map<string, Engine>,
    env: NodeJS.ProcessEnv,
    trust_proxy: TrustProxy | undefined,
  ) {
    const now_ms = () => this.now_ms();
    // Without the gateway's registry (unit tests), the metrics go to one nobody scrapes.
    this.metrics = new ChatMetrics(
      deps.metrics?.registry ?? new Registry(),
      engines.keys(),
      () => this.router.breakerStates(),
      () => this.rateShare(),
      config.engines,
    );
    this.router = new Router(engines, config.breaker, now_ms, this.metrics.attempt);
    this.limiter = new RateLimiter(
      { max: config.rate_limit.requests_per_minute, window_ms: 60_000, refill: 'steady' },
      { now_ms },
    );
    this.currency = deps.config.currency;
    this.client_address = trust_proxy
      ? (req) => clientAddressOf(req, trust_proxy)
      : (req) => plainAddress(req.socket.remoteAddress);
    this.shared_reservations = deps.store.acrossGateways(
      () => new SharedReservations(deps.store, gatewayId(env), leaseMs(env)),
    );
  }

  now_ms(): number {
    return this.deps.clock.now().getTime();
  }

  /**
   * This gateway's share of the per-key limit: the whole limit alone (the JSON-file store),
   * ceil(limit / live gateways) with several on one database (docs/store-postgres.md).
   */
  rateShare(): { share: number; gateways: number } {
    const gateways = this.deps.store.liveGateways();
    const limit = this.config.rate_limit.requests_per_minute;
    return { share: Math.ceil(limit / gateways), gateways };
  }

  reservedFree(account_id: string): number {
    return this.reserved_free.get(account_id) ?? 0;
  }

  addReservedFree(account_id: string, tokens: number): void {
    const total = this.reservedFree(account_id) + tokens;
    if (total === 0) this.reserved_free.delete(account_id);
    else this.reserved_free.set(account_id, total);
  }
}

/** AIHUB_RESERVATION_LEASE_MS: how long a shared chat reservation outlives a gateway that stopped renewing it. */
function leaseMs(env: NodeJS.ProcessEnv): number {
  const value = Number(env.AIHUB_RESERVATION_LEASE_MS);
  return Number.isSafeInteger(value) && value >= 100 && value <= 3_600_000
    ? value
    : DEFAULT_LEASE_MS;
}
