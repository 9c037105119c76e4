// Keys every gateway of one database must agree on, outside the tables: a signed request's
// signature, claimed once across the fleet (issue #25; aihub.seen), the encryption-key check
// (aihub.key_check), and the pruning of stale signatures and commit ids.
import type { Fleet } from './fleet.js';
import { toUnavailable, type PgDb } from './pool.js';

const SEEN_PRUNE_EVERY_MS = 10_000;
const SEEN_PRUNE_BATCH = 10_000;
/** How long commit ids are kept (aihub.commits, migration 6): far past any lookup. */
const COMMIT_IDS_KEPT = '1 hour';

export class SharedKeys {
  private pruning_seen = false;
  private seen_pruned_ms = 0;

  constructor(
    private readonly db: PgDb,
    private readonly fleet: Fleet,
  ) {}

  /** Claims a signed request's signature until `until_ms` (issue #25): true when no claim of it is in force. */
  async claimShared(key: string, until_ms: number, now_ms: number): Promise<boolean> {
    this.db.sent('signature');
    try {
      const { rowCount } = await this.db.pool.query(
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
  async pruneSeen(): Promise<void> {
    const now = Date.now();
    if (this.db.closed || this.pruning_seen || now - this.seen_pruned_ms < SEEN_PRUNE_EVERY_MS)
      return;
    this.pruning_seen = true;
    this.seen_pruned_ms = now;
    try {
      if ((await this.fleet.claim('prune', ['seen'], SEEN_PRUNE_EVERY_MS)).length === 0) return;
      for (;;) {
        const rows = await this.db.query(
          `DELETE FROM aihub.seen WHERE k IN (
             SELECT k FROM aihub.seen WHERE until_at < now() - interval '1 minute' LIMIT ${SEEN_PRUNE_BATCH})`,
          [],
          'prune',
        );
        if (rows.length < SEEN_PRUNE_BATCH || this.db.closed) break;
      }
      // Commit ids: looked up for at most outcome_wait_ms (≤ 60 s) after their commit.
      for (;;) {
        const rows = await this.db.query(
          `DELETE FROM aihub.commits WHERE id IN (
             SELECT id FROM aihub.commits WHERE at < now() - interval '${COMMIT_IDS_KEPT}' LIMIT ${SEEN_PRUNE_BATCH})
           RETURNING 1`,
          [],
          'prune',
        );
        if (rows.length < SEEN_PRUNE_BATCH || this.db.closed) break;
      }
    } catch {
      // The next turn tries again.
    } finally {
      this.pruning_seen = false;
    }
  }

  async sharedKeyCheck(sealed: string, replace = false): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const rows = await this.db.query<{ sealed: string }>(
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
}
