// The PostgreSQL store's tables (schema `aihub`) and its one commit statement, `aihub.commit`
// (docs/store-postgres.md, "What is in the database" and "Transactions").
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { checkFieldName } from './keys.js';

/** Held while migrations run: a second gateway starting at the same moment waits for the first. */
export const MIGRATION_LOCK = 0x41494855; // 'AIHU', as the #18 layout's

/**
 * `aihub.commit(batch json)`: a write batch in one statement (its own implicit transaction, one
 * round trip). It locks the batch's keys (advisory transaction locks on their 64-bit hashes, in
 * the ascending order the gateway sorted them: every commit takes its locks in one order, so
 * commits never deadlock, and two wait for each other only when they share a key), then checks
 * the read set (row, balance and index-key versions; platform balances by value) and the
 * guards on the current values. If anything differs it writes nothing and returns the current
 * values of what differed (kinds R, B, P, I). Else it writes and returns the new versions and
 * values (kinds r, b, i): rows (`ver` from one sequence, so a version is never reused), counter
 * deltas, index versions of the keys whose sets changed, wallet lines (each with the balance
 * after it, the last line's plus its delta, under the wallet's lock), balance deltas, the
 * platform's shards, postings, history, usage and key figures, meta; and NOTIFYs the announced
 * keys.
 */
const COMMIT_FUNCTION = `
CREATE FUNCTION aihub.commit(batch json)
RETURNS TABLE (kind text, k1 text, k2 text, ver bigint, val text)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  lk text;
  n int;
  bad boolean := false;
BEGIN
  FOR lk IN SELECT e FROM json_array_elements_text(batch->'locks') WITH ORDINALITY AS l(e, o) ORDER BY o LOOP
    PERFORM pg_advisory_xact_lock(lk::bigint);
  END LOOP;

  RETURN QUERY
    SELECT 'R'::text, w.t, w.i, coalesce(r.ver, 0::bigint), r.row::text
    FROM json_to_recordset(batch->'rr') AS w(t text, i text, v bigint)
    LEFT JOIN aihub.rows r ON r.tbl = w.t AND r.id = w.i
    WHERE coalesce(r.ver, 0) <> w.v;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  RETURN QUERY
    SELECT 'B'::text, w.a, NULL::text, coalesce(x.ver, 0::bigint), coalesce(x.micros, 0)::text
    FROM json_to_recordset(batch->'br') AS w(a text, v bigint)
    LEFT JOIN aihub.balances x ON x.account = w.a
    WHERE coalesce(x.ver, 0) <> w.v;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  RETURN QUERY
    SELECT 'P'::text, w.a, NULL::text, 0::bigint, s.m::text
    FROM json_to_recordset(batch->'pr') AS w(a text, m bigint)
    CROSS JOIN LATERAL (SELECT coalesce(sum(p.micros), 0)::bigint AS m FROM aihub.pool p WHERE p.account = w.a) s
    WHERE s.m <> w.m;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  RETURN QUERY
    SELECT 'I'::text, w.k, NULL::text, coalesce(x.ver, 0::bigint), NULL::text
    FROM json_to_recordset(batch->'ir') AS w(k text, v bigint)
    LEFT JOIN aihub.index_versions x ON x.ikey = w.k
    WHERE coalesce(x.ver, 0) <> w.v;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  RETURN QUERY
    WITH g AS (
      SELECT o, (e->>'m')::bigint AS m, e->'c' AS c
      FROM json_array_elements(batch->'g') WITH ORDINALITY AS x(e, o)
    ), cells AS (
      SELECT g.o, g.m, (ce->>'c')::bigint AS co, ce->>'b' AS ba, ce->>'t' AS ct, ce->>'i' AS ci
      FROM g, json_array_elements(g.c) AS ce
    ), vals AS (
      SELECT cells.*,
        CASE WHEN ba IS NOT NULL
          THEN coalesce((SELECT x.micros FROM aihub.balances x WHERE x.account = ba), 0)
          ELSE coalesce((SELECT (r.row::text)::bigint FROM aihub.rows r WHERE r.tbl = ct AND r.id = ci), 0)
        END AS cur,
        CASE WHEN ba IS NOT NULL
          THEN coalesce((SELECT x.ver FROM aihub.balances x WHERE x.account = ba), 0)
          ELSE coalesce((SELECT r.ver FROM aihub.rows r WHERE r.tbl = ct AND r.id = ci), 0)
        END AS cv
      FROM cells
    ), failing AS (
      SELECT o FROM vals GROUP BY o, m HAVING sum(co * cur) < m
    )
    SELECT DISTINCT CASE WHEN ba IS NOT NULL THEN 'B' ELSE 'R' END, coalesce(ba, ct), ci, cv, cur::text
    FROM vals WHERE o IN (SELECT o FROM failing);
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  -- No wallet or hold below zero after the batch (the gateway's runs check it on what they
  -- know; this is the check on what is committed).
  RETURN QUERY
    SELECT 'B'::text, d.a, NULL::text, coalesce(x.ver, 0::bigint), coalesce(x.micros, 0)::text
    FROM json_to_recordset(batch->'bal') AS d(a text, d bigint)
    LEFT JOIN aihub.balances x ON x.account = d.a
    WHERE (d.a LIKE 'wallet:%' OR d.a LIKE 'hold:%') AND coalesce(x.micros, 0) + d.d < 0;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  IF bad THEN RETURN; END IF;

  -- Index keys whose sets change (the rows' old values read before the rows change).
  RETURN QUERY
    WITH ix AS (
      SELECT * FROM json_to_recordset(batch->'ix') AS x(t text, f text)
    ), ch AS (
      SELECT u.t, u.i, u.r AS nr FROM json_to_recordset(batch->'set') AS u(t text, i text, r json)
      UNION ALL
      SELECT d.t, d.i, NULL::json FROM json_to_recordset(batch->'del') AS d(t text, i text)
    ), kk AS (
      SELECT ix.t, ix.f, o.row->>ix.f AS ok, ch.nr->>ix.f AS nk
      FROM ch JOIN ix ON ix.t = ch.t LEFT JOIN aihub.rows o ON o.tbl = ch.t AND o.id = ch.i
    ), bump AS (
      SELECT DISTINCT z.t || chr(31) || z.f || chr(31) || z.key AS ikey FROM (
        SELECT t, f, ok AS key FROM kk WHERE ok IS DISTINCT FROM nk AND ok IS NOT NULL
        UNION ALL
        SELECT t, f, nk AS key FROM kk WHERE ok IS DISTINCT FROM nk AND nk IS NOT NULL
      ) z
    )
    INSERT INTO aihub.index_versions AS iv (ikey, ver)
    SELECT ikey, nextval('aihub.ver') FROM (SELECT ikey FROM bump ORDER BY ikey) s
    ON CONFLICT (ikey) DO UPDATE SET ver = excluded.ver
    RETURNING 'i'::text, iv.ikey, NULL::text, iv.ver, NULL::text;

  RETURN QUERY
    WITH u AS (
      SELECT x.t, x.i, x.r, nextval('aihub.ver') AS v
      FROM ROWS FROM (json_to_recordset(batch->'set') AS (t text, i text, r json)) WITH ORDINALITY AS x(t, i, r, o)
      ORDER BY x.o
    )
    INSERT INTO aihub.rows AS r (tbl, id, ver, created, row)
    SELECT t, i, v, v, r FROM u
    ON CONFLICT (tbl, id) DO UPDATE SET ver = excluded.ver, row = excluded.row, xid = pg_current_xact_id()
    RETURNING 'r'::text, r.tbl, r.id, r.ver, NULL::text;
  RETURN QUERY
    DELETE FROM aihub.rows r USING json_to_recordset(batch->'del') AS d(t text, i text)
    WHERE r.tbl = d.t AND r.id = d.i
    RETURNING 'r'::text, r.tbl, r.id, 0::bigint, NULL::text;
  RETURN QUERY
    WITH a AS (
      SELECT * FROM json_to_recordset(batch->'add') AS x(t text, i text, n bigint)
    ), cur AS (
      SELECT a.t, a.i, coalesce((r.row::text)::bigint, 0) + a.n AS nv
      FROM a LEFT JOIN aihub.rows r ON r.tbl = a.t AND r.id = a.i
    ), gone AS (
      DELETE FROM aihub.rows r USING cur WHERE cur.nv = 0 AND r.tbl = cur.t AND r.id = cur.i
      RETURNING r.tbl, r.id
    ), up AS (
      INSERT INTO aihub.rows AS r (tbl, id, ver, created, row)
      SELECT t, i, v, v, to_json(nv) FROM (SELECT cur.*, nextval('aihub.ver') AS v FROM cur WHERE nv <> 0) s
      ON CONFLICT (tbl, id) DO UPDATE SET ver = excluded.ver, row = excluded.row, xid = pg_current_xact_id()
      RETURNING r.tbl, r.id, r.ver, r.row::text AS row
    )
    SELECT 'r'::text, up.tbl, up.id, up.ver, up.row FROM up
    UNION ALL
    SELECT 'r'::text, gone.tbl, gone.id, 0::bigint, NULL::text FROM gone;

  INSERT INTO aihub.wallet_lines (account_id, at, posting_id, delta, balance, posting, resolved_by)
  SELECT w.a, w.at, w.pid, w.d,
    coalesce(last.balance, 0) + sum(w.d) OVER (PARTITION BY w.a ORDER BY w.o),
    w.p, w.rb
  FROM ROWS FROM (json_to_recordset(batch->'wal') AS (a text, at timestamptz, pid text, d bigint, p json, rb json)) WITH ORDINALITY AS w(a, at, pid, d, p, rb, o)
  LEFT JOIN LATERAL (
    SELECT l.balance FROM aihub.wallet_lines l WHERE l.account_id = w.a ORDER BY l.n DESC LIMIT 1
  ) last ON true
  ORDER BY w.o;

  -- An UPDATE of the rows there and an INSERT of the others (not INSERT ... ON CONFLICT: its
  -- CHECK would judge the delta alone as the row). The keys are locked: no one inserts between.
  RETURN QUERY
    WITH d AS (
      SELECT * FROM json_to_recordset(batch->'bal') AS y(a text, d bigint)
    ), up AS (
      UPDATE aihub.balances x SET micros = x.micros + d.d, ver = nextval('aihub.ver')
      FROM d WHERE x.account = d.a
      RETURNING x.account, x.ver, x.micros
    ), ins AS (
      INSERT INTO aihub.balances (account, micros, ver)
      SELECT d.a, d.d, nextval('aihub.ver') FROM d
      WHERE NOT EXISTS (SELECT 1 FROM aihub.balances x WHERE x.account = d.a)
      RETURNING account, ver, micros
    )
    SELECT 'b'::text, up.account, NULL::text, up.ver, up.micros::text FROM up
    UNION ALL
    SELECT 'b'::text, ins.account, NULL::text, ins.ver, ins.micros::text FROM ins;

  INSERT INTO aihub.pool AS p (account, shard, micros)
  SELECT d.a, batch->>'shard', d.d FROM json_to_recordset(batch->'pool') AS d(a text, d bigint)
  ORDER BY d.a
  ON CONFLICT (account, shard) DO UPDATE SET micros = p.micros + excluded.micros;

  INSERT INTO aihub.postings (id, at, account_id, posting)
  SELECT x.id, x.at, x.a, x.p
  FROM ROWS FROM (json_to_recordset(batch->'post') AS (id text, at timestamptz, a text, p json)) WITH ORDINALITY AS x(id, at, a, p, o)
  ORDER BY x.o;

  INSERT INTO aihub.history (kind, at, account_id, key_id, tag, aux, aux2, label, record)
  SELECT x.kind, x.at, x.a, x.key, x.tag, x.aux, x.aux2, x.label, x.r
  FROM ROWS FROM (json_to_recordset(batch->'hist') AS (kind text, at timestamptz, a text, key text, tag bigint, aux bigint, aux2 float8, label text, r json)) WITH ORDINALITY AS x(kind, at, a, key, tag, aux, aux2, label, r, o)
  ORDER BY x.o;

  INSERT INTO aihub.usage AS u (account_id, protocol, requests, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_micros)
  SELECT x.a, x.pr, x.n, x.pt, x.ct, x.cc, x.rt, x.cost
  FROM json_to_recordset(batch->'use') AS x(a text, pr text, n bigint, pt bigint, ct bigint, cc bigint, rt bigint, cost bigint)
  ON CONFLICT (account_id, protocol) DO UPDATE SET
    requests = u.requests + excluded.requests,
    prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = u.completion_tokens + excluded.completion_tokens,
    cached_tokens = u.cached_tokens + excluded.cached_tokens,
    reasoning_tokens = u.reasoning_tokens + excluded.reasoning_tokens,
    cost_micros = u.cost_micros + excluded.cost_micros;

  INSERT INTO aihub.key_stats AS s (key_id, requests, cost_micros, last_used)
  SELECT x.k, x.n, x.cost, x.last FROM json_to_recordset(batch->'ks') AS x(k text, n bigint, cost bigint, last text)
  ON CONFLICT (key_id) DO UPDATE SET
    requests = s.requests + excluded.requests,
    cost_micros = s.cost_micros + excluded.cost_micros,
    last_used = greatest(s.last_used, excluded.last_used);

  INSERT INTO aihub.meta (k, v) SELECT x.k, x.v FROM json_to_recordset(batch->'meta') AS x(k text, v json)
  ON CONFLICT (k) DO UPDATE SET v = excluded.v;

  IF batch->>'notify' IS NOT NULL THEN
    PERFORM pg_notify('aihub_cache', batch->>'notify');
  END IF;
END
$fn$;
`;
/** aihub.commit as of migration 3: the batch's parts parsed once (see MIGRATIONS). */
const COMMIT_FUNCTION_V3 = `
CREATE OR REPLACE FUNCTION aihub.commit(batch json)
RETURNS TABLE (kind text, k1 text, k2 text, ver bigint, val text)
LANGUAGE plpgsql SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  lk text;
  n int;
  bad boolean := false;
  jk text;
  jv json;
  j_locks json := '[]';
  j_rr json := '[]';
  j_br json := '[]';
  j_pr json := '[]';
  j_ir json := '[]';
  j_g json := '[]';
  j_set json := '[]';
  j_del json := '[]';
  j_add json := '[]';
  j_bal json := '[]';
  j_pool json := '[]';
  j_post json := '[]';
  j_wal json := '[]';
  j_hist json := '[]';
  j_use json := '[]';
  j_ks json := '[]';
  j_ix json := '[]';
  j_meta json := '[]';
  t_shard text;
  t_notify text;
BEGIN
  -- The batch's parts, parsed out of its text once (json is text: each batch->'x' parsed the
  -- whole batch again, about twenty times a commit).
  FOR jk, jv IN SELECT e.key, e.value FROM json_each(batch) AS e LOOP
    CASE jk
      WHEN 'locks' THEN j_locks := jv;
      WHEN 'rr' THEN j_rr := jv;
      WHEN 'br' THEN j_br := jv;
      WHEN 'pr' THEN j_pr := jv;
      WHEN 'ir' THEN j_ir := jv;
      WHEN 'g' THEN j_g := jv;
      WHEN 'set' THEN j_set := jv;
      WHEN 'del' THEN j_del := jv;
      WHEN 'add' THEN j_add := jv;
      WHEN 'bal' THEN j_bal := jv;
      WHEN 'pool' THEN j_pool := jv;
      WHEN 'post' THEN j_post := jv;
      WHEN 'wal' THEN j_wal := jv;
      WHEN 'hist' THEN j_hist := jv;
      WHEN 'use' THEN j_use := jv;
      WHEN 'ks' THEN j_ks := jv;
      WHEN 'ix' THEN j_ix := jv;
      WHEN 'meta' THEN j_meta := jv;
      WHEN 'shard' THEN t_shard := jv #>> '{}';
      WHEN 'notify' THEN t_notify := jv #>> '{}';
      ELSE NULL;
    END CASE;
  END LOOP;

  FOR lk IN SELECT e FROM json_array_elements_text(j_locks) WITH ORDINALITY AS l(e, o) ORDER BY o LOOP
    PERFORM pg_advisory_xact_lock(lk::bigint);
  END LOOP;

  RETURN QUERY
    SELECT 'R'::text, w.t, w.i, coalesce(r.ver, 0::bigint), r.row::text
    FROM json_to_recordset(j_rr) AS w(t text, i text, v bigint)
    LEFT JOIN aihub.rows r ON r.tbl = w.t AND r.id = w.i
    WHERE coalesce(r.ver, 0) <> w.v;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  RETURN QUERY
    SELECT 'B'::text, w.a, NULL::text, coalesce(x.ver, 0::bigint), coalesce(x.micros, 0)::text
    FROM json_to_recordset(j_br) AS w(a text, v bigint)
    LEFT JOIN aihub.balances x ON x.account = w.a
    WHERE coalesce(x.ver, 0) <> w.v;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  RETURN QUERY
    SELECT 'P'::text, w.a, NULL::text, 0::bigint, s.m::text
    FROM json_to_recordset(j_pr) AS w(a text, m bigint)
    CROSS JOIN LATERAL (SELECT coalesce(sum(p.micros), 0)::bigint AS m FROM aihub.pool p WHERE p.account = w.a) s
    WHERE s.m <> w.m;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  RETURN QUERY
    SELECT 'I'::text, w.k, NULL::text, coalesce(x.ver, 0::bigint), NULL::text
    FROM json_to_recordset(j_ir) AS w(k text, v bigint)
    LEFT JOIN aihub.index_versions x ON x.ikey = w.k
    WHERE coalesce(x.ver, 0) <> w.v;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  RETURN QUERY
    WITH g AS (
      SELECT o, (e->>'m')::bigint AS m, e->'c' AS c
      FROM json_array_elements(j_g) WITH ORDINALITY AS x(e, o)
    ), cells AS (
      SELECT g.o, g.m, (ce->>'c')::bigint AS co, ce->>'b' AS ba, ce->>'t' AS ct, ce->>'i' AS ci
      FROM g, json_array_elements(g.c) AS ce
    ), vals AS (
      SELECT cells.*,
        CASE WHEN ba IS NOT NULL
          THEN coalesce((SELECT x.micros FROM aihub.balances x WHERE x.account = ba), 0)
          ELSE coalesce((SELECT (r.row::text)::bigint FROM aihub.rows r WHERE r.tbl = ct AND r.id = ci), 0)
        END AS cur,
        CASE WHEN ba IS NOT NULL
          THEN coalesce((SELECT x.ver FROM aihub.balances x WHERE x.account = ba), 0)
          ELSE coalesce((SELECT r.ver FROM aihub.rows r WHERE r.tbl = ct AND r.id = ci), 0)
        END AS cv
      FROM cells
    ), failing AS (
      SELECT o FROM vals GROUP BY o, m HAVING sum(co * cur) < m
    )
    SELECT DISTINCT CASE WHEN ba IS NOT NULL THEN 'B' ELSE 'R' END, coalesce(ba, ct), ci, cv, cur::text
    FROM vals WHERE o IN (SELECT o FROM failing);
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  -- No wallet or hold below zero after the batch (the gateway's runs check it on what they
  -- know; this is the check on what is committed).
  RETURN QUERY
    SELECT 'B'::text, d.a, NULL::text, coalesce(x.ver, 0::bigint), coalesce(x.micros, 0)::text
    FROM json_to_recordset(j_bal) AS d(a text, d bigint)
    LEFT JOIN aihub.balances x ON x.account = d.a
    WHERE (d.a LIKE 'wallet:%' OR d.a LIKE 'hold:%') AND coalesce(x.micros, 0) + d.d < 0;
  GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  IF bad THEN RETURN; END IF;

  -- Index keys whose sets change (the rows' old values read before the rows change).
  RETURN QUERY
    WITH ix AS (
      SELECT * FROM json_to_recordset(j_ix) AS x(t text, f text)
    ), ch AS (
      SELECT u.t, u.i, u.r AS nr FROM json_to_recordset(j_set) AS u(t text, i text, r json)
      UNION ALL
      SELECT d.t, d.i, NULL::json FROM json_to_recordset(j_del) AS d(t text, i text)
    ), kk AS (
      SELECT ix.t, ix.f, o.row->>ix.f AS ok, ch.nr->>ix.f AS nk
      FROM ch JOIN ix ON ix.t = ch.t LEFT JOIN aihub.rows o ON o.tbl = ch.t AND o.id = ch.i
    ), bump AS (
      SELECT DISTINCT z.t || chr(31) || z.f || chr(31) || z.key AS ikey FROM (
        SELECT t, f, ok AS key FROM kk WHERE ok IS DISTINCT FROM nk AND ok IS NOT NULL
        UNION ALL
        SELECT t, f, nk AS key FROM kk WHERE ok IS DISTINCT FROM nk AND nk IS NOT NULL
      ) z
    )
    INSERT INTO aihub.index_versions AS iv (ikey, ver)
    SELECT ikey, nextval('aihub.ver') FROM (SELECT ikey FROM bump ORDER BY ikey) s
    ON CONFLICT (ikey) DO UPDATE SET ver = excluded.ver
    RETURNING 'i'::text, iv.ikey, NULL::text, iv.ver, NULL::text;

  RETURN QUERY
    WITH u AS (
      SELECT x.t, x.i, x.r, nextval('aihub.ver') AS v
      FROM ROWS FROM (json_to_recordset(j_set) AS (t text, i text, r json)) WITH ORDINALITY AS x(t, i, r, o)
      ORDER BY x.o
    )
    INSERT INTO aihub.rows AS r (tbl, id, ver, created, row)
    SELECT t, i, v, v, r FROM u
    ON CONFLICT (tbl, id) DO UPDATE SET ver = excluded.ver, row = excluded.row, xid = pg_current_xact_id()
    RETURNING 'r'::text, r.tbl, r.id, r.ver, NULL::text;
  RETURN QUERY
    DELETE FROM aihub.rows r USING json_to_recordset(j_del) AS d(t text, i text)
    WHERE r.tbl = d.t AND r.id = d.i
    RETURNING 'r'::text, r.tbl, r.id, 0::bigint, NULL::text;
  RETURN QUERY
    WITH a AS (
      SELECT * FROM json_to_recordset(j_add) AS x(t text, i text, n bigint)
    ), cur AS (
      SELECT a.t, a.i, coalesce((r.row::text)::bigint, 0) + a.n AS nv
      FROM a LEFT JOIN aihub.rows r ON r.tbl = a.t AND r.id = a.i
    ), gone AS (
      DELETE FROM aihub.rows r USING cur WHERE cur.nv = 0 AND r.tbl = cur.t AND r.id = cur.i
      RETURNING r.tbl, r.id
    ), up AS (
      INSERT INTO aihub.rows AS r (tbl, id, ver, created, row)
      SELECT t, i, v, v, to_json(nv) FROM (SELECT cur.*, nextval('aihub.ver') AS v FROM cur WHERE nv <> 0) s
      ON CONFLICT (tbl, id) DO UPDATE SET ver = excluded.ver, row = excluded.row, xid = pg_current_xact_id()
      RETURNING r.tbl, r.id, r.ver, r.row::text AS row
    )
    SELECT 'r'::text, up.tbl, up.id, up.ver, up.row FROM up
    UNION ALL
    SELECT 'r'::text, gone.tbl, gone.id, 0::bigint, NULL::text FROM gone;

  INSERT INTO aihub.wallet_lines (account_id, at, posting_id, delta, balance, posting, resolved_by)
  SELECT w.a, w.at, w.pid, w.d,
    coalesce(last.balance, 0) + sum(w.d) OVER (PARTITION BY w.a ORDER BY w.o),
    w.p, w.rb
  FROM ROWS FROM (json_to_recordset(j_wal) AS (a text, at timestamptz, pid text, d bigint, p json, rb json)) WITH ORDINALITY AS w(a, at, pid, d, p, rb, o)
  LEFT JOIN LATERAL (
    SELECT l.balance FROM aihub.wallet_lines l WHERE l.account_id = w.a ORDER BY l.n DESC LIMIT 1
  ) last ON true
  ORDER BY w.o;

  -- An UPDATE of the rows there and an INSERT of the others (not INSERT ... ON CONFLICT: its
  -- CHECK would judge the delta alone as the row). The keys are locked: no one inserts between.
  RETURN QUERY
    WITH d AS (
      SELECT * FROM json_to_recordset(j_bal) AS y(a text, d bigint)
    ), up AS (
      UPDATE aihub.balances x SET micros = x.micros + d.d, ver = nextval('aihub.ver')
      FROM d WHERE x.account = d.a
      RETURNING x.account, x.ver, x.micros
    ), ins AS (
      INSERT INTO aihub.balances (account, micros, ver)
      SELECT d.a, d.d, nextval('aihub.ver') FROM d
      WHERE NOT EXISTS (SELECT 1 FROM aihub.balances x WHERE x.account = d.a)
      RETURNING account, ver, micros
    )
    SELECT 'b'::text, up.account, NULL::text, up.ver, up.micros::text FROM up
    UNION ALL
    SELECT 'b'::text, ins.account, NULL::text, ins.ver, ins.micros::text FROM ins;

  INSERT INTO aihub.pool AS p (account, shard, micros)
  SELECT d.a, t_shard, d.d FROM json_to_recordset(j_pool) AS d(a text, d bigint)
  ORDER BY d.a
  ON CONFLICT (account, shard) DO UPDATE SET micros = p.micros + excluded.micros;

  INSERT INTO aihub.postings (id, at, account_id, posting)
  SELECT x.id, x.at, x.a, x.p
  FROM ROWS FROM (json_to_recordset(j_post) AS (id text, at timestamptz, a text, p json)) WITH ORDINALITY AS x(id, at, a, p, o)
  ORDER BY x.o;

  INSERT INTO aihub.history (kind, at, account_id, key_id, tag, aux, aux2, label, record)
  SELECT x.kind, x.at, x.a, x.key, x.tag, x.aux, x.aux2, x.label, x.r
  FROM ROWS FROM (json_to_recordset(j_hist) AS (kind text, at timestamptz, a text, key text, tag bigint, aux bigint, aux2 float8, label text, r json)) WITH ORDINALITY AS x(kind, at, a, key, tag, aux, aux2, label, r, o)
  ORDER BY x.o;

  INSERT INTO aihub.usage AS u (account_id, protocol, requests, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_micros)
  SELECT x.a, x.pr, x.n, x.pt, x.ct, x.cc, x.rt, x.cost
  FROM json_to_recordset(j_use) AS x(a text, pr text, n bigint, pt bigint, ct bigint, cc bigint, rt bigint, cost bigint)
  ON CONFLICT (account_id, protocol) DO UPDATE SET
    requests = u.requests + excluded.requests,
    prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = u.completion_tokens + excluded.completion_tokens,
    cached_tokens = u.cached_tokens + excluded.cached_tokens,
    reasoning_tokens = u.reasoning_tokens + excluded.reasoning_tokens,
    cost_micros = u.cost_micros + excluded.cost_micros;

  INSERT INTO aihub.key_stats AS s (key_id, requests, cost_micros, last_used)
  SELECT x.k, x.n, x.cost, x.last FROM json_to_recordset(j_ks) AS x(k text, n bigint, cost bigint, last text)
  ON CONFLICT (key_id) DO UPDATE SET
    requests = s.requests + excluded.requests,
    cost_micros = s.cost_micros + excluded.cost_micros,
    last_used = greatest(s.last_used, excluded.last_used);

  INSERT INTO aihub.meta (k, v) SELECT x.k, x.v FROM json_to_recordset(j_meta) AS x(k text, v json)
  ON CONFLICT (k) DO UPDATE SET v = excluded.v;

  IF t_notify IS NOT NULL THEN
    PERFORM pg_notify('aihub_cache', t_notify);
  END IF;
END
$fn$;
`;

/** aihub.commit as of migration 4: the statements on empty parts skipped (see MIGRATIONS). */
const COMMIT_FUNCTION_V4 = `
CREATE OR REPLACE FUNCTION aihub.commit(batch json)
RETURNS TABLE (kind text, k1 text, k2 text, ver bigint, val text)
LANGUAGE plpgsql SET jit = off AS $fn$
#variable_conflict use_column
DECLARE
  lk text;
  n int;
  bad boolean := false;
  jk text;
  jv json;
  j_locks json;
  j_rr json;
  j_br json;
  j_pr json;
  j_ir json;
  j_g json;
  j_set json;
  j_del json;
  j_add json;
  j_bal json;
  j_pool json;
  j_post json;
  j_wal json;
  j_hist json;
  j_use json;
  j_ks json;
  j_ix json;
  j_meta json;
  t_shard text;
  t_notify text;
BEGIN
  -- The batch's parts, parsed out of its text once (json is text: each batch->'x' parsed the
  -- whole batch again, about twenty times a commit).
  FOR jk, jv IN SELECT e.key, e.value FROM json_each(batch) AS e LOOP
    -- An empty part stays NULL: the statements on it are skipped (each cost a plan-cache check,
    -- a snapshot and an executor start even on nothing; a batch of one reservation left 14 of
    -- its ~20 parts empty).
    CONTINUE WHEN jv::text = '[]';
    CASE jk
      WHEN 'locks' THEN j_locks := jv;
      WHEN 'rr' THEN j_rr := jv;
      WHEN 'br' THEN j_br := jv;
      WHEN 'pr' THEN j_pr := jv;
      WHEN 'ir' THEN j_ir := jv;
      WHEN 'g' THEN j_g := jv;
      WHEN 'set' THEN j_set := jv;
      WHEN 'del' THEN j_del := jv;
      WHEN 'add' THEN j_add := jv;
      WHEN 'bal' THEN j_bal := jv;
      WHEN 'pool' THEN j_pool := jv;
      WHEN 'post' THEN j_post := jv;
      WHEN 'wal' THEN j_wal := jv;
      WHEN 'hist' THEN j_hist := jv;
      WHEN 'use' THEN j_use := jv;
      WHEN 'ks' THEN j_ks := jv;
      WHEN 'ix' THEN j_ix := jv;
      WHEN 'meta' THEN j_meta := jv;
      WHEN 'shard' THEN t_shard := jv #>> '{}';
      WHEN 'notify' THEN t_notify := jv #>> '{}';
      ELSE NULL;
    END CASE;
  END LOOP;

  IF j_locks IS NOT NULL THEN
    FOR lk IN SELECT e FROM json_array_elements_text(j_locks) WITH ORDINALITY AS l(e, o) ORDER BY o LOOP
      PERFORM pg_advisory_xact_lock(lk::bigint);
    END LOOP;
  END IF;

  IF j_rr IS NOT NULL THEN
    RETURN QUERY
      SELECT 'R'::text, w.t, w.i, coalesce(r.ver, 0::bigint), r.row::text
      FROM json_to_recordset(j_rr) AS w(t text, i text, v bigint)
      LEFT JOIN aihub.rows r ON r.tbl = w.t AND r.id = w.i
      WHERE coalesce(r.ver, 0) <> w.v;
    GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  END IF;
  IF j_br IS NOT NULL THEN
    RETURN QUERY
      SELECT 'B'::text, w.a, NULL::text, coalesce(x.ver, 0::bigint), coalesce(x.micros, 0)::text
      FROM json_to_recordset(j_br) AS w(a text, v bigint)
      LEFT JOIN aihub.balances x ON x.account = w.a
      WHERE coalesce(x.ver, 0) <> w.v;
    GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  END IF;
  IF j_pr IS NOT NULL THEN
    RETURN QUERY
      SELECT 'P'::text, w.a, NULL::text, 0::bigint, s.m::text
      FROM json_to_recordset(j_pr) AS w(a text, m bigint)
      CROSS JOIN LATERAL (SELECT coalesce(sum(p.micros), 0)::bigint AS m FROM aihub.pool p WHERE p.account = w.a) s
      WHERE s.m <> w.m;
    GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  END IF;
  IF j_ir IS NOT NULL THEN
    RETURN QUERY
      SELECT 'I'::text, w.k, NULL::text, coalesce(x.ver, 0::bigint), NULL::text
      FROM json_to_recordset(j_ir) AS w(k text, v bigint)
      LEFT JOIN aihub.index_versions x ON x.ikey = w.k
      WHERE coalesce(x.ver, 0) <> w.v;
    GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  END IF;
  IF j_g IS NOT NULL THEN
    RETURN QUERY
      WITH g AS (
        SELECT o, (e->>'m')::bigint AS m, e->'c' AS c
        FROM json_array_elements(j_g) WITH ORDINALITY AS x(e, o)
      ), cells AS (
        SELECT g.o, g.m, (ce->>'c')::bigint AS co, ce->>'b' AS ba, ce->>'t' AS ct, ce->>'i' AS ci
        FROM g, json_array_elements(g.c) AS ce
      ), vals AS (
        SELECT cells.*,
          CASE WHEN ba IS NOT NULL
            THEN coalesce((SELECT x.micros FROM aihub.balances x WHERE x.account = ba), 0)
            ELSE coalesce((SELECT (r.row::text)::bigint FROM aihub.rows r WHERE r.tbl = ct AND r.id = ci), 0)
          END AS cur,
          CASE WHEN ba IS NOT NULL
            THEN coalesce((SELECT x.ver FROM aihub.balances x WHERE x.account = ba), 0)
            ELSE coalesce((SELECT r.ver FROM aihub.rows r WHERE r.tbl = ct AND r.id = ci), 0)
          END AS cv
        FROM cells
      ), failing AS (
        SELECT o FROM vals GROUP BY o, m HAVING sum(co * cur) < m
      )
      SELECT DISTINCT CASE WHEN ba IS NOT NULL THEN 'B' ELSE 'R' END, coalesce(ba, ct), ci, cv, cur::text
      FROM vals WHERE o IN (SELECT o FROM failing);
    GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  END IF;
  -- No wallet or hold below zero after the batch (the gateway's runs check it on what they
  -- know; this is the check on what is committed).
  IF j_bal IS NOT NULL THEN
    RETURN QUERY
      SELECT 'B'::text, d.a, NULL::text, coalesce(x.ver, 0::bigint), coalesce(x.micros, 0)::text
      FROM json_to_recordset(j_bal) AS d(a text, d bigint)
      LEFT JOIN aihub.balances x ON x.account = d.a
      WHERE (d.a LIKE 'wallet:%' OR d.a LIKE 'hold:%') AND coalesce(x.micros, 0) + d.d < 0;
    GET DIAGNOSTICS n = ROW_COUNT; bad := bad OR n > 0;
  END IF;
  IF bad THEN RETURN; END IF;

  -- Index keys whose sets change (the rows' old values read before the rows change).
  IF j_ix IS NOT NULL AND (j_set IS NOT NULL OR j_del IS NOT NULL) THEN
    RETURN QUERY
      WITH ix AS (
        SELECT * FROM json_to_recordset(j_ix) AS x(t text, f text)
      ), ch AS (
        SELECT u.t, u.i, u.r AS nr FROM json_to_recordset(j_set) AS u(t text, i text, r json)
        UNION ALL
        SELECT d.t, d.i, NULL::json FROM json_to_recordset(j_del) AS d(t text, i text)
      ), kk AS (
        SELECT ix.t, ix.f, o.row->>ix.f AS ok, ch.nr->>ix.f AS nk
        FROM ch JOIN ix ON ix.t = ch.t LEFT JOIN aihub.rows o ON o.tbl = ch.t AND o.id = ch.i
      ), bump AS (
        SELECT DISTINCT z.t || chr(31) || z.f || chr(31) || z.key AS ikey FROM (
          SELECT t, f, ok AS key FROM kk WHERE ok IS DISTINCT FROM nk AND ok IS NOT NULL
          UNION ALL
          SELECT t, f, nk AS key FROM kk WHERE ok IS DISTINCT FROM nk AND nk IS NOT NULL
        ) z
      )
      INSERT INTO aihub.index_versions AS iv (ikey, ver)
      SELECT ikey, nextval('aihub.ver') FROM (SELECT ikey FROM bump ORDER BY ikey) s
      ON CONFLICT (ikey) DO UPDATE SET ver = excluded.ver
      RETURNING 'i'::text, iv.ikey, NULL::text, iv.ver, NULL::text;
  END IF;

  IF j_set IS NOT NULL THEN
    RETURN QUERY
      WITH u AS (
        SELECT x.t, x.i, x.r, nextval('aihub.ver') AS v
        FROM ROWS FROM (json_to_recordset(j_set) AS (t text, i text, r json)) WITH ORDINALITY AS x(t, i, r, o)
        ORDER BY x.o
      )
      INSERT INTO aihub.rows AS r (tbl, id, ver, created, row)
      SELECT t, i, v, v, r FROM u
      ON CONFLICT (tbl, id) DO UPDATE SET ver = excluded.ver, row = excluded.row, xid = pg_current_xact_id()
      RETURNING 'r'::text, r.tbl, r.id, r.ver, NULL::text;
  END IF;
  IF j_del IS NOT NULL THEN
    RETURN QUERY
      DELETE FROM aihub.rows r USING json_to_recordset(j_del) AS d(t text, i text)
      WHERE r.tbl = d.t AND r.id = d.i
      RETURNING 'r'::text, r.tbl, r.id, 0::bigint, NULL::text;
  END IF;
  IF j_add IS NOT NULL THEN
    RETURN QUERY
      WITH a AS (
        SELECT * FROM json_to_recordset(j_add) AS x(t text, i text, n bigint)
      ), cur AS (
        SELECT a.t, a.i, coalesce((r.row::text)::bigint, 0) + a.n AS nv
        FROM a LEFT JOIN aihub.rows r ON r.tbl = a.t AND r.id = a.i
      ), gone AS (
        DELETE FROM aihub.rows r USING cur WHERE cur.nv = 0 AND r.tbl = cur.t AND r.id = cur.i
        RETURNING r.tbl, r.id
      ), up AS (
        INSERT INTO aihub.rows AS r (tbl, id, ver, created, row)
        SELECT t, i, v, v, to_json(nv) FROM (SELECT cur.*, nextval('aihub.ver') AS v FROM cur WHERE nv <> 0) s
        ON CONFLICT (tbl, id) DO UPDATE SET ver = excluded.ver, row = excluded.row, xid = pg_current_xact_id()
        RETURNING r.tbl, r.id, r.ver, r.row::text AS row
      )
      SELECT 'r'::text, up.tbl, up.id, up.ver, up.row FROM up
      UNION ALL
      SELECT 'r'::text, gone.tbl, gone.id, 0::bigint, NULL::text FROM gone;
  END IF;

  IF j_wal IS NOT NULL THEN
    INSERT INTO aihub.wallet_lines (account_id, at, posting_id, delta, balance, posting, resolved_by)
    SELECT w.a, w.at, w.pid, w.d,
      coalesce(last.balance, 0) + sum(w.d) OVER (PARTITION BY w.a ORDER BY w.o),
      w.p, w.rb
    FROM ROWS FROM (json_to_recordset(j_wal) AS (a text, at timestamptz, pid text, d bigint, p json, rb json)) WITH ORDINALITY AS w(a, at, pid, d, p, rb, o)
    LEFT JOIN LATERAL (
      SELECT l.balance FROM aihub.wallet_lines l WHERE l.account_id = w.a ORDER BY l.n DESC LIMIT 1
    ) last ON true
    ORDER BY w.o;
  END IF;

  -- An UPDATE of the rows there and an INSERT of the others (not INSERT ... ON CONFLICT: its
  -- CHECK would judge the delta alone as the row). The keys are locked: no one inserts between.
  IF j_bal IS NOT NULL THEN
    RETURN QUERY
      WITH d AS (
        SELECT * FROM json_to_recordset(j_bal) AS y(a text, d bigint)
      ), up AS (
        UPDATE aihub.balances x SET micros = x.micros + d.d, ver = nextval('aihub.ver')
        FROM d WHERE x.account = d.a
        RETURNING x.account, x.ver, x.micros
      ), ins AS (
        INSERT INTO aihub.balances (account, micros, ver)
        SELECT d.a, d.d, nextval('aihub.ver') FROM d
        WHERE NOT EXISTS (SELECT 1 FROM aihub.balances x WHERE x.account = d.a)
        RETURNING account, ver, micros
      )
      SELECT 'b'::text, up.account, NULL::text, up.ver, up.micros::text FROM up
      UNION ALL
      SELECT 'b'::text, ins.account, NULL::text, ins.ver, ins.micros::text FROM ins;
  END IF;

  IF j_pool IS NOT NULL THEN
    INSERT INTO aihub.pool AS p (account, shard, micros)
    SELECT d.a, t_shard, d.d FROM json_to_recordset(j_pool) AS d(a text, d bigint)
    ORDER BY d.a
    ON CONFLICT (account, shard) DO UPDATE SET micros = p.micros + excluded.micros;
  END IF;

  IF j_post IS NOT NULL THEN
    INSERT INTO aihub.postings (id, at, account_id, posting)
    SELECT x.id, x.at, x.a, x.p
    FROM ROWS FROM (json_to_recordset(j_post) AS (id text, at timestamptz, a text, p json)) WITH ORDINALITY AS x(id, at, a, p, o)
    ORDER BY x.o;
  END IF;

  IF j_hist IS NOT NULL THEN
    INSERT INTO aihub.history (kind, at, account_id, key_id, tag, aux, aux2, label, record)
    SELECT x.kind, x.at, x.a, x.key, x.tag, x.aux, x.aux2, x.label, x.r
    FROM ROWS FROM (json_to_recordset(j_hist) AS (kind text, at timestamptz, a text, key text, tag bigint, aux bigint, aux2 float8, label text, r json)) WITH ORDINALITY AS x(kind, at, a, key, tag, aux, aux2, label, r, o)
    ORDER BY x.o;
  END IF;

  IF j_use IS NOT NULL THEN
    INSERT INTO aihub.usage AS u (account_id, protocol, requests, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost_micros)
    SELECT x.a, x.pr, x.n, x.pt, x.ct, x.cc, x.rt, x.cost
    FROM json_to_recordset(j_use) AS x(a text, pr text, n bigint, pt bigint, ct bigint, cc bigint, rt bigint, cost bigint)
    ON CONFLICT (account_id, protocol) DO UPDATE SET
      requests = u.requests + excluded.requests,
      prompt_tokens = u.prompt_tokens + excluded.prompt_tokens,
      completion_tokens = u.completion_tokens + excluded.completion_tokens,
      cached_tokens = u.cached_tokens + excluded.cached_tokens,
      reasoning_tokens = u.reasoning_tokens + excluded.reasoning_tokens,
      cost_micros = u.cost_micros + excluded.cost_micros;
  END IF;

  IF j_ks IS NOT NULL THEN
    INSERT INTO aihub.key_stats AS s (key_id, requests, cost_micros, last_used)
    SELECT x.k, x.n, x.cost, x.last FROM json_to_recordset(j_ks) AS x(k text, n bigint, cost bigint, last text)
    ON CONFLICT (key_id) DO UPDATE SET
      requests = s.requests + excluded.requests,
      cost_micros = s.cost_micros + excluded.cost_micros,
      last_used = greatest(s.last_used, excluded.last_used);
  END IF;

  IF j_meta IS NOT NULL THEN
    INSERT INTO aihub.meta (k, v) SELECT x.k, x.v FROM json_to_recordset(j_meta) AS x(k text, v json)
    ON CONFLICT (k) DO UPDATE SET v = excluded.v;
  END IF;

  IF t_notify IS NOT NULL THEN
    PERFORM pg_notify('aihub_cache', t_notify);
  END IF;
END
$fn$;
`;

/** Migration 5: the payment transactions' tallies (a total is the sum of a tag's shards). */
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
  INSERT INTO aihub.tallies (tag, shard, n)
  SELECT tag, 0, count(*) FROM aihub.rows r, unnest(aihub.txn_tags(r.row)) AS tag
  WHERE r.tbl = 'payment_txns' GROUP BY tag;
`;

/**
 * Migration 6: commit ids, so that a commit whose answer was lost can be looked up. A batch
 * that writes carries `cid` (unique per statement sent); the function records it in
 * aihub.commits in the same transaction, after its checks passed (a conflict writes nothing,
 * the id included). With a plain INSERT: a gateway that lost the answer inserts the same id
 * as a "fence" (PgStore.resolveCommit) and learns the outcome from the insert itself:
 * conflicting with the commit's row (it committed, the insert waits for it if it is still
 * running), or inserted, after which the commit, if it ever runs, fails on the duplicate id
 * and changes nothing. Pruned after an hour.
 */
function withCommitId(fn: string): string {
  const steps: Array<[string, string]> = [
    ['  t_notify text;\n', '  t_notify text;\n  t_cid text;\n'],
    [
      "      WHEN 'notify' THEN t_notify := jv #>> '{}';\n",
      "      WHEN 'notify' THEN t_notify := jv #>> '{}';\n      WHEN 'cid' THEN t_cid := jv #>> '{}';\n",
    ],
    [
      '  IF bad THEN RETURN; END IF;\n',
      '  IF bad THEN RETURN; END IF;\n\n  IF t_cid IS NOT NULL THEN\n    INSERT INTO aihub.commits (id) VALUES (t_cid);\n  END IF;\n',
    ],
  ];
  let out = fn;
  for (const [from, to] of steps) {
    if (out.split(from).length !== 2)
      throw new Error(`migration 6: ${JSON.stringify(from)} is not once in aihub.commit`);
    out = out.replace(from, to);
  }
  return out;
}

const COMMIT_IDS = `
  CREATE TABLE aihub.commits (id text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), fenced boolean NOT NULL DEFAULT false);
  CREATE INDEX commits_at ON aihub.commits (at);
  ${withCommitId(COMMIT_FUNCTION_V4)}
`;

/** The versioned migrations of the schema `aihub`, applied in order at start under MIGRATION_LOCK. */
export const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
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
      ${COMMIT_FUNCTION}
    `,
  },
  {
    // No JIT compilation of the commit's statements. PostgreSQL estimates 100 rows for each
    // json_to_recordset/json_array_elements, so the guard statement (cells of guards of a
    // batch, four index probes each) is costed at ~330,000, past jit_above_cost (100,000):
    // every commit, even an empty one, spent ~40 ms (under load ~100 ms) compiling it with
    // LLVM, for a statement that reads a handful of rows. That was most of a commit's time
    // (the gateway level's 50-kill suite took 258 s). Measured by auto_explain: "JIT ...
    // Emission 38.9 ms" on a batch of one history record.
    version: 2,
    sql: 'ALTER FUNCTION aihub.commit(json) SET jit = off',
  },
  {
    // The batch is a json parameter (json, not jsonb: jsonb refuses \u0000), and json is
    // text: each of the ~20 batch->'part' accesses parsed the whole batch again. Parsed once.
    version: 3,
    sql: COMMIT_FUNCTION_V3,
  },
  {
    // The statements on a part the batch leaves empty are skipped, and the gateway leaves
    // empty parts out of the batch (a batch of one chat reservation fills 5 of its 20). Each
    // statement cost its plan-cache check, snapshot and executor start even on nothing:
    // PostgreSQL CPU per call, measured with pgbench (one client, BEGIN; the call; ROLLBACK)
    // on batches taken from the bench: an empty batch 175 -> 46 µs, a chat reservation 399 ->
    // 253 µs, a chat settlement 436 -> 334 µs (BEGIN; SELECT 1; ROLLBACK: 26 µs). A batch of
    // an earlier gateway (every part present, empty ones as []) is served the same way.
    version: 4,
    sql: COMMIT_FUNCTION_V4,
  },
  {
    // Tallies of the payment transactions by service and status, so that a list's total over
    // every account (the admin list, its filters by service or status) is a read of a few
    // rows, not a count of every transaction: `bench:postgres-start` measured 635 to 1,430 ms
    // for the first page of /admin/transactions on 5,000,000 transactions. Kept by triggers
    // on aihub.rows (statement triggers: one upsert per tag per statement), each backend
    // adding to its own shard (its pid), so that no two transactions ever wait for one tally row; shards of gone backends are folded at start
    // (PgStore.foldShards). The trigger is made before the count of what is there, in this
    // migration's transaction: it locks aihub.rows against writes until the commit, so no
    // row is counted twice or missed.
    version: 5,
    sql: TALLIES,
  },
  {
    // Commit ids (see COMMIT_IDS): a commit whose answer the connection lost is looked up
    // instead of answered "nothing was changed" (issue #36).
    version: 6,
    sql: COMMIT_IDS,
  },
];

/** The name of the index of `table` by `field` (one per pair the rooms declare). */
function indexName(table: string, field: string): string {
  return `rows_by_${checkFieldName(table)}__${checkFieldName(field)}`.slice(0, 63);
}

/**
 * Applies the migrations not yet applied (a fresh database gets the schema; a database of
 * the #18 layout gets it beside its old tables, which `migrate` reads), then makes sure every
 * declared index of a table by a field has its partial index. Returns the store's id.
 */
export async function migrateSchema(pool: pg.Pool): Promise<string> {
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
      for (const migration of MIGRATIONS) {
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
