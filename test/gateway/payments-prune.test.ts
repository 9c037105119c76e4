// The payments pruning pass in the real gateway, with a short idempotency window and pass
// interval: an idempotency key left in flight past its window and DMT usage of a month that is
// over are deleted (seen in the data dir after a clean stop); answered keys are history from
// the commit that answered them (never in the document), inside their window they answer the
// first answer, past it they are new; other rooms' references and the current month's limit
// are untouched, and `verify` passes.
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
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const WINDOW_MS = 4_000;

async function tableIdsOf(data_dir: string, name: string): Promise<Set<string>> {
  const { state } = await loadState(data_dir, { repair: false, now: () => new Date() });
  return new Set(Object.keys((state.tables as Record<string, object | undefined>)[name] ?? {}));
}
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

test('pruning: a key left in flight past its window and past months of DMT usage go; answered keys are history and still answer; verify passes', async () => {
  // What a gateway that ran in December 2020 left behind: an answered payment key, one left
  // in flight (that gateway stopped before answering), and a month's usage.
  const data_dir = tempDir();
  const december = new Date('2020-12-15T06:30:00Z');
  const seed = await Store.open(data_dir, {
    history_tags: PAYMENT_HISTORY_TAGS,
    now: () => december,
  });
  await seed.transact((tx) => {
    tx.set('idempotency', 'pay:acc_gone:order-2020', {
      key: 'pay:acc_gone:order-2020',
      request_hash: 'h',
      status: 200,
      body: { status: true },
      created_at: december.toISOString(),
    });
    tx.set('idempotency', 'pay:acc_gone:order-2019', {
      key: 'pay:acc_gone:order-2019',
      request_hash: 'h',
      status: 0,
      body: { txn_id: 'txn_gone' },
      created_at: december.toISOString(),
    });
    tx.set('dmt_usage', usageKey(MOBILE, '2020-12'), 25_000_000_000);
  });
  await seed.close();
  assert.deepEqual(
    [...(await tableIdsOf(data_dir, 'idempotency'))],
    ['pay:acc_gone:order-2019'],
    'the answered key left the document in the commit that answered it',
  );

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
        !(await idempotency()).has('pay:acc_gone:order-2019') &&
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
    assert.deepEqual(
      [...(await idempotency())],
      [],
      'answered keys are never in the document: nothing for a pass to delete',
    );
    // Past its window a key is new: a second recharge (a new transaction).
    const old_again = await recharge('order-old', '9876543210');
    assert.equal(old_again.body.data.status, 'success', JSON.stringify(old_again.body));
    assert.notEqual(old_again.body.txn_id, old.body.txn_id);

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

  // The data dir after a clean stop: no key in the document (the in-flight one pruned, the
  // answered ones history, still found by id), the current month's usage only.
  const { state } = await loadState(data_dir, { repair: false, now: () => new Date() });
  assert.deepEqual(Object.keys(state.tables.idempotency ?? {}), []);
  assert.deepEqual({ ...state.tables.dmt_usage }, { [usageKey(MOBILE, month)]: 1_000_000_000 });
  const reopened = await Store.open(data_dir, { history_tags: PAYMENT_HISTORY_TAGS });
  try {
    assert.equal(reopened.get('idempotency', 'pay:acc_gone:order-2020')?.status, 200);
    assert.equal(reopened.get('idempotency', `pay:${account_id}:order-fresh`)?.status, 200);
    assert.equal(reopened.get('idempotency', `admin-credit:fund-${account_id}`)?.status, 200);
    assert.equal(reopened.get('idempotency', 'pay:acc_gone:order-2019'), undefined);
  } finally {
    await reopened.close();
  }
  await verifyOk(gw);
});
