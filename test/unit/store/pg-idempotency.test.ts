// Idempotency records on the PostgreSQL store (issues #26 and #30): an answered key is a row of
// `aihub.rows` (its primary key is the lookup, unique by construction), read through a
// gateway's bounded cache, never a whole table in memory. Two uses of one key in one write
// batch still move money once; another gateway, a restarted one and a new one find the key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openPgStore } from '../../../gateway/store/pg/store.ts';
import { verifyPg } from '../../../gateway/store/pg/tools.ts';
import type { Store } from '../../../gateway/store/types.ts';
import { FUNDING_TOPUP, balanceMicros, creditWallet } from '../../../gateway/ledger/ledger.ts';
import { startPostgres, type PostgresCluster } from '../../support/postgres.ts';

let cluster: PostgresCluster;
before(async () => {
  cluster = await startPostgres();
});
after(async () => {
  await cluster?.teardown();
});

const open = (url: string) => openPgStore(url, { poll_ms: 60_000, cache_rows: 100 });

/** The admin's credit rule in small: once per reference, the answer recorded in the same commit. */
function creditOnce(store: Store, reference: string): Promise<'credited' | 'duplicate'> {
  const key = `admin-credit:${reference}`;
  return store.transact((tx) => {
    if (tx.get('idempotency', key)) return 'duplicate';
    creditWallet(tx, { account_id: 'a', amount_micros: 1, from: FUNDING_TOPUP, memo: reference });
    tx.set('idempotency', key, {
      key,
      request_hash: 'h',
      status: 200,
      body: null,
      created_at: tx.now.toISOString(),
    });
    return 'credited';
  });
}

test('PostgreSQL: one reference twice in one write batch credits once; an answered key is a row found by key on every gateway, old or new, past a bounded cache', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  let b = await open(url);
  try {
    // Queued in one turn: one batch runs both before committing either.
    const twice = await Promise.all([creditOnce(a, 'r1'), creditOnce(a, 'r1')]);
    assert.deepEqual(twice.sort(), ['credited', 'duplicate']);
    for (let i = 2; i <= 150; i++) await creditOnce(a, `r${i}`);
    // The cache holds at most its bound (100 entries here, then evicted down to 90 %).
    assert.ok(a.cache.entries.size <= 110, `${a.cache.entries.size} cache entries`);
    // The other gateway, and both sides again (an evicted key is loaded again).
    assert.equal(await creditOnce(b, 'r1'), 'duplicate');
    assert.equal(await creditOnce(b, 'r150'), 'duplicate');
    assert.equal(await creditOnce(b, 'r151'), 'credited');
    assert.equal(await creditOnce(a, 'r151'), 'duplicate');
    assert.equal(await creditOnce(a, 'r2'), 'duplicate', 'a key evicted from the cache');
    assert.equal(await a.read((state) => balanceMicros(state, 'a'), { fresh: true }), 151);
    // In the database, the key is a row of aihub.rows: its primary key finds it.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string }>(
        "SELECT count(*) AS n FROM aihub.rows WHERE tbl = 'idempotency' AND id = $1",
        ['admin-credit:r7'],
      );
      assert.equal(rows[0]!.n, '1');
    } finally {
      await client.end();
    }
    // A restarted gateway and a new one.
    await b.close();
    b = await open(url);
    assert.equal(await creditOnce(b, 'r20'), 'duplicate');
    const fresh = await open(url);
    try {
      for (const r of ['r1', 'r33', 'r151'])
        assert.equal((await fresh.fetch('idempotency', `admin-credit:${r}`))?.status, 200, r);
      assert.equal(await creditOnce(fresh, 'r2'), 'duplicate');
    } finally {
      await fresh.close();
    }
    assert.equal(await b.read((state) => balanceMicros(state, 'a'), { fresh: true }), 151);
  } finally {
    await a.close();
    await b.close();
  }
  assert.deepEqual((await verifyPg(url)).breaches, []);
});

test('PostgreSQL: a new idempotency key costs no load before its commit; one another store answered is found by the commit statement (keys.ts, PRESUMED_ABSENT_TABLES)', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b = await open(url);
  try {
    await creditOnce(a, 'warm'); // the account's wallet into a's cache
    await creditOnce(b, 'warm'); // b: the duplicate, and the wallet into its cache
    const kinds = (store: typeof a) => ({ ...store.stats.statements_by_kind });
    const before = kinds(a);
    const conflicts = a.stats.conflicts;
    assert.equal(await creditOnce(a, 'new-1'), 'credited');
    const after = kinds(a);
    assert.equal((after.load ?? 0) - (before.load ?? 0), 0, 'no load of the new key');
    assert.equal((after.commit ?? 0) - (before.commit ?? 0), 1, 'one commit statement');
    // b answers a key a did not see: a's run takes it as absent, its commit finds the row,
    // writes nothing and answers it, and the run again says duplicate (money moved once).
    assert.equal(await creditOnce(b, 'by-b'), 'credited');
    assert.equal(await creditOnce(a, 'by-b'), 'duplicate');
    assert.equal(a.stats.conflicts - conflicts, 1, 'found by the commit statement');
    assert.equal(await a.read((state) => balanceMicros(state, 'a'), { fresh: true }), 3);
    assert.deepEqual((await verifyPg(url)).breaches, []);
  } finally {
    await a.close();
    await b.close();
  }
});
