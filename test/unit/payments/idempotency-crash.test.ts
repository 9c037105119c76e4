// Idempotency keys survive SIGKILL at any moment (issue #26): the real payment engine in a
// child process answering keyed recharges while checkpoints and index manifests are written
// all the time, killed at random, 8 times on one data dir. A key's record leaves the live
// document in the commit that records its answer (no second step that a crash could cut
// between), and its index entry is made again from the journal after the last manifest. So
// after every restart: each answered key answers its first answer again, no key ever made a
// second transaction (a key cut off before its answer included), no answered key is in the
// document, and `verify` passes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Store } from '../../../gateway/store/store.ts';
import { verifyDataDir } from '../../../gateway/store/verify.ts';
import { CRASH_ACCOUNT, keyedEngine, keyedIntent } from '../../support/idempotency-crash.ts';
import { runThenKill } from '../../support/kill-child.ts';
import { tempDir } from '../../support/temp.ts';

const CHILD = resolve(import.meta.dirname, '../../support/idempotency-crash-child.ts');
const ROUNDS = 8;

test(
  'SIGKILL while keyed payments are answered, 8 times: every answered key answers the same, no key moves money twice, no answered key stays live',
  { timeout: 240_000 },
  async () => {
    const data_dir = tempDir('aihub-idem-crash-');
    /** key → the body of its first acknowledged answer */
    const answered = new Map<string, string>();
    /** every key a child may have opened: acknowledged, or the next of its writer */
    const tried = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      let ready = false;
      // Acknowledged in this round: the kill's random moment starts once 13 are (8 × 13 > 100),
      // so the count below does not depend on how fast a loaded machine runs the child.
      let acked = 0;
      const next_of_writer = new Map<string, number>();
      await runThenKill(CHILD, [data_dir, String(round)], {
        onLine: (line) => {
          if (line === 'ready') ready = true;
          const match = /^ack (r\d+-w(\d)-(\d+)) (.*)$/.exec(line);
          if (!match) return;
          const [, key, writer, n, body] = match;
          acked++;
          if (!answered.has(key!)) answered.set(key!, body!);
          else assert.equal(body, answered.get(key!), `${key} answered twice differently`);
          next_of_writer.set(writer!, Math.max(next_of_writer.get(writer!) ?? 0, Number(n) + 1));
        },
        ready: () => ready && acked >= 13,
        min_ms: 200,
        spread_ms: 400,
      });
      for (const key of answered.keys()) tried.add(key);
      // The key each writer was on when it died: opened or not, it must not make two.
      for (let w = 0; w < 4; w++)
        tried.add(`r${round}-w${w}-${next_of_writer.get(String(w)) ?? 0}`);

      const store = await Store.open(data_dir, {
        checkpoint_interval_ms: 3_600_000,
        checkpoint_every_records: 1_000_000,
      });
      const engine = keyedEngine(store);
      try {
        const live = Object.values(store.rows('idempotency'));
        assert.ok(
          live.every((record) => record.status === 0),
          `only keys in flight are live (${live.filter((r) => r.status !== 0).length} answered ones found)`,
        );
        for (const [key, body] of answered) {
          const again = await engine.submit(keyedIntent(key));
          assert.equal(JSON.stringify(again.body), body, `${key} after restart ${round}`);
        }
        for (const key of tried) await engine.submit(keyedIntent(key));
        // One transaction per key, whatever happened to it.
        const per_key = new Map<string, number>();
        await store.reads.txns(
          {
            account_id: CRASH_ACCOUNT.id,
            match: (txn) => {
              per_key.set(txn.idempotency_key!, (per_key.get(txn.idempotency_key!) ?? 0) + 1);
              return false;
            },
          },
          { offset: 0, limit: 1 },
        );
        for (const key of tried) assert.equal(per_key.get(key), 1, `${key}: one transaction`);
        assert.equal(per_key.size, tried.size, 'no transaction without a key the children used');
      } finally {
        await engine.stop();
        await store.close();
      }
      const report = await verifyDataDir(data_dir);
      assert.deepEqual(report.breaches, [], `verify after round ${round}`);
    }
    assert.ok(answered.size > 100, `only ${answered.size} keys were answered in all`);
  },
);

test('a key whose gateway died while the provider had its transaction: live in flight until the reconciler settles it, then answered and history; a retry gets that answer, nothing moves twice', async () => {
  const data_dir = tempDir('aihub-idem-orphan-');
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, data_dir, '0', 'orphan'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const calling = new Promise<void>((resolve) =>
    lines.on('line', (l) => l === 'calling' && resolve()),
  );
  const exited = new Promise((r) => child.once('exit', r));
  await Promise.race([calling, exited]);
  assert.equal(child.exitCode, null, 'the child reached the provider');
  child.kill('SIGKILL');
  await exited;
  lines.close();

  const store = await Store.open(data_dir);
  const engine = keyedEngine(store, { status_success: true, first_check_ms: 10 });
  try {
    const [record] = Object.values(store.rows('idempotency'));
    assert.equal(record?.status, 0, 'the key is live, in flight');
    const txn_id = (record!.body as { txn_id: string }).txn_id;
    // A retry meanwhile: the transaction as it is (pending), no second one.
    const meanwhile = await engine.submit(keyedIntent('orphan'));
    assert.equal((meanwhile.body as { txn_id: string }).txn_id, txn_id);
    assert.equal(store.get('payment_txns', txn_id)?.status, 'pending');
    // The reconciler asks the provider, which says it succeeded.
    for (let i = 0; i < 200 && store.get('payment_txns', txn_id)?.status === 'pending'; i++) {
      engine.reconcileDue();
      await new Promise((r) => setTimeout(r, 10));
      await store.readDurable();
    }
    assert.equal(store.get('payment_txns', txn_id)?.status, 'success');
    assert.deepEqual(Object.keys(store.rows('idempotency')), [], 'answered: history now');
    const answer = store.get('idempotency', record!.key)!;
    assert.equal(answer.status, 200);
    assert.equal((answer.body as { txn_id: string }).txn_id, txn_id);
    const retry = await engine.submit(keyedIntent('orphan'));
    assert.deepEqual(retry.body, answer.body);
    assert.equal(
      (await store.reads.txns({ account_id: CRASH_ACCOUNT.id }, { offset: 0, limit: 10 })).total,
      1,
    );
  } finally {
    await engine.stop();
    await store.close();
  }
  assert.deepEqual((await verifyDataDir(data_dir)).breaches, []);
});
