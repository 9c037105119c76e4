// The history indexes on disk: finalized transactions by id live in sorted runs merged as
// the history grows (every id is found, across many checkpoints and a restart), and an index
// file left short (what only a power loss or damage can do: lists and runs are fsynced
// before a manifest names them) is repaired from the journal after the last record it
// holds, not by indexing the whole journal again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { FileStore as Store } from '../../../gateway/store/store.ts';
import { INDEX_DIR } from '../../../gateway/store/archive.ts';
import { ID_BLOCK_BYTES, ID_RUN_DIR } from '../../../gateway/store/id-runs.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { fillAccount, fillNow, fillPayments, fillTxnId } from '../../support/history-fill.ts';
import { tempDir } from '../../support/temp.ts';

const TXNS = 6_100;
const ACCOUNTS = 10;

async function filled(): Promise<string> {
  const data_dir = tempDir('aihub-index-repair-');
  const store = await Store.open(data_dir, {
    checkpoint_interval_ms: 3_600_000,
    checkpoint_every_records: 500,
    now: fillNow,
  });
  // 12 batches of 500 commits: a checkpoint (and a manifest, a new run, merges) after each.
  for (let batch = 0; batch < 12; batch++) {
    await fillPayments(store, {
      accounts: ACCOUNTS,
      txns: 500,
      first_index: batch * 500,
      per_commit: 250,
    });
  }
  await store.close();
  // And 100 more in a session of their own (too few for a checkpoint): its close merges the
  // runs there are, then writes their ids as a small run beside the merged one.
  const again = await Store.open(data_dir, { checkpoint_interval_ms: 3_600_000, now: fillNow });
  await fillPayments(again, { accounts: ACCOUNTS, txns: 100, first_index: 6_000, per_commit: 100 });
  await again.close();
  return data_dir;
}

async function snapshot(store: Store) {
  return {
    pages: await Promise.all(
      Array.from({ length: ACCOUNTS }, (_, a) =>
        store.reads.txns({ account_id: fillAccount(a) }, { offset: 0, limit: 20 }),
      ),
    ),
    wallets: await Promise.all(
      [0, 5].map((a) =>
        store.reads.wallet({ account_id: fillAccount(a) }, { offset: 0, limit: 20 }, 'desc'),
      ),
    ),
    logs: await store.reads.apiLogs({ account_id: null }, { offset: 0, limit: 10 }, 'desc'),
  };
}

test(
  'ids are found in merged runs after many checkpoints and a restart; the runs stay few',
  { timeout: 300_000 },
  async () => {
    const data_dir = await filled();
    try {
      const runs = readdirSync(join(data_dir, INDEX_DIR, ID_RUN_DIR)).filter((name) =>
        name.endsWith('.run'),
      );
      assert.ok(
        runs.length >= 1 && runs.length <= 5,
        `runs after 13 manifests: ${runs.join(', ')}`,
      );
      const store = await Store.open(data_dir, { checkpoint_interval_ms: 3_600_000 });
      try {
        for (let i = 0; i < TXNS; i++)
          assert.equal(
            store.get('payment_txns', fillTxnId(i))?.id,
            fillTxnId(i),
            `transaction ${i} by id`,
          );
        assert.equal(
          store.get('payment_txns', fillTxnId(TXNS)),
          undefined,
          'an id never archived is not found',
        );
        // A lookup reads a block per run and the record it finds, however long the history.
        const before = { ...store.archive.counters };
        store.get('payment_txns', fillTxnId(1234));
        assert.equal(store.archive.counters.records - before.records, 1);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(data_dir, { recursive: true, force: true });
    }
  },
);

for (const damage of ['list', 'run'] as const) {
  test(
    `a short ${damage === 'list' ? 'index list' : 'id run'} is repaired from the journal after the last record it holds whole, not rebuilt`,
    { timeout: 300_000 },
    async () => {
      const data_dir = await filled();
      try {
        let store = await Store.open(data_dir, { checkpoint_interval_ms: 3_600_000 });
        const before = await snapshot(store);
        const last_seq = store.state.seq;
        await store.close();

        let expected_from: number;
        if (damage === 'list') {
          // A power loss took the end of account 3's transaction list, mid-entry.
          const list = join(data_dir, INDEX_DIR, 'txn', `${fillAccount(3)}.idx`);
          truncateSync(list, statSync(list).size - 72 * 30 - 17);
          expected_from = last_seq - 32 * ACCOUNTS;
        } else {
          // ...or the end of the newest id run (sorted by id hash: any of its records may have lost its entry).
          const run_dir = join(data_dir, INDEX_DIR, ID_RUN_DIR);
          const runs = readdirSync(run_dir)
            .filter((name) => name.endsWith('.run'))
            .map((name) => name.split(/[-.]/).map(Number) as [number, number]);
          runs.sort((a, b) => b[0] - a[0]);
          assert.ok(runs.length >= 2, `runs: ${JSON.stringify(runs)}`);
          const [from, to] = runs[0]!;
          const file = join(run_dir, `${from}-${to}.run`);
          truncateSync(file, statSync(file).size - ID_BLOCK_BYTES - 100); // a block and a torn one
          expected_from = from - 1;
        }

        const warnings: string[] = [];
        store = await Store.open(data_dir, {
          checkpoint_interval_ms: 3_600_000,
          warn: (message) => warnings.push(message),
        });
        try {
          assert.equal(
            damage === 'list' ? store.archive.repaired.lists : store.archive.repaired.runs,
            1,
            warnings.join('\n'),
          );
          const from_seq = store.archive.repaired.from_seq;
          assert.ok(
            from_seq >= expected_from && from_seq > last_seq / 2,
            `indexed again from record ${from_seq + 1} of ${last_seq} (expected after ${expected_from}): the tail, not the whole journal`,
          );
          assert.match(warnings.join('\n'), /shorter than their manifest says/);
          assert.deepEqual(await snapshot(store), before, 'pages, wallets and logs are as before');
          for (let i = 0; i < TXNS; i++)
            assert.equal(
              store.get('payment_txns', fillTxnId(i))?.id,
              fillTxnId(i),
              `transaction ${i} by id`,
            );
          assert.equal(
            (await store.reads.txns({ account_id: fillAccount(3) }, { offset: 0, limit: 1 })).total,
            TXNS / ACCOUNTS,
          );
        } finally {
          await store.close();
        }
        // Repaired and written again: the next start has nothing to mend.
        store = await Store.open(data_dir, { checkpoint_interval_ms: 3_600_000 });
        assert.equal(store.archive.repaired.lists + store.archive.repaired.runs, 0);
        assert.deepEqual(await snapshot(store), before);
        await store.close();
        const verify = await verifyDataDir(data_dir);
        assert.equal(verify.ok, true, verify.breaches.join('\n'));
      } finally {
        rmSync(data_dir, { recursive: true, force: true });
      }
    },
  );
}
