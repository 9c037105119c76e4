// Live top-ups through Razorpay (issue #41), at the HTTP level: the real gateway process in
// live mode against a scripted Razorpay (test/support/razorpay-upstream.ts) that checks basic
// auth and signs its webhooks as Razorpay does. On the JSON-file store, and on PostgreSQL in a
// run with AIHUB_TEST_DATABASE_URL (each file run twice: `npm test` runs both passes), where
// two gateways on one database also take the same payment's webhooks at once.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ScriptedRazorpay } from '../support/razorpay-upstream.ts';
import { OPERATOR_GSTIN, waitFor } from '../support/payments-helpers.ts';
import { startGateways, stopAll } from '../support/multi-gateway.ts';
import { createDatabase } from '../support/postgres.ts';
import {
  admin,
  createFundedAccount,
  request,
  runVerify,
  startGateway,
  tempDir,
  TEST_CLUSTER_URL,
  type Gateway,
} from './helpers.ts';

const RECONCILE_MS = 150;

function topupsConfig(razorpay: ScriptedRazorpay, extra: Record<string, unknown> = {}) {
  return {
    mode: 'live',
    topups: {
      provider: 'razorpay',
      razorpay: { base_url: razorpay.url },
      // No check within a test unless it asks for one (`first_after_ms: 0` below): what the
      // webhooks do is then theirs alone, never raced by the pass.
      reconcile: { interval_ms: RECONCILE_MS, first_after_ms: 3_600_000 },
      ...extra,
    },
  };
}

function configFile(config: Record<string, unknown>): string {
  const file = join(tempDir('aihub-topups-config-'), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

async function startLive(razorpay: ScriptedRazorpay, extra: Record<string, unknown> = {}) {
  return startGateway({
    env: { AIHUB_CONFIG: configFile(topupsConfig(razorpay, extra)), ...razorpay.env() },
  });
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function balance(gateway: Gateway, key: string): Promise<number> {
  const reply = await request(`${gateway.url}/api/wallet/balance`, { headers: auth(key) });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.data.balance as number;
}

async function topup(gateway: Gateway, key: string, id: string) {
  const reply = await request(`${gateway.url}/api/wallet/topups/${id}`, { headers: auth(key) });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body;
}

async function startTopup(gateway: Gateway, key: string, amount: number, method?: string) {
  const reply = await request(`${gateway.url}/api/wallet/topups`, {
    headers: auth(key),
    body: { amount, ...(method ? { method } : {}) },
  });
  assert.equal(reply.status, 201, JSON.stringify(reply.body));
  return reply.body;
}

async function alerts(gateway: Gateway) {
  return (await admin(gateway).get('/admin/topups/alerts')).body;
}

describe('top-ups through Razorpay', () => {
  let razorpay: ScriptedRazorpay;
  let gateway: Gateway;
  let hook: string;

  before(async () => {
    razorpay = await ScriptedRazorpay.start();
    gateway = await startLive(razorpay);
    hook = `${gateway.url}/webhooks/razorpay`;
  });
  after(async () => {
    await gateway?.stop();
    await razorpay?.close();
  });

  test('an order at Razorpay, with basic auth, and the checkout to pay it', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 500);
    assert.equal(created.provider, 'razorpay');
    assert.equal(created.status, 'created');
    assert.equal(created.amount, 500);
    assert.match(created.topup_id, /^tup_/);
    const order = razorpay.orders.get(created.order_id);
    assert.ok(order, 'the order was made at Razorpay');
    assert.equal(order.amount, 50_000, 'in paise');
    assert.equal(order.receipt, created.topup_id);
    assert.ok(razorpay.calls.every((call) => call.authorized));
    assert.equal(created.checkout.options.key, razorpay.key_id);
    assert.equal(created.checkout.options.order_id, created.order_id);
    assert.ok(!JSON.stringify(created).includes(razorpay.key_secret), 'no secret in the checkout');
    // Another account's key finds nothing by that id, nor does a made-up one.
    const other = await createFundedAccount(gateway);
    for (const id of [created.topup_id, '__proto__', 'constructor', 'x'.repeat(300)]) {
      const reply = await request(`${gateway.url}/api/wallet/topups/${id}`, {
        headers: auth(other.key),
      });
      assert.equal(reply.status, 404, id);
      assert.equal(reply.body.status, false, 'the /api error shape');
    }
  });

  test("an account's list: its own top-ups, newest first, as many as asked", async () => {
    const user = await createFundedAccount(gateway);
    const other = await createFundedAccount(gateway);
    const made = [];
    for (const amount of [101, 102, 103])
      made.push((await startTopup(gateway, user.key, amount)).topup_id);
    await startTopup(gateway, other.key, 104);
    const list = async (query: string) => {
      const reply = await request(`${gateway.url}/api/wallet/topups${query}`, {
        headers: auth(user.key),
      });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      return reply.body.topups.map((t: { topup_id: string }) => t.topup_id);
    };
    assert.deepEqual(await list(''), [...made].reverse());
    assert.deepEqual(await list('?limit=2'), [made[2], made[1]]);
  });

  test('credited once when the webhook comes twice (payment.captured, then order.paid, then again)', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 250.5);
    const payment = razorpay.pay(created.order_id);
    for (const webhook of [
      razorpay.captured(payment),
      razorpay.orderPaid(payment),
      razorpay.captured(payment),
    ]) {
      const delivered = await razorpay.deliver(hook, webhook);
      assert.equal(delivered.status, 200, JSON.stringify(delivered.body));
    }
    assert.equal(await balance(gateway, user.key), 250.5);
    const after_credit = await topup(gateway, user.key, created.topup_id);
    assert.equal(after_credit.status, 'credited');
    assert.equal(after_credit.checkout, null);
    // Checked with Razorpay before the credit.
    assert.ok(razorpay.calls.some((call) => call.path === `/v1/payments/${payment.id}`));
  });

  test('a bad signature credits nothing and is listed for the operator', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 300);
    const payment = razorpay.pay(created.order_id);
    const before_count = (await alerts(gateway)).rejected_webhooks.count;
    const forged = razorpay.webhook('payment.captured', { payment }, 'not-the-webhook-secret');
    const delivered = await razorpay.deliver(hook, forged);
    assert.equal(delivered.status, 400);
    const tampered = razorpay.captured(payment);
    tampered.body = tampered.body.replace('"captured"', '"captured" ');
    assert.equal((await razorpay.deliver(hook, tampered)).status, 400);
    const unsigned = { body: tampered.body, headers: { 'content-type': 'application/json' } };
    assert.equal((await razorpay.deliver(hook, unsigned)).status, 400);
    assert.equal(await balance(gateway, user.key), 0);
    assert.equal((await alerts(gateway)).rejected_webhooks.count, before_count + 3);
    // The signature covers the bytes as sent: a compressed body is refused, not inflated.
    const gzipped = await request(hook, {
      raw: 'x',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    assert.equal(gzipped.status, 415);
    // A body past the bound is refused before it is read.
    const huge = await request(hook, { raw: 'x'.repeat(70 * 1024) });
    assert.equal(huge.status, 413);
  });

  test('a wrong amount credits nothing: the top-up is flagged and an alert raised', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 400);
    const payment = razorpay.pay(created.order_id, { amount: 100 }); // ₹1 paid on a ₹400 order
    assert.equal((await razorpay.deliver(hook, razorpay.captured(payment))).status, 200);
    assert.equal(await balance(gateway, user.key), 0);
    assert.equal((await topup(gateway, user.key, created.topup_id)).status, 'flagged');
    const listed = (await alerts(gateway)).alerts;
    assert.ok(
      listed.some((a: any) => a.reason === 'amount_mismatch' && a.payment_id === payment.id),
    );
    const flagged = await admin(gateway).get('/admin/topups?status=flagged');
    assert.ok(flagged.body.topups.some((t: any) => t.topup_id === created.topup_id));
    const all = await admin(gateway).get('/admin/topups?limit=500');
    assert.ok(all.body.topups.some((t: any) => t.topup_id === created.topup_id));
    // Every step in the audit log.
    const audit = await admin(gateway).get(`/admin/audit?account_id=${user.account_id}`);
    const actions = audit.body.data.map((entry: any) => entry.action);
    for (const action of [
      'topup.created',
      'topup.order',
      'topup.alert.amount_mismatch',
      'topup.flagged',
    ])
      assert.ok(actions.includes(action), `${action} in ${actions}`);
  });

  test('a webhook that lies about the amount is not believed: the fetch decides', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 80);
    const payment = razorpay.pay(created.order_id);
    // Signed (the secret leaked, say) but claiming ₹8000: Razorpay's own answer is ₹80.
    const lying = razorpay.webhook('payment.captured', {
      payment: { ...payment, amount: 800_000 },
    });
    assert.equal((await razorpay.deliver(hook, lying)).status, 200);
    assert.equal(await balance(gateway, user.key), 80);
  });

  test('a payment id replayed on another account credits nothing more', async () => {
    const first = await createFundedAccount(gateway);
    const second = await createFundedAccount(gateway);
    const paid = await startTopup(gateway, first.key, 50);
    const payment = razorpay.pay(paid.order_id);
    assert.equal((await razorpay.deliver(hook, razorpay.captured(payment))).status, 200);
    const other = await startTopup(gateway, second.key, 50);
    // The same payment, sent as if it paid the second account's order.
    const replay = razorpay.webhook('payment.captured', {
      payment: { ...payment, order_id: other.order_id },
    });
    assert.equal((await razorpay.deliver(hook, replay)).status, 200);
    assert.equal(await balance(gateway, first.key), 50);
    assert.equal(await balance(gateway, second.key), 0);
    assert.ok((await alerts(gateway)).alerts.some((a: any) => a.payment_id === payment.id));
  });

  test('an unknown order credits nothing and is listed', async () => {
    const payment = {
      id: 'pay_Unknown0000001',
      entity: 'payment',
      amount: 10_000,
      currency: 'INR',
      status: 'captured',
      order_id: 'order_NotOurs000001',
    };
    assert.equal((await razorpay.deliver(hook, razorpay.captured(payment))).status, 200);
    assert.ok(
      (await alerts(gateway)).alerts.some(
        (a: any) => a.reason === 'unknown_order' && a.order_id === 'order_NotOurs000001',
      ),
    );
  });

  test('a refund after the credit debits the wallet once; past the balance the rest is owed', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 1000);
    const payment = razorpay.pay(created.order_id);
    await razorpay.deliver(hook, razorpay.captured(payment));
    assert.equal(await balance(gateway, user.key), 1000);
    const refund = razorpay.refund(payment.id, 30_000); // ₹300
    for (let i = 0; i < 2; i++)
      assert.equal((await razorpay.deliver(hook, razorpay.refunded(refund))).status, 200);
    assert.equal(await balance(gateway, user.key), 700);
    let seen = await topup(gateway, user.key, created.topup_id);
    assert.equal(seen.status, 'refunded');
    assert.equal(seen.reversed, 300);
    // The operator's list by status has it where it is now, not where it was.
    const listedAs = async (status: string) =>
      (await admin(gateway).get(`/admin/topups?status=${status}`)).body.topups.some(
        (t: { topup_id: string }) => t.topup_id === created.topup_id,
      );
    assert.equal(await listedAs('refunded'), true);
    assert.equal(await listedAs('credited'), false);
    // Spend most of the wallet (an admin debit), then a dispute of the rest: the wallet goes to zero, never below.
    const debit = await admin(gateway).post(`/admin/accounts/${user.account_id}/debit`, {
      amount: 600,
      reference: `spend-${user.account_id}`,
    });
    assert.equal(debit.status, 200, JSON.stringify(debit.body));
    const dispute = razorpay.dispute(payment.id, 70_000); // ₹700
    assert.equal((await razorpay.deliver(hook, razorpay.disputed(dispute))).status, 200);
    assert.equal(await balance(gateway, user.key), 0);
    seen = await topup(gateway, user.key, created.topup_id);
    assert.equal(seen.status, 'disputed');
    assert.equal(seen.reversed, 1000);
    assert.equal(seen.owed, 600);
    // The operator wins the dispute: the ₹700 it took comes back once, paying the ₹600 owed
    // first; the refund's ₹300 stays taken.
    for (let i = 0; i < 2; i++)
      assert.equal((await razorpay.deliver(hook, razorpay.disputeWon(dispute))).status, 200);
    assert.equal(await balance(gateway, user.key), 100);
    seen = await topup(gateway, user.key, created.topup_id);
    assert.equal(seen.status, 'refunded', 'the refund still stands');
    assert.equal(seen.reversed, 300);
    assert.equal(seen.owed, 0);
    // A won dispute never applied here returns nothing and is listed.
    const stranger = { ...razorpay.dispute(payment.id, 100), id: 'disp_NeverSeen0001' };
    assert.equal((await razorpay.deliver(hook, razorpay.disputeWon(stranger))).status, 200);
    assert.equal(await balance(gateway, user.key), 100);
    const listed = (await alerts(gateway)).alerts.find(
      (a: { reason: string; detail: string }) => a.reason === 'unknown_dispute',
    );
    assert.match(listed.detail, /disp_NeverSeen0001/);
  });

  test('20 concurrent webhooks for one payment credit once', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 75);
    const payment = razorpay.pay(created.order_id);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        razorpay.deliver(hook, i % 2 ? razorpay.orderPaid(payment) : razorpay.captured(payment)),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.status),
      Array(20).fill(200),
    );
    assert.equal(await balance(gateway, user.key), 75);
  });

  test('the ledger verifies after all of it', async () => {
    await gateway.stop();
    const verified = await runVerify(gateway.data_dir);
    assert.equal(verified.code, 0, `${verified.stdout}\n${verified.stderr}`);
    gateway = await startGateway({
      data_dir: gateway.data_dir,
      env: { AIHUB_CONFIG: configFile(topupsConfig(razorpay)), ...razorpay.env() },
    });
  });
});

describe('the reconciliation pass', () => {
  let razorpay: ScriptedRazorpay;
  let gateway: Gateway;

  before(async () => {
    razorpay = await ScriptedRazorpay.start();
    // The first check at once, then every interval: a lost webhook is caught in a pass or two.
    gateway = await startLive(razorpay, {
      reconcile: { interval_ms: RECONCILE_MS, first_after_ms: 0 },
    });
  });
  after(async () => {
    await gateway?.stop();
    await razorpay?.close();
  });

  test('credited when the webhook never comes: the pass asks Razorpay', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 120);
    razorpay.pay(created.order_id); // no webhook
    await waitFor(
      async () => (await topup(gateway, user.key, created.topup_id)).status === 'credited',
      async () => `still ${JSON.stringify(await topup(gateway, user.key, created.topup_id))}`,
    );
    assert.equal(await balance(gateway, user.key), 120);
  });

  test('a failed attempt, then a payment whose webhook is lost: the pass credits it', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 75);
    const hook = `${gateway.url}/webhooks/razorpay`;
    const failure = razorpay.webhook('payment.failed', {
      payment: razorpay.fail(created.order_id),
    });
    assert.equal((await razorpay.deliver(hook, failure)).status, 200);
    assert.equal((await topup(gateway, user.key, created.topup_id)).status, 'failed');
    razorpay.pay(created.order_id); // no webhook
    await waitFor(
      async () => (await topup(gateway, user.key, created.topup_id)).status === 'credited',
      async () => `still ${JSON.stringify(await topup(gateway, user.key, created.topup_id))}`,
    );
    assert.equal(await balance(gateway, user.key), 75);
  });

  test('Razorpay down: the pass keeps asking, credits nothing, and credits once it answers', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 45);
    razorpay.failing = 503;
    razorpay.pay(created.order_id);
    const asked = () =>
      razorpay.calls.filter((call) => call.path === `/v1/orders/${created.order_id}`).length;
    await waitFor(
      () => asked() >= 2,
      () => `asked ${asked()} times`,
    );
    assert.equal((await topup(gateway, user.key, created.topup_id)).status, 'created');
    assert.equal(await balance(gateway, user.key), 0);
    razorpay.failing = null;
    await waitFor(
      async () => (await topup(gateway, user.key, created.topup_id)).status === 'credited',
      async () => `still ${JSON.stringify(await topup(gateway, user.key, created.topup_id))}`,
    );
    assert.equal(await balance(gateway, user.key), 45);
  });

  test('a failed attempt, then a payment on the same order: failed, then credited', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 33);
    const hook = `${gateway.url}/webhooks/razorpay`;
    const failed = razorpay.fail(created.order_id);
    const failure = razorpay.webhook('payment.failed', { payment: failed });
    assert.equal((await razorpay.deliver(hook, failure)).status, 200);
    const seen = await topup(gateway, user.key, created.topup_id);
    assert.equal(seen.status, 'failed');
    assert.ok(seen.checkout, 'still payable');
    const payment = razorpay.pay(created.order_id);
    assert.equal((await razorpay.deliver(hook, razorpay.captured(payment))).status, 200);
    assert.equal((await topup(gateway, user.key, created.topup_id)).status, 'credited');
    assert.equal(await balance(gateway, user.key), 33);
    // The other provider's webhook path is not served while Razorpay is the one configured.
    assert.equal((await razorpay.deliver(`${gateway.url}/webhooks/cashfree`, failure)).status, 404);
  });
});

describe('an order never paid', () => {
  test('expires after topups.reconcile.expire_after_ms and no longer counts against the daily cap', async () => {
    const razorpay = await ScriptedRazorpay.start();
    const gateway = await startLive(razorpay, {
      daily_cap: 100,
      reconcile: { interval_ms: RECONCILE_MS, first_after_ms: 0, expire_after_ms: 1_000 },
    });
    try {
      const user = await createFundedAccount(gateway);
      const created = await startTopup(gateway, user.key, 100);
      const refused = await request(`${gateway.url}/api/wallet/topups`, {
        headers: auth(user.key),
        body: { amount: 1 },
      });
      assert.equal(refused.body.error?.code, 'daily_cap_exceeded');
      await waitFor(
        async () => (await topup(gateway, user.key, created.topup_id)).status === 'expired',
        async () => `still ${JSON.stringify(await topup(gateway, user.key, created.topup_id))}`,
      );
      assert.equal((await topup(gateway, user.key, created.topup_id)).checkout, null);
      await startTopup(gateway, user.key, 100);
    } finally {
      await gateway.stop();
      await razorpay.close();
    }
  });
});

describe('top-up fees and limits', () => {
  let razorpay: ScriptedRazorpay;
  let gateway: Gateway;

  before(async () => {
    razorpay = await ScriptedRazorpay.start();
    const limits = {
      min_amount: 10,
      max_amount: 5000,
      daily_cap: 1000,
      fees: { card: 2, default: 1 },
    };
    gateway = await startGateway({
      env: {
        AIHUB_CONFIG: configFile({
          ...topupsConfig(razorpay, limits),
          // A registered operator: the fee carries GST (18 %).
          payments: { tax: { operator: { gstin: OPERATOR_GSTIN } } },
        }),
        ...razorpay.env(),
      },
    });
  });
  after(async () => {
    await gateway?.stop();
    await razorpay?.close();
  });

  test('a card fee is added to the order; the wallet gets the amount', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 100, 'card');
    // 2 % of ₹100 is ₹2, and 18 % GST on it ₹0.36.
    assert.equal(created.fee, 2.36);
    assert.equal(created.fee_gst, 0.36);
    assert.equal(created.total, 100 + created.fee);
    assert.equal(razorpay.orders.get(created.order_id)!.amount, Math.round(created.total * 100));
    const payment = razorpay.pay(created.order_id);
    const hook = `${gateway.url}/webhooks/razorpay`;
    await razorpay.deliver(hook, razorpay.captured(payment));
    assert.equal(await balance(gateway, user.key), 100);
    // A refund of everything paid: the fee stays earned, so the wallet gives back the amount
    // and owes the fee the card got back.
    const refund = razorpay.refund(payment.id, payment.amount);
    assert.equal((await razorpay.deliver(hook, razorpay.refunded(refund))).status, 200);
    assert.equal(await balance(gateway, user.key), 0);
    const seen = await topup(gateway, user.key, created.topup_id);
    assert.equal(seen.reversed, 102.36);
    assert.equal(seen.owed, 2.36);
  });

  test('priced at the default rate, paid by card: credited as shown, and the operator told of the fee', async () => {
    const user = await createFundedAccount(gateway);
    const created = await startTopup(gateway, user.key, 100);
    const payment = razorpay.pay(created.order_id, { method: 'card' });
    await razorpay.deliver(`${gateway.url}/webhooks/razorpay`, razorpay.captured(payment));
    assert.equal(await balance(gateway, user.key), 100, 'the amount shown reaches the wallet');
    const alert = (await alerts(gateway)).alerts.find(
      (a: { topup_id: string; reason: string }) => a.topup_id === created.topup_id,
    );
    assert.equal(alert?.reason, 'fee_method_mismatch');
    assert.match(alert.detail, /paid by card/);
    // Paid by the method it was priced for: no alert.
    const upi = await startTopup(gateway, user.key, 100, 'upi');
    const paid = razorpay.pay(upi.order_id, { method: 'upi' });
    await razorpay.deliver(`${gateway.url}/webhooks/razorpay`, razorpay.captured(paid));
    assert.equal(await balance(gateway, user.key), 200);
    assert.ok(
      !(await alerts(gateway)).alerts.some(
        (a: { topup_id: string }) => a.topup_id === upi.topup_id,
      ),
    );
  });

  test('below the minimum, above the maximum and past the daily cap: 400 naming amount', async () => {
    const user = await createFundedAccount(gateway);
    for (const [amount, code] of [
      [5, 'amount_too_small'],
      [6000, 'amount_too_large'],
    ] as const) {
      const reply = await request(`${gateway.url}/api/wallet/topups`, {
        headers: auth(user.key),
        body: { amount },
      });
      assert.equal(reply.status, 400);
      assert.equal(reply.body.error.code, code);
      assert.equal(reply.body.error.field, 'amount');
    }
    await startTopup(gateway, user.key, 900);
    const past = await request(`${gateway.url}/api/wallet/topups`, {
      headers: auth(user.key),
      body: { amount: 200 },
    });
    assert.equal(past.status, 400);
    assert.equal(past.body.error.code, 'daily_cap_exceeded');
    const bad = await request(`${gateway.url}/api/wallet/topups`, {
      headers: auth(user.key),
      body: { amount: 'lots' },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'amount');
  });
  test('the fee and its GST post so that the ledger verifies', async () => {
    await gateway.stop();
    const verified = await runVerify(gateway.data_dir);
    assert.equal(verified.code, 0, `${verified.stdout}\n${verified.stderr}`);
  });
});

describe('top-ups without a provider', () => {
  test('live mode without topups.provider: 409 naming the bank transfer; the webhook is not there', async () => {
    const gateway = await startGateway({ env: { AIHUB_MODE: 'live' } });
    try {
      const user = await createFundedAccount(gateway);
      const reply = await request(`${gateway.url}/api/wallet/topups`, {
        headers: auth(user.key),
        body: { amount: 100 },
      });
      assert.equal(reply.status, 409);
      assert.equal(reply.body.error.code, 'topups_not_configured');
      assert.match(reply.body.message, /bank transfer/);
      assert.equal((await request(`${gateway.url}/webhooks/razorpay`, { raw: '{}' })).status, 404);
    } finally {
      await gateway.stop();
    }
  });

  test('razorpay configured without its secrets: the gateway refuses to start, naming the variable', async () => {
    const razorpay = await ScriptedRazorpay.start();
    try {
      await assert.rejects(
        startGateway({
          env: {
            AIHUB_CONFIG: configFile(topupsConfig(razorpay)),
            AIHUB_RAZORPAY_KEY_ID: razorpay.key_id,
          },
        }),
        /AIHUB_RAZORPAY_KEY_SECRET/,
      );
    } finally {
      await razorpay.close();
    }
  });
});

describe(
  'two gateways on one PostgreSQL database',
  { skip: !TEST_CLUSTER_URL && 'a PostgreSQL run only (AIHUB_TEST_DATABASE_URL)' },
  () => {
    test('20 concurrent webhooks for one payment, across both gateways, credit once', async () => {
      const razorpay = await ScriptedRazorpay.start();
      const database_url = await createDatabase(TEST_CLUSTER_URL!);
      const gateways = await startGateways(database_url, 2, {
        config: topupsConfig(razorpay),
        env: razorpay.env(),
      });
      try {
        const user = await createFundedAccount(gateways[0]!);
        const created = await startTopup(gateways[0]!, user.key, 60);
        const payment = razorpay.pay(created.order_id);
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            razorpay.deliver(
              `${gateways[i % 2]!.url}/webhooks/razorpay`,
              razorpay.captured(payment),
            ),
          ),
        );
        assert.deepEqual(
          results.map((r) => r.status),
          Array(20).fill(200),
        );
        assert.equal(await balance(gateways[1]!, user.key), 60);
        assert.equal(await balance(gateways[0]!, user.key), 60);
      } finally {
        await stopAll(gateways);
        await razorpay.close();
      }
    });
  },
);
