// The PostgreSQL store (issue #30; docs/store-postgres.md): PostgreSQL holds the state as tables
// and decides conflicts row by row; this gateway holds a bounded cache of what it uses. This
// file composes the store from its parts, each one job:
//
//   pool.ts        the pool, statements counted by kind, what a failed statement means
//   batch.ts       transact(fn): fn runs on the cache in a Run (reads recorded with versions,
//                  writes staged); what it misses is loaded in one query and it runs again; the
//                  runs queued meanwhile form a batch, committed by ONE statement (aihub.commit,
//                  commit.ts) that locks only the batch's keys, checks its read set and guards,
//                  and writes. Batches whose keys are disjoint are in flight at once
//                  (flights.ts); a transaction beaten too often commits under locks (locked.ts)
//   answers.ts     what a commit's answer does: committed, conflict, refused, in doubt
//   loads.ts       loads into the cache (cache.ts), the blocking one too (blocking.ts)
//   table-reads.ts read(fn)/fetch/list/page/count/scan/below: reads outside transactions
//   fleet.ts       heartbeat, live gateways, claims of background work, shard folding
//   shared-keys.ts signatures claimed across the fleet, the encryption-key check, pruning
//   notify.ts      LISTEN aihub_cache: announced rows are dropped from the cache
//   reads.ts       history by SQL (StoreReads)
//
// No other gateway's writes are applied here: announced rows are dropped from the cache,
// validated ones are checked at commit or loaded fresh.
import { NO_HISTORY_TAGS, type HistoryTags } from '../history-tags.js';
import { hostname } from 'node:os';
import type pg from 'pg';
import { acquireLock } from '../lock.js';
import { ensurePrivateDataDir } from '../private-files.js';
import type {
  IndexOptions,
  Marks,
  PageOptions,
  Readiness,
  Store,
  StoreReads,
  StoreStats,
  TableIndex,
  TransactOptions,
  Tx,
} from '../types.js';
import type { Row, State, TableName } from '../state.js';
import { OUTCOME_WAIT_MS } from './answers.js';
import { Batches } from './batch.js';
import { BlockingQueries } from './blocking.js';
import { PgCache } from './cache.js';
import { Fleet, LIVE_POLLS, newClaimant } from './fleet.js';
import { STALL_MS } from './flights.js';
import { CacheLoads } from './loads.js';
import { Announcements } from './notify.js';
import { Outage, type OutageLog } from './outage.js';
import { newStats, openPool, PgDb, type PgStats, type StatementKind } from './pool.js';
import { PgReads } from './reads.js';
import { migrateSchema, oldLayoutRecords } from './schema.js';
import { SharedKeys } from './shared-keys.js';
import { TableReads } from './table-reads.js';
import { acrossGateways, preloadRows, rowMarks, transactThenRead } from './room-hooks.js';

export interface PgStoreOptions {
  now?: () => Date;
  /** Warnings, with structured fields where they have some (an outage's `event`, counts). */
  warn?: (message: string, fields?: Record<string, unknown>) => void;
  /** This gateway's name among the live ones (AIHUB_GATEWAY_ID; default hostname:pid). */
  gateway_id?: string;
  /** A directory to hold the one-process lock of (the data dir: one gateway per data dir). */
  lock_dir?: string;
  /** Connections in the pool (default 8: commits in flight, loads, history reads). */
  pool_max?: number;
  /** Per-statement timeout, ms (default 10,000). */
  statement_timeout_ms?: number;
  /** Heartbeat and listener reconnection period, ms (default 1,000). */
  poll_ms?: number;
  /** How recent another gateway's heartbeat must be for it to count as live, ms (AIHUB_GATEWAY_LIVE_MS). */
  live_ms?: number;
  /** Cache entries kept (AIHUB_CACHE_ROWS, default 100,000). */
  cache_rows?: number;
  /** Write batches in flight at once (default pool_max - 2, at least 1). */
  max_in_flight?: number;
  /**
   * Write batches in flight at once that are not stalled (default 2): past this, queued
   * transactions wait for a batch to return and go in the next one. Batches in flight longer
   * than stall_ms (a row locked by another transaction) do not count, up to max_in_flight.
   */
  pipeline_depth?: number;
  /** When a batch in flight counts as stalled (default STALL_MS, 50 ms). */
  stall_ms?: number;
  /**
   * How long a commit whose answer the connection lost is looked up (its commit id) before it
   * is answered 503 store_outcome_unknown (AIHUB_STORE_OUTCOME_WAIT_MS, default 10,000).
   */
  outcome_wait_ms?: number;
  /** The interval of the log lines while the database stays unavailable (default 10,000 ms). */
  outage_log_every_ms?: number;
  /** What the rooms tag history with (payments/history-tags.ts); default none. */
  history_tags?: HistoryTags;
}

/** How long a close waits for the commits queued and in flight. */
const CLOSE_WAIT_MS = 15_000;

export class PgStore implements Store {
  readonly cache: PgCache;
  readonly reads: StoreReads;
  readonly history_tags: HistoryTags;
  readonly stats: PgStats;
  /** Outage logging and counts (outage.ts). */
  readonly outage: Outage;
  readonly pool: pg.Pool;
  readonly database_url: string;
  private readonly db: PgDb;
  private readonly blocking: BlockingQueries;
  private readonly loads: CacheLoads;
  private readonly batches: Batches;
  private readonly tables: TableReads;
  private readonly fleet: Fleet;
  private readonly shared: SharedKeys;
  private readonly announcements: Announcements;
  private poll_timer: NodeJS.Timeout | null = null;

  private constructor(
    db: PgDb,
    readonly db_id: string,
    meta: State['meta'],
    private readonly options: Required<Pick<PgStoreOptions, 'now' | 'warn' | 'gateway_id'>> &
      PgStoreOptions,
    private readonly release_lock: () => void,
  ) {
    this.db = db;
    this.pool = db.pool;
    this.database_url = db.database_url;
    this.outage = db.outage;
    this.stats = db.stats;
    this.blocking = new BlockingQueries(db.database_url, options.statement_timeout_ms ?? 10_000);
    this.history_tags = options.history_tags ?? NO_HISTORY_TAGS;
    this.cache = new PgCache(meta, options.cache_rows ?? 100_000, (keys) =>
      this.loads.loadBlocking(keys),
    );
    this.loads = new CacheLoads(db, this.cache, this.blocking);
    const claimant = newClaimant();
    this.batches = new Batches(db, this.cache, this.loads, claimant, {
      gateway_id: options.gateway_id,
      now: options.now,
      warn: options.warn,
      max_in_flight: Math.max(1, options.max_in_flight ?? (options.pool_max ?? 8) - 2),
      pipeline_depth: Math.max(1, options.pipeline_depth ?? 2),
      stall_ms: options.stall_ms ?? STALL_MS,
      outcome_wait_ms: options.outcome_wait_ms ?? OUTCOME_WAIT_MS,
      history_tags: this.history_tags,
    });
    this.tables = new TableReads(db, this.cache, this.loads, this.batches.flights, options.warn);
    const poll_ms = options.poll_ms ?? 1_000;
    const live_ms = options.live_ms ?? Math.max(5_000, LIVE_POLLS * poll_ms);
    this.fleet = new Fleet(db, options.gateway_id, claimant, live_ms, options.warn);
    this.shared = new SharedKeys(db, this.fleet);
    this.announcements = new Announcements(db, this.cache, options.gateway_id);
    this.reads = new PgReads(this);
  }

  static async open(database_url: string, options: PgStoreOptions = {}): Promise<PgStore> {
    const warn = options.warn ?? (() => {});
    const outage = new Outage(warn as OutageLog, options.outage_log_every_ms);
    if (options.lock_dir !== undefined) ensurePrivateDataDir(options.lock_dir);
    const release_lock = options.lock_dir !== undefined ? acquireLock(options.lock_dir) : () => {};
    const pool = openPool(database_url, {
      max: options.pool_max ?? 8,
      ...(options.statement_timeout_ms !== undefined
        ? { statement_timeout_ms: options.statement_timeout_ms }
        : {}),
      // A dropped idle connection is part of an outage (logged once), not a line each.
      lost: (error) => outage.failed(error),
    });
    let store: PgStore | null = null;
    try {
      const db_id = await migrateSchema(pool);
      const meta = await loadMeta(pool);
      if (meta.empty) {
        const old = await oldLayoutRecords(pool);
        if (old > 0)
          throw new Error(
            `this database holds the store of an earlier layout (${old} log records in public.aihub_log): move it into this version's tables with \`aihub-gateway migrate --database-url URL\` (docs/store-postgres.md, "Migrate and verify")`,
          );
      }
      store = new PgStore(
        new PgDb(pool, database_url, outage, newStats()),
        db_id,
        meta.meta,
        {
          ...options,
          now: options.now ?? (() => new Date()),
          warn,
          gateway_id: options.gateway_id ?? `${hostname()}:${process.pid}`,
        },
        release_lock,
      );
      await store.start();
      return store;
    } catch (error) {
      if (store) await store.close().catch(() => {});
      else {
        await pool.end().catch(() => {});
        release_lock();
      }
      throw error;
    }
  }

  private async start(): Promise<void> {
    this.poll_timer = setInterval(() => {
      if (this.db.closed) return;
      void this.fleet.heartbeat();
      if (!this.announcements.listening) void this.announcements.listen();
      void this.background(() => this.shared.pruneSeen());
    }, this.options.poll_ms ?? 1_000);
    this.poll_timer.unref();
    await this.fleet.heartbeat();
    await this.fleet.foldShards();
    await this.announcements.listen();
  }

  /** Counts `n` statements of `kind` sent to the database. */
  sent(kind: StatementKind, n = 1): void {
    this.db.sent(kind, n);
  }

  /** Loads keys into the cache (one statement); keys already being loaded are waited for. */
  load(keys: Iterable<string>, kind: StatementKind = 'load'): Promise<void> {
    return this.loads.load(keys, kind);
  }

  /**
   * Test hook: awaited before each optimistic commit statement is sent. A test commits through
   * another store here to make the statement conflict, deterministically.
   * @internal
   */
  get before_commit(): (() => Promise<void>) | null {
    return this.batches.before_commit;
  }
  set before_commit(hook: (() => Promise<void>) | null) {
    this.batches.before_commit = hook;
  }

  get state(): State {
    return this.cache.state;
  }

  get live_gateways(): number {
    return this.fleet.live_gateways;
  }

  // ---- transactions and reads: batch.ts, table-reads.ts -----------------------------------

  transact<T>(fn: (tx: Tx) => T, options?: TransactOptions): Promise<T> {
    return this.batches.transact(fn, options?.durable ?? true, options?.scope);
  }

  read<T>(fn: (state: State) => T, options: { fresh?: boolean } = {}): Promise<T> {
    return this.tables.read(fn, options);
  }

  fetch<T extends TableName>(name: T, id: string): Promise<Row<T> | undefined> {
    return this.tables.fetch(name, id);
  }

  get<T extends TableName>(name: T, id: string): Row<T> | undefined {
    return this.tables.get(name, id);
  }

  readDurable(): Promise<void> {
    return this.tables.readDurable();
  }

  indexBy<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    options: IndexOptions = {},
  ): TableIndex<T> {
    return this.tables.indexBy(name, field, options);
  }

  list<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    key: string,
  ): Promise<Array<Row<T>>> {
    return this.tables.list(name, field, key);
  }

  count(name: TableName): Promise<number> {
    return this.tables.count(name);
  }

  page<T extends TableName>(name: T, options: PageOptions): Promise<Array<Row<T>>> {
    return this.tables.page(name, options);
  }

  scan(name: TableName, chunk = 1_000): AsyncGenerator<string[]> {
    return this.tables.scan(name, chunk);
  }

  below(name: TableName, field: string, value: number | string, limit: number): Promise<string[]> {
    return this.tables.below(name, field, value, limit);
  }

  // ---- the fleet: fleet.ts, shared-keys.ts ------------------------------------------------

  // What the rooms need that differs from one process's (types.ts; pg/room-hooks.ts).
  preload<T>(fn: (state: State) => T): Promise<T> {
    return preloadRows(this, fn);
  }

  transactThenRead<T, R>(
    fn: (tx: Tx) => T,
    after: (state: State) => R,
    options?: TransactOptions,
  ): Promise<[T, R]> {
    return transactThenRead(this, fn, after, options);
  }

  marks<T extends TableName>(name: T): Marks<T> {
    return rowMarks(name);
  }

  acrossGateways<T>(make: () => T): T {
    return acrossGateways(make);
  }

  /** Background work is claimed item by item (`claim`): every gateway takes part. */
  isLeader(): boolean {
    return !this.db.closed;
  }

  liveGateways(): number {
    return this.fleet.live_gateways;
  }

  claim(kind: string, ids: readonly string[], lease_ms: number): Promise<string[]> {
    return this.fleet.claim(kind, ids, lease_ms);
  }

  release(kind: string, ids: readonly string[]): Promise<void> {
    return this.fleet.release(kind, ids);
  }

  withClaim<R>(
    item: { kind: string; id: string; lease_ms: number },
    _seen: R,
    reread: () => Promise<R | null>,
    work: (row: R) => Promise<void>,
  ): Promise<void> {
    return this.fleet.withClaim(item, reread, work);
  }

  claimShared(key: string, until_ms: number, now_ms: number): Promise<boolean> {
    return this.shared.claimShared(key, until_ms, now_ms);
  }

  sharedKeyCheck(sealed: string, replace = false): Promise<string> {
    return this.shared.sharedKeyCheck(sealed, replace);
  }

  background<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.background(fn);
  }

  sharedStats(): StoreStats {
    return {
      batches: this.stats.batches,
      conflicts: this.stats.conflicts,
      locked: this.stats.locked,
      syncs: this.stats.loads,
      loads: this.stats.loads,
      rows_loaded: this.stats.rows_loaded,
      blocking_loads: this.blocking.count,
      invalidations: this.stats.invalidations,
      foreign_records_applied: 0,
      statements: this.stats.statements,
      statements_by_kind: { ...this.stats.statements_by_kind },
      keys_locked: this.stats.keys_locked,
      cache_entries: this.cache.entries.size,
      runs: this.stats.runs,
      outages: this.outage.totals.outages,
      refused: this.outage.totals.refused,
      in_doubt: { ...this.stats.in_doubt },
    };
  }

  /** `/readyz`: the database answers a statement within 2 s (counted as a heartbeat). */
  async readiness(): Promise<Readiness> {
    if (this.db.closed) return { ready: false, reason: 'the store is closed' };
    let timer: NodeJS.Timeout | undefined;
    try {
      this.sent('heartbeat');
      await Promise.race([
        this.pool.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('no answer within 2 s')), 2_000);
        }),
      ]);
      return { ready: true };
    } catch (error) {
      return {
        ready: false,
        reason: `the database cannot be reached (${(error as Error).message})`,
      };
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.db.closed) return;
    // Commits queued or in flight finish first (for at most CLOSE_WAIT_MS: the rest are refused).
    await this.batches.drain(Date.now() + CLOSE_WAIT_MS);
    this.db.closed = true;
    this.batches.refuseQueued();
    if (this.poll_timer) clearInterval(this.poll_timer);
    await this.fleet.leave();
    await this.announcements.close();
    await this.blocking.close();
    await this.pool.end().catch(() => {});
    this.release_lock();
  }
}

/** The meta row (admin token hash) and the store's creation time; empty: a database nothing was written to. */
async function loadMeta(pool: pg.Pool): Promise<{ meta: State['meta']; empty: boolean }> {
  const { rows } = await pool.query<{ k: string; v: unknown; created_at: Date; empty: boolean }>(
    `SELECT m.k, m.v, s.created_at,
       NOT EXISTS (SELECT 1 FROM aihub.rows) AND NOT EXISTS (SELECT 1 FROM aihub.postings)
         AND NOT EXISTS (SELECT 1 FROM aihub.history) AS empty
     FROM aihub.store s LEFT JOIN aihub.meta m ON true WHERE s.id = 1`,
  );
  const meta: State['meta'] = {
    admin_token_hash: null,
    created_at: (rows[0]?.created_at ?? new Date()).toISOString(),
  };
  for (const row of rows)
    if (row.k === 'admin_token_hash') meta.admin_token_hash = (row.v as string | null) ?? null;
  return { meta, empty: rows[0]?.empty ?? true };
}

/** Opens the PostgreSQL store. */
export function openPgStore(database_url: string, options: PgStoreOptions = {}): Promise<PgStore> {
  return PgStore.open(database_url, options);
}
