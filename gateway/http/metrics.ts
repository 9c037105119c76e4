// Prometheus metrics (prom-client, the standard Node client) at GET /metrics.
import type { NextFunction, Request, Response } from 'express';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { FastHistogram, type HistogramSeries } from '../telemetry/histogram.js';
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
  loads?: number;
  rows_loaded?: number;
  blocking_loads?: number;
  invalidations?: number;
  foreign_records_applied?: number;
  statements?: number;
  statements_by_kind?: Record<string, number>;
  keys_locked?: number;
  cache_entries?: number;
  runs?: number;
  outages?: number;
  refused?: number;
  in_doubt?: Record<string, number>;
}

/** What watchDisk shows (the JSON-file store's DiskStats). */
interface DiskFigures {
  free_bytes: number;
  reserve_bytes: number;
  refusing: boolean;
  refused_total: number;
}

export class Metrics {
  readonly registry = new Registry();
  /**
   * Requests by surface and status: plain numbers on the hot path, handed to prom-client as
   * the increase since the last scrape (a prom-client counter hashes its label set on every
   * inc(); issue #40).
   */
  private readonly request_counts = new Map<
    string,
    { surface: string; status: string; value: number; reported: number }
  >();
  readonly requests = new Counter({
    name: 'aihub_http_requests_total',
    help: 'HTTP requests by surface and status',
    labelNames: ['surface', 'status'] as const,
    registers: [this.registry],
    collect: () => {
      for (const cell of this.request_counts.values()) {
        if (cell.value === cell.reported) continue;
        this.requests.inc(
          { surface: cell.surface, status: cell.status },
          cell.value - cell.reported,
        );
        cell.reported = cell.value;
      }
    },
  });
  readonly duration = new FastHistogram(
    'aihub_http_request_duration_seconds',
    'HTTP request duration by surface',
    ['surface'],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
    this.registry,
  );
  private readonly durations = new Map<string, HistogramSeries>();

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
  /**
   * The PostgreSQL store's counters (none with the JSON-file store, whose `stats` answers
   * null): commit batches by outcome, loads into the cache, statements, invalidations, the
   * records of other gateways applied (0 by design) and the cache's size.
   */
  /** The JSON-file store's disk: free bytes, the journal's reserve, writes refused for want of room. */
  watchDisk(stats: () => DiskFigures): void {
    const gauges: Array<[name: string, help: string, pick: (s: DiskFigures) => number]> = [
      [
        'aihub_store_disk_free_bytes',
        "Bytes free on the data dir's disk (beside the journal's reserve)",
        (s) => s.free_bytes,
      ],
      [
        'aihub_store_disk_reserve_bytes',
        'Bytes the journal holds in reserve (store.disk_reserve_bytes; 0 while the disk is full)',
        (s) => s.reserve_bytes,
      ],
      [
        'aihub_store_writes_refused',
        '1 while writes are refused (507 insufficient_storage) because the disk is full, else 0',
        (s) => (s.refusing ? 1 : 0),
      ],
    ];
    for (const [name, help, pick] of gauges) {
      const gauge: Gauge = new Gauge({
        name,
        help,
        registers: [this.registry],
        collect: () => gauge.set(pick(stats())),
      });
    }
    const refused: Counter = new Counter({
      name: 'aihub_store_writes_refused_total',
      help: 'Commits refused (507) because the disk had no room for them',
      registers: [this.registry],
      collect: () => {
        refused.reset();
        refused.inc(stats().refused_total);
      },
    });
  }

  watchStore(stats: () => StoreCommitStats | null): void {
    const batches: Counter<'outcome'> = new Counter({
      name: 'aihub_store_batches_total',
      help: 'PostgreSQL store commit statements by outcome: committed; conflict (a row read or a guard changed before the commit: refreshed and run again); locked (committed under locks taken first after repeated conflicts)',
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
    const counters: Array<[name: string, help: string, pick: (s: StoreCommitStats) => number]> = [
      [
        'aihub_store_loads_total',
        'Load statements reading rows, balances and index keys into this gateway cache',
        (s) => s.loads ?? s.syncs,
      ],
      [
        'aihub_store_rows_loaded_total',
        'Rows, balances and index members read from the database into this gateway cache',
        (s) => s.rows_loaded ?? 0,
      ],
      [
        'aihub_store_blocking_loads_total',
        'Loads made while the event loop waited: a read outside any transaction or store.read of a row the cache lacked',
        (s) => s.blocking_loads ?? 0,
      ],
      [
        'aihub_store_invalidations_total',
        'Cache entries dropped because another gateway announced a change of them',
        (s) => s.invalidations ?? 0,
      ],
      [
        'aihub_store_foreign_records_applied_total',
        'Records committed by other gateways that this gateway applied to serve its requests (none: the cache is loaded, never fed)',
        (s) => s.foreign_records_applied ?? 0,
      ],
      [
        'aihub_store_outages_total',
        'Outages of the database this gateway saw (each logged as store_outage_started and store_outage_ended)',
        (s) => s.outages ?? 0,
      ],
      [
        'aihub_store_refused_total',
        'Refusals the store answered to requests for want of the database (503; a request that tried a read and a commit counts twice)',
        (s) => s.refused ?? 0,
      ],
      [
        'aihub_store_runs_total',
        'Runs of transaction functions on this gateway: a transaction whose function ran more than once (its keys in flight, a cache miss, a conflict) counts each run',
        (s) => s.runs ?? 0,
      ],
    ];
    for (const [name, help, pick] of counters) {
      const counter: Counter = new Counter({
        name,
        help,
        registers: [this.registry],
        collect: () => {
          const s = stats();
          if (!s) return;
          counter.reset();
          counter.inc(pick(s));
        },
      });
    }
    this.watchStatements(stats);
    const in_doubt: Counter<'outcome'> = new Counter({
      name: 'aihub_store_commits_in_doubt_total',
      help: 'Commits whose answer the connection lost, by what the lookup of their commit id found: committed (answered as such), not_applied (run again), unknown (answered 503 store_outcome_unknown)',
      labelNames: ['outcome'] as const,
      registers: [this.registry],
      collect: () => {
        const s = stats();
        if (!s?.in_doubt) return;
        in_doubt.reset();
        for (const [outcome, n] of Object.entries(s.in_doubt)) in_doubt.inc({ outcome }, n);
      },
    });
    const cache: Gauge = new Gauge({
      name: 'aihub_store_cache_entries',
      help: 'Entries in this gateway cache (rows, balances, index sets), bounded by AIHUB_CACHE_ROWS',
      registers: [this.registry],
      collect: () => {
        const s = stats();
        if (s) cache.set(s.cache_entries ?? 0);
      },
    });
  }

  /** `aihub_store_statements_total{kind}`: what the store sent, by what for; the keys its commits locked. */
  private watchStatements(stats: () => StoreCommitStats | null): void {
    const statements: Counter<'kind'> = new Counter({
      name: 'aihub_store_statements_total',
      help: 'Statements this gateway sent to the database, by kind: commit (a transaction batch), locked (BEGIN, locks and COMMIT after repeated conflicts), load (what a transaction missed), read (reads outside transactions), blocking_load, history (history reads), claim (background work), signature (signed requests), prune, heartbeat, listen, key_check, lookup (a commit id whose answer the connection lost), background (periodic discovery and pruning)',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      collect: () => {
        const s = stats();
        if (!s) return;
        statements.reset();
        const by_kind = s.statements_by_kind ?? { all: s.statements ?? 0 };
        for (const [kind, n] of Object.entries(by_kind)) statements.inc({ kind }, n);
      },
    });
    const locked: Counter = new Counter({
      name: 'aihub_store_keys_locked_total',
      help: 'Keys the commit statements locked (advisory locks, one per row, balance, counter or index key a batch read or writes), summed over statements',
      registers: [this.registry],
      collect: () => {
        const s = stats();
        if (!s) return;
        locked.reset();
        locked.inc(s.keys_locked ?? 0);
      },
    });
  }

  observe(surface: string, status: number, seconds: number): void {
    const key = `${surface} ${status}`;
    let cell = this.request_counts.get(key);
    if (!cell) {
      cell = { surface, status: String(status), value: 0, reported: 0 };
      this.request_counts.set(key, cell);
    }
    cell.value++;
    let duration = this.durations.get(surface);
    if (!duration) {
      duration = this.duration.series({ surface });
      this.durations.set(surface, duration);
    }
    duration.observe(seconds);
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
  return ['v1', 'api', 'admin', 'healthz', 'readyz', 'metrics'].includes(first) ? first : 'web';
}

/** The gateway's id in metrics and health: AIHUB_GATEWAY_ID, else hostname:pid. */
export function gatewayId(env: NodeJS.ProcessEnv = process.env): string {
  return env.AIHUB_GATEWAY_ID?.trim() || `${hostname()}:${process.pid}`;
}

/** A gauge whose value is read when /metrics is scraped. */
export function scrapedGauge(
  registry: Registry,
  name: string,
  help: string,
  value: () => number,
): void {
  const metric: Gauge = new Gauge({
    name,
    help,
    registers: [registry],
    collect: () => metric.set(value()),
  });
}
