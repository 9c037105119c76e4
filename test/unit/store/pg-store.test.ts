// The PostgreSQL store of issue #30 (gateway/store/pg/, docs/store-postgres.md): rows in tables,
// a bounded cache per gateway, one commit statement that locks only the keys a batch touched.
// What the JSON-file store promises holds here too (commits, rollbacks, history reads, money
// never overdrawn, idempotency once), across stores on one database; and the design shows in
// counts: a wallet locked elsewhere holds up only that wallet, no store applies another's
// writes, and a store's start reads a bounded number of rows whatever the history.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { FileStore } from '../../../gateway/store/store.ts';
import type { Store } from '../../../gateway/store/types.ts';
import { StoreUnavailableError } from '../../../gateway/kernel/errors.ts';
import { openPgStore, type PgStore } from '../../../gateway/store/pg/store.ts';
import { OPTIMISTIC_TRIES } from '../../../gateway/store/pg/batch.ts';
import { balanceKey, lockOf } from '../../../gateway/store/pg/keys.ts';
import { MIGRATIONS, migrateSchema } from '../../../gateway/store/pg/schema.ts';
import { PAYMENT_HISTORY_TAGS } from '../../../gateway/payments/history-tags.ts';
import { migrateDataDir, migrateOldLayout, verifyPg } from '../../../gateway/store/pg/tools.ts';
import { readJournal } from '../../../gateway/store/journal.ts';
import { JOURNAL_DIR } from '../../../gateway/store/store.ts';
import { join } from 'node:path';
import {
  FUNDING_TOPUP,
  InsufficientBalanceError,
  availableMicros,
  balanceMicros,
  creditWallet,
  debitWallet,
} from '../../../gateway/ledger/ledger.ts';
import { startPostgres, type PostgresCluster } from '../../support/postgres.ts';
import { SharedReservations } from '../../../gateway/chat/reservations.ts';
import { reserveShared, settle } from '../../../gateway/chat/billing.ts';
import { chatConfigSchema } from '../../../gateway/chat/config.ts';
import { testAccount } from '../../support/store-fixtures.ts';
import { tempDir } from '../../support/temp.ts';

/** Debits 10,000 micros from `account_id` once per idempotency `key`: 'moved', or 'replayed' when the key is recorded already. */
function debitOnce(store: Store, key: string, account_id: string): Promise<'moved' | 'replayed'> {
  return store.transact((tx) => {
    if (tx.get('idempotency', key)) return 'replayed';
    debitWallet(tx, { account_id, amount_micros: 10_000, to: 'revenue:ai', memo: 'idem' });
    tx.set('idempotency', key, {
      key,
      request_hash: 'h',
      status: 200,
      body: {},
      created_at: tx.now.toISOString(),
    });
    return 'moved';
  });
}

let cluster: PostgresCluster;
before(async () => {
  cluster = await startPostgres();
});
/** Every temp dir a test made (a data dir to migrate): removed at the end, pass or fail. */
const made: string[] = [];
after(async () => {
  await cluster?.teardown();
  for (const path of made) rmSync(path, { recursive: true, force: true });
});

const dir = (prefix = 'aihub-pg-') => {
  const path = tempDir(prefix);
  made.push(path);
  return path;
};
const open = (url: string, options: Parameters<typeof openPgStore>[1] = {}) =>
  openPgStore(url, { poll_ms: 60_000, ...options });
const account = testAccount;
const credit = (store: Store, id: string, micros: number, ref = `r-${Math.random()}`) =>
  store.transact((tx) =>
    creditWallet(tx, {
      account_id: id,
      amount_micros: micros,
      from: FUNDING_TOPUP,
      memo: 'top-up',
      ref,
    }),
  );
/** A wallet's balance as committed now (a fresh read: loaded from the database). */
const balance = (store: Store, id: string) =>
  store.read((state) => balanceMicros(state, id), { fresh: true });
const available = (store: Store, id: string) =>
  store.read((state) => availableMicros(state, id), { fresh: true });
const debit = (store: Store, id: string, micros: number, memo = 'd') =>
  store.transact((tx) =>
    debitWallet(tx, { account_id: id, amount_micros: micros, to: 'revenue:ai', memo }),
  );

test('PostgreSQL store: commits, rollbacks and history reads as the JSON-file store; a new store reads them from the tables', async () => {
  const url = await cluster.createDatabase();
  const store = await open(url);
  await store.transact((tx) => tx.set('accounts', 'a1', account('a1')));
  await credit(store, 'a1', 5_000_000);
  await assert.rejects(
    store.transact((tx) => {
      debitWallet(tx, { account_id: 'a1', amount_micros: 1_000_000, to: 'revenue:ai', memo: 'x' });
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(await balance(store, 'a1'), 5_000_000, 'a function that throws leaves nothing');
  await assert.rejects(debit(store, 'a1', 9_000_000), InsufficientBalanceError);
  await debit(store, 'a1', 2_000_000, 'chat');
  // Acknowledged means readable at once: read-your-writes without a barrier, every time.
  assert.equal((await store.reads.wallet({ account_id: 'a1' }, null, 'asc')).total, 2);
  for (let i = 0; i < 20; i++) {
    await Promise.all([credit(store, 'h', 1), credit(store, 'h', 1)]);
    assert.equal(
      (await store.reads.wallet({ account_id: 'h' }, null, 'asc')).total,
      2 * (i + 1),
      `credits acknowledged in round ${i} are in the history`,
    );
  }
  await store.transact((tx) =>
    tx.history({
      type: 'usage',
      ts: tx.now.toISOString(),
      account_id: 'a1',
      prompt_tokens: 3,
      completion_tokens: 4,
      cost_micros: 2_000_000,
    }),
  );
  // '__proto__' as an id is a row like any other, here too.
  await store.transact((tx) => tx.set('emails', '__proto__', 'a1'));
  const wallet = await store.reads.wallet({ account_id: 'a1' }, { offset: 0, limit: 10 }, 'asc');
  assert.deepEqual(
    wallet.rows.map((r) => r.delta_micros),
    [5_000_000, -2_000_000],
  );
  assert.equal(wallet.closing_micros, 3_000_000);
  await store.close();

  const again = await open(url);
  assert.equal(await balance(again, 'a1'), 3_000_000);
  // Usage totals carry a per-protocol split too (a usage record without a protocol is chat).
  const usage = await again.read((state) => state.tables.usage?.a1, { fresh: true });
  const { by_protocol, ...totals } = (usage ?? {}) as Record<string, unknown>;
  assert.deepEqual(totals, {
    requests: 1,
    prompt_tokens: 3,
    completion_tokens: 4,
    cost_micros: 2_000_000,
  });
  assert.deepEqual(
    { ...(by_protocol as object) },
    {
      chat: {
        requests: 1,
        prompt_tokens: 3,
        completion_tokens: 4,
        cached_tokens: 0,
        reasoning_tokens: 0,
        cost_micros: 2_000_000,
      },
    },
  );
  assert.equal(await again.fetch('emails', '__proto__'), 'a1');
  assert.equal((await again.reads.wallet({ account_id: 'a1' }, null, 'asc')).total, 2);
  await again.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('history reads walk past one keyset page (512 rows) in key order: a fold, the SQL aggregate, a stream and the export agree', async () => {
  const url = await cluster.createDatabase();
  const store = await open(url);
  // 1,100 wallet lines and usage records (their n cross from three digits to four).
  for (let batch = 0; batch < 11; batch++)
    await store.transact((tx) => {
      for (let i = batch * 100; i < (batch + 1) * 100; i++) {
        creditWallet(tx, {
          account_id: 'k',
          amount_micros: i + 1,
          from: FUNDING_TOPUP,
          memo: 'top-up',
          ref: `k${i}`,
        });
        tx.history({
          type: 'usage',
          ts: tx.now.toISOString(),
          account_id: 'k',
          request_id: `u${i}`,
          cost_micros: i + 1,
          latency_ms: 1,
        });
      }
    });
  const exported: number[] = [];
  for await (const lines of store.reads.walletExport({ account_id: 'k' }, 'asc'))
    exported.push(...lines.map((line) => line.delta_micros));
  const amounts = Array.from({ length: 1_100 }, (_, i) => i + 1);
  assert.deepEqual(exported, amounts);
  const folded = await store.reads.wallet({ account_id: 'k' }, null, 'desc');
  assert.deepEqual(
    folded.rows.map((line) => line.delta_micros),
    amounts.toReversed(),
  );
  const by_sql = await store.reads.wallet({ account_id: 'k' }, { offset: 600, limit: 5 }, 'desc');
  assert.deepEqual(
    { ...by_sql, rows: by_sql.rows.map((line) => line.delta_micros) },
    { ...folded, rows: amounts.toReversed().slice(600, 605) },
  );
  const pacer = store.reads.turns.pacer();
  const streamed: number[] = [];
  for await (const lines of store.reads.walletLines(
    { account_id: 'k' },
    { offset: 500, limit: 100 },
    'desc',
    pacer,
  ))
    streamed.push(...lines.map((line) => line.delta_micros));
  const records: unknown[] = [];
  for await (const batch of store.reads.usageRecords(
    { account_id: 'k' },
    { offset: 510, limit: 10 },
    'asc',
    pacer,
  ))
    records.push(...batch.map((record) => record.request_id));
  pacer.end();
  assert.deepEqual(streamed, amounts.toReversed().slice(500, 600));
  assert.deepEqual(
    records,
    amounts.slice(510, 520).map((n) => `u${n - 1}`),
  );
  const usage = await store.reads.usageInTurns({ account_id: 'k' }, null, 'asc');
  const usage_by_sql = await store.reads.usageInTurns(
    { account_id: 'k' },
    { offset: 0, limit: 0 },
    'asc',
  );
  assert.equal(usage.total, 1_100);
  assert.equal(usage.cost_micros, (1_100 * 1_101) / 2);
  assert.deepEqual({ ...usage_by_sql, rows: usage.rows.length }, { ...usage, rows: 1_100 });
  await store.close();
});

test('two stores on one database: concurrent debits never overdraw, an idempotency key holds across them, both read the same balance', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'w', 1_000_000);
  // 60 debits of 70,000 spread over both stores, all in flight at once: the wallet affords 14.
  const outcomes = await Promise.allSettled(
    Array.from({ length: 60 }, (_, i) => debit(i % 2 ? a : b, 'w', 70_000, `d${i}`)),
  );
  assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 14);
  for (const o of outcomes)
    if (o.status === 'rejected')
      assert.ok(o.reason instanceof InsufficientBalanceError, String(o.reason));
  // The same key sent to both at once: one of them records it, the other sees it.
  const once = (store: Store) => debitOnce(store, 'k1', 'w');
  const answers = await Promise.all([once(a), once(b), once(a), once(b)]);
  assert.equal(answers.filter((x) => x === 'moved').length, 1, answers.join());
  assert.equal(await balance(a, 'w'), 1_000_000 - 14 * 70_000 - 10_000);
  assert.equal(await balance(b, 'w'), await balance(a, 'w'));
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('PostgreSQL down: a commit is refused with StoreUnavailableError and leaves the cache as it was; after the restart commits go on and the books agree', async () => {
  const url = await cluster.createDatabase();
  const store = await open(url);
  await credit(store, 'x', 1_000_000);
  await cluster.stop('immediate');
  try {
    await assert.rejects(debit(store, 'x', 100_000, 'lost?'), StoreUnavailableError);
    await assert.rejects(balance(store, 'x'), StoreUnavailableError);
    // The cache holds the wallet as last committed: the refused debit is undone there.
    assert.equal(
      store.cache.entries.get(balanceKey('wallet:x'))?.kind === 'b'
        ? (store.cache.entries.get(balanceKey('wallet:x')) as { micros: number }).micros
        : null,
      1_000_000,
    );
  } finally {
    await cluster.start();
  }
  await debit(store, 'x', 300_000, 'after');
  assert.equal(await balance(store, 'x'), 700_000);
  await store.close();
  const fresh = await open(url);
  assert.equal(await balance(fresh, 'x'), 700_000);
  await fresh.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

/** A JSON-file data dir with postings, a finalized payment, usage history and a session. */
async function seedDataDir(): Promise<{ data_dir: string; txn: Record<string, unknown> }> {
  const data_dir = dir('aihub-migrate-');
  const file = await FileStore.open(data_dir);
  await file.transact((tx) => tx.set('accounts', 'm1', account('m1')));
  await credit(file, 'm1', 9_000_000, 'topup-1');
  await file.transact((tx) =>
    debitWallet(tx, {
      account_id: 'm1',
      amount_micros: 1_500_000,
      to: 'revenue:recharge',
      memo: 'recharge',
    }),
  );
  await file.transact((tx) =>
    tx.history({
      type: 'usage',
      ts: tx.now.toISOString(),
      account_id: 'm1',
      prompt_tokens: 10,
      completion_tokens: 5,
      cost_micros: 7,
    }),
  );
  await file.transact((tx) =>
    tx.set('web_sessions' as never, 'sess-hash', {
      account_id: 'm1',
      created_at: tx.now.toISOString(),
    } as never),
  );
  const txn = {
    id: 'txn_1',
    account_id: 'm1',
    service: 'recharge',
    status: 'success',
    stage: 'final',
    created_at: new Date().toISOString(),
  };
  await file.transact((tx) => tx.set('payment_txns' as never, 'txn_1', txn as never));
  await file.close();
  return { data_dir, txn };
}

/** What a store moved into PostgreSQL must read back: the balance, the finalized payment, its history. */
async function checkMoved(url: string, txn: Record<string, unknown>): Promise<void> {
  const store = await open(url);
  try {
    assert.equal(await balance(store, 'm1'), 7_500_000);
    assert.deepEqual(await store.fetch('payment_txns' as never, 'txn_1'), txn as never);
    assert.equal((await store.reads.txns({ account_id: 'm1' }, { offset: 0, limit: 10 })).total, 1);
    assert.equal((await store.reads.wallet({ account_id: 'm1' }, null, 'asc')).total, 2);
    const usage = await store.read((state) => state.tables.usage?.m1?.requests, { fresh: true });
    assert.equal(usage, 1);
  } finally {
    await store.close();
  }
}

test('migrate: a JSON-file data dir (postings, a finalized payment, usage history, sessions) moves into PostgreSQL and both sides agree', async () => {
  const { data_dir, txn } = await seedDataDir();
  const url = await cluster.createDatabase();
  const report = await migrateDataDir(data_dir, url, PAYMENT_HISTORY_TAGS);
  assert.deepEqual(report.differences, []);
  assert.ok(report.ok);
  assert.equal(report.records, 6);
  assert.ok(report.verify.ok);
  await checkMoved(url, txn);
  // A second migrate into the same database is refused, and the source is untouched.
  await assert.rejects(
    migrateDataDir(data_dir, url, PAYMENT_HISTORY_TAGS),
    /already holds a store/,
  );
});

test('migrate: a database of the #18 layout (public.aihub_log behind aihub_head) moves into the new tables; a gateway refuses the old layout until then', async () => {
  const { data_dir, txn } = await seedDataDir();
  const url = await cluster.createDatabase();
  // The #18 layout as its gateways left it: the log of every committed record, and the head.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`
      CREATE TABLE aihub_head (id int PRIMARY KEY, seq bigint NOT NULL, db_id text NOT NULL);
      CREATE TABLE aihub_log (seq bigint PRIMARY KEY, at timestamptz NOT NULL, ops text NOT NULL);
      CREATE TABLE aihub_key_check (id int PRIMARY KEY CHECK (id = 1), sealed text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO aihub_key_check (id, sealed) VALUES (1, 'sealed-check');`);
    let seq = 0;
    for (const record of readJournal(join(data_dir, JOURNAL_DIR), 0, { repair: false })) {
      seq = record.s;
      await client.query('INSERT INTO aihub_log (seq, at, ops) VALUES ($1, $2, $3)', [
        record.s,
        record.t,
        JSON.stringify(record.ops),
      ]);
    }
    await client.query(`INSERT INTO aihub_head (id, seq, db_id) VALUES (1, $1, 'old')`, [seq]);
  } finally {
    await client.end();
  }
  await assert.rejects(open(url), /earlier layout .*aihub-gateway migrate --database-url/);
  const report = await migrateOldLayout(url, PAYMENT_HISTORY_TAGS);
  assert.deepEqual(report.differences, []);
  assert.ok(report.ok);
  assert.equal(report.records, 6);
  await checkMoved(url, txn);
  const store = await open(url);
  assert.equal(await store.sharedKeyCheck('another'), 'sealed-check', 'the key check moved too');
  await store.close();
  await assert.rejects(migrateOldLayout(url, PAYMENT_HISTORY_TAGS), /already holds a store/);
});

test('chat reservations across two stores: one gateway’s worst case binds the other; a lapsed lease is released once; a settlement bills once', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  let now = 1_000_000;
  const clock = () => now;
  const ga = new SharedReservations(a, 'gw-a', 30_000, clock);
  const gb = new SharedReservations(b, 'gw-b', 30_000, clock);
  await credit(a, 'acc', 1_000_000);
  const tier = chatConfigSchema.parse({}).models['service-ai-standard-6']; // 100 / 400 units per million tokens
  const input = (request_id: string, worst_case_micros: number) => ({
    account_id: 'acc',
    key_id: 'key',
    tier,
    request_id,
    worst_case_micros,
    free_tokens: 0,
  });

  const r1 = await reserveShared(ga, input('req_1', 600_000));
  await assert.rejects(
    reserveShared(gb, input('req_2', 400_001)),
    InsufficientBalanceError,
    'the other gateway sees the 600,000 set aside',
  );
  const r2 = await reserveShared(gb, input('req_2', 400_000));
  assert.equal(await available(a, 'acc'), 0);

  // Gateway a settles req_1 at its actual cost: billed once, the rest is free again everywhere.
  const usage = (completion_tokens: number, prompt_tokens: number) => ({
    prompt_tokens,
    completion_tokens,
    status: 'ok' as const,
    target: 'builtin',
    latency_ms: 1,
    stream: false,
  });
  const s1 = await settle(a, r1, usage(500, 1_000), now);
  assert.equal(s1.cost_micros, 300_000);
  r1.money.release(); // the request's end: a no-op after the settlement
  assert.equal(await available(b, 'acc'), 1_000_000 - 300_000 - 400_000);

  // Gateway b "dies" holding req_2: while its lease runs, a's pass keeps it; after, a releases it, once.
  await ga.tick();
  assert.equal(
    await available(b, 'acc'),
    1_000_000 - 300_000 - 400_000,
    'a lease that has not lapsed is kept',
  );
  now += 30_001;
  await Promise.all([ga.tick(), ga.tick()]);
  assert.equal(await available(a, 'acc'), 1_000_000 - 300_000);
  assert.equal(await a.fetch('chat_reservations', 'rsv_req_2'), undefined);
  // Its settlement, if it comes after all, bills the actual cost once and releases nothing twice.
  const s2 = await settle(b, r2, usage(500, 0), now);
  assert.equal(s2.cost_micros, 200_000);
  assert.equal(await balance(a, 'acc'), 1_000_000 - 300_000 - 200_000);
  assert.equal(await available(a, 'acc'), 1_000_000 - 300_000 - 200_000);
  assert.equal(await a.fetch('chat_reserved', 'acc'), undefined);
  ga.stop();
  gb.stop();
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('a renewing owner keeps its reservation past one lease', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  let now = 0;
  const ga = new SharedReservations(a, 'gw-a', 1_000, () => now);
  await credit(a, 'acc', 1_000);
  const tier = chatConfigSchema.parse({}).models['service-ai-standard-6'];
  await reserveShared(ga, {
    account_id: 'acc',
    key_id: 'k',
    tier,
    request_id: 'r',
    worst_case_micros: 1_000,
    free_tokens: 0,
  });
  for (let i = 0; i < 5; i++) {
    now += 600;
    await ga.tick();
  }
  assert.equal(await available(a, 'acc'), 0, 'renewed at every pass, never lapsed');
  ga.stop();
  await a.close();
});

test('background work is claimed item by item: two stores never hold one item at once; a lapsed claim is taken over', async () => {
  const url = await cluster.createDatabase();
  // Two gateways, so two names: with the default (hostname:pid) both stores of this process
  // were one gateway, whose claims it may renew, and b took a's t3 when a's insert committed
  // before b's statement began (failed once under load).
  const a = await open(url, { gateway_id: 'gateway-a' });
  const b = await open(url, { gateway_id: 'gateway-b' });
  const [got_a, got_b] = await Promise.all([
    a.claim('check', ['t1', 't2', 't3'], 60_000),
    b.claim('check', ['t2', 't3', 't4'], 60_000),
  ]);
  for (const id of got_a) assert.ok(!got_b.includes(id), `${id} claimed by both`);
  assert.deepEqual([...new Set([...got_a, ...got_b])].sort(), ['t1', 't2', 't3', 't4']);
  // A claim that lapsed (its gateway died) is anyone's; one released is too.
  const short = await a.claim('check', ['t9'], 1);
  assert.deepEqual(short, ['t9']);
  await new Promise((resolve) => setTimeout(resolve, 20)); // the 1 ms lease lapses
  assert.deepEqual(await b.claim('check', ['t9'], 60_000), ['t9']);
  await b.release('check', ['t9']);
  assert.deepEqual(await a.claim('check', ['t9'], 60_000), ['t9']);
  await a.close();
  await b.close();
});

test('a claim lapses with its gateway: once its heartbeat is older than live_ms, another gateway takes it before its lease ends', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url, { gateway_id: 'gateway-a' });
  const b = await open(url, { gateway_id: 'gateway-b', live_ms: 5_000 });
  assert.deepEqual(await a.claim('check', ['t1'], 60_000), ['t1']);
  assert.deepEqual(await b.claim('check', ['t1'], 60_000), [], 'held by a, which is live');
  // a dies (SIGKILL: no release, no goodbye): its last heartbeat grows old. With claims that
  // lapsed only with their lease, a's status check held its transaction for over a minute.
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  await sql.query(
    "UPDATE aihub.gateways SET seen_at = now() - interval '6 seconds' WHERE id = 'gateway-a'",
  );
  await sql.end();
  assert.deepEqual(await b.claim('check', ['t1'], 60_000), ['t1'], 'a is dead: its claim is free');
  assert.deepEqual(await a.claim('check', ['t1'], 60_000), [], 'held by b now');
  await a.close();
  await b.close();
});

test('a claim belongs to the store that took it, not to its gateway name: another store of the same name does not renew it as its own', async () => {
  const url = await cluster.createDatabase();
  // Both stores default to this process's name (hostname:pid), as two gateways given one
  // AIHUB_GATEWAY_ID, or two containers with the host's hostname and pid 1, would share it.
  const a = await open(url);
  const b = await open(url);
  assert.deepEqual(await a.claim('check', ['t1'], 60_000), ['t1']);
  assert.deepEqual(await b.claim('check', ['t1'], 60_000), [], 'held by a');
  await b.release('check', ['t1']); // not b's to release
  assert.deepEqual(await b.claim('check', ['t1'], 60_000), [], 'still held by a');
  assert.deepEqual(await a.claim('check', ['t1'], 60_000), ['t1'], 'a renews its own');
  await a.release('check', ['t1']);
  assert.deepEqual(await b.claim('check', ['t1'], 60_000), ['t1'], 'released: anyone’s');
  await a.close();
  await b.close();
});

test('a commit that cannot take its locks in time answers every caller store_unavailable; nothing waits forever', async () => {
  const url = await cluster.createDatabase();
  const seed = await open(url);
  await credit(seed, 'q', 1_000);
  await seed.close();
  // A short statement timeout, past the first commit of its connections (which plans the
  // commit function) on another wallet.
  const store = await open(url, { statement_timeout_ms: 1_000, pool_max: 3 });
  await Promise.all([credit(store, 'warm', 1), credit(store, 'warm', 1), balance(store, 'q')]);
  const blocker = new pg.Client({ connectionString: url });
  await blocker.connect();
  await blocker.query('BEGIN');
  // Another writer holds the wallet's lock.
  await blocker.query('SELECT pg_advisory_xact_lock($1)', [String(lockOf(balanceKey('wallet:q')))]);
  try {
    const outcomes = await Promise.allSettled([1, 2, 3].map(() => debit(store, 'q', 1)));
    for (const outcome of outcomes)
      assert.ok(
        outcome.status === 'rejected' && outcome.reason instanceof StoreUnavailableError,
        String(outcome.status),
      );
  } finally {
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
  assert.equal(await balance(store, 'q'), 1_000);
  await debit(store, 'q', 1);
  assert.equal(await balance(store, 'q'), 999);
  await store.close();
});

test('a wallet locked by an open transaction does not delay a debit of another wallet from another store; the locked wallet’s debit waits, and only it', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'locked', 1_000_000);
  await credit(a, 'free', 1_000_000);
  // b knows both wallets (its cache holds them), as a gateway serving both would.
  assert.equal(await balance(b, 'locked'), 1_000_000);
  assert.equal(await balance(b, 'free'), 1_000_000);
  const blocker = new pg.Client({ connectionString: url });
  await blocker.connect();
  await blocker.query('BEGIN');
  await blocker.query('SELECT pg_advisory_xact_lock($1)', [
    String(lockOf(balanceKey('wallet:locked'))),
  ]);
  await blocker.query(`SELECT * FROM aihub.balances WHERE account = 'wallet:locked' FOR UPDATE`);
  let stuck_done = false;
  const stuck = debit(a, 'locked', 1_000).then(() => {
    stuck_done = true;
  });
  try {
    // Commits on the other wallet, from both stores, go through while the lock is held.
    for (let i = 0; i < 5; i++) {
      await debit(b, 'free', 1_000, `b${i}`);
      await debit(a, 'free', 1_000, `a${i}`);
    }
    assert.equal(await balance(b, 'free'), 1_000_000 - 10_000);
    assert.equal(stuck_done, false, 'the debit of the locked wallet waits for its lock');
  } finally {
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
  await stuck;
  assert.equal(await balance(b, 'locked'), 999_000);
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

/** Lets the store's queued microtasks (its pump) and immediate callbacks run. */
const settleTicks = () => new Promise<void>((resolve) => setImmediate(resolve));

test('batches in flight: transactions that arrive while 2 batches are out wait and go in one statement, not one each (each statement costs the same whatever it carries)', async () => {
  const url = await cluster.createDatabase();
  // stall_ms far away: the held batches below never count as stalled.
  const store = await open(url, { stall_ms: 600_000 });
  const wallets = Array.from({ length: 10 }, (_, i) => `pipe${i}`);
  for (const id of wallets) {
    await credit(store, id, 1_000);
    await debit(store, id, 100); // what a debit reads is in the cache: no load below
  }
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  store.before_commit = () => gate;
  const batches = store.stats.batches;
  const debits: Array<Promise<unknown>> = [];
  for (const id of wallets) {
    // One at a time, each after the store had the chance to send what was queued before.
    debits.push(debit(store, id, 100));
    await settleTicks();
  }
  store.before_commit = null;
  release();
  await Promise.all(debits);
  // The first two went out alone (2 in flight); the 8 that came while they were out, together.
  assert.equal(store.stats.batches - batches, 3);
  for (const id of wallets) assert.equal(await balance(store, id), 800);
  await store.close();
});

test('batches in flight: two batches stalled on wallets an open transaction holds locked do not hold back a third wallet', async () => {
  const url = await cluster.createDatabase();
  const store = await open(url, { stall_ms: 20 });
  for (const id of ['held1', 'held2', 'free']) await credit(store, id, 1_000_000);
  const blocker = new pg.Client({ connectionString: url });
  await blocker.connect();
  await blocker.query('BEGIN');
  for (const id of ['held1', 'held2'])
    await blocker.query('SELECT pg_advisory_xact_lock($1)', [
      String(lockOf(balanceKey(`wallet:${id}`))),
    ]);
  let held_done = 0;
  const held: Array<Promise<void>> = [];
  for (const id of ['held1', 'held2']) {
    held.push(debit(store, id, 1_000).then(() => void held_done++));
    await settleTicks(); // it goes out in its own batch, and stalls on the lock
  }
  try {
    // Both stalled batches are out (2 = pipeline_depth); this one still commits.
    // (A fresh read on this store would wait for the batches in flight: none here.)
    await debit(store, 'free', 1_000);
    assert.equal(held_done, 0, 'the locked wallets wait for their locks');
  } finally {
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
  await Promise.all(held);
  assert.equal(await balance(store, 'free'), 999_000);
  assert.equal(await balance(store, 'held1'), 999_000);
  assert.equal(await balance(store, 'held2'), 999_000);
  await store.close();
});

test('no store applies another store’s writes: 200 commits on one load nothing into the other’s cache; the other still reads them when asked', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'x', 1_000_000);
  assert.equal(await balance(b, 'x'), 1_000_000);
  const before = { ...b.sharedStats() };
  await Promise.all(Array.from({ length: 200 }, (_, i) => debit(a, 'x', 1, `a${i}`)));
  await Promise.all(Array.from({ length: 50 }, (_, i) => credit(a, `other${i}`, 1)));
  const after = b.sharedStats();
  assert.equal(after.foreign_records_applied, 0);
  assert.equal(after.rows_loaded, before.rows_loaded, 'b loaded nothing while a committed');
  assert.equal(after.loads, before.loads);
  assert.equal(after.cache_entries, before.cache_entries);
  // Asked, b reads the current balance: one load of one key.
  assert.equal(await balance(b, 'x'), 1_000_000 - 200);
  assert.equal(b.sharedStats().loads! - after.loads!, 1);
  await a.close();
  await b.close();
});

test('a new store on a database with a large history reads a bounded number of rows to answer a balance', async () => {
  const url = await cluster.createDatabase();
  const seed = await open(url);
  await seed.transact((tx) => tx.set('accounts', 'big', account('big')));
  await credit(seed, 'big', 10_000_000);
  await seed.close();
  // History as a busy deployment leaves it: HISTORY usage records and wallet lines of other
  // accounts (written as the commit statement writes them, in bulk).
  const history = Number(process.env.AIHUB_TEST_PG_HISTORY ?? 200_000);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO aihub.history (kind, at, account_id, key_id, aux, aux2, label, record)
       SELECT 'usage', now(), 'acc_' || (i % 1000), 'key_' || (i % 1000), 1, 2, 'standard',
         json_build_object('type', 'usage', 'ts', now(), 'account_id', 'acc_' || (i % 1000), 'cost_micros', 1)
       FROM generate_series(1, $1::int) i`,
      [history],
    );
    await client.query(
      `INSERT INTO aihub.wallet_lines (account_id, at, posting_id, delta, balance, posting)
       SELECT 'acc_' || (i % 1000), now(), 'pst_' || i, 1, i, '{}'::json FROM generate_series(1, $1::int) i`,
      [history],
    );
  } finally {
    await client.end();
  }
  const store = await open(url);
  try {
    const opened = store.sharedStats();
    assert.ok(opened.rows_loaded! <= 2, `opening read ${opened.rows_loaded} rows`);
    assert.equal(await balance(store, 'big'), 10_000_000);
    const served = store.sharedStats();
    assert.ok(
      served.rows_loaded! <= 4,
      `a balance after ${history} history records read ${served.rows_loaded} rows`,
    );
  } finally {
    await store.close();
  }
});

test('optimistic commit: another store commits between run and commit; the batch is refreshed, runs again on the current rows and never overdraws', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'c', 100_000);
  assert.equal(await balance(b, 'c'), 100_000);
  // a runs its debit of 70,000 on 100,000 (it fits); before it is sent, b spends 70,000.
  let hooked = 0;
  a.before_commit = async () => {
    if (hooked++ === 0) await debit(b, 'c', 70_000, 'b first');
  };
  const conflicts = a.stats.conflicts;
  await assert.rejects(debit(a, 'c', 70_000, 'a second'), InsufficientBalanceError);
  assert.equal(a.stats.conflicts - conflicts, 1, 'the first attempt conflicted (its guard failed)');
  assert.equal(await balance(a, 'c'), 30_000, 'b’s debit, not a’s');
  // Two debits that fit together both commit without a conflict: the guard commutes.
  hooked = 0;
  a.before_commit = async () => {
    if (hooked++ === 0) await debit(b, 'c', 10_000, 'b');
  };
  const outside = new Set<number>();
  let run = 0;
  await a.transact((tx) => {
    const mark = ++run;
    outside.add(mark);
    tx.onUndo(() => outside.delete(mark));
    debitWallet(tx, { account_id: 'c', amount_micros: 20_000, to: 'revenue:ai', memo: 'a' });
  });
  assert.equal(a.stats.conflicts - conflicts, 1, 'no conflict: 10,000 + 20,000 fit in 30,000');
  assert.equal(run, 1);
  assert.deepEqual([...outside], [1]);
  // A function that reads a row another store changes meanwhile runs again, undoing its first run.
  hooked = 0;
  a.before_commit = async () => {
    if (hooked++ === 0) await b.transact((tx) => tx.set('emails', 'e', 'from-b'));
  };
  await a.fetch('emails', 'e');
  run = 0;
  outside.clear();
  const seen = await a.transact((tx) => {
    const mark = ++run;
    outside.add(mark);
    tx.onUndo(() => outside.delete(mark));
    const now = tx.get('emails', 'e');
    tx.set('emails', 'f', `after ${now ?? 'none'}`);
    return now;
  });
  assert.equal(seen, 'from-b');
  assert.equal(run, 2, 'run twice');
  assert.deepEqual([...outside], [2], 'only the run that committed left its mark');
  a.before_commit = null;
  assert.equal(await balance(a, 'c'), 0);
  assert.equal(await balance(b, 'c'), 0);
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test(`optimistic commit: a transaction that conflicts ${OPTIMISTIC_TRIES} times in a row commits under locks taken first; an idempotency key still moves money once`, async () => {
  const url = await cluster.createDatabase();
  const a: PgStore = await open(url);
  const b = await open(url);
  await credit(a, 'i', 1_000_000);
  let hooked = 0;
  // Every optimistic attempt of a reads the key b writes just before a's statement.
  a.before_commit = async () => {
    hooked++;
    await b.transact((tx) => tx.set('emails', 'busy', `b${hooked}`));
  };
  const locked = a.stats.locked;
  const answer = await a.transact((tx) => {
    tx.get('emails', 'busy');
    if (tx.get('idempotency', 'k')) return 'replayed';
    debitWallet(tx, { account_id: 'i', amount_micros: 10_000, to: 'revenue:ai', memo: 'idem' });
    tx.set('idempotency', 'k', {
      key: 'k',
      request_hash: 'h',
      status: 200,
      body: {},
      created_at: tx.now.toISOString(),
    });
    return 'moved';
  });
  assert.equal(answer, 'moved');
  assert.equal(hooked, OPTIMISTIC_TRIES, 'every optimistic attempt lost to b');
  assert.equal(a.stats.locked - locked, 1, 'then the locked path committed');
  a.before_commit = null;
  assert.equal(await debitOnce(b, 'k', 'i'), 'replayed');
  assert.equal(await balance(a, 'i'), 990_000);
  assert.equal(await balance(b, 'i'), 990_000);
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('two stores, one wallet, many concurrent commits on both: exact final balance, the same on both, verify passes', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  await credit(a, 'm', 10_000_000);
  // Waves of debits and credits on both at once, so that batches of each meet the other’s.
  for (let wave = 0; wave < 10; wave++)
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const store = i % 2 ? a : b;
        return i % 5 === 0
          ? credit(store, 'm', 3_000, `w${wave}-${i}`)
          : debit(store, 'm', 7_000, `w${wave}-${i}`);
      }),
    );
  const expected = 10_000_000 + 10 * 8 * 3_000 - 10 * 32 * 7_000;
  assert.equal(await balance(a, 'm'), expected);
  assert.equal(await balance(b, 'm'), expected);
  await a.close();
  await b.close();
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('platform shards of gateways that are gone are folded at start: a platform balance stays a read of a few rows whatever the restarts, and its sum never changes', async () => {
  const url = await cluster.createDatabase();
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const shards = async (acct: string) =>
    (
      await db.query<{ shard: string; micros: string }>(
        'SELECT shard, micros::text AS micros FROM aihub.pool WHERE account = $1 ORDER BY shard',
        [acct],
      )
    ).rows;
  const sum = async (acct: string) =>
    (await shards(acct)).reduce((total, row) => total + Number(row.micros), 0);
  try {
    // Five starts under five names (hostname:pid changes at every start), each adding to
    // revenue:ai from its own shard, one after the other.
    for (let i = 0; i < 5; i++) {
      const store = await open(url, { gateway_id: `restart-${i}` });
      if (i === 0) await credit(store, 'x', 1_000_000);
      await debit(store, 'x', 100 + i);
      await store.close();
    }
    // Each start folded the shards of the ones before; the last one's are still apart.
    assert.deepEqual(
      (await shards('revenue:ai')).map((row) => row.shard),
      ['', 'restart-4:0'],
    );
    assert.equal(await sum('revenue:ai'), 100 + 101 + 102 + 103 + 104);
    // A live gateway's shards are left alone (folding them would only make its commits wait).
    const live = await open(url, { gateway_id: 'live' });
    await debit(live, 'x', 1_000);
    const next = await open(url, { gateway_id: 'next' });
    assert.deepEqual(
      (await shards('revenue:ai')).map((row) => row.shard),
      ['', 'live:0'],
    );
    await next.close();
    // Folding the shard a gateway is adding to at that moment loses nothing: its commits wait
    // for the fold's row lock and insert the shard again. Here a store that counts no
    // gateway as live (live_ms 1) starts three times while the live one debits 300 times.
    const debits = Promise.all(Array.from({ length: 300 }, (_, i) => debit(live, 'x', 1, `f${i}`)));
    let folded = 0;
    for (let i = 0; i < 3; i++) {
      const folder = await open(url, { gateway_id: `folder-${i}`, live_ms: 1 });
      folded += folder.stats.shards_folded;
      await folder.close();
    }
    assert.ok(folded >= 1, 'the live gateway’s shard was folded under its commits');
    await debits;
    assert.equal(await sum('revenue:ai'), 510 + 1_000 + 300);
    assert.equal(await balance(live, 'x'), 1_000_000 - 510 - 1_000 - 300);
    await live.close();
    assert.deepEqual((await verifyPg(url)).breaches, []);
  } finally {
    await db.end();
  }
});

test('the payment transactions list over every account takes its total from tallies kept by the commits (a few rows), exact through inserts, status changes and deletes on two stores; verify checks them', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url, { gateway_id: 'tally-a' });
  const b = await open(url, { gateway_id: 'tally-b' });
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const txn = (id: string, service: string, status: string) => ({
    id,
    account_id: `acc_${id.length % 3}`,
    service,
    status,
    stage: status === 'pending' ? 'awaiting_status' : 'final',
    created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, Number(id.slice(1)))).toISOString(),
  });
  const put = (store: Store, id: string, service: string, status: string) =>
    store.transact((tx) => tx.set('payment_txns', id, txn(id, service, status) as never));
  try {
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        put(i % 2 ? a : b, `t${i}`, i % 4 < 2 ? 'recharge' : 'dmt', 'pending'),
      ),
    );
    // Half settle (on the other store than wrote them), a few go away.
    for (let i = 0; i < 40; i += 2)
      await put(i % 4 ? a : b, `t${i}`, i % 4 < 2 ? 'recharge' : 'dmt', 'success');
    for (const i of [1, 3, 5]) await a.transact((tx) => tx.del('payment_txns', `t${i}`));
    const expect = { all: 37, success: 20, pending: 17, recharge: 18, recharge_success: 10 };
    const total = async (select: { service?: string; status?: string }) =>
      (await a.reads.txns({ account_id: null, ...select }, { offset: 0, limit: 5 })).total;
    assert.equal(await total({}), expect.all);
    assert.equal(await total({ status: 'success' }), expect.success);
    assert.equal(await total({ status: 'pending' }), expect.pending);
    assert.equal(await total({ service: 'recharge' }), expect.recharge);
    assert.equal(await total({ service: 'recharge', status: 'success' }), expect.recharge_success);
    // The same figures as counting the rows (per account: the account's index).
    const [counted] = (
      await db.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM aihub.rows WHERE tbl = 'payment_txns'`,
      )
    ).rows;
    assert.equal(Number(counted!.n), expect.all);
    // Read from the tallies: one row per tag and backend that wrote, never per transaction.
    const [rows] = (
      await db.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM aihub.tallies WHERE tag = 'all'`,
      )
    ).rows;
    assert.ok(Number(rows!.n) <= 2 * 8, `${rows!.n} tally rows for 'all'`);
    assert.deepEqual((await verifyPg(url)).breaches, []);
    // A bulk write (migrate writes a data dir's transactions in one transaction) touches each
    // tally row once per statement, not once per transaction row: the counts of this
    // transaction's own tuple writes to aihub.tallies say so.
    await db.query('BEGIN');
    await db.query(
      `INSERT INTO aihub.rows (tbl, id, ver, created, row)
       SELECT 'payment_txns', 'bulk' || i, nextval('aihub.ver'), nextval('aihub.ver'),
         json_build_object('id', 'bulk' || i, 'account_id', 'acc_bulk', 'service', 'pan',
           'status', 'success', 'stage', 'final', 'created_at', '2026-01-02T00:00:00.000Z')
       FROM generate_series(1, 20000) i`,
    );
    const writes = (
      await db.query<{ n: string }>(
        `SELECT (n_tup_ins + n_tup_upd)::text AS n FROM pg_stat_xact_user_tables
         WHERE schemaname = 'aihub' AND relname = 'tallies'`,
      )
    ).rows[0]!.n;
    await db.query('ROLLBACK');
    assert.equal(Number(writes), 4, 'one write per tag for 20,000 rows');
    // A new store folds the shards of backends that are gone; the totals stay.
    await a.close();
    await b.close();
    const c = await open(url, { gateway_id: 'tally-c' });
    const shards = (
      await db.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM aihub.tallies WHERE tag = 'all'`,
      )
    ).rows[0]!.n;
    assert.equal(Number(shards), 1, 'the closed stores’ shards folded into one');
    assert.equal(
      (await c.reads.txns({ account_id: null }, { offset: 0, limit: 5 })).total,
      expect.all,
    );
    // A tally that drifted is a breach verify names.
    await db.query(`UPDATE aihub.tallies SET n = n + 1 WHERE tag = 'status:success'`);
    // (and the list's total is read from them: it follows the drifted tally, not a count)
    assert.equal(
      (await c.reads.txns({ account_id: null, status: 'success' }, { offset: 0, limit: 5 })).total,
      21,
    );
    assert.match((await verifyPg(url)).breaches.join('\n'), /tallied status:success: 21, but 20/);
    await c.close();
  } finally {
    await db.end();
  }
});

test('migrations after the baseline: a second one runs once, however many gateways start at once and however often; one that fails leaves nothing and is tried again', async () => {
  const url = await cluster.createDatabase();
  const pools = [new pg.Pool({ connectionString: url }), new pg.Pool({ connectionString: url })];
  try {
    const db_id = await migrateSchema(pools[0]!);
    // The next migration: it would fail if it ran twice (the table exists), and counts its runs.
    const second = {
      version: MIGRATIONS.at(-1)!.version + 1,
      sql: `CREATE TABLE aihub.probe (run int);
            INSERT INTO aihub.probe SELECT coalesce(max(run), 0) + 1 FROM aihub.probe`,
    };
    const next = [...MIGRATIONS, second];
    assert.deepEqual(
      await Promise.all([migrateSchema(pools[0]!, next), migrateSchema(pools[1]!, next)]),
      [db_id, db_id],
    );
    assert.equal(await migrateSchema(pools[1]!, next), db_id);
    const runs = (await pools[0]!.query<{ run: number }>('SELECT run FROM aihub.probe')).rows;
    assert.deepEqual(runs, [{ run: 1 }]);
    // A migration that fails half way is rolled back whole and not recorded: the next start tries it again.
    const broken = {
      version: second.version + 1,
      sql: 'CREATE TABLE aihub.half (x int); SELECT 1 / 0',
    };
    await assert.rejects(migrateSchema(pools[0]!, [...next, broken]), /division by zero/);
    const there = await pools[0]!.query<{ t: string | null }>(
      `SELECT to_regclass('aihub.half')::text AS t`,
    );
    assert.equal(there.rows[0]!.t, null);
    const versions = await pools[0]!.query<{ version: number }>(
      'SELECT version FROM aihub.migrations ORDER BY version',
    );
    assert.deepEqual(
      versions.rows.map((row) => row.version),
      next.map((migration) => migration.version),
    );
    // A store opens on it and works (the versions it does not know are someone else's past).
    const store = await open(url, { gateway_id: 'migrated' });
    const id = 'm1';
    await store.transact((tx) => tx.set('accounts', id, account(id)));
    await credit(store, id, 5_000_000);
    assert.equal(await balance(store, id), 5_000_000);
    await store.close();
  } finally {
    for (const pool of pools) await pool.end();
  }
});
