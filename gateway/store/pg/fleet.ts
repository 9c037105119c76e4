// The gateways sharing one database (docs/store-postgres.md, "Many gateways"): each renews a
// heartbeat (aihub.gateways) and counts the live ones; background work is claimed item by item
// (aihub.claims), a claim free once its lease ends or its gateway is no longer live; at start
// the platform shards of gateways that are gone are folded.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { PgDb } from './pool.js';

/** Heartbeats a gateway may miss before it no longer counts as live (the default of live_ms). */
export const LIVE_POLLS = 5;
const GONE_AFTER = '1 hour';
/** The advisory lock that serializes folding platform shards ('AIHS'). */
const SHARD_FOLD_LOCK = 0x41494853;
const LEAVE_WAIT_MS = 1_000;

/**
 * A name for this store among every store of every gateway: the claimant of its claims and
 * the prefix of its commit ids. Two stores of one name (two in one process, as the unit tests
 * open them; two gateways given the same AIHUB_GATEWAY_ID; two containers sharing the host's
 * hostname, each pid 1) would otherwise each take the other's claims as their own to renew,
 * and hold one item at once (pg-store's claim test did, one run in a few: whichever statement
 * saw the other's committed claim took it).
 */
export function newClaimant(): string {
  return `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
}

export class Fleet {
  /** Live gateways at the last heartbeat, this one included. */
  live_gateways = 1;
  private beating = false;

  constructor(
    private readonly db: PgDb,
    private readonly gateway_id: string,
    /** Who holds a claim: this store (newClaimant), not its gateway's name. */
    private readonly claimant: string,
    /** How recent a gateway's heartbeat must be for it to count as live, ms. */
    private readonly live_ms: number,
    private readonly warn: (message: string) => void,
  ) {}

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
  async foldShards(): Promise<void> {
    const client = await this.db.pool.connect();
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
        [this.gateway_id, this.live_ms],
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
      this.db.sent('prune', 5);
      const folded = Number(rows[0]?.folded ?? 0);
      if (folded > 0) this.db.stats.shards_folded += folded;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      // Not needed to serve: the next start folds them.
      this.warn(`platform shards not folded (${(error as Error).message})`);
    } finally {
      client.release();
    }
  }

  /** Renews this gateway's heartbeat and counts the live ones (one statement). */
  async heartbeat(): Promise<void> {
    if (this.db.closed || this.beating) return;
    this.beating = true;
    try {
      this.db.sent('heartbeat');
      const { rows } = await this.db.pool.query<{ live: string }>(
        `WITH beat AS (
           INSERT INTO aihub.gateways (id, seen_at) VALUES ($1, now())
           ON CONFLICT (id) DO UPDATE SET seen_at = now() RETURNING id
         ), gone AS (
           DELETE FROM aihub.gateways WHERE seen_at < now() - interval '${GONE_AFTER}' AND id <> $1
         )
         SELECT 1 + (SELECT count(*) FROM aihub.gateways
                     WHERE id <> $1 AND seen_at > now() - make_interval(secs => $2::float8 / 1000)) AS live
         FROM beat`,
        [this.gateway_id, this.live_ms],
      );
      const live = Number(rows[0]?.live);
      if (Number.isSafeInteger(live) && live >= 1) this.live_gateways = live;
      this.db.outage.served();
    } catch (error) {
      // Kept: the next poll tries again. An outage starts with its first failure, even with
      // no request waiting.
      this.db.outage.failed(error);
    } finally {
      this.beating = false;
    }
  }

  /** This gateway's heartbeat row goes (it closes), waited for LEAVE_WAIT_MS at most. */
  async leave(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.db.pool
        .query('DELETE FROM aihub.gateways WHERE id = $1', [this.gateway_id])
        .catch(() => {}),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, LEAVE_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

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
    const rows = await this.db.query<{ id: string }>(
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
      [kind, ids, `${this.gateway_id}/${this.claimant}`, lease_ms, this.live_ms],
      'claim',
    );
    return rows.map((row) => row.id);
  }

  async release(kind: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(
      'DELETE FROM aihub.claims WHERE kind = $1 AND id = ANY($2) AND gateway = $3',
      [kind, ids, `${this.gateway_id}/${this.claimant}`],
      'claim',
    );
  }

  async withClaim<R>(
    item: { kind: string; id: string; lease_ms: number },
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
}
