// A keyed retry is answered by one random read however long the history (issue #26): an
// answered key's record is kept in its id run beside its entry (index manifest version 4),
// so a lookup is the filters and fences in memory, then one block, and no journal line. A
// key never used reads a block only of a run whose filter says "maybe". A data dir whose
// index is of version 3 (test/fixtures/v3-index-datadir, written by c3f78eb's store) opens:
// its id runs are built again from the journal, once, and a crash before the new manifest is
// durable begins that again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Store, type FileStore } from '../../../gateway/store/store.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { INDEX_DIR, hash32 } from '../../../gateway/store/archive.ts';
import {
  ID_BLOCK_BYTES,
  ID_INLINE_MAX,
  ID_RUN_DIR,
  type RunMeta,
} from '../../../gateway/store/id-runs.ts';
import { IdFilter } from '../../../gateway/store/id-filter.ts';
import type { IdempotencyRecord } from '../../../gateway/store/state.ts';
import { FUNDING_TOPUP, creditWallet } from '../../../gateway/ledger/ledger.ts';
import { copyFixtureDataDir, tempDir } from '../../support/temp.ts';

const FIXTURE = resolve(import.meta.dirname, '../../fixtures/v3-index-datadir');

/** An answered key's record; key 77's answer is bigger than a row kept beside its entry may be. */
const record = (key: string, status = 200): IdempotencyRecord => ({
  key,
  request_hash: `hash-${key}`,
  status,
  body: {
    status: true,
    message: 'success',
    reference: key,
    ...(key.endsWith(':77') ? { note: 'x'.repeat(ID_INLINE_MAX) } : {}),
  },
  created_at: '2026-01-01T00:00:00.000Z',
});

function creditOnce(store: FileStore, key: string): Promise<'credited' | 'duplicate'> {
  return store.transact((tx) => {
    if (tx.get('idempotency', key)) return 'duplicate';
    creditWallet(tx, { account_id: 'a', amount_micros: 1, from: FUNDING_TOPUP, memo: key });
    tx.set('idempotency', key, record(key));
    return 'credited';
  });
}

interface Manifest {
  version: number;
  runs: RunMeta[];
}
const manifestOf = (data_dir: string) =>
  JSON.parse(readFileSync(join(data_dir, INDEX_DIR, 'manifest.json'), 'utf8')) as Manifest;

/** Blocks read and journal lines read by one lookup. */
function costOf(store: FileStore, lookup: () => void): { blocks: number; records: number } {
  const blocks = store.archive.id_blocks_read;
  const records = store.archive.counters.records;
  lookup();
  return {
    blocks: store.archive.id_blocks_read - blocks,
    records: store.archive.counters.records - records,
  };
}

/** The filters of the runs the manifest names, read from their files: how many say a key may be there. */
function filtersOf(data_dir: string): (key: string) => number {
  const filters = manifestOf(data_dir).runs.map(([from, to, count]) =>
    IdFilter.read(join(data_dir, INDEX_DIR, ID_RUN_DIR, `${from}-${to}.run.bloom`), count)!,
  );
  return (key) => filters.filter((f) => f.mayHold(hash32(key))).length;
}

/** A crash: no close (the journal is durable per commit), the lock let go as the process's end would. */
async function crash(store: FileStore): Promise<void> {
  const internals = store as unknown as {
    checkpoint_timer: NodeJS.Timeout | null;
    checkpointing: Promise<void> | null;
    releaseLock(): void;
  };
  if (internals.checkpoint_timer) clearInterval(internals.checkpoint_timer);
  await internals.checkpointing;
  internals.releaseLock();
}

test('every answered key is found after a reopen in one block read and no journal line; a key never used reads a block only where a filter says maybe', async () => {
  const data_dir = tempDir('aihub-keyed-one-read-');
  // Three runs, made deterministically: no checkpoint while keys are written, one run per
  // close, each less than half the one before so that none is merged (a run's size under
  // checkpoints by record count depends on when each background checkpoint starts: equal
  // runs merge into one, and an earlier form of this test found one run one time in a few).
  const SESSIONS = [2_000, 700, 300];
  const KEYS = SESSIONS.reduce((a, b) => a + b);
  const quiet = { checkpoint_every_records: 1_000_000, checkpoint_interval_ms: 3_600_000 };
  let written = 0;
  let store: FileStore;
  for (const keys of SESSIONS) {
    store = await Store.open(data_dir, quiet);
    for (let i = written; i < written + keys; i += 100)
      await Promise.all(
        Array.from({ length: 100 }, (_, k) => creditOnce(store, `admin-credit:${i + k}`)),
      );
    written += keys;
    await store.close();
  }

  store = await Store.open(data_dir, quiet);
  const manifest = manifestOf(data_dir);
  assert.equal(manifest.version, 4);
  assert.equal(manifest.runs.length, 3, `runs: ${JSON.stringify(manifest.runs)}`);
  for (const [from, to, , blocks] of manifest.runs)
    assert.equal(
      statSync(join(data_dir, INDEX_DIR, ID_RUN_DIR, `${from}-${to}.run`)).size,
      blocks * ID_BLOCK_BYTES,
      'a run is whole blocks',
    );
  const maybeRuns = filtersOf(data_dir);
  let blocks = 0;
  for (let i = 0; i < KEYS; i++) {
    const key = `admin-credit:${i}`;
    let found: IdempotencyRecord | undefined;
    const cost = costOf(store, () => (found = store.get('idempotency', key)));
    assert.deepEqual(found, record(key), key);
    // The one answer too big to keep beside its entry is read from its journal line.
    assert.equal(cost.records, i === 77 ? 1 : 0, `${key}: journal lines read`);
    // One block: of its run, and of another only where that run's filter is wrong (< 1%).
    assert.equal(cost.blocks, maybeRuns(key), `${key}: blocks read`);
    blocks += cost.blocks;
  }
  assert.ok(blocks / KEYS < 1.05, `${blocks / KEYS} blocks per retry`);
  assert.equal(store.archive.counters.inline_rows >= KEYS - 1, true);

  // Keys never used: a block only of the runs whose filter (read here from its file) says maybe.
  let without_read = 0;
  for (let i = 0; i < 5_000; i++) {
    const key = `admin-credit:never-${i}`;
    const maybe = maybeRuns(key);
    const cost = costOf(store, () => assert.equal(store.get('idempotency', key), undefined));
    assert.deepEqual(cost, { blocks: maybe, records: 0 }, key);
    if (maybe === 0) without_read++;
  }
  assert.ok(without_read > 4_800, `${without_read} of 5,000 unused keys read no block`);
  // A retry moves nothing.
  for (const i of [0, 77, 1_500, KEYS - 1])
    assert.equal(await creditOnce(store, `admin-credit:${i}`), 'duplicate');
  assert.equal(store.state.balances['wallet:a'], KEYS);
  await store.close();
  assert.deepEqual((await verifyDataDir(data_dir)).breaches, []);
});

test('a data dir of index version 3 (written by c3f78eb) opens: its id runs are built again from the journal once, a crash before the new manifest begins that again, then every key is one read', async () => {
  const data_dir = tempDir('aihub-keyed-v3-');
  copyFixtureDataDir(FIXTURE, data_dir);
  assert.equal(manifestOf(data_dir).version, 3);
  const old_runs = readdirSync(join(data_dir, INDEX_DIR, ID_RUN_DIR)).filter((n) =>
    n.endsWith('.run'),
  );
  const keys = Array.from({ length: 320 }, (_, i) => `admin-credit:ref-${i}`);
  const check = (store: FileStore) => {
    for (const key of keys)
      assert.equal(store.get('idempotency', key)?.request_hash, `hash-${key}`, key);
    for (let i = 0; i < 60; i++)
      assert.equal(store.get('payment_txns', `txn_fixture_${i}`)?.id, `txn_fixture_${i}`);
    assert.deepEqual(Object.keys(store.rows('idempotency')), ['pay:a:flying']);
    assert.equal(store.state.balances['wallet:a'], 320);
  };

  // First start: the upgrade, then a crash before any manifest of version 4 is written.
  const warnings: string[] = [];
  let store = await Store.open(data_dir, {
    checkpoint_interval_ms: 3_600_000,
    warn: (message) => warnings.push(message),
  });
  assert.match(warnings.join('\n'), /id runs .* version 3 .*version 4/);
  check(store);
  await crash(store);
  assert.equal(
    manifestOf(data_dir).version,
    3,
    'the old manifest stays until a new one is durable',
  );

  // Second start: the upgrade again, whole; a clean close writes the manifest of version 4.
  warnings.length = 0;
  store = await Store.open(data_dir, {
    checkpoint_interval_ms: 3_600_000,
    warn: (message) => warnings.push(message),
  });
  assert.match(warnings.join('\n'), /version 3/);
  check(store);
  assert.equal(await creditOnce(store, 'admin-credit:ref-5'), 'duplicate');
  assert.equal(await creditOnce(store, 'admin-credit:ref-320'), 'credited');
  await store.close();
  assert.equal(manifestOf(data_dir).version, 4);

  // Third start: nothing to upgrade; every key answered from its block.
  warnings.length = 0;
  store = await Store.open(data_dir, {
    checkpoint_interval_ms: 3_600_000,
    warn: (message) => warnings.push(message),
  });
  assert.deepEqual(warnings, []);
  keys.push('admin-credit:ref-320');
  const maybeRuns = filtersOf(data_dir);
  let blocks = 0;
  for (const key of keys) {
    const cost = costOf(store, () => store.get('idempotency', key));
    assert.equal(cost.records, 0, `${key}: no journal line`);
    assert.equal(
      cost.blocks,
      maybeRuns(key),
      `${key}: a block of its run (and of a run whose filter is wrong)`,
    );
    blocks += cost.blocks;
  }
  assert.ok(blocks / keys.length < 1.1, `${blocks / keys.length} blocks per retry`);
  assert.equal(store.state.balances['wallet:a'], 321);
  await store.close();
  for (const [from, to, , blocks] of manifestOf(data_dir).runs)
    assert.equal(
      statSync(join(data_dir, INDEX_DIR, ID_RUN_DIR, `${from}-${to}.run`)).size,
      blocks * ID_BLOCK_BYTES,
    );
  assert.ok(old_runs.length > 0);
  assert.deepEqual((await verifyDataDir(data_dir)).breaches, []);
});
