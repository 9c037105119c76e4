// What the rooms ask of a store where the two backends differ (issue #38: no room branches on
// the backend): `preload`, `transactThenRead`, `marks` and `acrossGateways` of the storage
// contract (gateway/store/types.ts), on the JSON-file store (one process: nothing to load,
// marks in memory, nothing built for other gateways) and on PostgreSQL (pg/room-hooks.ts:
// a read run, the balance read after its commit, marks as rows two stores both see).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FileStore } from '../../../gateway/store/store.ts';
import { openPgStore } from '../../../gateway/store/pg/store.ts';
import type { Store } from '../../../gateway/store/types.ts';
import { FUNDING_TOPUP, balanceMicros, creditWallet } from '../../../gateway/ledger/ledger.ts';
import '../../../gateway/payments/engine/tables.ts';
import { createDatabase, startPostgres, type PostgresCluster } from '../../support/postgres.ts';
import { testAccount } from '../../support/store-fixtures.ts';
import { tempDir } from '../../support/temp.ts';

let cluster: PostgresCluster | null = null;
const opened: Store[] = [];
before(async () => {
  if (!process.env.AIHUB_TEST_DATABASE_URL) cluster = await startPostgres();
});
after(async () => {
  for (const store of opened) await store.close();
  await cluster?.teardown();
});

async function pgStore(url?: string): Promise<{ store: Store; url: string }> {
  const database =
    url ??
    (cluster
      ? await cluster.createDatabase()
      : await createDatabase(process.env.AIHUB_TEST_DATABASE_URL!));
  const store = await openPgStore(database, { poll_ms: 60_000 });
  opened.push(store);
  return { store, url: database };
}

async function fileStore(): Promise<Store> {
  const store = await FileStore.open(tempDir('aihub-room-hooks-'));
  opened.push(store);
  return store;
}

async function funded(store: Store, id: string, micros: number): Promise<void> {
  await store.transact((tx) => {
    tx.set('accounts', id, testAccount(id));
    creditWallet(tx, {
      account_id: id,
      amount_micros: micros,
      from: FUNDING_TOPUP,
      memo: 'top-up',
    });
  });
}

/** A credit of 1,000 micros, and the balance as its commit left it (`transactThenRead`). */
const creditThenBalance = (store: Store, id: string) =>
  store.transactThenRead(
    (tx) => {
      creditWallet(tx, { account_id: id, amount_micros: 1_000, from: FUNDING_TOPUP, memo: 'x' });
      return 'done';
    },
    (state) => balanceMicros(state, id),
  );

const mark = (txn_id: string, at_ms: number) => ({ txn_id, at_ms });

test('JSON-file store: nothing to preload, the balance read in the commit, marks in memory undone with their transaction, nothing built for other gateways', async () => {
  const store = await fileStore();
  await funded(store, 'f1', 5_000_000);
  let ran = false;
  assert.equal(
    store.preload(() => (ran = true)),
    null,
  );
  assert.equal(ran, false, 'everything is in memory: the read is not run');
  assert.deepEqual(await creditThenBalance(store, 'f1'), ['done', 5_001_000]);

  const marks = store.marks('payment_recent');
  assert.deepEqual(await marks.restore(() => Promise.resolve(['from history'])), ['from history']);
  marks.note('k0', mark('t0', 1));
  await store.transact((tx) => marks.set(tx, 'k1', mark('t1', 2)));
  await assert.rejects(
    store.transact((tx) => {
      marks.set(tx, 'k1', mark('t2', 3));
      throw new Error('refused');
    }),
    /refused/,
  );
  await store.transact((tx) => {
    assert.deepEqual(marks.get(tx, 'k0'), mark('t0', 1));
    assert.deepEqual(marks.get(tx, 'k1'), mark('t1', 2), 'the refused transaction left no mark');
    assert.equal(tx.get('payment_recent', 'k1'), undefined, 'a mark is no row here');
  });
  marks.sweep((seen) => seen.at_ms < 2);
  await store.transact((tx) => assert.equal(marks.get(tx, 'k0'), undefined));
  assert.equal(
    store.acrossGateways(() => 'built'),
    null,
  );
});

test('PostgreSQL store: a read run before synchronous reads, the balance read after the commit, marks as rows another gateway sees, what other gateways take over built', async () => {
  const { store: a, url } = await pgStore();
  const { store: b } = await pgStore(url);
  await funded(a, 'p1', 5_000_000);
  const preloaded = b.preload((state) => balanceMicros(state, 'p1'));
  assert.ok(preloaded, 'a store with a cache loads first');
  assert.equal(await preloaded, 5_000_000);
  assert.deepEqual(await creditThenBalance(b, 'p1'), ['done', 5_001_000]);

  const marks_a = a.marks('payment_recent');
  const marks_b = b.marks('payment_recent');
  let read = false;
  assert.deepEqual(
    await marks_a.restore(() => {
      read = true;
      return Promise.resolve(['from history']);
    }),
    [],
  );
  assert.equal(read, false, 'rows outlive a restart: no history read');
  await a.transact((tx) => marks_a.set(tx, 'k1', mark('t1', 2)));
  await b.transact((tx) => assert.deepEqual(marks_b.get(tx, 'k1'), mark('t1', 2)));
  assert.deepEqual(await b.fetch('payment_recent', 'k1'), mark('t1', 2));
  marks_b.sweep(() => true);
  assert.deepEqual(await b.fetch('payment_recent', 'k1'), mark('t1', 2), "rows are the pruner's");
  assert.equal(
    a.acrossGateways(() => 'built'),
    'built',
  );
});
