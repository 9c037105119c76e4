// What a commit statement's answer does (docs/store-postgres.md, "An in-doubt commit"): a
// batch committed (versions and values into the cache, its callers answered), lost (a
// conflict: what differed into the cache, its transactions queued again), refused (nothing
// applied: 503 store_unavailable), or in doubt (sent, the answer lost: its commit id looked
// up until the outcome is known, else 503 store_outcome_unknown).
import pg from 'pg';
import { StoreOutcomeUnknownError, StoreUnavailableError } from '../../kernel/errors.js';
import type { PgCache } from './cache.js';
import { CommitFailure, isConflict, type AnswerRow, type Job, type Kept } from './jobs.js';
import type { PgDb } from './pool.js';

/** The default of PgStoreOptions.outcome_wait_ms. */
export const OUTCOME_WAIT_MS = 10_000;
/** Transactions put back to run again at most this many times after their commit proved not applied. */
const MAX_DOUBTS = 1;

/**
 * The lookup of a commit id whose answer was lost: inserts it as a fence. A conflict means the
 * commit inserted it (committed; if the commit is still running the insert waits for its
 * end); an insert means it had not, and the commit can no longer (its INSERT of the id fails).
 */
const FENCE = `WITH fence AS (
  INSERT INTO aihub.commits (id, fenced) VALUES ($1, true) ON CONFLICT (id) DO NOTHING RETURNING 1)
SELECT EXISTS (SELECT 1 FROM fence) AS fenced`;

export class CommitAnswers {
  constructor(
    private readonly db: PgDb,
    private readonly cache: PgCache,
    private readonly options: {
      warn: (message: string, fields?: Record<string, unknown>) => void;
      outcome_wait_ms: number;
      /** Puts jobs back at the head of the queue, to run again. */
      requeue: (jobs: Job[]) => void;
    },
  ) {}

  /**
   * A commit or load that failed, known not applied: what each of its callers is answered (503
   * store_unavailable, saying "nothing was changed" when its request committed nothing before).
   * Logged as part of an outage, not once per failure.
   */
  refuse(jobs: readonly Job[], error: unknown): void {
    this.db.outage.failed(error, jobs.length);
    const cause = error instanceof CommitFailure ? error.error : error;
    const message = `the database is unavailable (${(cause as Error)?.message ?? String(cause)})`;
    for (const job of jobs)
      job.reject(new StoreUnavailableError(message, { cause, scope: job.scope }));
  }

  /** A batch's answer: committed (versions and values into the cache, callers answered), or a conflict. */
  answered(kept: Kept[], written: Set<string>, rows: AnswerRow[]): void {
    const stats = this.db.stats;
    if (rows.some((row) => isConflict(row.kind))) {
      stats.conflicts++;
      for (let i = kept.length - 1; i >= 0; i--) if (!kept[i]!.threw) kept[i]!.run.rollback();
      this.cache.load_seq++;
      for (const row of rows) this.putAnswered(row);
      for (const k of kept) {
        k.job.conflicts++;
        k.job.now = null;
      }
      this.options.requeue(kept.map((k) => k.job));
      return;
    }
    stats.batches++;
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
   * A batch's commit failed. Not applied: its runs are undone and its callers refused. In
   * doubt (sent, no answer): its commit id is looked up first (resolveCommit), the batch's keys
   * still held; committed, its callers get their results as if the answer had come; proved
   * not applied, its transactions run again (once); not learnt within outcome_wait_ms, they
   * are answered store_outcome_unknown.
   */
  async unanswered(
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
      this.db.outage.failed(error, jobs.length);
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
    this.options.requeue(again);
    const refused = jobs.filter((job) => !again.includes(job));
    if (refused.length > 0) this.refuse(refused, error);
  }

  /**
   * The locked path failed: `cid` is set when its COMMIT was sent and not answered (then it
   * is looked up); `answer` is its commit statement's answer, what a commit brought.
   */
  async lockedFailed(
    job: Job,
    last: Kept | null,
    error: unknown,
    cid: string | null,
    written: Set<string>,
    answer: AnswerRow[],
  ): Promise<void> {
    const outcome = cid !== null ? await this.resolveCommit(cid) : 'not_applied';
    if (outcome === 'committed' && last) {
      this.db.outage.served();
      this.answered([last], written, answer);
      return;
    }
    if (last && !last.threw) last.run.rollback();
    if (outcome !== 'unknown') return this.refuse([job], error);
    this.db.outage.failed(error, 1);
    job.reject(
      new StoreOutcomeUnknownError(`the outcome of commit ${cid} is unknown`, {
        cause: error,
        scope: job.scope,
      }),
    );
  }

  /**
   * Looks up a commit id whose answer was lost, until outcome_wait_ms has passed: a fresh
   * connection each try (the pool's may be the broken ones), tries spaced 50 ms doubling to
   * 500 ms.
   */
  private async resolveCommit(cid: string): Promise<'committed' | 'not_applied' | 'unknown'> {
    const deadline = Date.now() + this.options.outcome_wait_ms;
    let pause_ms = 50;
    let outcome: 'committed' | 'not_applied' | 'unknown' = 'unknown';
    for (;;) {
      const left_ms = deadline - Date.now();
      if (left_ms <= 0) break;
      const client = new pg.Client({
        connectionString: this.db.database_url,
        connectionTimeoutMillis: Math.max(1, Math.min(left_ms, 5_000)),
        query_timeout: left_ms,
        application_name: 'aihub-gateway-lookup',
      });
      client.on('error', () => {}); // the query in flight fails with it
      try {
        await client.connect();
        this.db.sent('lookup');
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
    this.db.stats.in_doubt[outcome]++;
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
    this.db.outage.served();
    this.db.stats.batches++;
    this.cache.load_seq++;
    this.cache.settle(written);
    for (const { run } of kept) {
      for (const key of run.keys) this.cache.invalidate(key);
      for (const key of run.written) this.cache.invalidate(key);
      for (const key of run.deltas.keys()) this.cache.invalidate(key);
    }
    this.settleJobs(kept);
  }
}
