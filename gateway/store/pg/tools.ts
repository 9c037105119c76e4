// `aihub-gateway verify --database-url URL` and `aihub-gateway migrate`, for the layout of
// issue #30 (docs/store-postgres.md, "Migrate and verify"):
// - verify checks the books from the tables, in one read-only snapshot;
// - migrate moves a JSON-file store (its journal, from the first record) or a database of the
//   #18 layout (its log, public.aihub_log) into this layout's tables, in one transaction, with
//   the same conversion of ops into rows, deltas, postings and history as a commit; then it
//   verifies the database and compares its state with the source's, table by table.
import { join } from 'node:path';
import type pg from 'pg';
import { acquireLock } from '../lock.js';
import { readJournalPlaced } from '../journal.js';
import {
  applyOp,
  emptyState,
  isArchivedRow,
  table,
  type JournalRecord,
  type Op,
  type State,
  type TableName,
} from '../state.js';
import { JOURNAL_DIR, loadState } from '../load-state.js';
import { checkBooks, trackHold, type VerifyReport } from '../verify.js';
import type { ReplayCheck } from '../replay-check.js';
import { checkPostingTaxes, checkRecordEnd } from '../ledger-rules.js';
import type { RunOp } from './cache.js';
import { collectOps, type CommitBatch } from './commit.js';
import type { HistoryTags } from '../history-tags.js';
import { SEP, isCustomerBalance } from './keys.js';
import { migrateSchema, newLayoutEmpty, oldLayoutRecords } from './schema.js';
import { openPool } from './pool.js';

const MAX_BREACHES = 50;
/** Records per commit statement while migrating. */
const RECORDS_PER_STATEMENT = 500;

export type PgVerifyReport = Pick<
  VerifyReport,
  'ok' | 'breaches' | 'records' | 'postings' | 'accounts' | 'open_holds' | 'seq'
>;

/** The books of a PostgreSQL store of this layout (exit 1 on a breach). */
export async function verifyPg(
  database_url: string,
  checks: readonly ReplayCheck[] = [],
): Promise<PgVerifyReport> {
  const pool = openPool(database_url, { max: 2, statement_timeout_ms: 600_000 });
  try {
    const client = await pool.connect();
    client.on('error', () => {}); // the query in flight fails with it
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const report = await verifyIn(client, checks);
      await client.query('COMMIT');
      return report;
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
  }
}

/** The rooms' checks: the rows of their tables, then their breaches. */
async function finishChecks(
  client: pg.PoolClient,
  checks: readonly ReplayCheck[],
  breach: (message: string) => void,
): Promise<void> {
  for (const check of checks) {
    for await (const rows of pages<{ n: string; tbl: string; id: string; row: unknown }>(
      client,
      (after) => ({
        sql: `SELECT r.created::text AS n, r.tbl, r.id, r.row FROM aihub.rows r
              WHERE r.tbl = ANY($2::text[]) AND r.created > $1::bigint ORDER BY r.created LIMIT 5000`,
        params: [after, check.tables],
      }),
    ))
      for (const { tbl, id, row } of rows) check.row(tbl, id, row);
    check.finish(breach);
  }
}

/** A query's rows a page at a time (a cursor-less keyset walk by `n`), so memory holds a page. */
async function* pages<R extends pg.QueryResultRow & { n: string }>(
  client: pg.PoolClient,
  text: (after: string) => { sql: string; params: unknown[] },
): AsyncGenerator<R[]> {
  let after = '0';
  for (;;) {
    const { sql, params } = text(after);
    const { rows } = await client.query<R>(sql, params);
    if (rows.length === 0) return;
    yield rows;
    after = rows.at(-1)!.n;
  }
}

async function verifyIn(
  client: pg.PoolClient,
  checks: readonly ReplayCheck[],
): Promise<PgVerifyReport> {
  const breaches: string[] = [];
  const breach = (message: string) => {
    if (breaches.length < MAX_BREACHES) breaches.push(message);
  };
  const exists = await client.query<{ ok: boolean }>(
    `SELECT to_regclass('aihub.rows') IS NOT NULL AS ok`,
  );
  if (!exists.rows[0]?.ok)
    throw new Error(
      'no AIHub store of this version in this database (no aihub.rows): start a gateway on it or migrate into it first',
    );

  // The balances as a reader of the tables sees them: customer rows and the platform's sums.
  const loaded = emptyState(new Date(0).toISOString());
  const customer = await client.query<{ account: string; micros: string }>(
    'SELECT account, micros::text AS micros FROM aihub.balances',
  );
  for (const row of customer.rows)
    if (Number(row.micros) !== 0) loaded.balances[row.account] = Number(row.micros);
  const pooled = await client.query<{ account: string; micros: string }>(
    'SELECT account, sum(micros)::text AS micros FROM aihub.pool GROUP BY account',
  );
  for (const row of pooled.rows) {
    if (isCustomerBalance(row.account))
      breach(`${row.account} is a customer's account but has platform shards`);
    if (Number(row.micros) !== 0) loaded.balances[row.account] = Number(row.micros);
  }
  const holds = await client.query<{ id: string; row: unknown }>(
    `SELECT id, row FROM aihub.rows WHERE tbl = 'holds'`,
  );
  for (const row of holds.rows)
    Object.defineProperty(table(loaded, 'holds'), row.id, {
      value: row.row,
      writable: true,
      enumerable: true,
      configurable: true,
    });

  // Every posting, in the order it was committed: balanced, and what it adds up to.
  const replayed = emptyState(new Date(0).toISOString());
  const hold_steps = new Map<string, 'open' | 'resolved'>();
  let postings = 0;
  // The postings of one commit statement share its transaction id: the ledger's rules that
  // hold after every commit (network:transfers back at zero) are checked where it changes.
  let commit_xid: string | null = null;
  for await (const rows of pages<{
    n: string;
    xid: string;
    posting: import('../state.js').Posting;
  }>(client, (after) => ({
    sql: 'SELECT p.n::text AS n, p.xid::text AS xid, p.posting FROM aihub.postings p WHERE p.n > $1::bigint ORDER BY p.n LIMIT 5000',
    params: [after],
  }))) {
    for (const { n, xid, posting } of rows) {
      if (commit_xid !== null && xid !== commit_xid)
        checkRecordEnd(replayed.balances, Number(n) - 1, breach);
      commit_xid = xid;
      postings++;
      for (const check of checks) check.posting(posting);
      trackHold(hold_steps, posting, Number(n), breach);
      checkPostingTaxes(posting, Number(n), breach);
      let sum = 0;
      for (const [account, amount] of posting.entries) {
        if (!Number.isSafeInteger(amount)) breach(`posting ${posting.id}: amount ${amount}`);
        sum += amount;
        replayed.balances[account] = (replayed.balances[account] ?? 0) + amount;
      }
      if (sum !== 0) breach(`posting ${posting.id} does not balance: entries sum to ${sum}`);
    }
  }
  if (commit_xid !== null) checkRecordEnd(replayed.balances, postings, breach);
  for (const name of Object.keys(replayed.balances))
    if (replayed.balances[name] === 0) delete replayed.balances[name];
  checkBooks(loaded, replayed, hold_steps, breach);
  await finishChecks(client, checks, breach);

  // Wallet lines: each opens where the account's line before it closed.
  const wallets = new Map<string, number>();
  for await (const rows of pages<{ n: string; account_id: string; delta: string; balance: string }>(
    client,
    (after) => ({
      sql: `SELECT l.n::text AS n, l.account_id, l.delta::text AS delta, l.balance::text AS balance
            FROM aihub.wallet_lines l WHERE l.n > $1::bigint ORDER BY l.n LIMIT 5000`,
      params: [after],
    }),
  )) {
    for (const row of rows) {
      const opening = Number(row.balance) - Number(row.delta);
      const before = wallets.get(row.account_id) ?? 0;
      if (opening !== before)
        breach(
          `wallet line ${row.n} of ${row.account_id} opens at ${opening} but the line before it closed at ${before}`,
        );
      wallets.set(row.account_id, Number(row.balance));
    }
  }

  // Usage totals and key figures against their history.
  const usage = await client.query<{ account_id: string; protocol: string; bad: boolean }>(
    `WITH h AS (
       SELECT account_id,
         CASE WHEN record->>'protocol' ~ '^[a-z_]{1,20}$' THEN record->>'protocol' ELSE 'chat' END AS protocol,
         count(*) AS requests, sum(coalesce((record->>'cost_micros')::bigint, 0)) AS cost
       FROM aihub.history WHERE kind = 'usage' AND account_id IS NOT NULL GROUP BY 1, 2)
     SELECT coalesce(u.account_id, h.account_id) AS account_id, coalesce(u.protocol, h.protocol) AS protocol, true AS bad
     FROM aihub.usage u FULL JOIN h ON h.account_id = u.account_id AND h.protocol = u.protocol
     WHERE u.requests IS DISTINCT FROM h.requests OR u.cost_micros IS DISTINCT FROM h.cost`,
  );
  for (const row of usage.rows)
    breach(`usage of ${row.account_id} (${row.protocol}) differs from its usage records`);

  // The payment transactions' tallies (schema.ts) against the rows they count.
  const tallies = await client.query<{ tag: string; kept: string | null; counted: string | null }>(
    `WITH c AS (
       SELECT tag, count(*) AS n FROM aihub.rows r, unnest(aihub.txn_tags(r.row)) AS tag
       WHERE r.tbl = 'payment_txns' GROUP BY tag),
     t AS (SELECT tag, sum(n) AS n FROM aihub.tallies GROUP BY tag HAVING sum(n) <> 0)
     SELECT coalesce(t.tag, c.tag) AS tag, t.n::text AS kept, c.n::text AS counted
     FROM t FULL JOIN c ON c.tag = t.tag WHERE t.n IS DISTINCT FROM c.n`,
  );
  for (const row of tallies.rows)
    breach(
      `payment transactions tallied ${row.tag}: ${row.kept ?? 0}, but ${row.counted ?? 0} are there`,
    );

  const [counts] = (
    await client.query<{ records: string; accounts: string }>(
      `SELECT (SELECT count(*) FROM aihub.history)::text AS records,
         (SELECT count(*) FROM aihub.rows WHERE tbl = 'accounts')::text AS accounts`,
    )
  ).rows;
  return {
    ok: breaches.length === 0,
    breaches,
    records: Number(counts!.records) + postings,
    postings,
    accounts: Number(counts!.accounts),
    open_holds: holds.rows.length,
    seq: 0,
  };
}

export interface MigrateReport {
  ok: boolean;
  /** Where the store came from: a data dir, or this database's #18 layout. */
  from: string;
  records: number;
  seq: number;
  /** What differs between the source and the database after the move (empty when ok). */
  differences: string[];
  verify: PgVerifyReport;
  /** Files the database does not hold: copy them by hand. */
  notes: string[];
}

/**
 * Moves a JSON-file store (its gateway stopped: the data dir's lock is taken) into a database
 * whose tables of this layout are empty, then verifies and compares.
 */
export async function migrateDataDir(
  data_dir: string,
  database_url: string,
  history_tags: HistoryTags,
): Promise<MigrateReport> {
  const release = acquireLock(data_dir);
  try {
    const { state: source } = await loadState(data_dir, { repair: false, now: () => new Date() });
    const records = readJournalPlaced(join(data_dir, JOURNAL_DIR), 0, {
      repair: false,
      up_to_seq: source.seq,
    });
    return await migrateRecords(
      database_url,
      history_tags,
      data_dir,
      (function* () {
        for (const { record } of records) yield record;
      })(),
      source,
      [
        `the encryption key (${join(data_dir, 'encryption.key')} or AIHUB_ENCRYPTION_KEY) is not in the database: give every gateway the same AIHUB_ENCRYPTION_KEY`,
        'eKYC documents stay files under the data dir: copy them to each gateway’s data dir',
      ],
    );
  } finally {
    release();
  }
}

/**
 * Moves the #18 layout of this database (public.aihub_log, every gateway stopped) into this
 * layout's tables, then verifies and compares with the log's replay. The old tables stay.
 */
export async function migrateOldLayout(
  database_url: string,
  history_tags: HistoryTags,
): Promise<MigrateReport> {
  const pool = openPool(database_url, { max: 2, statement_timeout_ms: 600_000 });
  let head: number;
  try {
    head = await oldLayoutRecords(pool);
  } finally {
    await pool.end().catch(() => {});
  }
  if (head === 0)
    throw new Error(
      'this database holds no store of the earlier layout (public.aihub_log is empty or missing)',
    );
  // The source state: the old log replayed.
  const source = emptyState(new Date(0).toISOString());
  const reader = openPool(database_url, { max: 1, statement_timeout_ms: 600_000 });
  try {
    for await (const record of readOldLog(reader, head)) {
      for (const op of record.ops) applyOp(source, op);
      source.seq = record.s;
    }
    const [key_check] = (
      await reader
        .query<{ sealed: string }>(
          `SELECT sealed FROM public.aihub_key_check WHERE to_regclass('public.aihub_key_check') IS NOT NULL AND id = 1`,
        )
        .catch(() => ({ rows: [] as Array<{ sealed: string }> }))
    ).rows;
    const report = await migrateRecords(
      database_url,
      history_tags,
      'public.aihub_log',
      readOldLog(reader, head),
      source,
      [
        'the old tables (public.aihub_*) are left as they were: drop them once the new layout serves',
      ],
    );
    if (key_check && report.ok) {
      const writer = openPool(database_url, { max: 1 });
      await writer
        .query(
          `INSERT INTO aihub.key_check (id, sealed) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`,
          [key_check.sealed],
        )
        .finally(() => writer.end());
    }
    return report;
  } finally {
    await reader.end().catch(() => {});
  }
}

/** The #18 log up to `head`, a page at a time. */
async function* readOldLog(pool: pg.Pool, head: number): AsyncGenerator<JournalRecord> {
  let seq = 0;
  for (;;) {
    const { rows } = await pool.query<{ seq: string; at: Date; ops: string }>(
      'SELECT seq, at, ops FROM public.aihub_log WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT 2000',
      [seq, head],
    );
    for (const row of rows) {
      const s = Number(row.seq);
      if (s !== seq + 1) throw new Error(`the old log has a gap: record ${s} follows ${seq}`);
      seq = s;
      yield { s, t: row.at.toISOString(), ops: JSON.parse(row.ops) as Op[] };
    }
    if (rows.length < 2000) return;
  }
}

async function migrateRecords(
  database_url: string,
  history_tags: HistoryTags,
  from: string,
  records: Iterable<JournalRecord> | AsyncIterable<JournalRecord>,
  source: State,
  notes: string[],
): Promise<MigrateReport> {
  const pool = openPool(database_url, { max: 2, statement_timeout_ms: 600_000 });
  let count = 0;
  try {
    await migrateSchema(pool);
    const client = await pool.connect();
    client.on('error', () => {});
    try {
      await client.query('BEGIN');
      if (!(await newLayoutEmpty(client)))
        throw new Error(
          'the database already holds a store of this version: migrate into an empty one',
        );
      let chunk: JournalRecord[] = [];
      const flush = async () => {
        if (chunk.length === 0) return;
        await client.query('SELECT count(*) FROM aihub.commit($1)', [
          JSON.stringify(recordsBatch(chunk, history_tags)),
        ]);
        chunk = [];
      };
      for await (const record of records) {
        if (record.s !== count + 1)
          throw new Error(
            `the source holds record ${record.s} where ${count + 1} belongs: its earlier history is missing, so it cannot be moved whole`,
          );
        count = record.s;
        chunk.push(record);
        if (chunk.length >= RECORDS_PER_STATEMENT) await flush();
      }
      await flush();
      if (count !== source.seq)
        throw new Error(`the source ends at record ${count} but its state is at ${source.seq}`);
      if (source.meta.admin_token_hash !== null)
        await client.query(
          `INSERT INTO aihub.meta (k, v) VALUES ('admin_token_hash', $1) ON CONFLICT (k) DO UPDATE SET v = excluded.v`,
          [JSON.stringify(source.meta.admin_token_hash)],
        );
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
    const verify = await verifyPg(database_url);
    const differences = [
      ...verify.breaches.map((b) => `database: ${b}`),
      ...(await compareWithDatabase(source, pool)),
    ];
    return {
      ok: differences.length === 0,
      from,
      records: count,
      seq: source.seq,
      differences,
      verify,
      notes,
    };
  } finally {
    await pool.end().catch(() => {});
  }
}

/** Journal records as one commit statement's writes (no locks, reads or guards: nothing else writes). */
export function recordsBatch(
  records: readonly JournalRecord[],
  history_tags: HistoryTags,
): CommitBatch {
  const collected = {
    tags: history_tags,
    absolute: new Set<string>(),
    adds: new Map<string, number>(),
    balance: new Map<string, number>(),
    pool: new Map<string, number>(),
    post: [] as CommitBatch['post'],
    wal: [] as CommitBatch['wal'],
    hist: [] as CommitBatch['hist'],
    use: new Map<string, CommitBatch['use'][number]>(),
    ks: new Map<string, CommitBatch['ks'][number]>(),
    meta: [] as CommitBatch['meta'],
  };
  const last = new Map<string, { t: string; i: string; v: unknown }>();
  for (const record of records) {
    collectOps(record.ops as RunOp[], collected);
    for (const op of record.ops) {
      if (op.o === 'set') last.set(`${op.t}${SEP}${op.id}`, { t: op.t, i: op.id, v: op.v });
      else if (op.o === 'del')
        last.set(`${op.t}${SEP}${op.id}`, { t: op.t, i: op.id, v: undefined });
      else if (op.o === 'add') {
        const key = `${op.t}${SEP}${op.id}`;
        const was = last.get(key);
        if (was) {
          const next = (typeof was.v === 'number' ? was.v : 0) + op.n;
          last.set(key, { t: op.t, i: op.id, v: next === 0 ? undefined : next });
        }
      }
    }
  }
  return {
    locks: [],
    rr: [],
    br: [],
    pr: [],
    ir: [],
    g: [],
    set: [...last.values()]
      .filter((e) => e.v !== undefined)
      .map((e) => ({ t: e.t, i: e.i, r: e.v })),
    del: [...last.values()].filter((e) => e.v === undefined).map((e) => ({ t: e.t, i: e.i })),
    add: [...collected.adds]
      .filter(([key]) => !last.has(key.slice(1)))
      .map(([key, n]) => {
        const at = key.indexOf(SEP);
        return { t: key.slice(1, at), i: key.slice(at + 1), n };
      }),
    bal: [...collected.balance].map(([a, d]) => ({ a, d })).sort((x, y) => (x.a < y.a ? -1 : 1)),
    pool: [...collected.pool].map(([a, d]) => ({ a, d })),
    shard: 'migrate',
    post: collected.post,
    wal: collected.wal,
    hist: collected.hist,
    use: [...collected.use.values()],
    ks: [...collected.ks.values()],
    ix: [],
    meta: collected.meta,
    notify: null,
  };
}

/** The differences between a source's state and what the database's tables hold. */
async function compareWithDatabase(source: State, pool: pg.Pool): Promise<string[]> {
  const differences: string[] = [];
  const note = (message: string) => {
    if (differences.length < MAX_BREACHES) differences.push(message);
  };
  const balances = new Map<string, number>();
  for (const row of (
    await pool.query<{ account: string; micros: string }>(
      `SELECT account, micros::text AS micros FROM aihub.balances
       UNION ALL SELECT account, sum(micros)::text FROM aihub.pool GROUP BY account`,
    )
  ).rows)
    balances.set(row.account, (balances.get(row.account) ?? 0) + Number(row.micros));
  for (const account of new Set([...Object.keys(source.balances), ...balances.keys()])) {
    const want = source.balances[account] ?? 0;
    const have = balances.get(account) ?? 0;
    if (want !== have) note(`${account}: ${want} in the source, ${have} in the database`);
  }
  const stored = new Map<string, string>();
  const archived = new Set<string>();
  for (const row of (
    await pool.query<{ tbl: string; id: string; row: string }>(
      'SELECT tbl, id, row::text AS row FROM aihub.rows',
    )
  ).rows) {
    const key = `${row.tbl}${SEP}${row.id}`;
    stored.set(key, JSON.stringify(JSON.parse(row.row)));
    if (isArchivedRow(row.tbl, JSON.parse(row.row))) archived.add(key);
  }
  const seen = new Set<string>();
  for (const name of Object.keys(source.tables) as TableName[]) {
    if (name === 'usage') continue;
    const rows = (source.tables[name] ?? {}) as Record<string, unknown>;
    for (const id of Object.keys(rows)) {
      const key = `${name}${SEP}${id}`;
      seen.add(key);
      if (stored.get(key) !== JSON.stringify(rows[id])) note(`${name} ${id} differs`);
    }
  }
  for (const key of stored.keys())
    if (!seen.has(key) && !archived.has(key))
      note(`${key.replace(SEP, ' ')} is in the database but not in the source`);
  const usage = (
    await pool.query<{ account_id: string; requests: string; cost: string }>(
      'SELECT account_id, sum(requests)::text AS requests, sum(cost_micros)::text AS cost FROM aihub.usage GROUP BY account_id',
    )
  ).rows;
  const source_usage = (source.tables.usage ?? {}) as Record<
    string,
    { requests: number; cost_micros: number }
  >;
  const db_usage = new Map(usage.map((u) => [u.account_id, u]));
  for (const id of new Set([...Object.keys(source_usage), ...db_usage.keys()])) {
    const a = source_usage[id];
    const b = db_usage.get(id);
    if (
      (a?.requests ?? 0) !== Number(b?.requests ?? 0) ||
      (a?.cost_micros ?? 0) !== Number(b?.cost ?? 0)
    )
      note(`usage of ${id} differs`);
  }
  return differences;
}
