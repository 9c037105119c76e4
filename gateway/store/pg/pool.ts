// The PostgreSQL store's side of the wire: the pool of connections, the statements sent on it
// counted by what they are for, and what a failed statement means (refused by the server, or
// the connection gone: then a statement sent may have committed). Every other part of the
// store (pg/store.ts) sends its statements through one PgDb.
import pg from 'pg';
import { StoreUnavailableError } from '../../kernel/errors.js';
import { ScopedStorage } from '../../kernel/scoped-storage.js';
import { holdsNul } from './keys.js';
import type { Outage } from './outage.js';

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
  | 'commit_async'
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

/** What the PostgreSQL store counts about itself (`PgStore.stats`; /metrics, tests, the bench). */
export interface PgStats {
  batches: number;
  conflicts: number;
  locked: number;
  loads: number;
  rows_loaded: number;
  invalidations: number;
  statements: number;
  /** Platform shard rows of gone gateways folded at start. */
  shards_folded: number;
  /** The same statements by kind (`StatementKind`): /metrics labels them. */
  statements_by_kind: Record<StatementKind, number>;
  /** Advisory locks the commit statements took (one per key a batch read or writes). */
  keys_locked: number;
  /** Transactions answered without a commit statement (answeredFresh). */
  fresh_answers: number;
  /** Runs of transaction functions (runJob), each run counted. */
  runs: number;
  /** Commits whose answer was lost, by what the lookup of their id found. */
  in_doubt: { committed: number; not_applied: number; unknown: number };
}

export function newStats(): PgStats {
  return {
    batches: 0,
    conflicts: 0,
    locked: 0,
    loads: 0,
    rows_loaded: 0,
    invalidations: 0,
    statements: 0,
    shards_folded: 0,
    statements_by_kind: Object.create(null) as Record<StatementKind, number>,
    keys_locked: 0,
    fresh_answers: 0,
    runs: 0,
    in_doubt: { committed: 0, not_applied: 0, unknown: 0 },
  };
}

/**
 * Set while periodic work runs (`PgStore.background`): its statements are counted as
 * `background`. Switched on only while such work runs (kernel/scoped-storage.ts: an enabled
 * AsyncLocalStorage costs every promise of the process on Node 20, requests' included).
 */
const periodic = new ScopedStorage<true>();

/** Runs `fn` outside any periodic work's context (its statements count as what they are). */
export const outsidePeriodicWork = (fn: () => void): void => periodic.exit(fn);

export function toUnavailable(error: unknown): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  return new StoreUnavailableError(
    `the database is unavailable (${(error as Error)?.message ?? String(error)})`,
    { cause: error },
  );
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

/** The pool, the outage watch and the statement counts, shared by the parts of one PgStore. */
export class PgDb {
  /** Set once the store closes: no part starts new work. */
  closed = false;

  constructor(
    readonly pool: pg.Pool,
    readonly database_url: string,
    readonly outage: Outage,
    readonly stats: PgStats,
  ) {}

  /** Counts `n` statements of `kind` sent to the database. */
  sent(sent_kind: StatementKind, n = 1): void {
    const kind = periodic.get() ? 'background' : sent_kind;
    this.stats.statements += n;
    this.stats.statements_by_kind[kind] = (this.stats.statements_by_kind[kind] ?? 0) + n;
  }

  /** One statement on the pool, counted as `kind`; a failure is a StoreUnavailableError. */
  async query<R extends pg.QueryResultRow>(
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
      this.outage.failed(error, periodic.get() || kind === 'load' ? 0 : 1);
      throw toUnavailable(error);
    }
  }

  /** Runs periodic work, its statements counted as `background`. */
  background<T>(fn: () => Promise<T>): Promise<T> {
    return periodic.run(true, fn);
  }
}
