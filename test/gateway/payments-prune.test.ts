// The payments pruning pass in the real gateway, with a short idempotency window and pass
// interval: idempotency records past their window and DMT usage of a month that is over are
// deleted (seen in the data dir after a clean stop), records inside their window still answer
// the first answer, other rooms' references and the current month's limit are untouched, and
// `verify` passes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, admin, tempDir } from './helpers.ts';
import {
  addBeneficiary,
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  transferWithOtp,
  tableIds,
  verifiedRemitter,
  verifyOk,
} from '../support/payments-helpers.ts';
import { loadState, Store } from '../../gateway/store/store.ts';
import { monthKey, usageKey } from '../../gateway/payments/dmt/rules.ts';

const WINDOW_MS = 4_000;
const MOBILE = '9876500088';

/** Polls until `ok()` (bounded): the test waits on the document's state, never on log lines or a fixed sleep. */
async function waitFor(
  what: string,
  ok: () => boolean | Promise<boolean>,
  timeout_ms = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('pruning: expired idempotency records and past months of DMT usage go; the rest still answers; verify passes', async () => {
  // What a gateway that ran in December 2020 left behind: a payment key and a month's usage.
  const data_dir = tempDir();
  const december = new Date('2020-12-15T06:30:00Z');
  const seed = await Store.open(data_dir, { now: () => december });
  await seed.transact((tx) => {
    tx.set('idempotency', 'pay:acc_gone:order-2020', {
      key: 'pay:acc_gone:order-2020',
      request_hash: 'h',
      status: 200,
      body: { status: true },
      created_at: december.toISOString(),
    });
    tx.set('dmt_usage', usageKey(MOBILE, '2020-12'), 25_000_000_000);
  });
  await seed.close();

  const gw = await startPaymentsGateway(
    paymentsConfig({
      idempotency_window_ms: WINDOW_MS,
      prune: { interval_ms: 150, batch_size: 1 },
    }),
    { data_dir },
  );
  let account_id = '';
  let month = '';
  try {
    const onboarded = await onboard(gw, 10_000, { recharge: true, dmt: true });
    account_id = onboarded.account_id;
    const { headers } = onboarded;
    const recharge = (key: string, number: string) =>
      request(`${gw.url}/api/recharge`, {
        headers: { ...headers, 'idempotency-key': key },
        body: { operator_id: 1, number, amount: 10 },
      });

    // This month's usage: ₹1,000 of the ₹25,000 limit.
    await verifiedRemitter(gw, headers, MOBILE);
    const bene_id = await addBeneficiary(gw, headers, MOBILE, '223456789012');
    month = monthKey(new Date(), 330);
    const transfer = await transferWithOtp(gw, headers, {
      mobile: MOBILE,
      bene_id,
      amount: 1_000,
      txn_type: 'IMPS',
    });
    assert.equal(transfer.body.data.status, 'success', JSON.stringify(transfer.body));
    const idempotency = () => tableIds(gw, 'idempotency');
    await waitFor(
      'the seeded rows to be pruned',
      async () =>
        !(await idempotency()).has('pay:acc_gone:order-2020') &&
        !(await tableIds(gw, 'dmt_usage')).has(usageKey(MOBILE, '2020-12')),
    );

    const old = await recharge('order-old', '9876543210');
    assert.equal(old.body.data.status, 'success', JSON.stringify(old.body));
    const old_at = Date.now();
    await waitFor(
      'the first key to leave its window',
      () => Date.now() - old_at > WINDOW_MS + 100,
      WINDOW_MS * 3,
    );

    // Inside its window (retried at once): the first answer again, nothing charged.
    const fresh = await recharge('order-fresh', '9876543211');
    const fresh_at = Date.now();
    const before = await balance(gw, headers);
    const retry = await recharge('order-fresh', '9876543211');
    assert.ok(Date.now() - fresh_at < WINDOW_MS, 'the retry was sent inside the window');
    assert.equal(fresh.body.data.status, 'success', JSON.stringify(fresh.body));
    assert.equal(retry.status, 200);
    assert.deepEqual(retry.body, fresh.body);
    assert.equal(await balance(gw, headers), before);
    await waitFor(
      'a pass to delete the expired key',
      async () => !(await idempotency()).has(`pay:${account_id}:order-old`),
    );

    // An admin credit reference has no window: older than it, and still one credit.
    const again = await admin(gw).post(`/admin/accounts/${account_id}/credit`, {
      amount: 10_000,
      reference: `fund-${account_id}`,
    });
    assert.equal(again.status, 200);
    assert.equal(again.body.duplicate, true);

    // The month's limit is as it was: December's exhausted ₹25,000 is gone, this month's ₹1,000 stays.
    const remitter = await request(`${gw.url}/api/dmt/remitter/${MOBILE}`, { headers });
    assert.deepEqual([remitter.body.data.used, remitter.body.data.available], [1_000, 24_000]);
  } finally {
    assert.equal(await gw.stop(), 0, gw.output.join('\n'));
  }

  // The data dir after a clean stop: what was pruned is gone, the rest is there.
  const { state } = await loadState(data_dir, { repair: false, now: () => new Date() });
  const keys = Object.keys(state.tables.idempotency ?? {});
  assert.ok(!keys.includes('pay:acc_gone:order-2020'));
  assert.ok(!keys.includes(`pay:${account_id}:order-old`));
  assert.ok(keys.includes(`pay:${account_id}:order-fresh`));
  assert.ok(keys.includes(`admin-credit:fund-${account_id}`));
  assert.deepEqual({ ...state.tables.dmt_usage }, { [usageKey(MOBILE, month)]: 1_000_000_000 });
  await verifyOk(gw);
});
