// Idempotency records on the PostgreSQL store (issue #26): an answered key is a row of
// `aihub_rows` in the database (its primary key is the lookup there) and, in every
// gateway's replica, history found through the replica's id runs, never a row of the live
// document in memory. Two uses of one key in one write batch (staged together before either
// is published) still move money once; another gateway, a restarted one and a replica built
// again from the log find the key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openPgStore } from '../../../gateway/store/pg.ts';
import { verifyPg } from '../../../gateway/store/pg-tools.ts';
import type { Store } from '../../../gateway/store/store.ts';
import { FUNDING_TOPUP, balanceMicros, creditWallet } from '../../../gateway/ledger/ledger.ts';
import { startPostgres, type PostgresCluster } from '../../support/postgres.ts';
import { tempDir } from '../../support/temp.ts';

let cluster: PostgresCluster;
before(async () => {
  cluster = await startPostgres();
});
after(async () => {
  await cluster?.teardown();
});

const open = (url: string, replica_dir = tempDir('aihub-pg-idem-')) =>
  openPgStore(url, { replica_dir, poll_ms: 60_000 });

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

test('PostgreSQL: one reference twice in one write batch credits once; an answered key is no replica row, and every gateway finds it by key', async () => {
  const url = await cluster.createDatabase();
  const a = await open(url);
  const b_dir = tempDir('aihub-pg-idem-');
  let b = await open(url, b_dir);
  try {
    // Queued in one turn: one batch stages both before publishing either.
    const twice = await Promise.all([creditOnce(a, 'r1'), creditOnce(a, 'r1')]);
    assert.deepEqual(twice.sort(), ['credited', 'duplicate']);
    for (let i = 2; i <= 50; i++) await creditOnce(a, `r${i}`);
    assert.deepEqual(Object.keys(a.rows('idempotency')), [], 'no answered key in memory');
    // The other gateway (catching up in its commit) and both sides again.
    assert.equal(await creditOnce(b, 'r1'), 'duplicate');
    assert.equal(await creditOnce(b, 'r50'), 'duplicate');
    assert.equal(await creditOnce(b, 'r51'), 'credited');
    assert.equal(await creditOnce(a, 'r51'), 'duplicate');
    assert.deepEqual(Object.keys(b.rows('idempotency')), []);
    assert.equal(balanceMicros(a.state, 'a'), 51);
    // In the database, the key is a row of aihub_rows: its primary key finds it.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string }>(
        "SELECT count(*) AS n FROM aihub_rows WHERE tbl = 'idempotency' AND id = $1",
        ['admin-credit:r7'],
      );
      assert.equal(rows[0]!.n, '1');
    } finally {
      await client.end();
    }
    // A restart that keeps the replica, and a replica built again from the whole log.
    await b.close();
    b = await open(url, b_dir);
    assert.equal(b.replicaOpened()?.rebuilt, null, 'the replica was kept');
    assert.equal(await creditOnce(b, 'r20'), 'duplicate');
    const fresh = await open(url);
    try {
      assert.ok(fresh.replicaOpened()?.fresh, 'built from the log');
      assert.deepEqual(Object.keys(fresh.rows('idempotency')), []);
      for (const r of ['r1', 'r33', 'r51'])
        assert.equal(fresh.get('idempotency', `admin-credit:${r}`)?.status, 200, r);
      assert.equal(await creditOnce(fresh, 'r2'), 'duplicate');
    } finally {
      await fresh.close();
    }
    assert.equal(balanceMicros(b.state, 'a'), 51);
  } finally {
    await a.close();
    await b.close();
  }
  assert.deepEqual((await verifyPg(url)).breaches, []);
});
