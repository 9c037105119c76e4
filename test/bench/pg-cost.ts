// What a request costs the database (issue #30), for `npm run bench:postgres`: statements by
// kind as the gateways count them (/metrics `aihub_store_statements_total{kind}`), keys the
// commit statements locked (`aihub_store_keys_locked_total`), transactions and tuples written
// in the setup's database (pg_stat_database), WAL bytes (pg_current_wal_lsn before and after)
// and lock waits (backends of the database waiting on a lock, sampled).
import pg from 'pg';
import { request, type Gateway } from '../gateway/helpers.ts';
import { startGateways, stopAll } from '../support/multi-gateway.ts';
import { onboard, paymentsConfig } from '../support/payments-helpers.ts';
import type { PostgresCluster } from '../support/postgres.ts';

/** Statements that are not a request's: periodic work every gateway does whatever it serves. */
export const PERIODIC_KINDS = new Set(['heartbeat', 'listen', 'prune', 'key_check', 'background']);

/** The gateways' statements by kind and keys locked, summed (from /metrics). */
export async function gatewayCounts(
  gateways: ReadonlyArray<Pick<Gateway, 'url'>>,
): Promise<{ by_kind: Record<string, number>; keys_locked: number }> {
  const by_kind: Record<string, number> = {};
  let keys_locked = 0;
  for (const gateway of gateways) {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    for (const [, kind, value] of text.matchAll(
      /^aihub_store_statements_total\{kind="(\w+)"[^}]*\} (\d+)/gm,
    ))
      by_kind[kind!] = (by_kind[kind!] ?? 0) + Number(value);
    const locked = /^aihub_store_keys_locked_total(?:\{[^}]*\})? (\d+)/m.exec(text);
    if (locked) keys_locked += Number(locked[1]);
  }
  return { by_kind, keys_locked };
}

/** The database's counters (per database, except WAL: the cluster's). */
interface DbCounters {
  xact_commit: number;
  tup_inserted: number;
  tup_updated: number;
  tup_deleted: number;
  wal_lsn: string;
}

/** A cost snapshot: the gateways' counts and the database's. */
export interface CostSnapshot {
  by_kind: Record<string, number>;
  keys_locked: number;
  db: DbCounters;
}

/**
 * Reads cost snapshots of one setup (its gateways and database) and samples its lock waits.
 * PostgreSQL 15's backends flush their counts to pg_stat_database at most once a second, and
 * an idle one that flushed less than a second ago only after 10 s (PGSTAT_IDLE_INTERVAL): a
 * snapshot waits `settle_ms` (11 s) first, so take them around a whole measurement (several
 * setups' at once), not around a short slice.
 */
export class CostMeter {
  private readonly client: pg.Client;
  private sampler: NodeJS.Timeout | null = null;
  private sampling = false;
  /** Lock-wait samples: how many were taken, and the waiting backends they saw in all. */
  samples = 0;
  waiting = 0;
  /** The waiting backends seen, by what they waited for (advisory, transactionid, tuple...). */
  readonly waiting_on: Record<string, number> = {};
  sampled_ms = 0;
  private sample_started = 0;

  constructor(
    maintenance_url: string,
    private readonly database: string,
  ) {
    this.client = new pg.Client({ connectionString: maintenance_url });
  }

  static async open(maintenance_url: string, database_url: string): Promise<CostMeter> {
    const meter = new CostMeter(maintenance_url, new URL(database_url).pathname.slice(1));
    await meter.client.connect();
    return meter;
  }

  async snapshot(
    gateways: ReadonlyArray<Pick<Gateway, 'url'>>,
    settle_ms = 11_000,
  ): Promise<CostSnapshot> {
    await new Promise((resolve) => setTimeout(resolve, settle_ms));
    await this.client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await this.client.query<Record<string, string>>(
      `SELECT xact_commit::text, tup_inserted::text, tup_updated::text, tup_deleted::text,
         pg_current_wal_lsn()::text AS wal_lsn
       FROM pg_stat_database WHERE datname = $1`,
      [this.database],
    );
    const row = rows[0]!;
    return {
      ...(await gatewayCounts(gateways)),
      db: {
        xact_commit: Number(row.xact_commit),
        tup_inserted: Number(row.tup_inserted),
        tup_updated: Number(row.tup_updated),
        tup_deleted: Number(row.tup_deleted),
        wal_lsn: row.wal_lsn!,
      },
    };
  }

  /** WAL bytes between two LSNs. */
  async walBytes(from: string, to: string): Promise<number> {
    const { rows } = await this.client.query<{ d: string }>(
      'SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::text AS d',
      [from, to],
    );
    return Number(rows[0]!.d);
  }

  /** The WAL position now (cluster-wide). */
  async walLsn(): Promise<string> {
    return (await this.client.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l'))
      .rows[0]!.l;
  }

  /**
   * Samples, every `every_ms`, how many of the database's backends wait on a lock (heavyweight
   * locks: the commit statements' advisory locks, row locks); by Little's law, the mean number
   * waiting times the time sampled is the lock-wait time of that period.
   */
  startSampling(every_ms = 10): void {
    this.sample_started = performance.now();
    this.sampler = setInterval(() => {
      if (this.sampling) return;
      this.sampling = true;
      this.client
        .query<{ event: string; n: string }>(
          `SELECT wait_event AS event, count(*)::text AS n FROM pg_stat_activity
           WHERE datname = $1 AND wait_event_type = 'Lock' GROUP BY wait_event`,
          [this.database],
        )
        .then(
          ({ rows }) => {
            this.samples++;
            for (const { event, n } of rows) {
              this.waiting += Number(n);
              this.waiting_on[event] = (this.waiting_on[event] ?? 0) + Number(n);
            }
          },
          () => {},
        )
        .finally(() => (this.sampling = false));
    }, every_ms);
  }

  stopSampling(): void {
    if (this.sampler) clearInterval(this.sampler);
    this.sampler = null;
    this.sampled_ms += performance.now() - this.sample_started;
  }

  /** Lock-wait ms in the periods sampled (mean waiting backends × time sampled). */
  lockWaitMs(): number {
    return this.samples === 0 ? 0 : (this.waiting / this.samples) * this.sampled_ms;
  }

  async close(): Promise<void> {
    this.stopSampling();
    await this.client.end().catch(() => {});
  }
}

/** What changed between two snapshots, per request. */
export interface CostPerRequest {
  /** Statements of a request's kinds (every kind but PERIODIC_KINDS), by kind. */
  by_kind: Record<string, number>;
  request_statements: number;
  periodic_statements: number;
  keys_locked: number;
  /** Transactions committed in the database (read-only ones too), the periodic ones taken out. */
  xacts: number;
  /** Rows inserted, updated and deleted (pg_stat_database), the heartbeats' taken out. */
  tuples_written: number;
  wal_bytes: number;
  lock_wait_ms: number;
  /** The lock waits' share by what was waited for. */
  lock_waits_on: Record<string, number>;
}

export async function costPerRequest(
  meter: CostMeter,
  before: CostSnapshot,
  after: CostSnapshot,
  requests: number,
  wal_bytes?: number,
): Promise<CostPerRequest> {
  const n = Math.max(1, requests);
  const by_kind: Record<string, number> = {};
  let request_statements = 0;
  let periodic_statements = 0;
  for (const [kind, value] of Object.entries(after.by_kind)) {
    const d = value - (before.by_kind[kind] ?? 0);
    if (d === 0) continue;
    if (PERIODIC_KINDS.has(kind)) periodic_statements += d / n;
    else {
      by_kind[kind] = d / n;
      request_statements += d / n;
    }
  }
  const db = (k: keyof Omit<DbCounters, 'wal_lsn'>) => after.db[k] - before.db[k];
  // The periodic statements are their own transactions, and each heartbeat updates one row
  // (aihub.gateways): taken out of the database's counts, which see every statement.
  const heartbeats = (after.by_kind.heartbeat ?? 0) - (before.by_kind.heartbeat ?? 0);
  return {
    by_kind,
    request_statements,
    periodic_statements,
    keys_locked: (after.keys_locked - before.keys_locked) / n,
    xacts: db('xact_commit') / n - periodic_statements,
    tuples_written: (db('tup_inserted') + db('tup_updated') + db('tup_deleted') - heartbeats) / n,
    wal_bytes: (wal_bytes ?? (await meter.walBytes(before.db.wal_lsn, after.db.wal_lsn))) / n,
    lock_wait_ms: meter.lockWaitMs() / n,
    lock_waits_on: Object.fromEntries(
      Object.entries(meter.waiting_on).map(([event, seen]) => [event, seen / meter.waiting]),
    ),
  };
}

/** The cost as a bench note: statements by kind, keys locked, transactions, tuples, WAL, lock waits. */
export function describeCost(cost: CostPerRequest): string {
  const kinds = Object.entries(cost.by_kind)
    .sort((a, b) => b[1] - a[1])
    .map(([kind, n]) => `${kind} ${n.toFixed(2)}`)
    .join(', ');
  const on = Object.entries(cost.lock_waits_on)
    .sort((a, b) => b[1] - a[1])
    .map(([event, share]) => `${event} ${(share * 100).toFixed(0)}%`)
    .join(', ');
  return `${cost.request_statements.toFixed(2)} statements (${kinds || 'none'}; periodic ${cost.periodic_statements.toFixed(2)} besides), ${cost.keys_locked.toFixed(1)} keys locked, ${cost.xacts.toFixed(2)} transactions, ${cost.tuples_written.toFixed(1)} tuples written, ${cost.wal_bytes.toFixed(0)} WAL bytes, ${cost.lock_wait_ms.toFixed(3)} ms lock waits (sampled${on ? `: ${on}` : ''})`;
}

/**
 * Round trips and database cost per recharge at one connection: one PostgreSQL gateway with
 * the sandbox providers (answering success at once), `recharges` sequential recharges of an
 * onboarded account (no idempotency key, as an integrator's first try), counted by /metrics
 * and the database. `ok` is false unless every recharge succeeded at once.
 */
export async function rechargeCost(
  cluster: Pick<PostgresCluster, 'url' | 'createDatabase'>,
  database_name: string,
  recharges = 30,
): Promise<{ rows: string[][]; ok: boolean }> {
  const database_url = await cluster.createDatabase(database_name);
  // The background tick at its default (500 ms), not the tests' 20 ms: its statements are
  // counted apart (periodic), but its transactions would fill the database's counters.
  const [gateway] = await startGateways(database_url, 1, {
    config: paymentsConfig({ tick_ms: 500 }),
  });
  const meter = await CostMeter.open(cluster.url, database_url);
  try {
    const { headers } = await onboard(gateway!, 100_000);
    // One recharge first: the account's rows are in the cache, as for an integrator's later ones.
    await request(`${gateway!.url}/api/recharge`, {
      headers,
      body: { operator_id: 1, number: '9812345099', amount: 10 },
    });
    const before = await meter.snapshot([gateway!]);
    meter.startSampling();
    let ok = 0;
    for (let i = 0; i < recharges; i++) {
      const reply = await request(`${gateway!.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: `98123${45_100 + i}`, amount: 10 },
      });
      if (reply.status === 200 && reply.body.data.status === 'success') ok++;
    }
    meter.stopSampling();
    const after = await meter.snapshot([gateway!]);
    const cost = await costPerRequest(meter, before, after, recharges);
    return {
      ok: ok === recharges,
      rows: [
        [
          'database round trips per recharge, 1 connection (this design)',
          cost.request_statements.toFixed(2),
          `statements per recharge (target ≤ 3), ${ok} of ${recharges} succeeded at once; per recharge: ${describeCost(cost)}`,
        ],
      ],
    };
  } finally {
    await meter.close();
    await stopAll([gateway!], 'SIGTERM');
  }
}

/**
 * One setup's database cost over a measurement made of slices (the bench interleaves setups):
 * the gateways' and the database's counters from `begin` to `end`, WAL bytes summed over the
 * setup's own slices (the WAL position is the cluster's: other setups' idle gateways add their
 * heartbeats, a few hundred bytes a second), lock waits sampled during them.
 */
export class SetupCost {
  private start: CostSnapshot | null = null;
  private wal = 0;

  private constructor(
    private readonly meter: CostMeter,
    private readonly gateways: ReadonlyArray<Pick<Gateway, 'url'>>,
  ) {}

  static async open(
    maintenance_url: string,
    database_url: string,
    gateways: ReadonlyArray<Pick<Gateway, 'url'>>,
  ): Promise<SetupCost> {
    return new SetupCost(await CostMeter.open(maintenance_url, database_url), gateways);
  }

  async begin(): Promise<void> {
    this.start = await this.meter.snapshot(this.gateways);
  }

  async slice<T>(work: () => Promise<T>): Promise<T> {
    const from = await this.meter.walLsn();
    this.meter.startSampling();
    try {
      return await work();
    } finally {
      this.meter.stopSampling();
      this.wal += await this.meter.walBytes(from, await this.meter.walLsn());
    }
  }

  /** The cost per request of the `requests` served in the slices; the meter is closed. */
  async end(requests: number): Promise<CostPerRequest> {
    try {
      const after = await this.meter.snapshot(this.gateways);
      return await costPerRequest(this.meter, this.start!, after, requests, this.wal);
    } finally {
      await this.meter.close();
    }
  }
}
