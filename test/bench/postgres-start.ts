// npm run bench:postgres-start — issue #30: "a gateway's start costs its caches, not the
// history: serving within 2 s against a database with 5 M transactions".
//
// Two databases on one throwaway cluster (test/support/postgres.ts, fsync on): one holding a
// single account's onboarding and one recharge, the other the same plus BENCH_START_TXNS
// (5,000,000) payment transactions with what each real one leaves behind: its row, its
// postings, its wallet lines and its API-log records, cloned from the real recharge's in
// the tables' own shapes (ids, accounts, spread over 10,000 accounts, and times changed), then
// ANALYZE and CHECKPOINT. Then, BENCH_START_ROUNDS times, interleaved (empty, large, empty...):
// a new gateway process is started on each and timed from its spawn to the answer of its
// first `GET /v1/balance`, then its first page of `/admin/transactions` and the account's
// `/api/transactions` are timed, and the rows it read are counted from /metrics.
// Side by side in one run, so the ratio (large / empty) is what the history costs a start.
import { performance } from 'node:perf_hooks';
import { loadavg } from 'node:os';
import pg from 'pg';
import { admin, request, type Gateway } from '../gateway/helpers.ts';
import { onboard, paymentsConfig } from '../support/payments-helpers.ts';
import { startMember, stopAll } from '../support/multi-gateway.ts';
import { startPostgres } from '../support/postgres.ts';

const TXNS = Number(process.env.BENCH_START_TXNS ?? 5_000_000);
const ROUNDS = Number(process.env.BENCH_START_ROUNDS ?? 5);
const CHUNK = 250_000;
const ACCOUNTS = 10_000;

const cluster = await startPostgres();
const load_before = loadavg()[0]!;
const config = paymentsConfig();

interface Seeded {
  url: string;
  key: string;
  account_id: string;
}

/** A database with one onboarded account that made one recharge (through a real gateway). */
async function seedOne(name: string): Promise<Seeded> {
  const url = await cluster.createDatabase(name);
  const gateway = await startMember(url, 1, { config });
  try {
    const { key, account_id, headers } = await onboard(gateway, 100_000);
    const reply = await request(`${gateway.url}/api/recharge`, {
      headers,
      body: { operator_id: 1, number: '9812345100', amount: 10 },
    });
    if (reply.status !== 200)
      throw new Error(`recharge: ${reply.status} ${JSON.stringify(reply.body)}`);
    return { url, key, account_id };
  } finally {
    await stopAll([gateway], 'SIGTERM');
  }
}

/** Clones the account's recharge `TXNS` times, with what it left in every history table. */
async function grow(seeded: Seeded): Promise<void> {
  const db = new pg.Client({ connectionString: seeded.url });
  await db.connect();
  try {
    await db.query('SET synchronous_commit = off'); // seeding only: the bench's gateways commit as always
    const template = await db.query<{ id: string }>(
      `SELECT id FROM aihub.rows WHERE tbl = 'payment_txns' AND row->>'account_id' = $1`,
      [seeded.account_id],
    );
    if (template.rows.length !== 1)
      throw new Error(`expected one recharge, found ${template.rows.length}`);
    const txn_id = template.rows[0]!.id;
    const counts = await db.query<{ postings: string; lines: string; logs: string }>(
      `SELECT (SELECT count(*) FROM aihub.postings WHERE posting::text LIKE '%' || $2 || '%')::text AS postings,
              (SELECT count(*) FROM aihub.wallet_lines WHERE account_id = $1 AND posting::text LIKE '%' || $2 || '%')::text AS lines,
              (SELECT count(*) FROM aihub.history WHERE kind = 'api_log' AND account_id = $1 AND record::text LIKE '%/recharge%')::text AS logs`,
      [seeded.account_id, txn_id],
    );
    console.log(
      `# per transaction cloned: 1 row, ${counts.rows[0]!.postings} postings, ${counts.rows[0]!.lines} wallet lines, ${counts.rows[0]!.logs} API-log records`,
    );
    const started = performance.now();
    for (let from = 1; from <= TXNS; from += CHUNK) {
      const to = Math.min(TXNS, from + CHUNK - 1);
      const params = [seeded.account_id, txn_id, from, to, ACCOUNTS];
      // i: the clone's number; its account acc_b<i mod ACCOUNTS>; its time i seconds ago.
      await db.query('BEGIN');
      await db.query(
        `INSERT INTO aihub.rows (tbl, id, ver, created, row)
         SELECT 'payment_txns', 'txn_b' || i, 1, i,
           (r.row::jsonb || jsonb_build_object('id', 'txn_b' || i, 'account_id', 'acc_b' || (i % $5),
             'created_at', to_char(now() - i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'finalized_at', to_char(now() - i * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))::json
         FROM aihub.rows r, generate_series($3::int, $4::int) i
         WHERE r.tbl = 'payment_txns' AND r.id = $2 AND r.row->>'account_id' = $1`,
        params,
      );
      await db.query(
        `INSERT INTO aihub.postings (id, at, account_id, posting)
         SELECT p.id || '_b' || i, now() - i * interval '1 second', 'acc_b' || (i % $5),
           replace(replace(p.posting::text, $2, 'txn_b' || i), $1, 'acc_b' || (i % $5))::json
         FROM aihub.postings p, generate_series($3::int, $4::int) i
         WHERE p.posting::text LIKE '%' || $2 || '%'`,
        params,
      );
      await db.query(
        `INSERT INTO aihub.wallet_lines (account_id, at, posting_id, delta, balance, posting)
         SELECT 'acc_b' || (i % $5), now() - i * interval '1 second', w.posting_id || '_b' || i, w.delta, w.balance,
           replace(replace(w.posting::text, $2, 'txn_b' || i), $1, 'acc_b' || (i % $5))::json
         FROM aihub.wallet_lines w, generate_series($3::int, $4::int) i
         WHERE w.account_id = $1 AND w.posting::text LIKE '%' || $2 || '%'`,
        params,
      );
      await db.query(
        `INSERT INTO aihub.history (kind, at, account_id, key_id, tag, aux, aux2, label, record)
         SELECT h.kind, now() - i * interval '1 second', 'acc_b' || (i % $4), h.key_id, h.tag, h.aux, h.aux2, h.label,
           replace(h.record::text, $1, 'acc_b' || (i % $4))::json
         FROM aihub.history h, generate_series($2::int, $3::int) i
         WHERE h.kind = 'api_log' AND h.account_id = $1 AND h.record::text LIKE '%/recharge%'`,
        [seeded.account_id, from, to, ACCOUNTS],
      );
      await db.query('COMMIT');
      const s = (performance.now() - started) / 1000;
      console.log(
        `# ${to.toLocaleString('en')} of ${TXNS.toLocaleString('en')} transactions cloned (${s.toFixed(0)} s)`,
      );
    }
    await db.query('ANALYZE');
    await db.query('CHECKPOINT');
    const sizes = await db.query<{ t: string; n: string; size: string }>(
      `SELECT t, n::text, pg_size_pretty(size) AS size FROM (
         SELECT 'rows (payment_txns)' AS t, (SELECT count(*) FROM aihub.rows WHERE tbl = 'payment_txns') AS n, pg_total_relation_size('aihub.rows') AS size
         UNION ALL SELECT 'postings', (SELECT count(*) FROM aihub.postings), pg_total_relation_size('aihub.postings')
         UNION ALL SELECT 'wallet_lines', (SELECT count(*) FROM aihub.wallet_lines), pg_total_relation_size('aihub.wallet_lines')
         UNION ALL SELECT 'history', (SELECT count(*) FROM aihub.history), pg_total_relation_size('aihub.history')) s`,
    );
    for (const row of sizes.rows)
      console.log(`# ${row.t}: ${Number(row.n).toLocaleString('en')} rows, ${row.size}`);
  } finally {
    await db.end();
  }
}

/** A counter of a gateway's /metrics, summed over its labels. */
async function counter(gateway: Gateway, name: string): Promise<number> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  let sum = 0;
  for (const [, value] of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'gm')))
    sum += Number(value);
  return sum;
}

interface StartRun {
  serving_ms: number;
  /** From the gateway's readiness (listening, store open) to its first /v1/balance answer. */
  ready_ms: number;
  first_balance_ms: number;
  admin_page_ms: number;
  account_page_ms: number;
  rows_at_start: number;
  rows_to_serve: number;
}

async function timeStart(seeded: Seeded, index: number): Promise<StartRun> {
  const started = performance.now();
  const gateway = await startMember(seeded.url, index, { config });
  const ready_ms = performance.now() - started;
  try {
    const rows_at_start = await counter(gateway, 'aihub_store_rows_loaded_total');
    const asked = performance.now();
    const reply = await request(`${gateway.url}/v1/balance`, {
      headers: { authorization: `Bearer ${seeded.key}` },
    });
    const serving_ms = performance.now() - started;
    const first_balance_ms = performance.now() - asked;
    if (reply.status !== 200)
      throw new Error(`/v1/balance: ${reply.status} ${JSON.stringify(reply.body)}`);
    const rows_to_serve = await counter(gateway, 'aihub_store_rows_loaded_total');
    let at = performance.now();
    const page = await admin(gateway).get('/admin/transactions?limit=20');
    const admin_page_ms = performance.now() - at;
    if (page.status !== 200)
      throw new Error(`/admin/transactions: ${page.status} ${JSON.stringify(page.body)}`);
    at = performance.now();
    const own = await request(`${gateway.url}/api/transactions?limit=20`, {
      headers: { 'x-api-key': seeded.key },
    });
    const account_page_ms = performance.now() - at;
    if (own.status !== 200)
      throw new Error(`/api/transactions: ${own.status} ${JSON.stringify(own.body)}`);
    return {
      serving_ms,
      ready_ms,
      first_balance_ms,
      admin_page_ms,
      account_page_ms,
      rows_at_start,
      rows_to_serve,
    };
  } finally {
    await stopAll([gateway], 'SIGTERM');
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

try {
  const empty = await seedOne('bench_start_empty');
  const large = await seedOne('bench_start_large');
  await grow(large);
  const load_timing = loadavg()[0]!;
  const runs = { empty: [] as StartRun[], large: [] as StartRun[] };
  for (let round = 0; round < ROUNDS; round++) {
    runs.empty.push(await timeStart(empty, 10 + round));
    runs.large.push(await timeStart(large, 10 + round));
  }
  const label = `${TXNS.toLocaleString('en')} transactions`;
  const table: Array<[string, string, string, string]> = [
    ['measure (median of ' + ROUNDS + ')', 'empty', label, 'ratio'],
  ];
  for (const [name, pick] of [
    ['spawn to first /v1/balance answered, ms', (r: StartRun) => r.serving_ms],
    ['  of which spawn to ready (listening), ms', (r: StartRun) => r.ready_ms],
    ['  of which the first /v1/balance itself, ms', (r: StartRun) => r.first_balance_ms],
    ['first /admin/transactions page (20), ms', (r: StartRun) => r.admin_page_ms],
    ['first /api/transactions page (20), ms', (r: StartRun) => r.account_page_ms],
    ['rows read to start', (r: StartRun) => r.rows_at_start],
    ['rows read to answer /v1/balance (total)', (r: StartRun) => r.rows_to_serve],
  ] as const) {
    const a = median(runs.empty.map(pick));
    const b = median(runs.large.map(pick));
    table.push([name, a.toFixed(0), b.toFixed(0), a > 0 ? (b / a).toFixed(2) : '-']);
  }
  const widths = [0, 1, 2, 3].map((c) => Math.max(...table.map((r) => r[c]!.length)));
  for (const row of table) console.log(row.map((cell, c) => cell.padEnd(widths[c]!)).join('  '));
  console.log(
    `# every round (serving ms): empty ${runs.empty.map((r) => r.serving_ms.toFixed(0)).join(', ')}; large ${runs.large.map((r) => r.serving_ms.toFixed(0)).join(', ')}`,
  );
  console.log(
    `# load average ${load_before.toFixed(1)} before, ${load_timing.toFixed(1)} when timing began, ${loadavg()[0]!.toFixed(1)} after`,
  );
  const worst = Math.max(...runs.large.map((r) => r.serving_ms));
  console.log(
    worst <= 2_000
      ? `# serving within 2 s on ${label}: yes (worst ${worst.toFixed(0)} ms)`
      : `# serving within 2 s on ${label}: NO (worst ${worst.toFixed(0)} ms)`,
  );
} finally {
  await cluster.teardown();
}
