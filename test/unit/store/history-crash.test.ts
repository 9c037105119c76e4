// SIGKILL during heavy history writes, repeated: every acknowledged transaction is found by
// id and in its account's list, the indexes never point at nothing, and verify passes (in
// full and from its last verified point).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { Store } from '../../../gateway/store/store.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { runThenKill } from '../../support/kill-child.ts';
import { tempDir } from '../../support/temp.ts';

const CHILD = resolve(import.meta.dirname, '../../support/history-crash-child.ts');
const ROUNDS = 8;

test(
  'SIGKILL during heavy history writes, 8 times: acknowledged transactions are found by id and in their lists; verify passes',
  { timeout: 240_000 },
  async () => {
    const data_dir = tempDir('aihub-history-crash-');
    const acked: string[] = [];
    let base = 0;
    let incremental_from = 0;
    for (let round = 0; round < ROUNDS; round++) {
      let ready = false;
      let acked_this_round = 0;
      await runThenKill(CHILD, [data_dir, String(base)], {
        onLine: (line) => {
          if (line === 'ready') ready = true;
          else if (line.startsWith('ack ')) {
            acked.push(...line.slice(4).split(' '));
            acked_this_round++;
          }
        },
        ready: () => ready && acked_this_round >= 3,
        min_ms: 100,
        spread_ms: 400,
      });

      const store = await Store.open(data_dir, {
        checkpoint_interval_ms: 3_600_000,
        checkpoint_every_records: 1_000_000,
      });
      try {
        assert.equal(
          Object.keys(store.rows('payment_txns')).length,
          0,
          'finalized transactions are not in the live document',
        );
        const listed = new Map<string, Set<string>>();
        for (const id of acked) {
          const txn = store.get('payment_txns', id);
          assert.ok(txn, `acknowledged ${id} is not found by id after round ${round}`);
          let ids = listed.get(txn.account_id);
          if (!ids)
            listed.set(
              txn.account_id,
              (ids = new Set(
                (await store.reads.txns({ account_id: txn.account_id }, null)).rows.map(
                  (t) => t.id,
                ),
              )),
            );
          assert.ok(ids.has(id), `acknowledged ${id} is missing from ${txn.account_id}'s list`);
        }
        // Each account's list holds each transaction once, and its wallet history ends at its balance.
        for (const [account_id, ids] of listed) {
          const { total } = await store.reads.txns({ account_id }, { offset: 0, limit: 1 });
          assert.equal(total, ids.size, `${account_id}: no transaction listed twice`);
          const wallet = await store.reads.wallet({ account_id }, { offset: 0, limit: 1 }, 'desc');
          assert.equal(
            wallet.closing_micros,
            store.state.balances[`wallet:${account_id}`],
            `${account_id}: the wallet index ends at the balance`,
          );
        }
      } finally {
        await store.close();
      }
      const incremental = await verifyDataDir(data_dir);
      assert.equal(incremental.ok, true, incremental.breaches.join('\n'));
      if (incremental.mode === 'incremental')
        incremental_from = Math.max(incremental_from, incremental.from_seq);
      if (round % 3 === 2) {
        const full = await verifyDataDir(data_dir, { full: true });
        assert.equal(full.ok, true, full.breaches.join('\n'));
        assert.equal(full.mode, 'full');
      }
      base += 10_000_000;
    }
    assert.ok(acked.length > 0);
    assert.ok(
      incremental_from > 0,
      'verify went on from a verified point (sealed segments) at least once',
    );
  },
);
