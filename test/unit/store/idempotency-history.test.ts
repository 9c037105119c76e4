// Idempotency records in history (issue #26): a record whose answer is recorded is final and
// leaves the live document in the very commit that records it, like a finalized payment
// transaction; `tx.get` and `store.get` still find it by key, through the id runs, whatever
// its age, across checkpoints and restarts. A key in flight stays live. A data dir of the
// format before (answered keys in the checkpoint, index manifest version 2) opens with its
// keys moved out and found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileStore as Store, readCheckpoint } from '../../../gateway/store/store.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { INDEX_DIR } from '../../../gateway/store/archive.ts';
import type { IdempotencyRecord } from '../../../gateway/store/state.ts';
import { FUNDING_TOPUP, creditWallet } from '../../../gateway/ledger/ledger.ts';
import { tempDir } from '../../support/temp.ts';

const record = (key: string, status: number, body: unknown = { n: key }): IdempotencyRecord => ({
  key,
  request_hash: `hash-${key}`,
  status,
  body,
  created_at: '2026-01-01T00:00:00.000Z',
});

/** Answers `key` once (a credit of 1 and its record), as the admin's credit does: the first answer, or the recorded one. */
function creditOnce(store: Store, key: string): Promise<'credited' | 'duplicate'> {
  return store.transact((tx) => {
    if (tx.get('idempotency', key)) return 'duplicate';
    creditWallet(tx, { account_id: 'a', amount_micros: 1, from: FUNDING_TOPUP, memo: key });
    tx.set('idempotency', key, record(key, 200));
    return 'credited';
  });
}

const liveKeys = (store: Store) => Object.keys(store.rows('idempotency')).sort();
const manifestVersion = (data_dir: string) =>
  (
    JSON.parse(readFileSync(join(data_dir, INDEX_DIR, 'manifest.json'), 'utf8')) as {
      version: number;
    }
  ).version;

test('an answered key leaves the document in the commit that answers it and is found by key: at once, indexed, after checkpoints and restarts; a key in flight stays live', async () => {
  const data_dir = tempDir('aihub-idem-');
  let store = await Store.open(data_dir, { checkpoint_every_records: 50 });
  // In flight: live, in the document and its checkpoint.
  await store.transact((tx) => tx.set('idempotency', 'pay:a:flying', record('pay:a:flying', 0)));
  assert.deepEqual(liveKeys(store), ['pay:a:flying']);
  // Answered in the same commit that is found at once (before its line is indexed), and again.
  assert.equal(await creditOnce(store, 'k0'), 'credited');
  assert.deepEqual(liveKeys(store), ['pay:a:flying'], 'k0 is history from its commit on');
  assert.equal(await creditOnce(store, 'k0'), 'duplicate');
  assert.deepEqual(store.get('idempotency', 'k0'), record('k0', 200));
  // Two uses of one key in one synchronous burst (one journal group): still once.
  const burst = await Promise.all([creditOnce(store, 'k1'), creditOnce(store, 'k1')]);
  assert.deepEqual(burst.sort(), ['credited', 'duplicate']);
  for (let i = 2; i < 300; i++) await creditOnce(store, `k${i}`);
  // The in-flight key is answered: it leaves too.
  await store.transact((tx) =>
    tx.set('idempotency', 'pay:a:flying', record('pay:a:flying', 201, { late: true })),
  );
  assert.deepEqual(liveKeys(store), []);
  assert.ok(store.checkpoints > 0, 'checkpoints were written meanwhile');
  const checkpoint = (await readCheckpoint(data_dir))!;
  assert.deepEqual(
    Object.keys(checkpoint.tables.idempotency ?? {}).filter((k) => k !== 'pay:a:flying'),
    [],
    'no answered key in any checkpoint',
  );
  assert.equal(store.state.balances['wallet:a'], 300);

  // A crash (no close): the journal tail after the last manifest is indexed again at open.
  (store as any).checkpoint_timer && clearInterval((store as any).checkpoint_timer);
  await (store as any).checkpointing;
  (store as any).releaseLock();
  store = await Store.open(data_dir);
  assert.deepEqual(liveKeys(store), []);
  for (const i of [0, 1, 150, 299]) assert.equal(await creditOnce(store, `k${i}`), 'duplicate');
  assert.deepEqual(store.get('idempotency', 'pay:a:flying')?.body, { late: true });
  assert.equal(store.get('idempotency', 'k300'), undefined);
  assert.equal(store.state.balances['wallet:a'], 300, 'no key moved money twice');
  await store.close();

  // A clean close, and the lookups of a store that knows the keys from its manifest only.
  store = await Store.open(data_dir);
  assert.equal(manifestVersion(data_dir), 4);
  for (let i = 0; i < 300; i++)
    assert.equal(store.get('idempotency', `k${i}`)?.request_hash, `hash-k${i}`, `k${i}`);
  const blocks_before = store.archive.id_blocks_read;
  for (let i = 1000; i < 1200; i++) assert.equal(store.get('idempotency', `k${i}`), undefined);
  assert.ok(
    store.archive.id_blocks_read - blocks_before <= 10,
    `200 keys never used read ${store.archive.id_blocks_read - blocks_before} blocks (the filters answer)`,
  );
  await store.close();
  const report = await verifyDataDir(data_dir);
  assert.deepEqual(report.breaches, []);
});

test('a key used afresh after its record (a window past) is a newer version: the newest answers, the older stays history', async () => {
  const data_dir = tempDir('aihub-idem-');
  let store = await Store.open(data_dir);
  await store.transact((tx) => tx.set('idempotency', 'pay:a:k', record('pay:a:k', 200, 'first')));
  await store.close();
  store = await Store.open(data_dir);
  assert.equal(store.get('idempotency', 'pay:a:k')?.body, 'first');
  await store.transact((tx) => tx.set('idempotency', 'pay:a:k', record('pay:a:k', 0, 'again')));
  assert.equal(store.get('idempotency', 'pay:a:k')?.status, 0, 'in flight: the live row');
  await store.transact((tx) => tx.set('idempotency', 'pay:a:k', record('pay:a:k', 200, 'second')));
  assert.equal(store.get('idempotency', 'pay:a:k')?.body, 'second');
  await store.close();
  store = await Store.open(data_dir);
  assert.equal(store.get('idempotency', 'pay:a:k')?.body, 'second');
  assert.deepEqual(liveKeys(store), []);
  await store.close();
});

test('a data dir of the format before (answered keys in its checkpoint, manifest version 2) opens with no key in the document and every key found', async () => {
  const data_dir = tempDir('aihub-idem-upgrade-');
  const store = await Store.open(data_dir);
  for (let i = 0; i < 40; i++) await creditOnce(store, `old-${i}`);
  await store.transact((tx) => tx.set('idempotency', 'pay:a:flying', record('pay:a:flying', 0)));
  await store.close();
  // As the gateway before issue #26 left it: every key a row of the checkpoint (answered or
  // not), and an index manifest of version 2, whose id runs know no key.
  const file = join(data_dir, 'state.jsonl');
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  const end = lines.pop()!;
  assert.match(end, /^\["end",/);
  for (let i = 0; i < 40; i++)
    lines.push(JSON.stringify(['r', 'idempotency', `old-${i}`, record(`old-${i}`, 200)]));
  lines.push(JSON.stringify(['end', lines.length + 1]));
  writeFileSync(file, `${lines.join('\n')}\n`);
  const manifest_file = join(data_dir, INDEX_DIR, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifest_file, 'utf8'));
  writeFileSync(manifest_file, JSON.stringify({ ...manifest, version: 2, runs: [] }));

  const warnings: string[] = [];
  const upgraded = await Store.open(data_dir, { warn: (message) => warnings.push(message) });
  assert.match(warnings.join('\n'), /version 2 .*indexing the journal again for version 4/);
  assert.deepEqual(liveKeys(upgraded), ['pay:a:flying'], 'only the key in flight is live');
  for (let i = 0; i < 40; i++) assert.equal(await creditOnce(upgraded, `old-${i}`), 'duplicate');
  assert.equal(upgraded.state.balances['wallet:a'], 40);
  await upgraded.close();
  assert.equal(manifestVersion(data_dir), 4);
  const checkpoint = (await readCheckpoint(data_dir))!;
  assert.deepEqual(Object.keys(checkpoint.tables.idempotency ?? {}), ['pay:a:flying']);
  assert.deepEqual((await verifyDataDir(data_dir)).breaches, []);
});
