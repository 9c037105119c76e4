// The PostgreSQL store's batch scheduler (docs/store-postgres.md, "Batches"): transact(fn)
// queues a job; the pump runs the queued jobs on the cache, loads what they missed in one
// statement, and sends the runs that are ready as ONE commit statement (pg/commit.ts). Batches
// whose keys are disjoint are in flight at once (pg/flights.ts); a transaction beaten too
// often takes the locked path (pg/locked.ts); answers are pg/answers.ts's.
import type { HistoryTags } from '../history-tags.js';
import type pg from 'pg';
import { StoreUnavailableError } from '../../kernel/errors.js';
import { requestScope } from '../../kernel/request-scope.js';
import type { Tx } from '../types.js';
import { CommitAnswers } from './answers.js';
import { BatchState, type PgCache } from './cache.js';
import {
  batchText,
  batchWrites,
  COMMIT_STATEMENT,
  COMMIT_STATEMENT_ASYNC,
  encodeBatch,
} from './commit.js';
import { Flights } from './flights.js';
import { CommitFailure, runJob, type AnswerRow, type Job, type Kept } from './jobs.js';
import type { CacheLoads } from './loads.js';
import { LockedPath } from './locked.js';
import { outsidePeriodicWork, refusedByServer, type PgDb } from './pool.js';

/** Runs per batch at most. */
const MAX_BATCH = 256;
/** Optimistic attempts of a transaction before it commits under locks taken first. */
export const OPTIMISTIC_TRIES = 8;

export interface BatchOptions {
  gateway_id: string;
  now: () => Date;
  warn: (message: string, fields?: Record<string, unknown>) => void;
  /** Write batches in flight at once. */
  max_in_flight: number;
  /** Write batches in flight at once that are not stalled. */
  pipeline_depth: number;
  stall_ms: number;
  outcome_wait_ms: number;
  /** What the rooms tag history with (payments/history-tags.ts). */
  history_tags: HistoryTags;
}

export class Batches {
  private readonly queue: Job[] = [];
  readonly flights: Flights;
  private readonly answers: CommitAnswers;
  private readonly locked: LockedPath;
  private pumping = false;
  private commit_seq = 0;
  /**
   * Test hook: awaited before each optimistic commit statement is sent. A test commits through
   * another store here to make the statement conflict, deterministically.
   * @internal
   */
  before_commit: (() => Promise<void>) | null = null;

  constructor(
    private readonly db: PgDb,
    private readonly cache: PgCache,
    private readonly loads: CacheLoads,
    /** Who commits: this store's claimant name, the prefix of its commit ids. */
    private readonly claimant: string,
    private readonly options: BatchOptions,
  ) {
    const kick = () => this.kick();
    this.flights = new Flights(options.pipeline_depth, options.stall_ms, kick);
    this.answers = new CommitAnswers(db, cache, {
      warn: options.warn,
      outcome_wait_ms: options.outcome_wait_ms,
      requeue: (jobs) => this.queue.unshift(...jobs),
    });
    this.locked = new LockedPath(db, cache, loads, this.flights, this.answers, {
      gateway_id: options.gateway_id,
      now: options.now,
      history_tags: options.history_tags,
      commitId: () => this.commitId(),
      kick,
    });
  }

  transact<T>(fn: (tx: Tx) => T, durable = true, scope = requestScope()): Promise<T> {
    if (this.db.closed) return Promise.reject(new StoreUnavailableError('the store is closing'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({
        fn,
        durable,
        scope,
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
    outsidePeriodicWork(() =>
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
    const flights = this.flights;
    while (
      !this.db.closed &&
      flights.size < this.options.max_in_flight &&
      flights.live() < this.options.pipeline_depth
    ) {
      const batch = new BatchState();
      const kept: Kept[] = [];
      // The jobs whose runs missed keys in this pass, and those keys: ONE load for all of them
      // (a burst of requests on a cold cache costs one statement, not one per request).
      const missed: Job[] = [];
      const misses = new Set<string>();
      for (let i = 0; i < this.queue.length && kept.length < MAX_BATCH;) {
        const job = this.queue[i]!;
        if (job.waiting || (job.blocked && flights.holds(job.blocked))) {
          i++;
          continue;
        }
        if (job.conflicts >= OPTIMISTIC_TRIES) {
          // Beaten too often: it runs alone, under its keys' locks taken first.
          this.queue.splice(i, 1);
          this.locked.send(job);
          continue;
        }
        const outcome = runJob(this.cache, this.db.stats, this.options.now, job, batch);
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
        if (flights.holds(run.keys)) {
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
    this.db.stats.fresh_answers++;
    if (outcome.threw) {
      run.rollback(); // a function that throws is undone, its tx.onUndo callbacks with it
      job.reject(outcome.error);
    } else {
      run.undos.length = 0; // answered: what it did outside the state stands
      job.resolve(outcome.result);
    }
    return true;
  }

  /** Loads what the jobs' runs missed (one statement), then lets them run again. */
  private waitFor(jobs: Job[], misses: Set<string>): void {
    this.loads.load(misses).then(
      () => {
        for (const job of jobs) job.waiting = false;
        this.kick();
      },
      (error: unknown) => {
        for (const job of jobs) {
          const at = this.queue.indexOf(job);
          if (at >= 0) this.queue.splice(at, 1);
        }
        this.answers.refuse(jobs, error);
        this.kick();
      },
    );
  }

  /** Commits a batch; its flight holds its keys until the answer. */
  private send(batch: BatchState, kept: Kept[]): void {
    const runs = kept.map((k) => k.run);
    const { flight, settle } = this.flights.add(batch.keys);
    const slot = this.flights.takeSlot();
    const { batch: encoded, written } = encodeBatch(
      this.cache,
      runs,
      `${this.options.gateway_id}:${slot}`,
      this.options.gateway_id,
      this.options.history_tags,
    );
    const empty =
      encoded.locks.length === 0 &&
      encoded.pr.length === 0 &&
      encoded.post.length === 0 &&
      encoded.hist.length === 0 &&
      encoded.meta.length === 0 &&
      encoded.pool.length === 0;
    if (!empty) this.db.stats.keys_locked += encoded.locks.length;
    const cid = !empty && batchWrites(encoded) ? this.commitId() : null;
    if (cid !== null) encoded.cid = cid;
    const hook = this.before_commit;
    const work = empty
      ? Promise.resolve([] as AnswerRow[])
      : (hook ? hook() : Promise.resolve()).then(() =>
          // Without its WAL flush only when no commit of the batch asked for durability.
          this.commitStatement(
            batchText(encoded),
            kept.some((k) => k.job.durable),
          ),
        );
    work
      .then(
        (rows) => {
          if (!empty) this.db.outage.served();
          this.answers.answered(kept, written, rows);
        },
        (error: unknown) => this.answers.unanswered(kept, written, error, cid),
      )
      .finally(() => {
        this.flights.landed(flight, settle, slot);
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
  private async commitStatement(text: string, durable: boolean): Promise<AnswerRow[]> {
    let client: pg.PoolClient;
    try {
      client = await this.db.pool.connect();
    } catch (error) {
      throw new CommitFailure(error, false);
    }
    // A checked-out client whose connection drops emits 'error' (the query in flight fails
    // with it); unheard, it would end the process.
    const onError = () => {};
    client.on('error', onError);
    this.db.sent(durable ? 'commit' : 'commit_async');
    try {
      const { rows } = await client.query<AnswerRow>({
        ...(durable ? COMMIT_STATEMENT : COMMIT_STATEMENT_ASYNC),
        values: [text],
      });
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
   * Lets the commits queued and in flight finish, for at most until `deadline_ms` (a store
   * closing), then refuses the rest: call with `db.closed` about to be set.
   */
  async drain(deadline_ms: number): Promise<void> {
    while ((this.queue.length > 0 || this.flights.size > 0) && Date.now() < deadline_ms) {
      if (this.flights.size > 0) await this.flights.quiesce();
      else await new Promise((resolve) => setImmediate(resolve));
      if (this.queue.every((job) => job.waiting) && this.flights.size === 0 && !this.loads.busy)
        break;
    }
  }

  /** Refuses what is still queued (the store closed). */
  refuseQueued(): void {
    for (const job of this.queue.splice(0))
      job.reject(new StoreUnavailableError('the store is closing'));
  }
}
