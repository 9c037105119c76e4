// A PostgreSQL gateway's restart independent of history (issue #18): a gateway keeps its
// replica across restarts and applies only what the log gained meanwhile, as its /metrics
// count it (`aihub_store_open_applied_records`), never as a time; after a SIGKILL under load
// it keeps its replica too, loses no acknowledged write, and agrees with a gateway built
// from the whole log; the books verify.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { admin, createFundedAccount, request, type Gateway } from './helpers.ts';
import { waitFor } from '../support/payments-helpers.ts';
import {
  freshDatabase,
  micros,
  postgresStoreMissing,
  startMember,
  stopAll,
  verifyDatabase,
} from '../support/multi-gateway.ts';
import { replicaDir } from '../../gateway/store/pg.ts';
import { headSeq } from '../support/postgres.ts';
import { REPLICA_STAMP } from '../../gateway/store/pg-replica.ts';
import { loadState } from '../../gateway/store/store.ts';

const skip = await postgresStoreMissing();

async function metric(gateway: Gateway, name: string): Promise<number> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : Number.NaN;
}

const opened = async (gateway: Gateway) => ({
  applied: await metric(gateway, 'aihub_store_open_applied_records'),
  built_from_log: await metric(gateway, 'aihub_store_replica_built_from_log'),
});

/** The record the gateway's replica had applied when it stopped, read from its files. */
async function replicaSeq(gateway: Gateway): Promise<number> {
  const { state } = await loadState(replicaDir(gateway.data_dir), {
    repair: false,
    now: () => new Date(),
  });
  return state.seq;
}

const credit = (gateway: Gateway, account_id: string, amount_micros: number, reference: string) =>
  admin(gateway).post(`/admin/accounts/${account_id}/credit`, {
    amount: amount_micros / 1e6,
    reference,
  });

async function walletOf(
  gateway: Gateway,
  key: string,
): Promise<{ balance: number; total: number }> {
  const reply = await request(`${gateway.url}/api/wallet/history?limit=1`, {
    headers: { 'x-api-key': key },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return { balance: micros(reply.body.data.balance), total: reply.body.data.total };
}

test(
  'a restart applies only what other gateways committed while it was down (none when nothing was); balances and history agree',
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    let g1 = await startMember(database_url, 1);
    const g2 = await startMember(database_url, 2);
    const running = [g1, g2];
    try {
      assert.equal((await opened(g1)).built_from_log, 1, 'a new gateway builds its replica');
      const account = await createFundedAccount(g1, 10);
      for (let i = 0; i < 10; i++)
        assert.equal((await credit(g1, account.account_id, 10_000, `g1-${i}`)).status, 200);
      assert.equal(await g1.stop(), 0);
      const stopped_at = JSON.parse(
        readFileSync(join(replicaDir(g1.data_dir), REPLICA_STAMP), 'utf8'),
      ).seq as number;
      assert.equal(stopped_at, await replicaSeq(g1));

      // While g1 is down, g2 commits; then g2 stops too, so that nothing else is written.
      for (let i = 0; i < 15; i++)
        assert.equal((await credit(g2, account.account_id, 20_000, `g2-${i}`)).status, 200);
      const on_g2 = await walletOf(g2, account.key);
      assert.equal(await g2.stop(), 0);
      const head = await headSeq(database_url);
      assert.ok(head - stopped_at >= 15, `${head - stopped_at} records since g1 stopped`);

      g1 = await startMember(database_url, 1, { data_dir: g1.data_dir });
      running.push(g1);
      assert.deepEqual(await opened(g1), { applied: head - stopped_at, built_from_log: 0 });
      const on_g1 = await walletOf(g1, account.key);
      assert.deepEqual(on_g1, on_g2);
      assert.equal(on_g1.balance, micros(10) + 10 * 10_000 + 15 * 20_000);

      // Stopped and started again with nothing committed meanwhile: nothing to apply.
      assert.equal(await g1.stop(), 0);
      g1 = await startMember(database_url, 1, { data_dir: g1.data_dir });
      running.push(g1);
      assert.deepEqual(await opened(g1), { applied: 0, built_from_log: 0 });
      assert.deepEqual(await walletOf(g1, account.key), on_g2);
    } finally {
      await stopAll(running);
    }
    const verify = await verifyDatabase(database_url);
    assert.equal(verify.code, 0, verify.output);
  },
);

test(
  'SIGKILL under load, then a restart: the replica is kept, the log fills in exactly what it lacks, no acknowledged write is missing',
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    let g1 = await startMember(database_url, 1);
    const g2 = await startMember(database_url, 2);
    const running = [g1, g2];
    try {
      const account = await createFundedAccount(g1, 0);
      const acknowledged = new Map<string, number>();
      const unsure = new Map<string, number>();
      let stop = false;
      let n = 0;
      const workers = Array.from({ length: 6 }, async () => {
        while (!stop) {
          const reference = `load-${n++}`;
          const amount = 10_000 * (1 + (n % 5));
          unsure.set(reference, amount);
          try {
            const reply = await credit(g1, account.account_id, amount, reference);
            if (reply.status === 200) {
              unsure.delete(reference);
              acknowledged.set(reference, amount);
            }
          } catch {
            // g1 died under this request: it may or may not have been committed
          }
        }
      });
      try {
        await waitFor(
          () => acknowledged.size >= 60,
          () => `only ${acknowledged.size} credits acknowledged`,
          60_000,
        );
        await g1.stop('SIGKILL');
      } finally {
        stop = true;
        await Promise.all(workers);
      }
      const killed_at = await replicaSeq(g1);

      // More commits while g1 is dead, then nothing else is written.
      for (let i = 0; i < 5; i++)
        assert.equal((await credit(g2, account.account_id, 50_000, `after-${i}`)).status, 200);
      assert.equal(await g2.stop(), 0);
      const head = await headSeq(database_url);
      assert.ok(head - killed_at >= 5);

      g1 = await startMember(database_url, 1, { data_dir: g1.data_dir });
      running.push(g1);
      assert.deepEqual(await opened(g1), { applied: head - killed_at, built_from_log: 0 });
      const sure = [...acknowledged.values()].reduce((a, b) => a + b, 0) + 5 * 50_000;
      const maybe = [...unsure.values()].reduce((a, b) => a + b, 0);
      const kept = await walletOf(g1, account.key);
      assert.ok(
        kept.balance >= sure && kept.balance <= sure + maybe,
        `balance ${kept.balance} outside [${sure}, ${sure + maybe}]`,
      );
      // A gateway built from the whole log sees the same balance and the same history.
      const g3 = await startMember(database_url, 3);
      running.push(g3);
      assert.equal((await opened(g3)).built_from_log, 1);
      assert.deepEqual(await walletOf(g3, account.key), kept);
      for (const [reference, amount] of acknowledged) {
        const again = await credit(g1, account.account_id, amount, reference);
        assert.equal(again.body.duplicate, true, `acknowledged credit ${reference} was lost`);
      }
    } finally {
      await stopAll(running);
    }
    const verify = await verifyDatabase(database_url);
    assert.equal(verify.code, 0, verify.output);
  },
);
