// `aihub-gateway verify --database-url URL` and `aihub-gateway migrate --from-data-dir D
// --database-url URL`: the PostgreSQL store's books, and moving a JSON-file store into it.
import { join } from 'node:path';
import type pg from 'pg';
import {
  isArchivedRow,
  applyOp,
  emptyState,
  table,
  type JournalRecord,
  type State,
  type TableName,
} from './state.js';
import { JOURNAL_DIR, loadState } from './store.js';
import { readJournalPlaced } from './journal.js';
import { acquireLock } from './lock.js';
import { checkBooks, trackHold, type VerifyReport } from './verify.js';
import { checkPostingTaxes, checkRecordEnd } from './ledger-rules.js';
import { migrateSchema, openPool, readLog, writeRecords } from './pg.js';

const MAX_BREACHES = 50;

/** The JSON-file verify's report without its journal-segment fields. */
export type PgVerifyReport = Pick<
  VerifyReport,
  'ok' | 'breaches' | 'records' | 'postings' | 'accounts' | 'open_holds' | 'seq'
>;

interface Replayed {
  state: State;
  /** Every row as the log leaves it, finalized history included (`table\0id` → JSON). */
  rows: Map<string, string>;
  hold_steps: Map<string, 'open' | 'resolved'>;
  records: number;
  postings: number;
}

/** Replays a log from its first record, every op checked as the gateway checks it. */
async function replay(
  records: AsyncIterable<JournalRecord> | Iterable<JournalRecord>,
  breach: (message: string) => void,
): Promise<Replayed> {
  const state = emptyState(new Date(0).toISOString());
  const rows = new Map<string, string>();
  const hold_steps = new Map<string, 'open' | 'resolved'>();
  let count = 0;
  let postings = 0;
  for await (const record of records) {
    if (record.s !== count + 1)
      breach(
        `the log holds record ${record.s} where ${count + 1} belongs: earlier history is missing`,
      );
    count = record.s;
    for (const op of record.ops) {
      if (op.o === 'post') {
        postings++;
        trackHold(hold_steps, op.p, record.s, breach);
        checkPostingTaxes(op.p, record.s, breach);
      }
      try {
        applyOp(state, op);
      } catch (error) {
        breach(`record ${record.s}: ${(error as Error).message}`);
      }
      if (op.o === 'set') rows.set(`${op.t}\u0000${op.id}`, JSON.stringify(op.v));
      else if (op.o === 'del') rows.delete(`${op.t}\u0000${op.id}`);
    }
    if (record.ops.some((op) => op.o === 'post')) checkRecordEnd(state.balances, record.s, breach);
    state.seq = record.s;
  }
  const usage = state.tables.usage ?? {};
  for (const id of Object.keys(usage)) rows.set(`usage\u0000${id}`, JSON.stringify(usage[id]));
  return { state, rows, hold_steps, records: count, postings };
}

/** The books of a PostgreSQL store: the log replayed and checked, and the materialized rows and balances against it. */
export async function verifyPg(database_url: string): Promise<PgVerifyReport> {
  const pool = openPool(database_url, { max: 2, statement_timeout_ms: 600_000 });
  try {
    const client = await pool.connect();
    client.on('error', () => {}); // the query in flight fails with it
    try {
      // One snapshot: gateways may go on committing meanwhile.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const report = await verifyIn(client);
      await client.query('COMMIT');
      return report;
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
  }
}

async function verifyIn(client: pg.PoolClient): Promise<PgVerifyReport> {
  const breaches: string[] = [];
  const breach = (message: string) => {
    if (breaches.length < MAX_BREACHES) breaches.push(message);
  };
  const head = await client
    .query<{ seq: string }>('SELECT seq FROM aihub_head WHERE id = 1')
    .catch(() => null);
  if (!head?.rows[0])
    throw new Error(
      'no AIHub store in this database (no aihub_head row): start a gateway on it or migrate into it first',
    );
  const head_seq = Number(head.rows[0].seq);
  const replayed = await replay(readLog(client, 0, head_seq), breach);
  if (replayed.records !== head_seq)
    breach(`the head says record ${head_seq} but the log ends at ${replayed.records}`);

  // The materialized state a reader of the tables sees, against the replay.
  const loaded = emptyState(replayed.state.meta.created_at);
  loaded.seq = head_seq;
  const balances = await client.query<{ ledger_account: string; micros: string }>(
    'SELECT ledger_account, micros FROM aihub_balances',
  );
  for (const row of balances.rows) {
    const micros = Number(row.micros);
    if (micros !== 0 || Object.hasOwn(replayed.state.balances, row.ledger_account))
      loaded.balances[row.ledger_account] = micros;
  }
  const stored = new Map<string, string>();
  const rows = await client.query<{ tbl: string; id: string; row: string }>(
    'SELECT tbl, id, row::text AS row FROM aihub_rows',
  );
  for (const row of rows.rows) {
    stored.set(`${row.tbl}\u0000${row.id}`, canonical(row.row));
    const value: unknown = JSON.parse(row.row);
    // An own property of a table without a prototype: an id such as `__proto__` is a row like any other.
    if (!isArchivedRow(row.tbl, value))
      Object.defineProperty(table(loaded, row.tbl as TableName), row.id, {
        value,
        writable: true,
        enumerable: true,
        configurable: true,
      });
  }
  checkBooks(loaded, replayed.state, replayed.hold_steps, breach);
  for (const [key, json] of replayed.rows) {
    const have = stored.get(key);
    if (have === undefined) breach(`row ${key.replace('\u0000', ' ')} is missing from aihub_rows`);
    else if (have !== canonical(json))
      breach(`row ${key.replace('\u0000', ' ')} in aihub_rows differs from what the log leaves`);
  }
  for (const key of stored.keys())
    if (!replayed.rows.has(key))
      breach(
        `row ${key.replace('\u0000', ' ')} is in aihub_rows but the log deleted it or never wrote it`,
      );

  return {
    ok: breaches.length === 0,
    breaches,
    records: replayed.records,
    postings: replayed.postings,
    accounts: Object.keys(replayed.state.tables.accounts ?? {}).length,
    open_holds: Object.keys(replayed.state.tables.holds ?? {}).length,
    seq: head_seq,
  };
}

/** The same JSON text for the same value (PostgreSQL's json keeps the text; this sorts nothing, it re-serializes). */
function canonical(json: string): string {
  return JSON.stringify(JSON.parse(json));
}

export interface MigrateReport {
  ok: boolean;
  records: number;
  seq: number;
  /** What differs between the data dir and the database after the move (empty when ok). */
  differences: string[];
  verify: PgVerifyReport;
  /** Files the database does not hold: copy them by hand. */
  notes: string[];
}

/**
 * Moves a JSON-file store (its gateway stopped: the data dir's lock is taken) into an empty
 * PostgreSQL database: every journal record in order, in one database transaction, then
 * verifies the database and compares its state with the data dir's, table by table.
 */
export async function migrateDataDir(
  data_dir: string,
  database_url: string,
): Promise<MigrateReport> {
  const release = acquireLock(data_dir);
  const pool = openPool(database_url, { max: 2, statement_timeout_ms: 600_000 });
  try {
    const { state: source } = await loadState(data_dir, { repair: false, now: () => new Date() });
    await migrateSchema(pool);
    const records = readJournalPlaced(join(data_dir, JOURNAL_DIR), 0, {
      repair: false,
      up_to_seq: source.seq,
    });
    const count = await copyJournal(pool, records, source);
    const verify = await verifyPg(database_url);
    const differences = [
      ...verify.breaches.map((b) => `database: ${b}`),
      ...(await compareWithDatabase(source, pool)),
    ];
    return {
      ok: differences.length === 0,
      records: count,
      seq: source.seq,
      differences,
      verify,
      notes: [
        `the encryption key (${join(data_dir, 'encryption.key')} or AIHUB_ENCRYPTION_KEY) is not in the database: give every gateway the same AIHUB_ENCRYPTION_KEY`,
        'eKYC documents stay files under the data dir: copy them to each gateway’s data dir',
      ],
    };
  } finally {
    await pool.end().catch(() => {});
    release();
  }
}

/**
 * Copies the journal's records into an empty database in one transaction (refused when the
 * database already holds a store, or when the journal does not run 1..source.seq); returns
 * the last record's sequence number.
 */
async function copyJournal(
  pool: pg.Pool,
  records: Iterable<{ record: JournalRecord }>,
  source: State,
): Promise<number> {
  const client = await pool.connect();
  client.on('error', () => {}); // the query in flight fails with it
  let count = 0;
  try {
    await client.query('BEGIN');
    const head = await client.query<{ seq: string }>(
      'SELECT seq FROM aihub_head WHERE id = 1 FOR UPDATE',
    );
    if (Number(head.rows[0]!.seq) !== 0)
      throw new Error(
        `the database already holds an AIHub store (at record ${head.rows[0]!.seq}): migrate into an empty database`,
      );
    const state = emptyState(source.meta.created_at);
    let chunk: JournalRecord[] = [];
    const flush = async () => {
      if (chunk.length === 0) return;
      await writeRecords(client, chunk, [], state);
      chunk = [];
    };
    for (const { record } of records) {
      if (record.s !== count + 1)
        throw new Error(
          `the journal holds record ${record.s} where ${count + 1} belongs: its earlier history is missing, so it cannot be moved whole`,
        );
      for (const op of record.ops) applyOp(state, op);
      state.seq = record.s;
      count = record.s;
      chunk.push(record);
      if (chunk.length >= 1_000) await flush();
    }
    await flush();
    if (count !== source.seq)
      throw new Error(
        `the journal ends at record ${count} but the data dir's state is at ${source.seq}`,
      );
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
  return count;
}

/** The differences between a data dir's state and what the database's log replays to. */
async function compareWithDatabase(source: State, pool: pg.Pool): Promise<string[]> {
  const differences: string[] = [];
  const note = (message: string) => {
    if (differences.length < MAX_BREACHES) differences.push(message);
  };
  const { state } = await replay(readLog(pool, 0), note);
  if (state.seq !== source.seq)
    note(`the data dir is at record ${source.seq}, the database at ${state.seq}`);
  if (state.meta.admin_token_hash !== source.meta.admin_token_hash)
    note('the admin token hash differs');
  const accounts = new Set([...Object.keys(source.balances), ...Object.keys(state.balances)]);
  for (const account of accounts) {
    if ((source.balances[account] ?? 0) !== (state.balances[account] ?? 0))
      note(
        `${account}: ${source.balances[account] ?? 0} in the data dir, ${state.balances[account] ?? 0} in the database`,
      );
  }
  const names = new Set([...Object.keys(source.tables), ...Object.keys(state.tables)]);
  for (const name of names) {
    const a = (source.tables[name as TableName] ?? {}) as Record<string, unknown>;
    const b = (state.tables[name as TableName] ?? {}) as Record<string, unknown>;
    for (const id of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (JSON.stringify(a[id]) !== JSON.stringify(b[id])) note(`${name} ${id} differs`);
    }
  }
  return differences;
}
