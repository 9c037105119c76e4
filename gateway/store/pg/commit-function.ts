// The PostgreSQL store's one commit statement, `aihub.commit(batch json)`, as the baseline
// migration creates it (docs/store-postgres.md, "Transactions"). A later change of it is a
// migration of its own that replaces it (CREATE OR REPLACE FUNCTION) with this text edited.

/**
 * `aihub.commit(batch json)`: a write batch in one statement (its own implicit transaction, one
 * round trip). It locks the batch's keys (advisory transaction locks on their 64-bit hashes, in
 * the ascending order the gateway sorted them: every commit takes its locks in one order, so
 * commits never deadlock, and two wait for each other only when they share a key), then checks
 * the read set (row, balance and index-key versions; platform balances by value) and the
 * guards on the current values. If anything differs it writes nothing and returns the current
 * values of what differed (kinds R, B, P, I). Else it records the commit id and writes, and
 * returns the new versions and values (kinds r, b, i): rows (`ver` from one sequence, so a
 * version is never reused), counter deltas, index versions of the keys whose sets changed,
 * wallet lines (each with the balance after it, the last line's plus its delta, under the
 * wallet's lock), balance deltas, the platform's shards, postings, history, usage and key
 * figures, meta; and NOTIFYs the announced keys.
 *
 * What it was measured into (each was a migration before the baseline squashed them):
 * - No JIT compilation (`SET jit = off`). PostgreSQL estimates 100 rows for each
 *   json_to_recordset/json_array_elements, so the guard statement was costed past
 *   jit_above_cost: every commit, even an empty one, spent ~40 ms (under load ~100 ms)
 *   compiling it with LLVM (auto_explain: "JIT ... Emission 38.9 ms" on a batch of one
 *   history record), most of a commit's time.
 * - The batch's parts parsed out of it once. The batch is json (jsonb refuses \u0000), and
 *   json is text: each of the ~20 batch->'part' accesses parsed the whole batch again.
 * - The statements on a part the batch leaves empty are skipped (the gateway leaves empty
 *   parts out; a batch of an earlier gateway, every part present, empty ones as [], is served
 *   the same way). Each cost its plan-cache check, snapshot and executor start even on
 *   nothing: PostgreSQL CPU per call, measured with pgbench on batches taken from the bench,
 *   an empty batch 175 -> 46 µs, a chat reservation 399 -> 253 µs, a chat settlement 436 ->
 *   334 µs (BEGIN; SELECT 1; ROLLBACK: 26 µs).
 * - Commit ids (`cid`, unique per statement sent), so that a commit whose answer was lost can
 *   be looked up (issue #36): recorded in aihub.commits in the same transaction, after the
 *   checks passed (a conflict writes nothing, the id included). With a plain INSERT: a
 *   gateway that lost the answer inserts the same id as a "fence" (PgStore.resolveCommit) and
 *   learns the outcome from the insert itself: conflicting with the commit's row (it
 *   committed; the insert waits for it if it is still running), or inserted, after which the
 *   commit, if it ever runs, fails on the duplicate id and changes nothing. Pruned after an
 *   hour.
 */
export const COMMIT_FUNCTION = `
CREATE FUNCTION aihub.commit(batch json)
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
  t_cid text;
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
      WHEN 'cid' THEN t_cid := jv #>> '{}';
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

  IF t_cid IS NOT NULL THEN
    INSERT INTO aihub.commits (id) VALUES (t_cid);
  END IF;

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
