// The store killed with SIGKILL at random moments while checkpoints are written in parts
// all the time: every acknowledged commit survives, every row is as some prefix of the
// commits left it, and checkpoint + replay never applies a posting or a usage record twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { Store, readCheckpoint } from '../../../gateway/store/store.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { runThenKill } from '../../support/kill-child.ts';
import { tempDir } from '../../support/temp.ts';

const CHILD = resolve(import.meta.dirname, '../../support/store-crash-child.ts');
const ROUNDS = 12;

test(
  'SIGKILL mid-checkpoint, 12 times: acknowledged commits survive, replay applies nothing twice, verify passes',
  { timeout: 180_000 },
  async () => {
    const data_dir = tempDir('aihub-store-crash-');
    /** writer → the highest n acknowledged */
    const acked = new Map<number, number>();
    let next_n = 0;
    let acked_total = 0;
    let checkpoints_seen = 0;
    for (let round = 0; round < ROUNDS; round++) {
      let ready = false;
      await runThenKill(CHILD, [data_dir, String(next_n)], {
        onLine: (line) => {
          if (line === 'ready') ready = true;
          const match = /^ack (\d) (\d+)$/.exec(line);
          if (match) {
            acked.set(
              Number(match[1]),
              Math.max(acked.get(Number(match[1])) ?? -1, Number(match[2])),
            );
            acked_total++;
          }
        },
        ready: () => ready,
        min_ms: 150,
        spread_ms: 350,
      });
      try {
        checkpoints_seen = Math.max(checkpoints_seen, (await readCheckpoint(data_dir))!.seq);
      } catch {
        // no checkpoint yet
      }

      const store = await Store.open(data_dir, {
        checkpoint_interval_ms: 3_600_000,
        checkpoint_every_records: 1_000_000,
      });
      try {
        for (const [w, n] of acked) {
          // The row of writer w's last acknowledged commit holds that commit or a later one of the same row.
          const id = `w${w}-${n % 50}`;
          const found = store.get('accounts', id);
          if (n % 7 === 3) {
            if (found)
              assert.ok(
                Number(found.name) > n && Number(found.name) % 50 === n % 50,
                `${id} was deleted by acknowledged commit ${n}, found ${found.name}`,
              );
          } else {
            assert.ok(found, `${id} written by acknowledged commit ${n} is missing`);
            assert.ok(
              Number(found.name) >= n && Number(found.name) % 50 === n % 50,
              `${id}: acknowledged ${n}, found ${found.name}`,
            );
          }
        }
        // One posting of 1 micro and one usage record per commit: replay applied each once.
        const commits = store.state.balances['revenue:x'] ?? 0;
        assert.equal(
          store.state.tables.usage?.a?.requests ?? 0,
          commits,
          'usage records and postings applied the same number of times',
        );
        assert.ok(
          commits >= acked_total,
          `${commits} commits on disk, ${acked_total} acknowledged`,
        );
        next_n = Math.max(...acked.values(), next_n) + 1_000; // fresh n per round: the rows' history stays unambiguous
      } finally {
        await store.close();
      }
      const verify = await verifyDataDir(data_dir);
      assert.equal(verify.ok, true, verify.breaches.join('\n'));
    }
    assert.ok(checkpoints_seen > 0, 'checkpoints were written between the kills');
  },
);
