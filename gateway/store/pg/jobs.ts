// A transaction of the PostgreSQL store as its batch scheduler holds it (a Job), one run of
// its function on the cache (runJob: reads recorded, writes staged), and what a commit
// statement answers (AnswerRow) or how it fails (CommitFailure).
import type { RequestScope } from '../../kernel/request-scope.js';
import type { Tx } from '../types.js';
import { CacheTx, Run, type BatchState, type PgCache } from './cache.js';
import type { PgStats } from './pool.js';

export interface Job {
  fn: (tx: Tx) => unknown;
  /** false: its commit need not wait for the WAL flush (TransactOptions.durable). */
  durable: boolean;
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
export interface Kept {
  job: Job;
  run: Run;
  result: unknown;
  error: unknown;
  threw: boolean;
}

/** A row of a commit statement's answer (pg/commit.ts): a conflict's current value, or a new version. */
export type AnswerRow = {
  kind: string;
  k1: string;
  k2: string | null;
  ver: string;
  val: string | null;
};

/** Whether an answer row says the batch lost (a row, balance, platform sum or index key changed). */
export const isConflict = (kind: string) =>
  kind === 'R' || kind === 'B' || kind === 'P' || kind === 'I';

/**
 * A commit statement that failed: `in_doubt` when it may have been applied (it was sent and
 * the connection ended before the answer; not when it never left, or the server refused it
 * with an ERROR, which aborts its transaction).
 */
export class CommitFailure extends Error {
  constructor(
    readonly error: unknown,
    readonly in_doubt: boolean,
  ) {
    super((error as Error)?.message ?? String(error), { cause: error });
  }
}

/** Runs a job's function on the cache as a transaction of `batch`. */
export function runJob(
  cache: PgCache,
  stats: PgStats,
  now: () => Date,
  job: Job,
  batch: BatchState,
): Kept {
  stats.runs++;
  const run = new Run('tx', 0, batch);
  run.sync_loads = job.miss_rounds >= 2;
  job.keys = run.keys;
  job.now ??= now();
  const tx = new CacheTx(cache, run, job.now);
  const previous = cache.current;
  cache.current = run;
  try {
    const result = job.fn(tx);
    return { job, run, result, error: undefined, threw: false };
  } catch (error) {
    return { job, run, result: undefined, error, threw: true };
  } finally {
    cache.current = previous;
  }
}
