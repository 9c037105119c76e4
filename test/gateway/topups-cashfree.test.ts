// Top-ups through Cashfree and virtual accounts, at the HTTP level against the real gateway
// and the scripted Cashfree server (on the JSON-file store, and on PostgreSQL in a run with
// AIHUB_TEST_DATABASE_URL): a top-up is credited once however often its webhook comes and
// when it never comes (the reconciliation pass); a bad signature, a stale one, a payment of
// another amount credit nothing; a virtual account is made once however many ask at once; a
// transfer into it is credited once by its payment id (twice, twenty at once), and one from
// someone other than the holder is held for review until the operator releases it.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { admin, request, type Gateway } from './helpers.js';
import {
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
  VALID_KYC,
} from '../support/payments-helpers.js';
import {
  cashfreeSignature,
  startCashfree,
  type Cashfree,
  type SignedWebhook,
} from '../support/cashfree-upstream.js';

const KEYS = {
  client_id: 'cf-gateway-client',
  client_secret: 'cf-gateway-secret-0123456789abcdef',
};
let cashfree: Cashfree;
let gateway: Gateway;

before(async () => {
  cashfree = await startCashfree(KEYS);
  gateway = await startPaymentsGateway(
    {
      ...paymentsConfig(),
      topups: {
        provider: 'cashfree',
        cashfree: { base_url: cashfree.url },
        reconcile: { interval_ms: 100, first_after_ms: 0 },
        virtual_accounts: { hold_third_party: true },
      },
    },
    {
      env: {
        AIHUB_CASHFREE_CLIENT_ID: KEYS.client_id,
        AIHUB_CASHFREE_CLIENT_SECRET: KEYS.client_secret,
      },
    },
  );
});
after(async () => {
  await gateway?.stop();
  await cashfree?.close();
});

const post = (webhook: SignedWebhook) =>
  request(`${gateway.url}/webhooks/cashfree`, { headers: webhook.headers, raw: webhook.raw });

async function startTopup(headers: Record<string, string>, amount: number) {
  const created = await request(`${gateway.url}/api/wallet/topups`, { headers, body: { amount } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.equal(created.body.provider, 'cashfree');
  return created.body as { topup_id: string; order_id: string; status: string; checkout: any };
}

async function topupStatus(headers: Record<string, string>, topup_id: string): Promise<string> {
  const reply = await request(`${gateway.url}/api/wallet/topups/${topup_id}`, { headers });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.status;
}

async function waitStatus(headers: Record<string, string>, topup_id: string, status: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const now = await topupStatus(headers, topup_id);
    if (now === status) return;
    if (Date.now() > deadline) throw new Error(`top-up ${topup_id} is ${now}, not ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test('a Cashfree top-up: the checkout is the order’s session, and the webhook twice, or twenty at once, credits once', async () => {
  const { headers } = await onboard(gateway, 0);
  const topup = await startTopup(headers, 500);
  assert.equal(topup.order_id, topup.topup_id);
  assert.match(topup.checkout.options.paymentSessionId, /^session_/);
  const webhook = cashfree.pay(topup.order_id);
  assert.equal((await post(webhook)).status, 200);
  assert.equal((await post(webhook)).status, 200);
  assert.equal(await topupStatus(headers, topup.topup_id), 'credited');
  assert.equal(await balance(gateway, headers), 500);
  const again = await startTopup(headers, 70);
  const twenty = cashfree.pay(again.order_id);
  const replies = await Promise.all(Array.from({ length: 20 }, () => post(twenty)));
  assert.deepEqual(
    replies.map((r) => r.status),
    Array(20).fill(200),
  );
  assert.equal(await balance(gateway, headers), 570);
});

test('a refund and a dispute after the credit debit the wallet once each, down to zero', async () => {
  const { headers } = await onboard(gateway, 0);
  const topup = await startTopup(headers, 600);
  assert.equal((await post(cashfree.pay(topup.order_id))).status, 200);
  assert.equal(await balance(gateway, headers), 600);
  const refund = cashfree.refund(topup.order_id, 100);
  assert.equal((await post(refund)).status, 200);
  assert.equal((await post(refund)).status, 200);
  assert.equal(await balance(gateway, headers), 500);
  assert.equal(await topupStatus(headers, topup.topup_id), 'refunded');
  const dispute = cashfree.dispute(topup.order_id, 500);
  assert.equal((await post(dispute)).status, 200);
  assert.equal((await post(dispute)).status, 200);
  assert.equal(await balance(gateway, headers), 0);
  assert.equal(await topupStatus(headers, topup.topup_id), 'disputed');
  // Closed in the merchant's favour: the ₹500 comes back once; closed against it: nothing.
  const dispute_id = JSON.parse(dispute.raw).data.dispute.dispute_id;
  const lost = cashfree.dispute(topup.order_id, 500, {
    dispute_id,
    dispute_status: 'CHARGEBACK_MERCHANT_LOST',
  });
  assert.equal((await post(lost)).status, 200);
  assert.equal(await balance(gateway, headers), 0);
  const won = cashfree.dispute(topup.order_id, 500, {
    dispute_id,
    dispute_status: 'CHARGEBACK_MERCHANT_WON',
  });
  assert.equal((await post(won)).status, 200);
  assert.equal((await post(won)).status, 200);
  assert.equal(await balance(gateway, headers), 500);
  assert.equal(await topupStatus(headers, topup.topup_id), 'refunded');
});

test('a lost webhook: the reconciliation pass asks Cashfree and credits once', async () => {
  const { headers } = await onboard(gateway, 0);
  const topup = await startTopup(headers, 250);
  const webhook = cashfree.pay(topup.order_id); // paid at Cashfree; the webhook does not come
  await waitStatus(headers, topup.topup_id, 'credited');
  assert.equal(await balance(gateway, headers), 250);
  // The webhook arriving late changes nothing.
  assert.equal((await post(webhook)).status, 200);
  assert.equal(await balance(gateway, headers), 250);
});

test('a bad or stale signature is refused and credits nothing; a payment of another amount is flagged', async () => {
  const { headers } = await onboard(gateway, 0);
  const unpaid = await startTopup(headers, 300);
  // A body that claims the unpaid order was paid: as Cashfree would sign it, but not paid there.
  const paid_elsewhere = await startTopup(headers, 300);
  const template = cashfree
    .pay(paid_elsewhere.order_id)
    .raw.replaceAll(paid_elsewhere.order_id, unpaid.order_id);
  const ts = String(Date.now());
  const forged = {
    raw: template,
    headers: {
      'content-type': 'application/json',
      'x-webhook-timestamp': ts,
      'x-webhook-signature': cashfreeSignature('not-the-client-secret', ts, template),
    },
  };
  const refused = await post(forged);
  assert.equal(refused.status, 400);
  assert.equal(refused.body.error.code, 'bad_signature');
  const stale = cashfree.sign(JSON.parse(template), Date.now() - 60 * 60_000);
  assert.equal((await post(stale)).status, 400);
  const unsigned = { raw: template, headers: { 'content-type': 'application/json' } };
  assert.equal((await post(unsigned)).status, 400);
  // Signed with the real secret (a leak), but Cashfree knows no such payment of that order.
  assert.equal((await post(cashfree.sign(JSON.parse(template)))).status, 200);
  assert.equal(await topupStatus(headers, unpaid.topup_id), 'created');
  await waitStatus(headers, paid_elsewhere.topup_id, 'credited'); // the real one, by reconciliation
  assert.equal(await balance(gateway, headers), 300);
  assert.equal(await topupStatus(headers, unpaid.topup_id), 'created');

  const short = await startTopup(headers, 400);
  assert.equal((await post(cashfree.pay(short.order_id, { amount: 4 }))).status, 200);
  assert.equal(await topupStatus(headers, short.topup_id), 'flagged');
  assert.equal(await balance(gateway, headers), 300);
  const alerts = await admin(gateway).get('/admin/topups/alerts');
  assert.ok(
    alerts.body.alerts.some(
      (a: any) => a.reason === 'amount_mismatch' && a.topup_id === short.topup_id,
    ),
  );
  assert.ok(alerts.body.rejected_webhooks.count >= 3);
});

test('load details: one virtual account per account however many ask at once, then served from the store', async () => {
  const { headers } = await onboard(gateway, 0);
  const before_count = cashfree.vbas.size;
  const replies = await Promise.all(
    Array.from({ length: 10 }, () =>
      request(`${gateway.url}/api/wallet/load-details`, { headers }),
    ),
  );
  for (const reply of replies) assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.equal(new Set(replies.map((r) => r.body.account_number)).size, 1);
  assert.equal(cashfree.vbas.size, before_count + 1);
  const asks = cashfree.seen.filter((s) => s.method === 'POST' && s.url === '/pg/vba').length;
  const again = await request(`${gateway.url}/api/wallet/load-details`, { headers });
  assert.deepEqual(again.body, replies[0]!.body);
  assert.equal(
    cashfree.seen.filter((s) => s.method === 'POST' && s.url === '/pg/vba').length,
    asks,
  );
  assert.equal(again.body.ifsc, 'UTIB0CCH274');
  assert.equal(again.body.provider, 'cashfree');
});

test('a transfer into the virtual account from the holder: credited once (twice, twenty at once), payer kept', async () => {
  const { headers } = await onboard(gateway, 0);
  const details = (await request(`${gateway.url}/api/wallet/load-details`, { headers })).body;
  const { webhook } = cashfree.transfer(details.virtual_account_id, {
    amount: 1200,
    remitter_name: VALID_KYC.name.toUpperCase(),
    remitter_account: '026291800001191',
    remitter_ifsc: 'YESB0000262',
  });
  assert.equal((await post(webhook)).status, 200);
  assert.equal((await post(webhook)).status, 200);
  const many = await Promise.all(Array.from({ length: 20 }, () => post(webhook)));
  for (const reply of many) assert.equal(reply.status, 200);
  assert.equal(await balance(gateway, headers), 1200);
  const list = await request(`${gateway.url}/api/wallet/topups`, { headers });
  const credited = list.body.topups.filter((t: any) => t.status === 'credited');
  assert.equal(credited.length, 1);
  const all = await admin(gateway).get('/admin/topups?status=credited');
  const row = all.body.topups.find((t: any) => t.topup_id === credited[0].topup_id);
  assert.ok(row, 'the operator sees the credit');
});

test('a transfer from someone else is held for review, then released by the operator (audited) and credited once', async () => {
  const { headers, account_id } = await onboard(gateway, 0);
  const details = (await request(`${gateway.url}/api/wallet/load-details`, { headers })).body;
  const { webhook } = cashfree.transfer(details.virtual_account_id, {
    amount: 700,
    remitter_name: 'SOMEONE ELSE',
    remitter_account: '50100000000001',
    remitter_ifsc: 'HDFC0000004',
  });
  assert.equal((await post(webhook)).status, 200);
  assert.equal((await post(webhook)).status, 200);
  assert.equal(await balance(gateway, headers), 0);
  const held = await admin(gateway).get('/admin/topups?status=held');
  const row = held.body.topups.find((t: any) => t.account_id === account_id);
  assert.ok(row, JSON.stringify(held.body));
  assert.match(row.note, /SOMEONE ELSE/);
  const alerts = (await admin(gateway).get('/admin/topups/alerts')).body.alerts;
  assert.ok(alerts.some((a: any) => a.reason === 'held_for_review' && a.topup_id === row.topup_id));

  const released = await admin(gateway).post(`/admin/topups/${row.topup_id}/release`, {
    note: 'the holder’s spouse, confirmed by phone',
  });
  assert.equal(released.status, 200, JSON.stringify(released.body));
  assert.equal(released.body.status, 'credited');
  assert.equal(released.body.payer.name, 'SOMEONE ELSE');
  assert.equal(await balance(gateway, headers), 700);
  const audit = await admin(gateway).get(
    `/admin/audit?account_id=${account_id}&action=topup.release`,
  );
  assert.equal(audit.status, 200, JSON.stringify(audit.body));
  assert.equal(audit.body.total, 1);
  assert.equal(audit.body.data[0].actor, 'admin');
  assert.equal(
    (await admin(gateway).post(`/admin/topups/${row.topup_id}/release`, {})).status,
    409,
  );
  assert.equal((await post(webhook)).status, 200, 'the webhook again after the release');
  assert.equal(await balance(gateway, headers), 700);

  const other = cashfree.transfer(details.virtual_account_id, {
    amount: 50,
    remitter_name: 'A STRANGER',
    remitter_account: '50100000000002',
    remitter_ifsc: 'HDFC0000004',
  });
  assert.equal((await post(other.webhook)).status, 200);
  const held2 = (await admin(gateway).get('/admin/topups?status=held')).body.topups.find(
    (t: any) => t.account_id === account_id,
  );
  const returned = await admin(gateway).post(`/admin/topups/${held2.topup_id}/return`, {
    note: 'unknown payer',
  });
  assert.equal(returned.status, 200);
  assert.equal(returned.body.status, 'returned');
  assert.equal(await balance(gateway, headers), 700);
  assert.equal((await admin(gateway).post(`/admin/topups/constructor/release`, {})).status, 404);
});

test('a transfer to a virtual account no account has, or of another amount than Cashfree says: nothing credited', async () => {
  const { headers } = await onboard(gateway, 0);
  const details = (await request(`${gateway.url}/api/wallet/load-details`, { headers })).body;
  const { webhook, payment } = cashfree.transfer(details.virtual_account_id, {
    amount: 900,
    remitter_name: VALID_KYC.name,
    remitter_account: '026291800001191',
    remitter_ifsc: 'YESB0000262',
  });
  // Cashfree's own record says 9, the (validly signed) webhook 900.
  payment.payment_amount = 9;
  assert.equal((await post(webhook)).status, 200);
  assert.equal(await balance(gateway, headers), 0);
  const alerts = await admin(gateway).get('/admin/topups/alerts');
  assert.ok(
    alerts.body.alerts.some(
      (a: any) => a.reason === 'amount_mismatch' && a.payment_id.startsWith(payment.cf_payment_id),
    ),
  );
});

test('verify passes after all of it', async () => {
  await verifyOk(gateway);
});
