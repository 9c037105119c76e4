// The PostgreSQL store's tables (schema `aihub`) and the runner of its migrations
// (docs/store-postgres.md, "What is in the database"). The commit statement the baseline
// creates is in commit-function.ts.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { COMMIT_FUNCTION } from './commit-function.js';
import { checkFieldName } from './keys.js';

/** Held while migrations run: a second gateway starting at the same moment waits for the first. */
export const MIGRATION_LOCK = 0x41494855; // 'AIHU', as the #18 layout's

/** A migration of the schema `aihub`: applied once, in its own transaction, in version order. */
export interface Migration {
  version: number;
  sql: string;
}

/**
 * Tallies of the payment transactions by service and status, so that a list's total over
 * every account (the admin list, its filters by service or status) is a read of a few rows,
 * not a count of every transaction (`bench:postgres-start` measured 635 to 1,430 ms for the
 * first page of /admin/transactions on 5,000,000 transactions without them). Kept by triggers
 * on aihub.rows (statement triggers: one upsert per tag per statement), each backend adding to
 * its own shard (its pid), so that no two transactions ever wait for one tally row; shards of
 * gone backends are folded at start (PgStore.foldShards). A total is the sum of a tag's shards.
 */
const TALLIES = `
  CREATE TABLE aihub.tallies (tag text NOT NULL, shard int NOT NULL, n bigint NOT NULL, PRIMARY KEY (tag, shard));
  CREATE FUNCTION aihub.txn_tags(r json) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY['all', 'service:' || coalesce(r->>'service', ''), 'status:' || coalesce(r->>'status', ''),
                 'service+status:' || coalesce(r->>'service', '') || ':' || coalesce(r->>'status', '')]
  $$;
  -- Statement triggers with transition tables: one upsert per tag per statement, however
  -- many rows it wrote (a row trigger upserted the same tally rows once per row: a bulk
  -- insert in one transaction, as migrate's, grew each row's version chain and went
  -- quadratic). Tags in one order: a transaction's tally rows are its backend's alone.
  CREATE FUNCTION aihub.tally_txns() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'INSERT' THEN
      INSERT INTO aihub.tallies AS t (tag, shard, n)
      SELECT tag, pg_backend_pid(), count(*) FROM new_rows r, unnest(aihub.txn_tags(r.row)) AS tag
      WHERE r.tbl = 'payment_txns' GROUP BY tag ORDER BY tag
      ON CONFLICT (tag, shard) DO UPDATE SET n = t.n + excluded.n;
    ELSIF TG_OP = 'UPDATE' THEN
      INSERT INTO aihub.tallies AS t (tag, shard, n)
      SELECT tag, pg_backend_pid(), sum(d) FROM (
        SELECT tag, 1 AS d FROM new_rows r, unnest(aihub.txn_tags(r.row)) AS tag WHERE r.tbl = 'payment_txns'
        UNION ALL
        SELECT tag, -1 FROM old_rows r, unnest(aihub.txn_tags(r.row)) AS tag WHERE r.tbl = 'payment_txns'
      ) c GROUP BY tag HAVING sum(d) <> 0 ORDER BY tag
      ON CONFLICT (tag, shard) DO UPDATE SET n = t.n + excluded.n;
    ELSE
      INSERT INTO aihub.tallies AS t (tag, shard, n)
      SELECT tag, pg_backend_pid(), -count(*) FROM old_rows r, unnest(aihub.txn_tags(r.row)) AS tag
      WHERE r.tbl = 'payment_txns' GROUP BY tag ORDER BY tag
      ON CONFLICT (tag, shard) DO UPDATE SET n = t.n + excluded.n;
    END IF;
    RETURN NULL;
  END $$;
  CREATE TRIGGER txns_tally_insert AFTER INSERT ON aihub.rows REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION aihub.tally_txns();
  CREATE TRIGGER txns_tally_update AFTER UPDATE ON aihub.rows
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION aihub.tally_txns();
  CREATE TRIGGER txns_tally_delete AFTER DELETE ON aihub.rows REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION aihub.tally_txns();
`;

/**
 * The baseline (version 1): every table, the tallies and aihub.commit as of 1.0. Before 1.0
 * no database had been deployed, and the six migrations of the development were squashed into
 * it; a change from here on is a migration of its own, appended to MIGRATIONS.
 */
const BASELINE = `
  CREATE SEQUENCE aihub.ver;
  CREATE TABLE aihub.store (id int PRIMARY KEY CHECK (id = 1), db_id text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  -- Every row of every table of the document. row: JSON text as the gateway wrote it
  -- (json keeps every string; jsonb refuses \\u0000). created: the version it was created
  -- with (creation order). xid: the transaction that wrote it last (snapshots of reports).
  CREATE TABLE aihub.rows (
    tbl text NOT NULL, id text NOT NULL, ver bigint NOT NULL, created bigint NOT NULL,
    row json NOT NULL, xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    PRIMARY KEY (tbl, id));
  CREATE INDEX rows_created ON aihub.rows (tbl, created);
  CREATE INDEX rows_account ON aihub.rows (tbl, (row->>'account_id'), created);
  CREATE INDEX rows_status ON aihub.rows (tbl, (row->>'status'), created);
  CREATE INDEX txns_account ON aihub.rows ((row->>'account_id'), (row->>'created_at')) WHERE tbl = 'payment_txns';
  CREATE INDEX txns_created ON aihub.rows ((row->>'created_at')) WHERE tbl = 'payment_txns';
  CREATE INDEX txns_finalized ON aihub.rows ((row->>'finalized_at')) WHERE tbl = 'payment_txns' AND row->>'stage' = 'final';
  CREATE INDEX reservations_lease ON aihub.rows (((row->>'lease_until_ms')::bigint)) WHERE tbl = 'chat_reservations';
  CREATE INDEX deliveries_due ON aihub.rows ((row->>'next_at')) WHERE tbl = 'webhook_deliveries';
  CREATE TABLE aihub.balances (
    account text PRIMARY KEY, micros bigint NOT NULL, ver bigint NOT NULL,
    CONSTRAINT customer_not_below_zero CHECK (micros >= 0 OR NOT (account LIKE 'wallet:%' OR account LIKE 'hold:%')));
  CREATE TABLE aihub.pool (account text NOT NULL, shard text NOT NULL, micros bigint NOT NULL, PRIMARY KEY (account, shard));
  CREATE TABLE aihub.postings (
    n bigserial PRIMARY KEY, id text NOT NULL, at timestamptz NOT NULL, account_id text,
    posting json NOT NULL, xid xid8 NOT NULL DEFAULT pg_current_xact_id());
  CREATE TABLE aihub.wallet_lines (
    n bigserial PRIMARY KEY, account_id text NOT NULL, at timestamptz NOT NULL, posting_id text NOT NULL,
    delta bigint NOT NULL, balance bigint NOT NULL, posting json NOT NULL, resolved_by json,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id());
  CREATE INDEX wallet_lines_account ON aihub.wallet_lines (account_id, n);
  CREATE INDEX wallet_lines_at ON aihub.wallet_lines (at, n);
  CREATE INDEX wallet_lines_account_at ON aihub.wallet_lines (account_id, at, n);
  -- History records (usage, API logs, audit...), with what readers filter and add up on:
  -- api_log: tag = status, aux = method * 8 + service, aux2 = latency; usage: label = tier,
  -- aux = cost, aux2 = tokens; audit: label = action.
  CREATE TABLE aihub.history (
    n bigserial PRIMARY KEY, kind text NOT NULL, at timestamptz NOT NULL, account_id text, key_id text,
    tag bigint, aux bigint, aux2 float8, label text, record json NOT NULL,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id());
  CREATE INDEX history_account ON aihub.history (kind, account_id, at, n);
  CREATE INDEX history_all ON aihub.history (kind, at, n);
  CREATE INDEX history_action ON aihub.history (label, at, n) WHERE kind = 'audit';
  CREATE TABLE aihub.usage (
    account_id text NOT NULL, protocol text NOT NULL, requests bigint NOT NULL,
    prompt_tokens bigint NOT NULL, completion_tokens bigint NOT NULL, cached_tokens bigint NOT NULL,
    reasoning_tokens bigint NOT NULL, cost_micros bigint NOT NULL, PRIMARY KEY (account_id, protocol));
  CREATE TABLE aihub.key_stats (key_id text PRIMARY KEY, requests bigint NOT NULL, cost_micros bigint NOT NULL, last_used text);
  CREATE TABLE aihub.index_versions (ikey text PRIMARY KEY, ver bigint NOT NULL);
  CREATE TABLE aihub.meta (k text PRIMARY KEY, v json);
  CREATE TABLE aihub.gateways (id text PRIMARY KEY, seen_at timestamptz NOT NULL);
  CREATE TABLE aihub.claims (kind text NOT NULL, id text NOT NULL, gateway text NOT NULL, until_at timestamptz NOT NULL, PRIMARY KEY (kind, id));
  -- Signatures of accepted signed /api requests (issue #25) and the deployment's key check.
  CREATE TABLE aihub.seen (k text PRIMARY KEY, until_at timestamptz NOT NULL);
  CREATE INDEX seen_until ON aihub.seen (until_at);
  CREATE TABLE aihub.key_check (id int PRIMARY KEY CHECK (id = 1), sealed text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE aihub.commits (id text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), fenced boolean NOT NULL DEFAULT false);
  CREATE INDEX commits_at ON aihub.commits (at);
  ${TALLIES}
  ${COMMIT_FUNCTION}
`;

/** The versioned migrations of the schema `aihub`, applied in order at start under MIGRATION_LOCK. */
export const MIGRATIONS: readonly Migration[] = [{ version: 1, sql: BASELINE }];

/** The name of the index of `table` by `field` (one per pair the rooms declare). */
function indexName(table: string, field: string): string {
  return `rows_by_${checkFieldName(table)}__${checkFieldName(field)}`.slice(0, 63);
}

/**
 * Applies the migrations not yet applied (a fresh database gets the schema; a database of
 * the #18 layout gets it beside its old tables, which `migrate` reads), then makes sure every
 * declared index of a table by a field has its partial index. Returns the store's id.
 */
export async function migrateSchema(
  pool: pg.Pool,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<string> {
  const client = await pool.connect();
  const onError = () => {}; // the query in flight fails with it
  client.on('error', onError);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query('CREATE SCHEMA IF NOT EXISTS aihub');
      await client.query(
        'CREATE TABLE IF NOT EXISTS aihub.migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      const done = new Set(
        (await client.query<{ version: number }>('SELECT version FROM aihub.migrations')).rows.map(
          (row) => row.version,
        ),
      );
      for (const migration of migrations) {
        if (done.has(migration.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          if (migration.version === 1)
            await client.query('INSERT INTO aihub.store (id, db_id) VALUES (1, $1)', [
              randomUUID(),
            ]);
          await client.query('INSERT INTO aihub.migrations (version) VALUES ($1)', [
            migration.version,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        }
      }
      const { rows } = await client.query<{ db_id: string }>(
        'SELECT db_id FROM aihub.store WHERE id = 1',
      );
      return rows[0]!.db_id;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    client.off('error', onError);
    client.release();
  }
}

/** Creates the partial index of `table` by `field` if it is missing (an index a room declared with indexBy). */
export async function ensureFieldIndex(pool: pg.Pool, table: string, field: string): Promise<void> {
  const name = indexName(table, field);
  await pool.query(
    `CREATE INDEX IF NOT EXISTS ${name} ON aihub.rows ((row->>'${field}'), created) WHERE tbl = '${checkFieldName(table)}'`,
  );
}

/**
 * The #18 layout's state in this database, if it holds one: its log's last record. A gateway
 * refuses to start on such a database until `migrate` moved it (docs/store-postgres.md).
 */
export async function oldLayoutRecords(pool: pg.Pool | pg.PoolClient): Promise<number> {
  const { rows: found } = await pool.query<{ there: boolean }>(
    `SELECT to_regclass('public.aihub_head') IS NOT NULL AS there`,
  );
  if (!found[0]?.there) return 0;
  const { rows } = await pool.query<{ seq: string }>(
    'SELECT seq::text AS seq FROM public.aihub_head WHERE id = 1',
  );
  return Number(rows[0]?.seq ?? 0);
}

/** Whether the new layout holds anything yet (a store is moved into an empty one only). */
export async function newLayoutEmpty(pool: pg.Pool | pg.PoolClient): Promise<boolean> {
  const { rows } = await pool.query<{ empty: boolean }>(
    `SELECT NOT EXISTS (SELECT 1 FROM aihub.rows) AND NOT EXISTS (SELECT 1 FROM aihub.postings)
       AND NOT EXISTS (SELECT 1 FROM aihub.history) AND NOT EXISTS (SELECT 1 FROM aihub.balances)
       AND NOT EXISTS (SELECT 1 FROM aihub.meta) AS empty`,
  );
  return rows[0]!.empty;
}
