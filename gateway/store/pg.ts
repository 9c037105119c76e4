// The PostgreSQL backend (issue #18): any number of gateways on one database.
//
// PostgreSQL holds the ordered log of committed transactions (`aihub_log`: the same records
// as the JSON-file journal), the rows as the log leaves them (`aihub_rows`, finalized history
// included; `aihub_balances`; `aihub_meta`) and a head row with the last sequence number.
// Every gateway keeps a replica of the state in memory (a Store on a local replica dir, whose
// journal and indexes answer the history reads), so the rooms keep their synchronous
// programming model. A write batch is one PostgreSQL transaction, optimistic:
//
//   run the queued transaction functions on the replica as it is (at record `expected`)
//   SELECT ... FROM aihub_commit(expected, records...)  -- ONE statement, one round trip:
//     locks the head; if it is still at `expected`, INSERTs the records, upserts the rows
//     they changed, bumps the head, NOTIFYs (and the implicit transaction commits);
//     otherwise writes nothing and answers the records after `expected`
//   on such a conflict: undo the batch, apply those records, run the functions again
//   (after OPTIMISTIC_TRIES conflicts: BEGIN ... FOR UPDATE first, so it cannot lose)
//
// and only then are their promises resolved. Every debit, hold, capture, refund, idempotency
// key, duplicate window, DMT limit and OTP counter is thus decided on the state every gateway
// committed before it: serialized by the database. A batch whose statement fails is undone
// in the replica and its callers get StoreUnavailableError (503 store_unavailable). Many
// functions share one PostgreSQL transaction (group commit). A function may run more than
// once (only the last run counts): what it changes outside `tx` it undoes with tx.onUndo.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { acquireLock } from './lock.js';
import { ensurePrivateDataDir } from './private-files.js';
import {
  Store,
  StoreUnavailableError,
  type SharedLog,
  type SharedLogStats,
  type Staged,
  type ReplicaOpened,
  type StoreOptions,
  type Tx,
} from './store.js';
import { openReplica } from './pg-replica.js';
import type { JournalRecord, State } from './state.js';

/** The versioned migrations, applied in order at start under an advisory lock. */
export const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
      CREATE TABLE aihub_head (id int PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL, db_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
      -- ops: the record's ops as JSON text, exactly as a JSON-file journal line holds them
      -- (json text keeps every string, \\u0000 included, which jsonb refuses).
      CREATE TABLE aihub_log (seq bigint PRIMARY KEY, at timestamptz NOT NULL, ops text NOT NULL);
      CREATE TABLE aihub_rows (tbl text NOT NULL, id text NOT NULL, seq bigint NOT NULL, row json NOT NULL, PRIMARY KEY (tbl, id));
      CREATE INDEX aihub_rows_account ON aihub_rows (tbl, (row->>'account_id'), (row->>'created_at'));
      CREATE INDEX aihub_rows_status ON aihub_rows (tbl, (row->>'status'));
      CREATE TABLE aihub_balances (ledger_account text PRIMARY KEY, micros bigint NOT NULL);
      CREATE TABLE aihub_meta (k text PRIMARY KEY, v json);
    `,
  },
  {
    version: 2,
    // The gateways on this database, each renewing its row at every poll: a per-key rate
    // limit is shared out among the live ones (see PgLog.heartbeat).
    sql: `CREATE TABLE aihub_gateways (id text PRIMARY KEY, seen_at timestamptz NOT NULL);`,
  },
  {
    version: 3,
    // A write batch in one statement (see commitRecords): the head row is locked only
    // inside PostgreSQL, for the time of this function and its COMMIT, never across round
    // trips. It writes only when the head is still where the gateway staged the batch;
    // otherwise it writes nothing and returns the records the gateway is missing.
    sql: `
      CREATE FUNCTION aihub_commit(
        p_expected bigint, p_seqs bigint[], p_ats timestamptz[], p_ops text[],
        p_up_tbl text[], p_up_id text[], p_up_seq bigint[], p_up_row json[],
        p_del_tbl text[], p_del_id text[], p_accounts text[], p_micros bigint[],
        p_meta_k text[], p_meta_v json[], p_page int)
      RETURNS TABLE (seq bigint, at timestamptz, ops text)
      LANGUAGE plpgsql AS $fn$
      #variable_conflict use_column
      DECLARE
        head bigint;
        last bigint;
      BEGIN
        IF cardinality(p_seqs) = 0 THEN
          SELECT h.seq INTO head FROM aihub_head h WHERE h.id = 1;
        ELSE
          SELECT h.seq INTO head FROM aihub_head h WHERE h.id = 1 FOR UPDATE;
        END IF;
        IF head < p_expected THEN
          RAISE EXCEPTION 'the database log ends at record % but this gateway has applied %: was the database replaced under it?', head, p_expected;
        END IF;
        IF head > p_expected THEN
          -- A statement of its own: it sees what was committed while this one waited for the lock.
          RETURN QUERY SELECT l.seq, l.at, l.ops FROM aihub_log l
            WHERE l.seq > p_expected ORDER BY l.seq LIMIT p_page;
          RETURN;
        END IF;
        IF cardinality(p_seqs) = 0 THEN RETURN; END IF;
        last := p_seqs[cardinality(p_seqs)];
        INSERT INTO aihub_log (seq, at, ops) SELECT * FROM unnest(p_seqs, p_ats, p_ops);
        INSERT INTO aihub_rows (tbl, id, seq, row) SELECT * FROM unnest(p_up_tbl, p_up_id, p_up_seq, p_up_row)
          ON CONFLICT (tbl, id) DO UPDATE SET seq = excluded.seq, row = excluded.row;
        DELETE FROM aihub_rows r USING unnest(p_del_tbl, p_del_id) AS d(tbl, id)
          WHERE r.tbl = d.tbl AND r.id = d.id;
        INSERT INTO aihub_balances (ledger_account, micros) SELECT * FROM unnest(p_accounts, p_micros)
          ON CONFLICT (ledger_account) DO UPDATE SET micros = excluded.micros;
        INSERT INTO aihub_meta (k, v) SELECT * FROM unnest(p_meta_k, p_meta_v)
          ON CONFLICT (k) DO UPDATE SET v = excluded.v;
        UPDATE aihub_head SET seq = last WHERE id = 1;
        PERFORM pg_notify('aihub_log', last::text);
      END
      $fn$;
    `,
  },
  {
    version: 4,
    // Outside the log (issue #25): what every gateway must see at once but that is no state.
    // aihub_seen: signatures of signed /api requests, claimed once each until their timestamp
    // goes stale (claimOnce), deleted by the leader after (pruneSeen). aihub_key_check: one
    // value sealed with the deployment's encryption key, which every gateway's keys must open
    // at start (keyCheck), so that a gateway given another key refuses to start.
    sql: `
      CREATE TABLE aihub_seen (k text PRIMARY KEY, until_at timestamptz NOT NULL);
      CREATE INDEX aihub_seen_until ON aihub_seen (until_at);
      CREATE TABLE aihub_key_check (id int PRIMARY KEY CHECK (id = 1), sealed text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
    `,
  },
];

const MIGRATION_LOCK = 0x41494855; // 'AIHU'
/** Held, on a connection of its own, by the one gateway that runs the background work. */
const LEADER_LOCK = 0x41494856;
const MAX_BATCH = 256;
/** Log records read per query (a catch-up's memory is bounded by it). */
export const CATCH_UP_PAGE = 2_000;
/** Optimistic attempts of a write batch before it takes the head lock across round trips. */
export const OPTIMISTIC_TRIES = 8;

/** A gateway whose heartbeat is older than this many poll periods (and at least 5 s) is not live. */
const LIVE_POLLS = 5;
/** Rows of gateways gone this long are deleted (the table stays as small as the fleet). */
const GONE_AFTER = '1 hour';
/** The leader deletes stale claims of aihub_seen this often, at most SEEN_PRUNE_BATCH rows a statement. */
const SEEN_PRUNE_EVERY_MS = 10_000;
const SEEN_PRUNE_BATCH = 10_000;
/** How long a closing gateway waits to delete its heartbeat row (else the row lapses). */
const LEAVE_WAIT_MS = 1_000;

export interface PgStoreOptions extends StoreOptions {
  /** This gateway's name among the live ones (AIHUB_GATEWAY_ID; default hostname:pid). */
  gateway_id?: string;
  /** Where the replica's journal and indexes live (kept across restarts: see pg-replica.ts). */
  replica_dir: string;
  /** This machine's boot id (default: read from /proc; tests pass another one for a reboot). */
  boot_id?: string | null;
  /** A directory to hold the one-process lock of (the data dir: one gateway per data dir, as with the JSON-file store). */
  lock_dir?: string;
  /** Connections in the pool (default 4). */
  pool_max?: number;
  /** Per-statement timeout, ms (default 10,000). */
  statement_timeout_ms?: number;
  /** How often the replica looks for other gateways' commits without being told, ms (default 1,000). */
  poll_ms?: number;
  /**
   * How recent another gateway's heartbeat must be for it to count as live, ms (default:
   * LIVE_POLLS polls, at least 5 s; AIHUB_GATEWAY_LIVE_MS). Longer: a stalled gateway keeps
   * its share longer; one that stops still leaves at once (it deletes its row).
   */
  live_ms?: number;
}

function toUnavailable(error: unknown): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  return new StoreUnavailableError(
    `the database is unavailable (${(error as Error)?.message ?? String(error)})`,
    { cause: error },
  );
}

/** A pool with bounded size and timeouts that never crashes the process on a dropped connection. */
export function openPool(
  database_url: string,
  options: { max?: number; statement_timeout_ms?: number; warn?: (message: string) => void } = {},
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: database_url,
    max: options.max ?? 4,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statement_timeout_ms ?? 10_000,
    application_name: 'aihub-gateway',
  });
  // An idle client whose connection dropped: the pool discards it; nothing else to do.
  pool.on('error', (error) => options.warn?.(`database connection lost (${error.message})`));
  return pool;
}

/** Applies the migrations not yet applied; a second gateway starting at once waits on the lock. */
export async function migrateSchema(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  const onError = () => {}; // the query in flight fails with it
  client.on('error', onError);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      const done = new Set(
        (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map(
          (row) => row.version,
        ),
      );
      for (const migration of MIGRATIONS) {
        if (done.has(migration.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          if (migration.version === 1)
            await client.query('INSERT INTO aihub_head (id, seq, db_id) VALUES (1, 0, $1)', [
              randomUUID(),
            ]);
          await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [
            migration.version,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    client.off('error', onError);
    client.release();
  }
}

interface LogRow {
  seq: string;
  at: Date;
  ops: string;
}

function recordOf(row: LogRow): JournalRecord {
  return {
    s: Number(row.seq),
    t: row.at.toISOString(),
    ops: JSON.parse(row.ops) as JournalRecord['ops'],
  };
}

/** Reads the log after `after_seq`, up to `up_to` when given, a page at a time. */
export async function* readLog(
  client: pg.Pool | pg.PoolClient,
  after_seq: number,
  up_to?: number,
): AsyncGenerator<JournalRecord> {
  let seq = after_seq;
  for (;;) {
    const { rows } = await client.query<LogRow>(
      up_to === undefined
        ? 'SELECT seq, at, ops FROM aihub_log WHERE seq > $1 ORDER BY seq LIMIT $2'
        : 'SELECT seq, at, ops FROM aihub_log WHERE seq > $1 AND seq <= $3 ORDER BY seq LIMIT $2',
      up_to === undefined ? [seq, CATCH_UP_PAGE] : [seq, CATCH_UP_PAGE, up_to],
    );
    for (const row of rows) {
      const record = recordOf(row);
      if (record.s !== seq + 1)
        throw new Error(`the database log has a gap: record ${record.s} follows ${seq}`);
      seq = record.s;
      yield record;
    }
    if (rows.length < CATCH_UP_PAGE) return;
  }
}

/**
 * Commits `records` (staged on a replica at record `expected`) in one statement, one round
 * trip (`aihub_commit`, migration 3): the log, the rows, the balances and the meta they leave
 * behind, as of the last of them, the head and the notification. Written only if the
 * database's head is still at `expected`; otherwise nothing is written and the answer is
 * the records after `expected` (up to CATCH_UP_PAGE of them) that the replica is missing.
 * With no records, only that check. Inside a transaction holding the head lock the check
 * cannot fail.
 */
export async function commitRecords(
  client: pg.PoolClient,
  expected: number,
  records: readonly JournalRecord[],
  lines: readonly string[],
  state: State,
): Promise<JournalRecord[]> {
  const seqs: string[] = [];
  const ats: string[] = [];
  const ops: string[] = [];
  const rows = new Map<string, { tbl: string; id: string; seq: number; row: string | null }>();
  const touched = new Set<string>();
  let meta_touched = false;
  for (let i = 0; i < records.length; i++) {
    const record = records[i]!;
    seqs.push(String(record.s));
    ats.push(record.t);
    // The line minus its envelope: the ops array as JSON.stringify wrote it.
    const line = lines[i];
    ops.push(line !== undefined ? opsText(line) : JSON.stringify(record.ops));
    for (const op of record.ops) {
      if (op.o === 'set')
        rows.set(`${op.t}\u0000${op.id}`, {
          tbl: op.t,
          id: op.id,
          seq: record.s,
          row: JSON.stringify(op.v),
        });
      else if (op.o === 'del')
        rows.set(`${op.t}\u0000${op.id}`, { tbl: op.t, id: op.id, seq: record.s, row: null });
      else if (op.o === 'post') for (const [account] of op.p.entries) touched.add(account);
      else if (op.o === 'hist' && op.r.type === 'usage' && typeof op.r.account_id === 'string') {
        // The usage aggregate changes through history records: its row follows.
        rows.set(`usage\u0000${op.r.account_id}`, {
          tbl: 'usage',
          id: op.r.account_id,
          seq: record.s,
          row: null,
        });
      } else if (op.o === 'meta') meta_touched = true;
    }
  }
  const set = [...rows.values()];
  for (const entry of set) {
    if (entry.tbl !== 'usage') continue;
    const usage = state.tables.usage;
    entry.row = usage && Object.hasOwn(usage, entry.id) ? JSON.stringify(usage[entry.id]) : null;
  }
  const upserts = set.filter((entry) => entry.row !== null);
  const deletes = set.filter((entry) => entry.row === null);
  const accounts = [...touched];
  const meta_keys = meta_touched ? Object.keys(state.meta) : [];
  const { rows: missing } = await client.query<LogRow>(COMMIT_BATCH, [
    String(expected),
    seqs,
    ats,
    ops,
    upserts.map((e) => e.tbl),
    upserts.map((e) => e.id),
    upserts.map((e) => e.seq),
    upserts.map((e) => e.row),
    deletes.map((e) => e.tbl),
    deletes.map((e) => e.id),
    accounts,
    accounts.map((account) => String(state.balances[account] ?? 0)),
    meta_keys,
    meta_keys.map((k) => JSON.stringify(state.meta[k as keyof State['meta']])),
    CATCH_UP_PAGE,
  ]);
  return missing.map(recordOf);
}

/** Writes records into a database whose head (locked by the caller's transaction) is just before them: `migrate`. */
export async function writeRecords(
  client: pg.PoolClient,
  records: readonly JournalRecord[],
  lines: readonly string[],
  state: State,
): Promise<void> {
  const missing = await commitRecords(client, records[0]!.s - 1, records, lines, state);
  if (missing.length > 0)
    throw new Error(`the database log moved to record ${missing.at(-1)!.s} under the writer`);
}

const COMMIT_BATCH = `SELECT seq, at, ops FROM aihub_commit($1::bigint, $2::bigint[], $3::timestamptz[], $4::text[],
  $5::text[], $6::text[], $7::bigint[], $8::json[], $9::text[], $10::text[], $11::text[], $12::bigint[],
  $13::text[], $14::json[], $15::int)`;

function opsText(line: string): string {
  const start = line.indexOf('"ops":');
  // JSON.stringify of { s, t, ops } ends with `]}\n`.
  return line.slice(start + 6, line.lastIndexOf('}'));
}

interface Job {
  fn: (tx: Tx) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** One attempt's functions run on the replica: the staged ones, in order, and the ones that threw. */
interface Staging {
  staged: Array<{ job: Job; staged: Staged<unknown> }>;
  thrown: Map<Job, unknown>;
}

function undoStaging(staging: Staging): void {
  for (let i = staging.staged.length - 1; i >= 0; i--) staging.staged[i]!.staged.undo();
}

const LOGS = new WeakMap<Store, PgLog>();

/** The shared log of a PostgreSQL store (tests and the bench read its stats and set its hook). */
export function pgLogOf(store: Store): PgLog | undefined {
  return LOGS.get(store);
}

/** The replica's side of the shared log: the one queue of batches and catch-ups. */
export class PgLog implements SharedLog {
  private queue: Job[] = [];
  private tail: Promise<void> = Promise.resolve();
  private batch_scheduled = false;
  private sync_waiting: Promise<void> | null = null;
  private closed = false;
  private listener: pg.Client | null = null;
  private leader_client: pg.Client | null = null;
  private electing = false;
  /** This gateway holds LEADER_LOCK (on leader_client: released by PostgreSQL when that connection or this process dies). */
  leader = false;
  private poll_timer: NodeJS.Timeout | null = null;
  /** Batches committed (tests and the bench read it). */
  batches = 0;
  /** How the replica was opened (set by openPgStore). */
  opened: ReplicaOpened = { applied: 0, rebuilt: null, fresh: true, from_seq: 0 };
  /** Gateways whose heartbeat is recent, this one included (1 until the first heartbeat answers). */
  live_gateways = 1;
  private beating = false;
  /** A batch is between its first statement and its answer (its reply may bring what was announced). */
  private batch_running = false;
  /** The highest sequence number another gateway announced (NOTIFY). */
  private notified_seq = 0;
  /** Where the commit path's work goes: optimistic conflicts, locked batches, catch-ups. */
  readonly stats = { conflicts: 0, locked: 0, syncs: 0 };
  private seen_pruned_ms = 0;
  private pruning_seen = false;
  /**
   * Test hook: awaited in each optimistic attempt between staging and sending. A test
   * commits through another store here to make the attempt conflict, deterministically.
   * @internal
   */
  before_commit: (() => Promise<void>) | null = null;

  constructor(
    private readonly store: Store,
    readonly pool: pg.Pool,
    readonly database_url: string,
    private readonly warn: (message: string) => void,
    private readonly release_lock: () => void = () => {},
    private readonly gateway_id = `${hostname()}:${process.pid}`,
  ) {
    LOGS.set(store, this);
  }

  enqueue<T>(fn: (tx: Tx) => T): Promise<T> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('the store is closing'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (!this.batch_scheduled) {
        this.batch_scheduled = true;
        this.run(() => this.batch());
      }
    });
  }

  /** Catches the replica up with every record committed before the call (one indexed query when none is new). */
  sync(): Promise<void> {
    if (this.sync_waiting) return this.sync_waiting;
    const waiting = new Promise<void>((resolve, reject) => {
      this.run(async () => {
        this.sync_waiting = null;
        try {
          this.stats.syncs++;
          await this.catchUp(this.pool);
          // What was applied is in the history indexes once the replica's journal has it (not awaited here: the queue goes on).
          this.store.localDurable().then(resolve, () => resolve());
        } catch (error) {
          reject(toUnavailable(error));
        }
      });
    });
    this.sync_waiting = waiting;
    return waiting;
  }

  private run(task: () => Promise<void>): void {
    this.tail = this.tail
      .then(task)
      .catch((error: unknown) => this.warn(`store task failed: ${(error as Error).message}`));
  }

  private async catchUp(client: pg.Pool | pg.PoolClient): Promise<void> {
    for await (const record of readLog(client, this.store.state.seq)) this.applyRecord(record);
  }

  private async batch(): Promise<void> {
    this.batch_scheduled = false;
    const jobs = this.queue.splice(0, MAX_BATCH);
    if (this.queue.length > 0) {
      this.batch_scheduled = true;
      this.run(() => this.batch());
    }
    if (jobs.length === 0) {
      // A batch that conflicted took these jobs along: what was announced meanwhile is read now.
      this.syncIfNotified();
      return;
    }
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      for (const job of jobs) job.reject(toUnavailable(error));
      return;
    }
    // A checked-out client's connection error (PostgreSQL stopping) is an 'error' event the
    // pool does not listen to while it is ours: without this, it would end the process. The
    // query in flight fails too, and the batch answers store_unavailable.
    const onError = (error: Error) =>
      this.warn(`database connection lost during a commit (${error.message})`);
    client.on('error', onError);
    let done: Staging | null = null;
    let broken: unknown = null;
    this.batch_running = true;
    try {
      done = await this.commitJobs(client, jobs);
    } catch (error) {
      broken = error;
      await client.query('ROLLBACK').catch(() => {});
      // Nothing of the batch was committed: every caller is told so, a function that threw
      // included (it ran on a state that was not confirmed current).
      for (const job of jobs) job.reject(toUnavailable(error));
    } finally {
      this.batch_running = false;
      client.off('error', onError);
      // A client that failed is not given back for reuse (its connection may be gone).
      client.release(broken ? true : undefined);
    }
    if (done) this.answer(done);
    else this.syncIfNotified();
  }

  /**
   * Commits the jobs' records, optimistically first: staged on the replica as it is and
   * committed in one round trip if no other gateway committed meanwhile (the head lock is
   * held only inside PostgreSQL). On a conflict the answer holds what the replica missed:
   * undo, apply it, stage again. After OPTIMISTIC_TRIES conflicts in a row the head lock is
   * taken first (BEGIN ... FOR UPDATE, held across the round trips): then this gateway's
   * batch cannot lose to another's, so no batch waits forever. Throws with the replica as
   * it was (every attempt undone) when PostgreSQL fails.
   */
  private async commitJobs(client: pg.PoolClient, jobs: Job[]): Promise<Staging> {
    for (let attempt = 0; ; attempt++) {
      const locked = attempt >= OPTIMISTIC_TRIES;
      if (locked) {
        this.stats.locked++;
        await this.lockAndCatchUp(client);
      }
      const expected = this.store.state.seq;
      const staging = this.stageJobs(jobs);
      let missing: JournalRecord[];
      try {
        if (!locked && this.before_commit) await this.before_commit();
        const written = staging.staged.filter((s) => s.staged.record !== null);
        missing = await commitRecords(
          client,
          expected,
          written.map((s) => s.staged.record!),
          written.map((s) => s.staged.line),
          this.store.state,
        );
        if (locked) {
          if (missing.length > 0)
            throw new Error('invariant: the head moved while this gateway held its lock');
          await client.query('COMMIT');
        }
      } catch (error) {
        undoStaging(staging);
        throw error;
      }
      if (missing.length === 0) return staging;
      this.stats.conflicts++;
      undoStaging(staging);
      for (const record of missing) this.applyRecord(record);
      // More than a page behind: the rest the ordinary way.
      if (missing.length >= CATCH_UP_PAGE) await this.catchUp(client);
      // What was queued meanwhile goes along: the next attempt carries every waiting job of
      // this gateway, not only the first ones (the next batch would have to win a turn too).
      if (jobs.length < MAX_BATCH) jobs.push(...this.queue.splice(0, MAX_BATCH - jobs.length));
    }
  }

  /**
   * BEGIN, the head lock and the records after the replica's in one round trip (the simple
   * protocol takes the three statements; the log is read after the lock was granted, so it
   * holds everything committed before), then applied.
   */
  private async lockAndCatchUp(client: pg.PoolClient): Promise<void> {
    const after = this.store.state.seq;
    const answers = (await client.query(
      `BEGIN; SELECT seq FROM aihub_head WHERE id = 1 FOR UPDATE; SELECT seq, at, ops FROM aihub_log WHERE seq > ${after} ORDER BY seq LIMIT ${CATCH_UP_PAGE}`,
    )) as unknown as Array<pg.QueryResult<LogRow>>;
    const rows = answers[2]!.rows;
    for (const row of rows) this.applyRecord(recordOf(row));
    if (rows.length >= CATCH_UP_PAGE) await this.catchUp(client);
  }

  /** Answers a committed batch's callers. */
  private answer(done: Staging): void {
    this.batches++;
    // A function that threw is answered only now: the state it ran on was the committed one.
    for (const [job, error] of done.thrown) job.reject(error);
    // Acknowledged once the replica's journal has the records too (its indexes answer the
    // history reads, and they take a record once its line is written there, not fsynced:
    // see openPgStore): a client that reads its wallet history right after the answer finds
    // the posting. The queue does not wait for it. PostgreSQL has the records already, so a
    // local failure still acknowledges (the replica catches up from the log at start).
    for (const { job, staged: s } of done.staged) {
      if (!s.record) job.resolve(s.result);
      else
        this.store.publish(s).then(
          () => job.resolve(s.result),
          () => job.resolve(s.result),
        );
    }
    this.syncIfNotified();
  }

  /** Catches up if another gateway announced a commit this replica lacks and no batch is queued to bring it. */
  private syncIfNotified(): void {
    if (this.notified_seq > this.store.state.seq && !this.batch_scheduled)
      this.sync().catch(() => {});
  }

  /** Runs every job's function on the replica as it is now, each as its own transaction. */
  private stageJobs(jobs: readonly Job[]): Staging {
    const staging: Staging = { staged: [], thrown: new Map() };
    for (const job of jobs) {
      try {
        staging.staged.push({ job, staged: this.store.stage(job.fn) });
      } catch (error) {
        staging.thrown.set(job, error); // the function threw: nothing of it remains
      }
    }
    return staging;
  }

  /** Applies one record another gateway committed (the local journal's fsync is not what acknowledges: not awaited). */
  private applyRecord(record: JournalRecord): void {
    this.store.applyShared(record).catch(() => {});
  }

  commitStats(): SharedLogStats {
    return { batches: this.batches, ...this.stats };
  }

  /** LISTEN for other gateways' commits (and poll, in case a notification is missed). */
  async listen(poll_ms: number, live_ms = Math.max(5_000, LIVE_POLLS * poll_ms)): Promise<void> {
    this.poll_timer = setInterval(() => {
      if (this.closed) return;
      this.sync().catch(() => {});
      void this.elect();
      void this.heartbeat(live_ms);
      void this.pruneSeen();
    }, poll_ms);
    await this.elect();
    await this.heartbeat(live_ms);
    this.poll_timer.unref();
    await this.connectListener();
  }

  private async connectListener(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.database_url,
      application_name: 'aihub-gateway-listen',
    });
    client.on('error', () => {
      // Reconnected by the poll's next turn through connectListener; the poll keeps replicas fresh meanwhile.
      if (this.listener === client) this.listener = null;
      client.end().catch(() => {});
      if (!this.closed)
        setTimeout(() => void this.connectListener().catch(() => {}), 1_000).unref();
    });
    client.on('notification', (message) => {
      // One's own commits are announced too: the replica has them already. A queued or
      // running batch brings what it misses in its commit's answer (and catches up after
      // it if not: syncIfNotified), so no catch-up of its own then.
      const seq = Number(message.payload);
      if (seq > this.notified_seq) this.notified_seq = seq;
      if (seq > this.store.state.seq && !this.batch_scheduled && !this.batch_running)
        this.sync().catch(() => {});
    });
    try {
      await client.connect();
      await client.query('LISTEN aihub_log');
      this.listener = client;
    } catch {
      client.end().catch(() => {});
      if (!this.closed)
        setTimeout(() => void this.connectListener().catch(() => {}), 1_000).unref();
    }
  }

  /** Tries to take the leader lock (or keeps it); a lost connection loses it, to whichever gateway tries next. */
  private async elect(): Promise<void> {
    if (this.closed || this.electing || this.leader) return;
    this.electing = true;
    try {
      // One connection kept for it (not one per try): the lock lives and dies with it.
      let client = this.leader_client;
      if (!client) {
        const fresh = new pg.Client({
          connectionString: this.database_url,
          application_name: 'aihub-gateway-leader',
        });
        fresh.on('error', () => {
          if (this.leader_client === fresh) {
            this.leader_client = null;
            this.leader = false;
          }
          fresh.end().catch(() => {});
        });
        try {
          await fresh.connect();
        } catch {
          await fresh.end().catch(() => {});
          return;
        }
        client = this.leader_client = fresh;
      }
      const { rows } = await client.query<{ locked: boolean }>(
        'SELECT pg_try_advisory_lock($1) AS locked',
        [LEADER_LOCK],
      );
      if (rows[0]?.locked && !this.closed && this.leader_client === client) this.leader = true;
    } catch {
      // The connection failed: its 'error' handler dropped it; the next poll connects again.
    } finally {
      this.electing = false;
    }
  }

  /**
   * Renews this gateway's row in `aihub_gateways` and counts the live ones (one statement).
   * A failure keeps the last count: PostgreSQL down stops every gateway's commits anyway.
   */
  private async heartbeat(live_ms: number): Promise<void> {
    if (this.closed || this.beating) return;
    this.beating = true;
    try {
      const { rows } = await this.pool.query<{ live: string }>(
        `WITH beat AS (
           INSERT INTO aihub_gateways (id, seen_at) VALUES ($1, now())
           ON CONFLICT (id) DO UPDATE SET seen_at = now() RETURNING id
         ), gone AS (
           DELETE FROM aihub_gateways WHERE seen_at < now() - interval '${GONE_AFTER}' AND id <> $1
         )
         SELECT 1 + (SELECT count(*) FROM aihub_gateways
                     WHERE id <> $1 AND seen_at > now() - make_interval(secs => $2::float8 / 1000)) AS live
         FROM beat`,
        [this.gateway_id, live_ms],
      );
      const live = Number(rows[0]?.live);
      if (Number.isSafeInteger(live) && live >= 1) this.live_gateways = live;
    } catch {
      // Kept: the next poll tries again.
    } finally {
      this.beating = false;
    }
  }

  /**
   * Claims `key` until `until_ms`: one statement, true when the row was new or its claim had
   * gone stale by `now_ms` (both instants this gateway's clock, as the signatures' window is).
   */
  async claimOnce(key: string, until_ms: number, now_ms: number): Promise<boolean> {
    try {
      const { rowCount } = await this.pool.query(
        `INSERT INTO aihub_seen (k, until_at) VALUES ($1, to_timestamp($2::float8 / 1000))
         ON CONFLICT (k) DO UPDATE SET until_at = excluded.until_at
           WHERE aihub_seen.until_at < to_timestamp($3::float8 / 1000)`,
        [key, until_ms, now_ms],
      );
      return rowCount === 1;
    } catch (error) {
      throw toUnavailable(error);
    }
  }

  /** The leader deletes claims stale for a minute (a margin for clocks), in bounded statements. */
  private async pruneSeen(): Promise<void> {
    const now = Date.now();
    if (!this.leader || this.pruning_seen || now - this.seen_pruned_ms < SEEN_PRUNE_EVERY_MS)
      return;
    this.pruning_seen = true;
    this.seen_pruned_ms = now;
    try {
      for (;;) {
        const { rowCount } = await this.pool.query(
          `DELETE FROM aihub_seen WHERE k IN (
             SELECT k FROM aihub_seen WHERE until_at < now() - interval '1 minute' LIMIT ${SEEN_PRUNE_BATCH})`,
        );
        if ((rowCount ?? 0) < SEEN_PRUNE_BATCH || this.closed) break;
      }
    } catch {
      // The next turn tries again.
    } finally {
      this.pruning_seen = false;
    }
  }

  /** Stores `sealed` as the key check when there is none (or replaces it), and answers the one stored. */
  async keyCheck(sealed: string, replace: boolean): Promise<string> {
    // Two gateways starting at once: the second's statement waits for the first's row and, its
    // snapshot older than that row, sees none; the next statement does.
    for (let attempt = 0; ; attempt++) {
      const { rows } = await this.pool.query<{ sealed: string }>(
        replace
          ? `INSERT INTO aihub_key_check (id, sealed) VALUES (1, $1)
             ON CONFLICT (id) DO UPDATE SET sealed = excluded.sealed, updated_at = now() RETURNING sealed`
          : `WITH put AS (INSERT INTO aihub_key_check (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING RETURNING sealed)
             SELECT sealed FROM put UNION ALL SELECT sealed FROM aihub_key_check WHERE NOT EXISTS (SELECT 1 FROM put)`,
        [sealed],
      );
      if (rows[0]) return rows[0].sealed;
      if (attempt >= 3)
        throw new Error('the database has no encryption-key check after inserting one');
    }
  }

  async close(): Promise<void> {
    const beat = !this.closed;
    this.closed = true;
    // Leaving: the other gateways count one fewer at their next heartbeat, not after the
    // lapse. Bounded: with PostgreSQL down the row simply lapses, and the stop does not wait.
    if (beat) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.pool
          .query('DELETE FROM aihub_gateways WHERE id = $1', [this.gateway_id])
          .catch(() => {}),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, LEAVE_WAIT_MS))),
      ]);
      clearTimeout(timer);
    }
    this.leader = false;
    await this.leader_client?.end().catch(() => {});
    this.leader_client = null;
    if (this.poll_timer) clearInterval(this.poll_timer);
    await this.tail;
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => {});
    await this.pool.end().catch(() => {});
    this.release_lock();
  }
}

/**
 * Opens the PostgreSQL store: migrations, then the replica in `replica_dir`, kept from the
 * last run when it is this database's and agrees with its log (pg-replica.ts), else rebuilt
 * from the whole log; then it applies the log records after its own, and commits go through
 * the log.
 */
export async function openPgStore(database_url: string, options: PgStoreOptions): Promise<Store> {
  const warn = options.warn ?? (() => {});
  if (options.lock_dir !== undefined) ensurePrivateDataDir(options.lock_dir);
  const release_lock = options.lock_dir !== undefined ? acquireLock(options.lock_dir) : () => {};
  const pool = openPool(database_url, {
    ...(options.pool_max !== undefined ? { max: options.pool_max } : {}),
    ...(options.statement_timeout_ms !== undefined
      ? { statement_timeout_ms: options.statement_timeout_ms }
      : {}),
    warn,
  });
  let store: Store | null = null;
  try {
    await migrateSchema(pool);
    const replica = await openReplica(pool, options, warn, (after) => readLog(pool, after));
    store = replica.store;
    const log = new PgLog(store, pool, database_url, warn, release_lock, options.gateway_id);
    log.opened = replica.opened;
    store.attachShared(log);
    await log.listen(options.poll_ms ?? 1_000, options.live_ms);
    return store;
  } catch (error) {
    // What the replica applied came from the log: a close stamps it clean (a later open catches up).
    if (store) await store.close().catch(() => {});
    await pool.end().catch(() => {});
    release_lock();
    throw error;
  }
}

/** The replica dir of a data dir for one database (one gateway per data dir, as ever). */
export function replicaDir(data_dir: string): string {
  return join(data_dir, 'pg-replica');
}

/** A database URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the database URL';
  }
}
