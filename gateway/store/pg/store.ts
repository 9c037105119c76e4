// The PostgreSQL store (issue #30; docs/store-postgres.md): PostgreSQL holds the state as tables
// and decides conflicts row by row; this gateway holds a bounded cache of what it uses.
//
//   transact(fn): fn runs on the cache in a Run (reads recorded with versions, writes staged);
//     what it misses is loaded in one query and it runs again; the runs queued meanwhile form a
//     batch, committed by ONE statement (aihub.commit) that locks only the batch's keys, checks
//     its read set and guards, and writes. A conflict refreshes what differed and runs the
//     batch again. Batches whose keys are disjoint are in flight at once, on their own
//     connections: a wallet locked elsewhere holds up only the requests on that wallet.
//   read(fn)/fetch/list/page/count/scan: reads outside transactions, loaded as needed.
//   reads: history by SQL (pg/reads.ts).
//
// No other gateway's writes are applied here: announced rows are dropped from the cache
// (LISTEN aihub_cache), validated ones are checked at commit or loaded fresh.
import { randomBytes } from 'node:crypto';
import { AsyncLocalStorage } from 'node:async_hooks';
import { hostname } from 'node:os';
import pg from 'pg';
import { StoreOutcomeUnknownError, StoreUnavailableError } from '../../kernel/errors.js';
import { requestScope, type RequestScope } from '../../kernel/request-scope.js';
import { acquireLock } from '../lock.js';
import { ensurePrivateDataDir } from '../private-files.js';
import type {
  IndexOptions,
  Marks,
  PageOptions,
  Store,
  StoreReads,
  StoreStats,
  TableIndex,
  Tx,
} from '../types.js';
import type { Row, State, TableName } from '../state.js';
import { BlockingQueries } from './blocking.js';
import { BatchState, CacheTx, PgCache, Run } from './cache.js';
import { batchText, batchWrites, COMMIT_STATEMENT, encodeBatch } from './commit.js';
import {
  SEP,
  USAGE_TABLE,
  holdsNul,
  checkFieldName,
  lockOf,
  rowKey,
  splitIndexKey,
  splitRowKey,
} from './keys.js';
import { Outage, type OutageLog } from './outage.js';
import { PgReads } from './reads.js';
import { acrossGateways, preloadRows, rowMarks, transactThenRead } from './room-hooks.js';
import { ensureFieldIndex, migrateSchema, oldLayoutRecords } from './schema.js';

/**
 * What a statement sent to the database is for (`aihub_store_statements_total{kind}`): a
 * transaction's commit statement; the extra statements of the locked path (BEGIN, its locks
 * and loads, COMMIT); a load of what a transaction missed; a read outside transactions
 * (store.read/fetch/list/page/count/scan); a blocking load (the event loop waiting); a
 * history read (StoreReads); a claim or release of background work; a signed request's
 * signature claim; pruning; the heartbeat; the listener's LISTEN; the encryption-key check.
 */
export type StatementKind =
  | 'commit'
  | 'locked'
  | 'load'
  | 'read'
  | 'blocking_load'
  | 'history'
  | 'claim'
  | 'signature'
  | 'prune'
  | 'heartbeat'
  | 'listen'
  | 'key_check'
  | 'lookup'
  | 'background';

/** Set while periodic work runs (`PgStore.background`): its statements are counted as `background`. */
const periodic = new AsyncLocalStorage<true>();

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
}

/** The default of PgStoreOptions.outcome_wait_ms. */
export const OUTCOME_WAIT_MS = 10_000;
/** Transactions put back to run again at most this many times after their commit proved not applied. */
const MAX_DOUBTS = 1;

/**
 * A commit statement that failed: `in_doubt` when it may have been applied (it was sent and
 * the connection ended before the answer; not when it never left, or the server refused it
 * with an ERROR, which aborts its transaction).
 */
class CommitFailure extends Error {
  constructor(
    readonly error: unknown,
    readonly in_doubt: boolean,
  ) {
    super((error as Error)?.message ?? String(error), { cause: error });
  }
}

/**
 * Whether the server answered a statement with an ERROR (its transaction aborted: nothing of
 * it was applied), as opposed to the connection ending (a FATAL as the server shuts down, a
 * socket closed): then a statement sent may or may not have committed.
 */
export function refusedByServer(error: unknown): boolean {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return false;
  if (code.startsWith('08') || code.startsWith('57P')) return false;
  return severity !== 'FATAL' && severity !== 'PANIC';
}

/**
 * The lookup of a commit id whose answer was lost: inserts it as a fence. A conflict means the
 * commit inserted it (committed; if the commit is still running the insert waits for its
 * end); an insert means it had not, and the commit can no longer (its INSERT of the id fails).
 */
const FENCE = `WITH fence AS (
  INSERT INTO aihub.commits (id, fenced) VALUES ($1, true) ON CONFLICT (id) DO NOTHING RETURNING 1)
SELECT EXISTS (SELECT 1 FROM fence) AS fenced`;

/**
 * A batch in flight this long is counted as stalled (waiting on a lock another transaction
 * holds): it no longer holds back the next batch. The latency a commit has on a loaded
 * machine is well under it; a stall past it costs the other wallets this much once.
 */
const STALL_MS = 50;

/** Runs per batch at most. */
const MAX_BATCH = 256;
/** Optimistic attempts of a transaction before it commits under locks taken first. */
export const OPTIMISTIC_TRIES = 8;
/** Rounds of loading what a read or run missed before giving up (a function that misses forever). */
const MAX_LOAD_ROUNDS = 50;
const LIVE_POLLS = 5;
const GONE_AFTER = '1 hour';
/** The advisory lock that serializes folding platform shards ('AIHS'). */
const SHARD_FOLD_LOCK = 0x41494853;
const LEAVE_WAIT_MS = 1_000;
/** How long a close waits for the commits queued and in flight. */
const CLOSE_WAIT_MS = 15_000;
const SEEN_PRUNE_EVERY_MS = 10_000;
const SEEN_PRUNE_BATCH = 10_000;
/** How long commit ids are kept (aihub.commits, migration 6): far past any lookup. */
const COMMIT_IDS_KEPT = '1 hour';

export function toUnavailable(error: unknown): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  return new StoreUnavailableError(
    `the database is unavailable (${(error as Error)?.message ?? String(error)})`,
    { cause: error },
  );
}

/** A pool with bounded size and timeouts that never crashes the process on a dropped connection. */
export function openPool(
  database_url: string,
  options: {
    max?: number;
    statement_timeout_ms?: number;
    warn?: (message: string) => void;
    /** Called instead of `warn` when an idle connection drops. */
    lost?: (error: Error) => void;
  } = {},
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: database_url,
    max: options.max ?? 8,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statement_timeout_ms ?? 10_000,
    application_name: 'aihub-gateway',
  });
  // An idle client whose connection dropped: the pool discards it; nothing else to do.
  pool.on('error', (error) =>
    options.lost
      ? options.lost(error)
      : options.warn?.(`database connection lost (${error.message})`),
  );
  return pool;
}

interface Job {
  fn: (tx: Tx) => unknown;
  /** The request it serves (marked when it commits: a later refusal says something changed). */
  scope: RequestScope | undefined;
  /** Times its commit was lost and proved not applied (it runs again up to MAX_DOUBTS). */
  doubts: number;
  /** The cache's load sequence number when it was queued: entries loaded after it are newer than the request. */
  queued_at: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** Loading what its last run missed. */
  waiting: boolean;
  /** Its last run touched a key of a batch in flight: it waits for that batch. */
  blocked: ReadonlySet<string> | null;
  conflicts: number;
  /** Rounds its runs missed keys in (from the third on, misses load at once: Run.sync_loads). */
  miss_rounds: number;
  now: Date | null;
  /** The keys its last run touched. */
  keys: ReadonlySet<string> | null;
}

/** A kept run of a batch: its job, and what the function returned or threw. */
interface Kept {
  job: Job;
  run: Run;
  result: unknown;
  error: unknown;
  threw: boolean;
}

interface Flight {
  keys: ReadonlySet<string>;
  done: Promise<void>;
  /** When it was sent (performance.now()). */
  sent_at: number;
  /** Kicks the queue when the flight turns stalled (cleared when it returns). */
  timer: NodeJS.Timeout | null;
}

type AnswerRow = { kind: string; k1: string; k2: string | null; ver: string; val: string | null };

/** The load query's rows: r row, a usage total, b balance, p platform balance, s set member, v index version. */
type LoadRow = {
  kind: string;
  k1: string;
  k2: string | null;
  ver: string | null;
  val: string | null;
};

export class PgStore implements Store {
  readonly cache: PgCache;
  readonly reads: StoreReads;
  private readonly queue: Job[] = [];
  private readonly flights = new Set<Flight>();
  private pumping = false;
  private closed = false;
  private readonly loading = new Map<string, Promise<void>>();
  /** The table and field pairs whose partial index was made sure of. */
  private readonly indexed = new Set<string>();
  private listener: pg.Client | null = null;
  private poll_timer: NodeJS.Timeout | null = null;
  private beating = false;
  private pruning_seen = false;
  private seen_pruned_ms = 0;
  private readonly blocking: BlockingQueries;
  private readonly max_in_flight: number;
  private readonly pipeline_depth: number;
  private readonly stall_ms: number;
  /**
   * Shards of the platform's accounts: each batch in flight adds to a shard no other batch of
   * this gateway holds at that moment (the lowest free number), so two of its commits never
   * wait for each other's shard row.
   */
  private readonly slots_used = new Set<number>();
  live_gateways = 1;
  /**
   * Test hook: awaited before each optimistic commit statement is sent. A test commits through
   * another store here to make the statement conflict, deterministically.
   * @internal
   */
  before_commit: (() => Promise<void>) | null = null;
  readonly stats = {
    batches: 0,
    conflicts: 0,
    locked: 0,
    loads: 0,
    rows_loaded: 0,
    invalidations: 0,
    statements: 0,
    /** Platform shard rows of gone gateways folded at start. */
    shards_folded: 0,
    /** The same statements by kind (`StatementKind`): /metrics labels them. */
    statements_by_kind: Object.create(null) as Record<StatementKind, number>,
    /** Advisory locks the commit statements took (one per key a batch read or writes). */
    keys_locked: 0,
    /** Transactions answered without a commit statement (answeredFresh). */
    fresh_answers: 0,
    /** Runs of transaction functions (runJob), each run counted. */
    runs: 0,
    /** Commits whose answer was lost, by what the lookup of their id found. */
    in_doubt: { committed: 0, not_applied: 0, unknown: 0 },
  };
  /** Outage logging and counts (outage.ts). */
  readonly outage: Outage;
  private commit_seq = 0;

  /** Counts `n` statements of `kind` sent to the database. */
  sent(sent_kind: StatementKind, n = 1): void {
    const kind = periodic.getStore() ? 'background' : sent_kind;
    this.stats.statements += n;
    this.stats.statements_by_kind[kind] = (this.stats.statements_by_kind[kind] ?? 0) + n;
  }

  private constructor(
    readonly pool: pg.Pool,
    readonly database_url: string,
    readonly db_id: string,
    meta: State['meta'],
    private readonly options: Required<Pick<PgStoreOptions, 'now' | 'warn' | 'gateway_id'>> &
      PgStoreOptions,
    private readonly release_lock: () => void,
    outage: Outage,
  ) {
    this.blocking = new BlockingQueries(database_url, options.statement_timeout_ms ?? 10_000);
    this.cache = new PgCache(meta, options.cache_rows ?? 100_000, (keys) =>
      this.loadBlocking(keys),
    );
    this.max_in_flight = Math.max(1, options.max_in_flight ?? (options.pool_max ?? 8) - 2);
    this.pipeline_depth = Math.max(1, options.pipeline_depth ?? 2);
    this.stall_ms = options.stall_ms ?? STALL_MS;
    this.outcome_wait_ms = options.outcome_wait_ms ?? OUTCOME_WAIT_MS;
    this.outage = outage;
    this.reads = new PgReads(this);
  }

  private readonly outcome_wait_ms: number;

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
        pool,
        database_url,
        db_id,
        meta.meta,
        {
          ...options,
          now: options.now ?? (() => new Date()),
          warn,
          gateway_id: options.gateway_id ?? `${hostname()}:${process.pid}`,
        },
        release_lock,
        outage,
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
    const poll_ms = this.options.poll_ms ?? 1_000;
    const live_ms = this.options.live_ms ?? Math.max(5_000, LIVE_POLLS * poll_ms);
    this.live_ms = live_ms;
    this.poll_timer = setInterval(() => {
      if (this.closed) return;
      void this.heartbeat(live_ms);
      if (!this.listener) void this.listen();
      void this.background(() => this.pruneSeen());
    }, poll_ms);
    this.poll_timer.unref();
    await this.heartbeat(live_ms);
    await this.foldShards(live_ms);
    await this.listen();
  }

  /**
   * Folds the platform shards of gateways that are gone into one row per account (shard
   * ''). Shards are named after the gateway that adds to them (`hostname:pid` unless
   * AIHUB_GATEWAY_ID names it), so without folding every start would add rows that every
   * later read of a platform balance sums. Safe whenever it runs: shards are only ever added
   * to, the sum is unchanged in one transaction (a reader sees before or after), and a commit
   * adding to a shard being folded waits for its row lock and then inserts it anew. Shards of
   * live gateways are left alone only so as not to make their commits wait. Serialized by an
   * advisory lock so that two starting gateways do not fold in opposite orders.
   */
  private async foldShards(live_ms: number): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [SHARD_FOLD_LOCK]);
      const { rows } = await client.query<{ folded: string }>(
        `WITH live AS (
           SELECT id FROM aihub.gateways WHERE seen_at > now() - make_interval(secs => $2::float8 / 1000)
           UNION SELECT $1
         ), gone AS (
           DELETE FROM aihub.pool p
           WHERE p.shard <> '' AND regexp_replace(p.shard, ':[0-9]+$', '') NOT IN (SELECT id FROM live)
           RETURNING p.account, p.micros
         ), folded AS (
           INSERT INTO aihub.pool AS p (account, shard, micros)
           SELECT account, '', sum(micros) FROM gone GROUP BY account
           ON CONFLICT (account, shard) DO UPDATE SET micros = p.micros + excluded.micros
           RETURNING 1
         )
         SELECT (SELECT count(*) FROM gone)::text AS folded FROM (SELECT count(*) FROM folded) f`,
        [this.options.gateway_id, live_ms],
      );
      // The same for the payment transactions' tallies (migration 5): a shard per backend.
      await client.query(
        `WITH gone AS (
           DELETE FROM aihub.tallies t
           WHERE t.shard <> 0 AND t.shard NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL)
           RETURNING t.tag, t.n
         )
         INSERT INTO aihub.tallies AS t (tag, shard, n)
         SELECT tag, 0, sum(n) FROM gone GROUP BY tag
         ON CONFLICT (tag, shard) DO UPDATE SET n = t.n + excluded.n`,
      );
      await client.query('COMMIT');
      this.sent('prune', 5);
      const folded = Number(rows[0]?.folded ?? 0);
      if (folded > 0) this.stats.shards_folded += folded;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      // Not needed to serve: the next start folds them.
      this.options.warn(`platform shards not folded (${(error as Error).message})`);
    } finally {
      client.release();
    }
  }

  get state(): State {
    return this.cache.state;
  }

  // ---- transactions ----------------------------------------------------------------------

  transact<T>(fn: (tx: Tx) => T): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('the store is closing'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({
        fn,
        scope: requestScope(),
        doubts: 0,
        queued_at: this.cache.load_seq,
        resolve: resolve as (value: unknown) => void,
        reject,
        waiting: false,
        blocked: null,
        conflicts: 0,
        miss_rounds: 0,
        now: null,
        keys: null,
      });
      this.kick();
    });
  }

  private kick(): void {
    if (this.pumping) return;
    this.pumping = true;
    // Outside any periodic work's context: a batch carries requests' transactions too, and
    // its statements are counted as what they are (commit, load), whoever kicked the pump.
    periodic.exit(() =>
      queueMicrotask(() => {
        this.pumping = false;
        this.pump();
      }),
    );
  }

  /**
   * Forms batches from the queue while fewer than pipeline_depth batches are in flight and
   * not stalled, and fewer than max_in_flight in all. Every commit statement costs about the
   * same on both sides whatever it carries (docs/store-postgres.md, "What a commit statement
   * costs"): a queue that waits for a batch to return goes out as one statement instead of
   * one each, and a batch stalled on a lock holds back no other wallet for longer than
   * STALL_MS.
   */
  private pump(): void {
    while (
      !this.closed &&
      this.flights.size < this.max_in_flight &&
      this.liveFlights() < this.pipeline_depth
    ) {
      const batch = new BatchState();
      const kept: Kept[] = [];
      // The jobs whose runs missed keys in this pass, and those keys: ONE load for all of them
      // (a burst of requests on a cold cache costs one statement, not one per request).
      const missed: Job[] = [];
      const misses = new Set<string>();
      for (let i = 0; i < this.queue.length && kept.length < MAX_BATCH;) {
        const job = this.queue[i]!;
        if (job.waiting || (job.blocked && this.inFlight(job.blocked))) {
          i++;
          continue;
        }
        if (job.conflicts >= OPTIMISTIC_TRIES) {
          // Beaten too often: it runs alone, under its keys' locks taken first.
          this.queue.splice(i, 1);
          this.sendLocked(job);
          continue;
        }
        const outcome = this.runJob(job, batch);
        const { run } = outcome;
        if (run.misses.size > 0) {
          run.rollback();
          job.miss_rounds++;
          job.waiting = true;
          missed.push(job);
          for (const key of run.misses) misses.add(key);
          i++;
          continue;
        }
        if (this.answeredFresh(job, outcome)) {
          this.queue.splice(i, 1);
          continue;
        }
        if (this.inFlight(run.keys)) {
          run.rollback();
          job.blocked = new Set(run.keys);
          i++;
          continue;
        }
        if (outcome.threw) {
          // Its writes are undone now; its reads are checked with the batch (the answer it
          // gives is sure only on committed values).
          run.keepReadsOnly();
        }
        batch.add(run);
        kept.push(outcome);
        this.queue.splice(i, 1);
      }
      if (missed.length > 0) this.waitFor(missed, misses);
      if (kept.length === 0) return;
      this.send(batch, kept);
    }
  }

  /**
   * A commit or load that failed, known not applied: what each of its callers is answered (503
   * store_unavailable, saying "nothing was changed" when its request committed nothing before).
   * Logged as part of an outage, not once per failure.
   */
  private refuse(jobs: readonly Job[], error: unknown): void {
    this.outage.failed(error, jobs.length);
    const cause = error instanceof CommitFailure ? error.error : error;
    const message = `the database is unavailable (${(cause as Error)?.message ?? String(cause)})`;
    for (const job of jobs)
      job.reject(new StoreUnavailableError(message, { cause, scope: job.scope }));
  }

  /**
   * A run that changed nothing and read only entries loaded from the database after its job
   * was queued (none staged by a batch not yet committed) is answered at once: what it read
   * was committed and current at a moment after the request arrived, so no commit statement
   * needs to check it (an idempotency key found again, a refusal, a read on a cold cache).
   */
  private answeredFresh(job: Job, outcome: Kept): boolean {
    const { run } = outcome;
    if (
      run.ops.length > 0 ||
      run.written.size > 0 ||
      run.guards.length > 0 ||
      run.pool_reads.size > 0 ||
      run.read_staged ||
      run.reads.size === 0
    )
      return false;
    for (const key of run.reads.keys()) {
      const entry = this.cache.entries.get(key);
      if (!entry || entry.staged || entry.loaded <= job.queued_at) return false;
    }
    this.stats.fresh_answers++;
    if (outcome.threw) {
      run.rollback(); // a function that throws is undone, its tx.onUndo callbacks with it
      job.reject(outcome.error);
    } else {
      run.undos.length = 0; // answered: what it did outside the state stands
      job.resolve(outcome.result);
    }
    return true;
  }

  /** The lowest shard number no batch in flight holds. */
  private takeSlot(): number {
    let slot = 0;
    while (this.slots_used.has(slot)) slot++;
    this.slots_used.add(slot);
    return slot;
  }

  /** Batches in flight not yet stalled (sent less than stall_ms ago). */
  private liveFlights(): number {
    if (this.flights.size < this.pipeline_depth) return this.flights.size;
    const now = performance.now();
    let live = 0;
    for (const flight of this.flights) if (now - flight.sent_at < this.stall_ms) live++;
    return live;
  }

  /** A flight for `keys`, sent now; the queue is kicked again if it is still out at stall_ms. */
  private newFlight(keys: ReadonlySet<string>): { flight: Flight; settle: () => void } {
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
  private landed(flight: Flight, settle: () => void, slot: number): void {
    if (flight.timer) clearTimeout(flight.timer);
    this.slots_used.delete(slot);
    this.flights.delete(flight);
    settle();
  }

  private inFlight(keys: ReadonlySet<string>): boolean {
    for (const flight of this.flights)
      for (const key of keys) if (flight.keys.has(key)) return true;
    return false;
  }

  /** Runs a job's function on the cache as a transaction of `batch`. */
  private runJob(job: Job, batch: BatchState): Kept {
    this.stats.runs++;
    const run = new Run('tx', 0, batch);
    run.sync_loads = job.miss_rounds >= 2;
    job.keys = run.keys;
    job.now ??= this.options.now();
    const tx = new CacheTx(this.cache, run, job.now);
    const previous = this.cache.current;
    this.cache.current = run;
    try {
      const result = job.fn(tx);
      return { job, run, result, error: undefined, threw: false };
    } catch (error) {
      return { job, run, result: undefined, error, threw: true };
    } finally {
      this.cache.current = previous;
    }
  }

  /** Loads what the jobs' runs missed (one statement), then lets them run again. */
  private waitFor(jobs: Job[], misses: Set<string>): void {
    this.load(misses).then(
      () => {
        for (const job of jobs) job.waiting = false;
        this.kick();
      },
      (error: unknown) => {
        for (const job of jobs) {
          const at = this.queue.indexOf(job);
          if (at >= 0) this.queue.splice(at, 1);
        }
        this.refuse(jobs, error);
        this.kick();
      },
    );
  }

  /** Commits a batch; its flight holds its keys until the answer. */
  private send(batch: BatchState, kept: Kept[]): void {
    const runs = kept.map((k) => k.run);
    const { flight, settle } = this.newFlight(batch.keys);
    const slot = this.takeSlot();
    const { batch: encoded, written } = encodeBatch(
      this.cache,
      runs,
      `${this.options.gateway_id}:${slot}`,
      this.options.gateway_id,
    );
    const empty =
      encoded.locks.length === 0 &&
      encoded.pr.length === 0 &&
      encoded.post.length === 0 &&
      encoded.hist.length === 0 &&
      encoded.meta.length === 0 &&
      encoded.pool.length === 0;
    if (!empty) this.stats.keys_locked += encoded.locks.length;
    const cid = !empty && batchWrites(encoded) ? this.commitId() : null;
    if (cid !== null) encoded.cid = cid;
    const hook = this.before_commit;
    const work = empty
      ? Promise.resolve([] as AnswerRow[])
      : (hook ? hook() : Promise.resolve()).then(() => this.commitStatement(batchText(encoded)));
    work
      .then(
        (rows) => {
          if (!empty) this.outage.served();
          this.answered(kept, written, rows);
        },
        (error: unknown) => this.unanswered(kept, written, error, cid),
      )
      .finally(() => {
        this.landed(flight, settle, slot);
        this.cache.evict();
        this.kick();
      });
  }

  /** A commit id no other statement of any gateway carries: this store's claimant name and a counter. */
  private commitId(): string {
    return `${this.claimant}:${(++this.commit_seq).toString(36)}`;
  }

  /**
   * Sends a batch's commit statement on a connection of its own. A failure says whether the
   * statement may have been applied (CommitFailure.in_doubt): not when no connection could be
   * had (never sent) or the server answered an ERROR (its transaction aborted).
   */
  private async commitStatement(text: string): Promise<AnswerRow[]> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new CommitFailure(error, false);
    }
    // A checked-out client whose connection drops emits 'error' (the query in flight fails
    // with it); unheard, it would end the process.
    const onError = () => {};
    client.on('error', onError);
    this.sent('commit');
    try {
      const { rows } = await client.query<AnswerRow>({ ...COMMIT_STATEMENT, values: [text] });
      client.off('error', onError);
      client.release();
      return rows;
    } catch (error) {
      const refused = refusedByServer(error);
      client.off('error', onError);
      client.release(refused ? undefined : (error as Error));
      throw new CommitFailure(error, !refused);
    }
  }

  /**
   * A batch's commit failed. Not applied: its runs are undone and its callers refused. In
   * doubt (sent, no answer): its commit id is looked up first (resolveCommit), the batch's keys
   * still held; committed, its callers get their results as if the answer had come; proved
   * not applied, its transactions run again (once); not learnt within outcome_wait_ms, they
   * are answered store_outcome_unknown.
   */
  private async unanswered(
    kept: Kept[],
    written: Set<string>,
    error: unknown,
    cid: string | null,
  ): Promise<void> {
    const in_doubt = error instanceof CommitFailure && error.in_doubt;
    const outcome = in_doubt && cid !== null ? await this.resolveCommit(cid) : 'not_applied';
    if (outcome === 'committed') {
      this.committedUnanswered(kept, written);
      return;
    }
    for (let i = kept.length - 1; i >= 0; i--) if (!kept[i]!.threw) kept[i]!.run.rollback();
    const jobs = kept.map((k) => k.job);
    if (outcome === 'unknown') {
      this.outage.failed(error, jobs.length);
      const cause = error instanceof CommitFailure ? error.error : error;
      for (const job of jobs)
        job.reject(
          new StoreOutcomeUnknownError(
            `the outcome of commit ${cid} is unknown (${(cause as Error)?.message ?? String(cause)})`,
            { cause, scope: job.scope },
          ),
        );
      return;
    }
    // Known not applied. After a lost answer (the database answered the lookup, or the batch
    // only read), the transactions run again rather than fail: their callers get a real answer.
    const again = in_doubt ? jobs.filter((job) => job.doubts < MAX_DOUBTS) : [];
    for (const job of again) {
      job.doubts++;
      job.now = null;
    }
    this.queue.unshift(...again);
    const refused = jobs.filter((job) => !again.includes(job));
    if (refused.length > 0) this.refuse(refused, error);
  }

  /**
   * Looks up a commit id whose answer was lost, until outcome_wait_ms has passed: a fresh
   * connection each try (the pool's may be the broken ones), tries spaced 50 ms doubling to
   * 500 ms.
   */
  private async resolveCommit(cid: string): Promise<'committed' | 'not_applied' | 'unknown'> {
    const deadline = Date.now() + this.outcome_wait_ms;
    let pause_ms = 50;
    let outcome: 'committed' | 'not_applied' | 'unknown' = 'unknown';
    for (;;) {
      const left_ms = deadline - Date.now();
      if (left_ms <= 0) break;
      const client = new pg.Client({
        connectionString: this.database_url,
        connectionTimeoutMillis: Math.max(1, Math.min(left_ms, 5_000)),
        query_timeout: left_ms,
        application_name: 'aihub-gateway-lookup',
      });
      client.on('error', () => {}); // the query in flight fails with it
      try {
        await client.connect();
        this.sent('lookup');
        const { rows } = await client.query<{ fenced: boolean }>(FENCE, [cid]);
        outcome = rows[0]?.fenced ? 'not_applied' : 'committed';
        break;
      } catch {
        // The next try, while the wait lasts.
      } finally {
        client.end().catch(() => {});
      }
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, Math.min(pause_ms, deadline - Date.now()))),
      );
      pause_ms = Math.min(pause_ms * 2, 500);
    }
    this.stats.in_doubt[outcome]++;
    this.options.warn('a commit lost its answer; its commit id was looked up', {
      event: 'store_commit_in_doubt',
      commit_id: cid,
      outcome,
    });
    return outcome;
  }

  /**
   * A batch that committed though its answer was lost: its callers get what their functions
   * returned, as if the answer had come. The versions the answer would have brought are not
   * known: what the batch touched is dropped from the cache, to be loaded again when read.
   */
  private committedUnanswered(kept: Kept[], written: Set<string>): void {
    this.outage.served();
    this.stats.batches++;
    this.cache.load_seq++;
    this.cache.settle(written);
    for (const { run } of kept) {
      for (const key of run.keys) this.cache.invalidate(key);
      for (const key of run.written) this.cache.invalidate(key);
      for (const key of run.deltas.keys()) this.cache.invalidate(key);
    }
    this.settleJobs(kept);
  }

  /** Answers the jobs of a committed batch (a function that threw: its error, now sure). */
  private settleJobs(kept: Kept[]): void {
    for (const k of kept) {
      if (k.threw) k.job.reject(k.error);
      else {
        if (k.job.scope && (k.run.ops.length > 0 || k.run.written.size > 0))
          k.job.scope.committed++;
        k.job.resolve(k.result);
      }
    }
  }

  /**
   * After OPTIMISTIC_TRIES conflicts a transaction commits under locks it takes first, so that
   * it cannot lose again: BEGIN; its keys locked (in order) and their current values loaded
   * through the same connection; the function run on them; if it touched keys not locked yet,
   * those are locked and loaded too and it runs again; then the commit statement (its own
   * locks are held: nothing it read can have changed) and COMMIT.
   */
  private sendLocked(job: Job): void {
    const keys = new Set(job.keys ?? []);
    const { flight, settle } = this.newFlight(keys);
    this.stats.locked++;
    const slot = this.takeSlot();
    let last: Kept | null = null;
    let written_last = new Set<string>();
    let cid: string | null = null;
    /** COMMIT was sent: a failure now leaves the outcome in doubt. */
    let committing = false;
    let answer: AnswerRow[] = [];
    void (async () => {
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (error) {
        this.refuse([job], error);
        return;
      }
      const onError = () => {};
      client.on('error', onError);
      let broken = false;
      try {
        this.sent('locked');
        await client.query('BEGIN');
        const locked = new Set<string>();
        for (let round = 0; ; round++) {
          if (round > MAX_LOAD_ROUNDS) throw new Error('a transaction kept reaching for new keys');
          const todo = [...keys].filter((key) => !locked.has(key) && key[0] !== 'p');
          if (todo.length > 0) {
            this.sent('locked', 2);
            await client.query(
              'SELECT count(pg_advisory_xact_lock(x)) FROM (SELECT unnest($1::bigint[]) AS x ORDER BY 1) s',
              [todo.map((key) => String(lockOf(key)))],
            );
            for (const key of todo) locked.add(key);
            const readable = new Set(todo.filter((key) => /^[rbpi]/.test(key)));
            const { text, params } = loadQuery(readable);
            this.loaded(readable, (await client.query<LoadRow>(text, params)).rows);
          }
          const batch = new BatchState();
          const kept = this.runJob(job, batch);
          last = kept;
          const { run } = kept;
          const more = [...run.misses, ...[...run.keys].filter((key) => !locked.has(key))];
          if (more.length > 0) {
            run.rollback();
            for (const key of more) keys.add(key);
            continue;
          }
          if (kept.threw) {
            run.keepReadsOnly();
          }
          batch.add(run);
          const { batch: encoded, written } = encodeBatch(
            this.cache,
            [run],
            `${this.options.gateway_id}:${slot}`,
            this.options.gateway_id,
          );
          written_last = written;
          if (batchWrites(encoded)) encoded.cid = cid = this.commitId();
          this.sent('commit');
          this.sent('locked');
          this.stats.keys_locked += encoded.locks.length;
          const { rows } = await client.query<AnswerRow>({
            ...COMMIT_STATEMENT,
            values: [batchText(encoded)],
          });
          answer = rows;
          const conflict = rows.some((row) => isConflict(row.kind));
          committing = !conflict;
          await client.query(conflict ? 'ROLLBACK' : 'COMMIT');
          this.outage.served();
          this.answered([kept], written, rows);
          return;
        }
      } catch (error) {
        broken = true;
        await client.query('ROLLBACK').catch(() => {});
        // COMMIT sent and no answer: the commit statement's answer is known, its outcome is not.
        const in_doubt = committing && cid !== null && !refusedByServer(error);
        await this.lockedFailed(job, last, error, in_doubt ? cid : null, written_last, answer);
      } finally {
        client.off('error', onError);
        client.release(broken ? true : undefined);
      }
    })()
      .catch((error: unknown) => job.reject(toUnavailable(error)))
      .finally(() => {
        this.landed(flight, settle, slot);
        this.kick();
      });
  }

  /**
   * The locked path failed: `cid` is set when its COMMIT was sent and not answered (then it
   * is looked up); `answer` is its commit statement's answer, what a commit brought.
   */
  private async lockedFailed(
    job: Job,
    last: Kept | null,
    error: unknown,
    cid: string | null,
    written: Set<string>,
    answer: AnswerRow[],
  ): Promise<void> {
    const outcome = cid !== null ? await this.resolveCommit(cid) : 'not_applied';
    if (outcome === 'committed' && last) {
      this.outage.served();
      this.answered([last], written, answer);
      return;
    }
    if (last && !last.threw) last.run.rollback();
    if (outcome !== 'unknown') return this.refuse([job], error);
    this.outage.failed(error, 1);
    job.reject(
      new StoreOutcomeUnknownError(`the outcome of commit ${cid} is unknown`, {
        cause: error,
        scope: job.scope,
      }),
    );
  }

  /** A batch's answer: committed (versions and values into the cache, callers answered), or a conflict. */
  private answered(kept: Kept[], written: Set<string>, rows: AnswerRow[]): void {
    if (rows.some((row) => isConflict(row.kind))) {
      this.stats.conflicts++;
      for (let i = kept.length - 1; i >= 0; i--) if (!kept[i]!.threw) kept[i]!.run.rollback();
      this.cache.load_seq++;
      for (const row of rows) this.putAnswered(row);
      for (const k of kept) {
        k.job.conflicts++;
        k.job.now = null;
      }
      this.queue.unshift(...kept.map((k) => k.job));
      return;
    }
    this.stats.batches++;
    this.cache.load_seq++;
    this.cache.settle(written);
    for (const row of rows) this.putAnswered(row);
    // Platform balances this batch added to: their sums changed (not cached).
    for (const { run } of kept)
      for (const key of run.deltas.keys()) if (key[0] === 'p') this.cache.invalidate(key);
    this.settleJobs(kept);
  }

  /** One row of an answer (a conflict's current value, or a commit's new version or value) into the cache. */
  private putAnswered(row: AnswerRow): void {
    const ver = Number(row.ver);
    switch (row.kind) {
      case 'R':
        this.cache.putRow(
          row.k1,
          row.k2!,
          row.val === null || ver === 0 ? undefined : JSON.parse(row.val),
          ver,
        );
        break;
      case 'r':
        this.cache.putCommitted(row.k1, row.k2!, ver, row.val);
        break;
      case 'B':
      case 'b':
        this.cache.putBalance('b', row.k1, Number(row.val), ver);
        break;
      case 'P':
        this.cache.putBalance('p', row.k1, Number(row.val), 0);
        break;
      case 'I':
        this.cache.dropSet(`i${row.k1}`);
        break;
      case 'i': {
        const entry = this.cache.entries.get(`i${row.k1}`);
        if (entry?.kind === 'i') entry.ver = ver;
        break;
      }
    }
  }

  // ---- loads -----------------------------------------------------------------------------

  /** Loads keys into the cache (one statement); keys already being loaded are waited for. */
  load(keys: Iterable<string>, kind: StatementKind = 'load'): Promise<void> {
    const waits: Array<Promise<void>> = [];
    const fresh = new Set<string>();
    for (const key of keys) {
      const pending = this.loading.get(key);
      if (pending) waits.push(pending);
      else fresh.add(key);
    }
    if (fresh.size > 0) {
      const { text, params } = loadQuery(fresh);
      const sent = this.cache.load_seq;
      const loading = this.query<LoadRow>(text, params, kind).then((rows) =>
        this.loaded(fresh, rows, sent),
      );
      const done = loading.finally(() => {
        for (const key of fresh) if (this.loading.get(key) === done) this.loading.delete(key);
      });
      for (const key of fresh) this.loading.set(key, done);
      waits.push(done);
    }
    return Promise.all(waits).then(() => undefined);
  }

  /** The same load, the event loop waiting (a read outside any run that missed). */
  private loadBlocking(keys: Set<string>): void {
    if (this.closed) throw new StoreUnavailableError('the store is closed');
    const { text, params } = loadQuery(keys);
    const sent = this.cache.load_seq;
    if (holdsNul(params)) return this.loaded(keys, [], sent);
    this.sent('blocking_load');
    let rows: LoadRow[];
    try {
      rows = this.blocking.query<LoadRow>(text, params);
    } catch (error) {
      this.outage.failed(error, 1);
      throw error;
    }
    this.loaded(keys, rows, sent);
  }

  /** A load's answer into the cache (`sent`: the load sequence number when it was sent; omitted under the keys' locks). */
  private loaded(keys: Set<string>, rows: LoadRow[], sent?: number): void {
    this.stats.loads++;
    this.stats.rows_loaded += rows.length;
    const cache = this.cache;
    cache.load_seq++;
    const found = new Set<string>();
    const usage = new Map<string, Array<Record<string, number>>>();
    const sets = new Map<string, { ids: Set<string>; ver: number }>();
    for (const row of rows) {
      switch (row.kind) {
        case 'r':
          found.add(rowKey(row.k1, row.k2!));
          cache.putRow(row.k1, row.k2!, JSON.parse(row.val!), Number(row.ver), sent);
          break;
        case 'u': {
          const list = usage.get(row.k1) ?? [];
          list.push({ ...(JSON.parse(row.val!) as Record<string, number>) });
          usage.set(row.k1, list);
          break;
        }
        case 'b':
        case 'p':
          found.add(`${row.kind}${row.k1}`);
          cache.putBalance(row.kind, row.k1, Number(row.val), Number(row.ver ?? 0));
          break;
        case 's': {
          const key = `i${row.k1}`;
          const set = sets.get(key) ?? { ids: new Set<string>(), ver: 0 };
          set.ids.add(row.k2!);
          sets.set(key, set);
          const [table] = splitIndexKey(key);
          cache.putRow(table, row.k2!, JSON.parse(row.val!), Number(row.ver), sent);
          break;
        }
        case 'v': {
          const key = `i${row.k1}`;
          const set = sets.get(key) ?? { ids: new Set<string>(), ver: 0 };
          set.ver = Number(row.ver);
          sets.set(key, set);
          break;
        }
      }
    }
    for (const [account_id, parts] of usage) {
      found.add(rowKey(USAGE_TABLE, account_id));
      cache.putRow(USAGE_TABLE, account_id, usageTotals(parts), -1);
    }
    for (const key of keys) {
      if (key[0] === 'i') {
        const [table, field, value] = splitIndexKey(key);
        const set = sets.get(key) ?? { ids: new Set<string>(), ver: 0 };
        cache.putSet(table, field, value, set.ids, set.ver);
        continue;
      }
      if (found.has(key)) continue;
      if (key[0] === 'r') {
        const [table, id] = splitRowKey(key);
        cache.putRow(table, id, undefined, table === USAGE_TABLE ? -1 : 0, sent);
      } else if (key[0] === 'b' || key[0] === 'p') cache.putBalance(key[0], key.slice(1), 0, 0);
    }
    cache.evict();
  }

  private async query<R extends pg.QueryResultRow>(
    text: string | { name: string; text: string },
    params: unknown[],
    kind: StatementKind,
  ): Promise<R[]> {
    // PostgreSQL text cannot hold U+0000, so no stored id or field has it: a read whose
    // parameter holds one (an id from a request) matches nothing. Writes send JSON, where it
    // is escaped.
    if (holdsNul(params)) return [];
    this.sent(kind);
    try {
      const { rows } = await this.pool.query<R>(
        typeof text === 'string' ? { text, values: params } : { ...text, values: params },
      );
      this.outage.served();
      return rows;
    } catch (error) {
      // Periodic work refuses no request; a transaction's load counts its jobs (refuse).
      this.outage.failed(error, periodic.getStore() || kind === 'load' ? 0 : 1);
      throw toUnavailable(error);
    }
  }

  // ---- reads outside transactions ---------------------------------------------------------

  /** Waits for the batches in flight now (what was committed before a read is in what it reads). */
  private async quiesce(): Promise<void> {
    while (this.flights.size > 0) await Promise.all([...this.flights].map((f) => f.done));
  }

  async read<T>(fn: (state: State) => T, options: { fresh?: boolean } = {}): Promise<T> {
    if (this.closed) throw new StoreUnavailableError('the store is closed');
    let fresh_from = 0;
    if (options.fresh) {
      await this.quiesce();
      fresh_from = ++this.cache.load_seq;
    }
    for (let round = 0; ; round++) {
      const run = new Run('read', fresh_from);
      run.sync_loads = round >= 2;
      const previous = this.cache.current;
      this.cache.current = run;
      let result: T | undefined;
      let error: unknown;
      let threw = false;
      try {
        result = fn(this.cache.state);
      } catch (caught) {
        error = caught;
        threw = true;
      } finally {
        this.cache.current = previous;
      }
      if (run.misses.size === 0 || round >= MAX_LOAD_ROUNDS) {
        if (threw) throw error;
        return result as T;
      }
      await this.load(run.misses, 'read');
    }
  }

  fetch<T extends TableName>(name: T, id: string): Promise<Row<T> | undefined> {
    return this.read(() => this.cache.readRow(name, id) as Row<T> | undefined, { fresh: true });
  }

  get<T extends TableName>(name: T, id: string): Row<T> | undefined {
    return this.cache.readRow(name, id) as Row<T> | undefined;
  }

  async readDurable(): Promise<void> {
    if (this.closed) throw new StoreUnavailableError('the store is closed');
    await this.quiesce();
    this.cache.durable_mark = ++this.cache.load_seq;
  }

  indexBy<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    options: IndexOptions = {},
  ): TableIndex<T> {
    checkFieldName(field);
    this.cache.declare(name, field, options.in_transactions ?? false);
    const pair = `${name}${SEP}${field}`;
    if (!this.indexed.has(pair)) {
      this.indexed.add(pair);
      void ensureFieldIndex(this.pool, name, field).catch((error: unknown) =>
        this.options.warn(
          `could not create the index of ${name} by ${field}: ${(error as Error).message}`,
        ),
      );
    }
    const cache = this.cache;
    return {
      field,
      ids: (key: string) => cache.readIndex(name, field, key),
      *rows(key: string): Generator<Row<T>> {
        for (const id of [...cache.readIndex(name, field, key)]) {
          const row = cache.readRow(name, id) as Row<T> | undefined;
          if (row !== undefined) yield row;
        }
      },
    };
  }

  async list<T extends TableName>(
    name: T,
    field: keyof Row<T> & string,
    key: string,
  ): Promise<Array<Row<T>>> {
    const sent = this.cache.load_seq;
    const rows = await this.query<{ id: string; ver: string; row: string }>(
      `SELECT id, ver::text AS ver, row::text AS row FROM aihub.rows WHERE tbl = $1 AND row->>'${checkFieldName(field)}' = $2 ORDER BY created`,
      [name, key],
      'read',
    );
    return this.keep(name, rows, sent);
  }

  /** Rows read by a query: into the cache (current), and their values. */
  private keep<T extends TableName>(
    name: T,
    rows: Array<{ id: string; ver: string; row: string }>,
    sent: number,
  ): Array<Row<T>> {
    this.cache.load_seq++;
    this.stats.rows_loaded += rows.length;
    return rows.map(({ id, ver, row }) => {
      const value = JSON.parse(row) as Row<T>;
      this.cache.putRow(name, id, value, Number(ver), sent);
      return value;
    });
  }

  async count(name: TableName): Promise<number> {
    const rows = await this.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM aihub.rows WHERE tbl = $1',
      [name],
      'read',
    );
    return Number(rows[0]?.n ?? 0);
  }

  async page<T extends TableName>(name: T, options: PageOptions): Promise<Array<Row<T>>> {
    if (options.limit <= 0) return [];
    const sent = this.cache.load_seq;
    const rows = await this.query<{ id: string; ver: string; row: string }>(
      `SELECT id, ver::text AS ver, row::text AS row FROM aihub.rows WHERE tbl = $1
       ORDER BY created ${options.newest_first ? 'DESC' : 'ASC'} OFFSET $2 LIMIT $3`,
      [name, Math.max(0, options.offset), options.limit],
      'read',
    );
    return this.keep(name, rows, sent);
  }

  async *scan(name: TableName, chunk = 1_000): AsyncGenerator<string[]> {
    const top = await this.query<{ top: string | null }>(
      'SELECT max(created)::text AS top FROM aihub.rows WHERE tbl = $1',
      [name],
      'read',
    );
    const until = top[0]?.top;
    if (until === null || until === undefined) return;
    let after = '0';
    for (;;) {
      const rows = await this.query<{ id: string; created: string }>(
        `SELECT r.id, r.created::text AS created FROM aihub.rows r
         WHERE r.tbl = $1 AND r.created > $2::bigint AND r.created <= $3::bigint ORDER BY r.created LIMIT $4`,
        [name, after, until, chunk],
        'read',
      );
      if (rows.length === 0) return;
      after = rows.at(-1)!.created;
      yield rows.map((row) => row.id);
      if (rows.length < chunk) return;
    }
  }

  async below(
    name: TableName,
    field: string,
    value: number | string,
    limit: number,
  ): Promise<string[]> {
    checkFieldName(field);
    const expression =
      typeof value === 'number' ? `((row->>'${field}')::bigint)` : `(row->>'${field}')`;
    const rows = await this.query<{ id: string }>(
      `SELECT id FROM aihub.rows WHERE tbl = $1 AND ${expression} < $2 ORDER BY ${expression} LIMIT $3`,
      [name, value, limit],
      'read',
    );
    return rows.map((row) => row.id);
  }

  // ---- the fleet -------------------------------------------------------------------------

  // What the rooms need that differs from one process's (types.ts; pg/room-hooks.ts).
  preload<T>(fn: (state: State) => T): Promise<T> {
    return preloadRows(this, fn);
  }

  transactThenRead<T, R>(fn: (tx: Tx) => T, after: (state: State) => R): Promise<[T, R]> {
    return transactThenRead(this, fn, after);
  }

  marks<T extends TableName>(name: T): Marks<T> {
    return rowMarks(name);
  }

  acrossGateways<T>(make: () => T): T {
    return acrossGateways(make);
  }

  /** Background work is claimed item by item (`claim`): every gateway takes part. */
  isLeader(): boolean {
    return !this.closed;
  }

  liveGateways(): number {
    return this.live_gateways;
  }

  /**
   * Who holds a claim: this store, not its gateway's name. Two stores of one name (two in one
   * process, as the unit tests open them; two gateways given the same AIHUB_GATEWAY_ID; two
   * containers sharing the host's hostname, each pid 1) would otherwise each take the other's
   * claims as their own to renew, and hold one item at once (pg-store's claim test did, one run
   * in a few: whichever statement saw the other's committed claim took it).
   */
  private readonly claimant = `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
  /** How recent a gateway's heartbeat must be for it to count as live, ms (set at start). */
  private live_ms = 5_000;

  /**
   * A claim is free once its lease ends, or once its gateway is no longer live (no heartbeat
   * within live_ms, or its row gone: it stopped or died). The lease bounds the work plus a
   * minute, so a gateway SIGKILLed in the middle of a status check held that transaction for
   * over a minute and no other gateway reconciled it meanwhile (the kill test failed so, once
   * under load); now its work is taken over live_ms after its last heartbeat. The claim names
   * `<gateway id>/<claimant>`; a claimant (hostname:pid:hex) has no '/'.
   */
  async claim(kind: string, ids: readonly string[], lease_ms: number): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.query<{ id: string }>(
      `WITH wanted AS (SELECT DISTINCT unnest($2::text[]) AS id),
       taken AS (
         UPDATE aihub.claims c SET gateway = $3, until_at = now() + make_interval(secs => $4::float8 / 1000)
         WHERE c.kind = $1 AND c.id IN (
           SELECT x.id FROM aihub.claims x WHERE x.kind = $1 AND x.id IN (SELECT id FROM wanted)
             AND (x.until_at < now() OR x.gateway = $3 OR NOT EXISTS (
               SELECT 1 FROM aihub.gateways g WHERE g.id = regexp_replace(x.gateway, '/[^/]*$', '')
                 AND g.seen_at > now() - make_interval(secs => $5::float8 / 1000)))
           FOR UPDATE SKIP LOCKED)
         RETURNING c.id),
       fresh AS (
         INSERT INTO aihub.claims (kind, id, gateway, until_at)
         SELECT $1, w.id, $3, now() + make_interval(secs => $4::float8 / 1000) FROM wanted w
         ON CONFLICT (kind, id) DO NOTHING RETURNING id)
       SELECT id FROM taken UNION SELECT id FROM fresh`,
      [kind, ids, `${this.options.gateway_id}/${this.claimant}`, lease_ms, this.live_ms],
      'claim',
    );
    return rows.map((row) => row.id);
  }

  async release(kind: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.query(
      'DELETE FROM aihub.claims WHERE kind = $1 AND id = ANY($2) AND gateway = $3',
      [kind, ids, `${this.options.gateway_id}/${this.claimant}`],
      'claim',
    );
  }

  async withClaim<R>(
    item: { kind: string; id: string; lease_ms: number },
    _seen: R,
    reread: () => Promise<R | null>,
    work: (row: R) => Promise<void>,
  ): Promise<void> {
    if ((await this.claim(item.kind, [item.id], item.lease_ms)).length === 0) return;
    try {
      const row = await reread();
      if (row !== null) await work(row);
    } finally {
      await this.release(item.kind, [item.id]).catch(() => {});
    }
  }

  /** Claims a signed request's signature until `until_ms` (issue #25): true when no claim of it is in force. */
  async claimShared(key: string, until_ms: number, now_ms: number): Promise<boolean> {
    this.sent('signature');
    try {
      const { rowCount } = await this.pool.query(
        `INSERT INTO aihub.seen (k, until_at) VALUES ($1, to_timestamp($2::float8 / 1000))
         ON CONFLICT (k) DO UPDATE SET until_at = excluded.until_at
           WHERE aihub.seen.until_at < to_timestamp($3::float8 / 1000)`,
        [key, until_ms, now_ms],
      );
      return rowCount === 1;
    } catch (error) {
      throw toUnavailable(error);
    }
  }

  /** Deletes claims of signatures stale for a minute, in bounded statements (one gateway at a time: a claim). */
  private async pruneSeen(): Promise<void> {
    const now = Date.now();
    if (this.closed || this.pruning_seen || now - this.seen_pruned_ms < SEEN_PRUNE_EVERY_MS) return;
    this.pruning_seen = true;
    this.seen_pruned_ms = now;
    try {
      if ((await this.claim('prune', ['seen'], SEEN_PRUNE_EVERY_MS)).length === 0) return;
      for (;;) {
        const rows = await this.query(
          `DELETE FROM aihub.seen WHERE k IN (
             SELECT k FROM aihub.seen WHERE until_at < now() - interval '1 minute' LIMIT ${SEEN_PRUNE_BATCH})`,
          [],
          'prune',
        );
        if (rows.length < SEEN_PRUNE_BATCH || this.closed) break;
      }
      // Commit ids: looked up for at most outcome_wait_ms (≤ 60 s) after their commit.
      for (;;) {
        const rows = await this.query(
          `DELETE FROM aihub.commits WHERE id IN (
             SELECT id FROM aihub.commits WHERE at < now() - interval '${COMMIT_IDS_KEPT}' LIMIT ${SEEN_PRUNE_BATCH})
           RETURNING 1`,
          [],
          'prune',
        );
        if (rows.length < SEEN_PRUNE_BATCH || this.closed) break;
      }
    } catch {
      // The next turn tries again.
    } finally {
      this.pruning_seen = false;
    }
  }

  async sharedKeyCheck(sealed: string, replace = false): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const rows = await this.query<{ sealed: string }>(
        replace
          ? `INSERT INTO aihub.key_check (id, sealed) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE SET sealed = excluded.sealed, updated_at = now() RETURNING sealed`
          : `WITH put AS (INSERT INTO aihub.key_check (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING RETURNING sealed)
             SELECT sealed FROM put UNION ALL SELECT sealed FROM aihub.key_check WHERE NOT EXISTS (SELECT 1 FROM put)`,
        [sealed],
        'key_check',
      );
      if (rows[0]) return rows[0].sealed;
      if (attempt >= 3)
        throw new Error('the database has no encryption-key check after inserting one');
    }
  }

  background<T>(fn: () => Promise<T>): Promise<T> {
    return periodic.run(true, fn);
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

  /** Renews this gateway's heartbeat and counts the live ones (one statement). */
  private async heartbeat(live_ms: number): Promise<void> {
    if (this.closed || this.beating) return;
    this.beating = true;
    try {
      this.sent('heartbeat');
      const { rows } = await this.pool.query<{ live: string }>(
        `WITH beat AS (
           INSERT INTO aihub.gateways (id, seen_at) VALUES ($1, now())
           ON CONFLICT (id) DO UPDATE SET seen_at = now() RETURNING id
         ), gone AS (
           DELETE FROM aihub.gateways WHERE seen_at < now() - interval '${GONE_AFTER}' AND id <> $1
         )
         SELECT 1 + (SELECT count(*) FROM aihub.gateways
                     WHERE id <> $1 AND seen_at > now() - make_interval(secs => $2::float8 / 1000)) AS live
         FROM beat`,
        [this.options.gateway_id, live_ms],
      );
      const live = Number(rows[0]?.live);
      if (Number.isSafeInteger(live) && live >= 1) this.live_gateways = live;
      this.outage.served();
    } catch (error) {
      // Kept: the next poll tries again. An outage starts with its first failure, even with
      // no request waiting.
      this.outage.failed(error);
    } finally {
      this.beating = false;
    }
  }

  /** LISTEN for announced keys; on every (re)connection the announced tables' entries are dropped. */
  private async listen(): Promise<void> {
    if (this.closed || this.listener) return;
    const client = new pg.Client({
      connectionString: this.database_url,
      application_name: 'aihub-gateway-listen',
    });
    this.listener = client;
    client.on('error', () => {
      if (this.listener === client) this.listener = null;
      client.end().catch(() => {});
    });
    client.on('notification', (message) => this.announced(message.payload ?? ''));
    try {
      await client.connect();
      this.sent('listen');
      await client.query('LISTEN aihub_cache');
      // Whatever was announced while this gateway was not listening is dropped.
      this.stats.invalidations += this.cache.invalidateAnnounced();
    } catch {
      if (this.listener === client) this.listener = null;
      client.end().catch(() => {});
    }
  }

  private announced(payload: string): void {
    const at = payload.indexOf('\n');
    if (at < 0 || payload.slice(0, at) === this.options.gateway_id) return;
    const keys = payload.slice(at + 1);
    if (keys === '*') {
      this.stats.invalidations += this.cache.invalidateAnnounced();
      return;
    }
    for (const key of keys.split('\n')) {
      const kind = key.split(SEP).length === 3 ? 'i' : 'r';
      if (this.cache.invalidate(`${kind}${key}`)) this.stats.invalidations++;
    }
  }

  /** `/readyz`: the database answers a statement within 2 s (counted as a heartbeat). */
  async readiness(): Promise<{ ready: true } | { ready: false; reason: string }> {
    if (this.closed) return { ready: false, reason: 'the store is closed' };
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
    if (this.closed) return;
    // Commits queued or in flight finish first (for at most CLOSE_WAIT_MS: the rest are refused).
    const deadline = Date.now() + CLOSE_WAIT_MS;
    while ((this.queue.length > 0 || this.flights.size > 0) && Date.now() < deadline) {
      if (this.flights.size > 0) await this.quiesce();
      else await new Promise((resolve) => setImmediate(resolve));
      if (
        this.queue.every((job) => job.waiting) &&
        this.flights.size === 0 &&
        this.loading.size === 0
      )
        break;
    }
    this.closed = true;
    for (const job of this.queue.splice(0))
      job.reject(new StoreUnavailableError('the store is closing'));
    if (this.poll_timer) clearInterval(this.poll_timer);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.pool
        .query('DELETE FROM aihub.gateways WHERE id = $1', [this.options.gateway_id])
        .catch(() => {}),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, LEAVE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => {});
    await this.blocking.close();
    await this.pool.end().catch(() => {});
    this.release_lock();
  }
}

const isConflict = (kind: string) => kind === 'R' || kind === 'B' || kind === 'P' || kind === 'I';

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

/** The usage totals of an account (as the JSON-file store keeps them) from its rows per protocol. */
function usageTotals(parts: Array<Record<string, number>>): unknown {
  const totals: Record<string, unknown> = {
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost_micros: 0,
  };
  let cached = 0;
  let reasoning = 0;
  const by_protocol: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const part of parts) {
    totals.requests = (totals.requests as number) + part.requests!;
    totals.prompt_tokens = (totals.prompt_tokens as number) + part.prompt_tokens!;
    totals.completion_tokens = (totals.completion_tokens as number) + part.completion_tokens!;
    totals.cost_micros = (totals.cost_micros as number) + part.cost_micros!;
    cached += part.cached_tokens!;
    reasoning += part.reasoning_tokens!;
    by_protocol[part.protocol as unknown as string] = {
      requests: part.requests,
      prompt_tokens: part.prompt_tokens,
      completion_tokens: part.completion_tokens,
      cached_tokens: part.cached_tokens,
      reasoning_tokens: part.reasoning_tokens,
      cost_micros: part.cost_micros,
    };
  }
  if (cached) totals.cached_tokens = cached;
  if (reasoning) totals.reasoning_tokens = reasoning;
  totals.by_protocol = by_protocol;
  return totals;
}

/** One statement loading keys of every kind: rows, usage totals, balances, platform sums, index sets. */
function loadQuery(keys: Set<string>): { text: string; params: unknown[] } {
  const row_t: string[] = [];
  const row_i: string[] = [];
  const usage: string[] = [];
  const balances: string[] = [];
  const pools: string[] = [];
  const sets = new Map<string, string[]>(); // table␟field → values
  for (const key of keys) {
    if (key[0] === 'r') {
      const [t, i] = splitRowKey(key);
      if (t === USAGE_TABLE) usage.push(i);
      else {
        row_t.push(t);
        row_i.push(i);
      }
    } else if (key[0] === 'b') balances.push(key.slice(1));
    else if (key[0] === 'p') pools.push(key.slice(1));
    else if (key[0] === 'i') {
      const [t, f, value] = splitIndexKey(key);
      const pair = `${t}${SEP}${f}`;
      sets.set(pair, [...(sets.get(pair) ?? []), value]);
    }
  }
  const parts: string[] = [];
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (row_t.length > 0)
    parts.push(
      `SELECT 'r'::text AS kind, r.tbl AS k1, r.id AS k2, r.ver::text AS ver, r.row::text AS val
       FROM aihub.rows r JOIN unnest(${param(row_t)}::text[], ${param(row_i)}::text[]) AS w(t, i) ON r.tbl = w.t AND r.id = w.i`,
    );
  if (usage.length > 0)
    parts.push(
      `SELECT 'u' AS kind, u.account_id AS k1, u.protocol AS k2, NULL AS ver, json_build_object('protocol', u.protocol, 'requests', u.requests,
         'prompt_tokens', u.prompt_tokens, 'completion_tokens', u.completion_tokens, 'cached_tokens', u.cached_tokens,
         'reasoning_tokens', u.reasoning_tokens, 'cost_micros', u.cost_micros)::text AS val
       FROM aihub.usage u WHERE u.account_id = ANY(${param(usage)}::text[])`,
    );
  if (balances.length > 0)
    parts.push(
      `SELECT 'b' AS kind, x.account AS k1, NULL AS k2, x.ver::text AS ver, x.micros::text AS val FROM aihub.balances x WHERE x.account = ANY(${param(balances)}::text[])`,
    );
  if (pools.length > 0)
    parts.push(
      `SELECT 'p' AS kind, p.account AS k1, NULL AS k2, '0' AS ver, sum(p.micros)::text AS val FROM aihub.pool p WHERE p.account = ANY(${param(pools)}::text[]) GROUP BY p.account`,
    );
  for (const [pair, values] of sets) {
    const [t, f] = pair.split(SEP) as [string, string];
    checkFieldName(f);
    const tp = param(t);
    const vp = param(values);
    parts.push(
      `(SELECT 's' AS kind, r.tbl || chr(31) || '${f}' || chr(31) || (r.row->>'${f}') AS k1, r.id AS k2,
         r.ver::text AS ver, r.row::text AS val
       FROM aihub.rows r WHERE r.tbl = ${tp} AND r.row->>'${f}' = ANY(${vp}::text[]) ORDER BY r.created)`,
    );
    parts.push(
      `SELECT 'v' AS kind, x.ikey AS k1, NULL AS k2, x.ver::text AS ver, NULL AS val FROM aihub.index_versions x
       WHERE x.ikey = ANY(SELECT ${tp} || chr(31) || '${f}' || chr(31) || v FROM unnest(${vp}::text[]) v)`,
    );
  }
  if (parts.length === 0)
    parts.push(`SELECT NULL::text AS kind, NULL, NULL, NULL, NULL WHERE false`);
  return { text: parts.join('\nUNION ALL\n'), params };
}

/** The lock number of a key (tests look at it). */
export { lockOf };

/** Opens the PostgreSQL store. */
export function openPgStore(database_url: string, options: PgStoreOptions = {}): Promise<PgStore> {
  return PgStore.open(database_url, options);
}
