// The PostgreSQL store's locked path: a transaction beaten OPTIMISTIC_TRIES times commits
// under locks it takes first, so that it cannot lose again (docs/store-postgres.md).
import type { HistoryTags } from '../history-tags.js';
import type pg from 'pg';
import type { CommitAnswers } from './answers.js';
import { BatchState, type PgCache } from './cache.js';
import { batchText, batchWrites, COMMIT_STATEMENT, encodeBatch } from './commit.js';
import type { Flights } from './flights.js';
import { isConflict, runJob, type AnswerRow, type Job, type Kept } from './jobs.js';
import { lockOf } from './keys.js';
import { MAX_LOAD_ROUNDS, type CacheLoads } from './loads.js';
import { refusedByServer, toUnavailable, type PgDb } from './pool.js';

export class LockedPath {
  constructor(
    private readonly db: PgDb,
    private readonly cache: PgCache,
    private readonly loads: CacheLoads,
    private readonly flights: Flights,
    private readonly answers: CommitAnswers,
    private readonly options: {
      gateway_id: string;
      now: () => Date;
      history_tags: HistoryTags;
      /** A commit id no other statement of any gateway carries. */
      commitId: () => string;
      /** Runs the queue again (this transaction's keys are free). */
      kick: () => void;
    },
  ) {}

  /**
   * After OPTIMISTIC_TRIES conflicts a transaction commits under locks it takes first, so that
   * it cannot lose again: BEGIN; its keys locked (in order) and their current values loaded
   * through the same connection; the function run on them; if it touched keys not locked yet,
   * those are locked and loaded too and it runs again; then the commit statement (its own
   * locks are held: nothing it read can have changed) and COMMIT.
   */
  send(job: Job): void {
    const { db, cache, flights, answers, options } = this;
    const keys = new Set(job.keys ?? []);
    const { flight, settle } = flights.add(keys);
    db.stats.locked++;
    const slot = flights.takeSlot();
    let last: Kept | null = null;
    let written_last = new Set<string>();
    let cid: string | null = null;
    /** COMMIT was sent: a failure now leaves the outcome in doubt. */
    let committing = false;
    let answer: AnswerRow[] = [];
    void (async () => {
      let client: pg.PoolClient;
      try {
        client = await db.pool.connect();
      } catch (error) {
        answers.refuse([job], error);
        return;
      }
      const onError = () => {};
      client.on('error', onError);
      let broken = false;
      try {
        db.sent('locked');
        await client.query('BEGIN');
        const locked = new Set<string>();
        for (let round = 0; ; round++) {
          if (round > MAX_LOAD_ROUNDS) throw new Error('a transaction kept reaching for new keys');
          const todo = [...keys].filter((key) => !locked.has(key) && key[0] !== 'p');
          if (todo.length > 0) {
            db.sent('locked', 2);
            await client.query(
              'SELECT count(pg_advisory_xact_lock(x)) FROM (SELECT unnest($1::bigint[]) AS x ORDER BY 1) s',
              [todo.map((key) => String(lockOf(key)))],
            );
            for (const key of todo) locked.add(key);
            await this.loads.loadLocked(client, new Set(todo.filter((key) => /^[rbpi]/.test(key))));
          }
          const batch = new BatchState();
          const kept = runJob(cache, db.stats, options.now, job, batch);
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
            cache,
            [run],
            `${options.gateway_id}:${slot}`,
            options.gateway_id,
            options.history_tags,
          );
          written_last = written;
          if (batchWrites(encoded)) encoded.cid = cid = options.commitId();
          db.sent('commit');
          db.sent('locked');
          db.stats.keys_locked += encoded.locks.length;
          const { rows } = await client.query<AnswerRow>({
            ...COMMIT_STATEMENT,
            values: [batchText(encoded)],
          });
          answer = rows;
          const conflict = rows.some((row) => isConflict(row.kind));
          committing = !conflict;
          await client.query(conflict ? 'ROLLBACK' : 'COMMIT');
          db.outage.served();
          answers.answered([kept], written, rows);
          return;
        }
      } catch (error) {
        broken = true;
        await client.query('ROLLBACK').catch(() => {});
        // COMMIT sent and no answer: the commit statement's answer is known, its outcome is not.
        const in_doubt = committing && cid !== null && !refusedByServer(error);
        await answers.lockedFailed(job, last, error, in_doubt ? cid : null, written_last, answer);
      } finally {
        client.off('error', onError);
        client.release(broken ? true : undefined);
      }
    })()
      .catch((error: unknown) => job.reject(toUnavailable(error)))
      .finally(() => {
        flights.landed(flight, settle, slot);
        options.kick();
      });
  }
}
