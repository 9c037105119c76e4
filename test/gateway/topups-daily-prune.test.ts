// The top-ups' daily cap counts what an account started on one India day (`topup_daily`, a row
// per account and day). A day that is over is never counted again, so its rows leave the live
// document: the payments room's pruning pass deletes them (topups hands it the target), keeps
// today's, and the day turns at midnight India time, not UTC.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  fakeClock,
  fakeClockGateway,
  type FakeClockGateway,
} from '../support/fake-clock-gateway.ts';
import { createDatabase } from '../support/postgres.ts';
import { paymentsConfig } from '../support/payments-helpers.ts';
import { TEST_CLUSTER_URL } from './helpers.ts';

const clock = fakeClock('2026-12-07T06:00:00Z');
let gw: FakeClockGateway;

// On the JSON-file store, or on PostgreSQL in a run with AIHUB_TEST_DATABASE_URL set.
before(async () => {
  const database_url = TEST_CLUSTER_URL ? await createDatabase(TEST_CLUSTER_URL) : undefined;
  gw = await fakeClockGateway(paymentsConfig(), clock, database_url);
});
after(() => gw.stop());

const row = (id: string) => gw.store.fetch('topup_daily', id);

test("a day's cap counts are pruned once the day is over in India, today's are kept", async () => {
  await gw.store.transact((tx) => {
    tx.set('topup_daily', 'acc_a:2026-12-05', 100_000_000);
    tx.set('topup_daily', 'acc_b:2026-12-06', 300_000_000);
    tx.set('topup_daily', 'acc_a:2026-12-07', 200_000_000);
  });
  assert.equal((await gw.prune()).topup_daily, 2);
  assert.equal(await row('acc_a:2026-12-05'), undefined);
  assert.equal(await row('acc_b:2026-12-06'), undefined);
  assert.equal(await row('acc_a:2026-12-07'), 200_000_000, "today's count stays");

  // 23:59 in India: still the 7th there.
  clock.set('2026-12-07T18:29:00Z');
  assert.equal((await gw.prune()).topup_daily ?? 0, 0);
  assert.equal(await row('acc_a:2026-12-07'), 200_000_000);
  // 00:01 on the 8th in India (18:31 UTC on the 7th): the 7th is over.
  clock.set('2026-12-07T18:31:00Z');
  assert.equal((await gw.prune()).topup_daily, 1);
  assert.equal(await row('acc_a:2026-12-07'), undefined);
});
