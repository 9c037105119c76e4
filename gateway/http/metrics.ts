// Prometheus metrics (prom-client, the standard Node client) at GET /metrics.
import type { NextFunction, Request, Response } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { hostname } from 'node:os';
import { guarded } from '../util/guard.js';
import type { Logger } from '../log.js';
import type { ConnectionEvents } from './connections.js';

const ignore = () => undefined;

/** A shared store's commit counters (the store's SharedLogStats: http does not import the store). */
interface StoreCommitStats {
  batches: number;
  conflicts: number;
  locked: number;
  syncs: number;
}

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'aihub_http_requests_total',
    help: 'HTTP requests by surface and status',
    labelNames: ['surface', 'status'] as const,
    registers: [this.registry],
  });
  readonly duration = new Histogram({
    name: 'aihub_http_request_duration_seconds',
    help: 'HTTP request duration by surface',
    labelNames: ['surface'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    registers: [this.registry],
  });

  constructor(readonly gateway_id: string = gatewayId()) {
    collectDefaultMetrics({ register: this.registry, prefix: 'aihub_' });
    // Several gateways on one database: every series is told apart by this label (scrapes
    // of each gateway add up without colliding; AIHUB_GATEWAY_ID names it).
    new Gauge({
      name: 'aihub_gateway_info',
      help: 'This gateway (AIHUB_GATEWAY_ID, default hostname:pid)',
      labelNames: ['gateway'] as const,
      registers: [this.registry],
    }).set({ gateway: gateway_id }, 1);
  }

  /**
   * The connection guard's counts (issue #25, item 9): connections open, connections refused
   * past a cap by reason, bodies past their deadline. The log gets at most one line a minute
   * per kind (with the count since the last line), so a flood cannot flood the log too.
   */
  watchConnections(
    logger: Logger,
    now: () => number = Date.now,
  ): {
    events: ConnectionEvents;
    open(count: () => number): void;
  } {
    const refused = new Counter({
      name: 'aihub_connections_refused_total',
      help: 'Connections refused past a cap: address (per_address), total (max), unanswered (closed at once, too many refusals already waiting)',
      labelNames: ['reason'] as const,
      registers: [this.registry],
    });
    const timed_out = new Counter({
      name: 'aihub_body_timeouts_total',
      help: 'Requests whose body did not arrive within limits.body_timeout_ms',
      registers: [this.registry],
    });
    const said = new Map<string, { at: number; count: number }>();
    const tell = (kind: string, fields: Record<string, unknown>): void => {
      const last = said.get(kind) ?? { at: -Infinity, count: 0 };
      last.count++;
      said.set(kind, last);
      if (now() - last.at < 60_000) return;
      logger.warn({ msg: kind, count: last.count, ...fields });
      said.set(kind, { at: now(), count: 0 });
    };
    return {
      events: {
        refused: (reason, address) => {
          refused.inc({ reason });
          tell('connections refused', { reason, address });
        },
        bodyTimedOut: (path) => {
          timed_out.inc();
          tell('request bodies timed out', { path });
        },
      },
      open: (count) => {
        new Gauge({
          name: 'aihub_connections_open',
          help: 'Connections open and served (not counting those refused past a cap)',
          registers: [this.registry],
          collect() {
            this.set(count());
          },
        });
      },
    };
  }

  /** How this gateway's PostgreSQL replica opened at start (nothing with the JSON-file store). */
  replicaOpened(opened: { applied: number; fresh: boolean } | null): void {
    if (!opened) return;
    new Gauge({
      name: 'aihub_store_open_applied_records',
      help: "Log records this gateway's PostgreSQL replica applied from the database at start: those committed since it stopped when it was kept, the whole log when it was built",
      registers: [this.registry],
    }).set(opened.applied);
    new Gauge({
      name: 'aihub_store_replica_built_from_log',
      help: "1 when this gateway's PostgreSQL replica was built from the whole log at start (a new gateway, or a replica that could not be kept), 0 when it was kept",
      registers: [this.registry],
    }).set(opened.fresh ? 1 : 0);
  }

  /** The PostgreSQL store's commit counters (none with the JSON-file store, whose `stats` answers null). */
  watchStore(stats: () => StoreCommitStats | null): void {
    const batches: Counter<'outcome'> = new Counter({
      name: 'aihub_store_batches_total',
      help: 'PostgreSQL store write batches by outcome: committed; conflict (an optimistic attempt another gateway beat: staged again on its records); locked (committed under the head lock after repeated conflicts)',
      labelNames: ['outcome'] as const,
      registers: [this.registry],
      collect: () => {
        const s = stats();
        if (!s) return;
        batches.reset();
        batches.inc({ outcome: 'committed' }, s.batches);
        batches.inc({ outcome: 'conflict' }, s.conflicts);
        batches.inc({ outcome: 'locked' }, s.locked);
      },
    });
    const syncs: Counter = new Counter({
      name: 'aihub_store_catch_ups_total',
      help: 'PostgreSQL store catch-ups with the log outside a write batch (read barriers, notifications, the poll)',
      registers: [this.registry],
      collect: () => {
        const s = stats();
        if (!s) return;
        syncs.reset();
        syncs.inc(s.syncs);
      },
    });
  }

  observe(surface: string, status: number, seconds: number): void {
    this.requests.inc({ surface, status: String(status) });
    this.duration.observe({ surface }, seconds);
  }

  middleware() {
    return (req: Request, res: Response, next: NextFunction): void => {
      const started = process.hrtime.bigint();
      // A metric that cannot be recorded is lost; it must not end the process (see util/guard.ts).
      res.on(
        'close',
        guarded(ignore, () =>
          this.observe(
            surfaceOf(req.path),
            res.statusCode,
            Number(process.hrtime.bigint() - started) / 1e9,
          ),
        ),
      );
      next();
    };
  }
}

function surfaceOf(path: string): string {
  const first = path.split('/')[1] ?? '';
  return ['v1', 'api', 'admin', 'healthz', 'metrics'].includes(first) ? first : 'web';
}

/** The gateway's id in metrics and health: AIHUB_GATEWAY_ID, else hostname:pid. */
export function gatewayId(env: NodeJS.ProcessEnv = process.env): string {
  return env.AIHUB_GATEWAY_ID?.trim() || `${hostname()}:${process.pid}`;
}
