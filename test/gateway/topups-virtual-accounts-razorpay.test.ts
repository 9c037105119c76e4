// Virtual accounts through Razorpay Smart Collect, at the HTTP level against the real gateway
// and the scripted Razorpay (both stores): load details with a bank account and a UPI ID,
// made once; a bank transfer from the holder credited once (again, twenty at once) with the
// payer kept; a UPI payment, which names no payer, held for review with hold_third_party and
// released by the operator; a webhook that does not match Razorpay's own record credits nothing.
import { test, after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { admin, createFundedAccount, request, TEST_CLUSTER_URL, type Gateway } from './helpers.js';
import { startGateways, stopAll } from '../support/multi-gateway.js';
import { createDatabase } from '../support/postgres.js';
import {
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
  VALID_KYC,
} from '../support/payments-helpers.js';
import { ScriptedRazorpay } from '../support/razorpay-upstream.js';
import { DashboardClient } from '../support/dashboard-client.js';

let razorpay: ScriptedRazorpay;
let gateway: Gateway;

before(async () => {
  razorpay = await ScriptedRazorpay.start();
  gateway = await startPaymentsGateway(
    {
      ...paymentsConfig(),
      topups: {
        provider: 'razorpay',
        razorpay: { base_url: razorpay.url },
        virtual_accounts: { hold_third_party: true },
      },
    },
    { env: razorpay.env() },
  );
});
after(async () => {
  await gateway?.stop();
  await razorpay?.close();
});

const post = (webhook: { headers: Record<string, string>; raw: string }) =>
  request(`${gateway.url}/webhooks/razorpay`, { headers: webhook.headers, raw: webhook.raw });

async function loadDetails(headers: Record<string, string>) {
  const reply = await request(`${gateway.url}/api/wallet/load-details`, { headers });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body;
}

test('load details through Smart Collect: a bank account and a UPI ID, made once for many asks', async () => {
  const { headers } = await onboard(gateway, 0);
  const replies = await Promise.all(Array.from({ length: 8 }, () => loadDetails(headers)));
  assert.equal(new Set(replies.map((r) => r.virtual_account_id)).size, 1);
  const made = razorpay.smart_collect.accounts.size;
  assert.equal(made, 1);
  const asked = () =>
    razorpay.calls.filter((c) => c.method === 'POST' && c.path === '/v1/virtual_accounts').length;
  assert.equal(asked(), 1);
  const details = replies[0];
  assert.equal(details.provider, 'razorpay');
  assert.equal(details.ifsc, 'RATN0VAAPIS');
  assert.match(details.upi_id, /@icici$/);
  await loadDetails(headers);
  assert.equal(razorpay.smart_collect.accounts.size, made);
  assert.equal(asked(), 1);
});

test('/wallet shows the load details: made only on the button, then shown with the IFSC and UPI ID', async () => {
  const browser = new DashboardClient(gateway.url);
  const signed = await browser.signup(
    `va-${process.pid}-${Date.now()}@example.com`,
    'correct horse battery',
  );
  assert.equal(signed.status, 303);
  const before = razorpay.smart_collect.accounts.size;
  const first = await browser.get('/wallet');
  assert.equal(first.status, 200);
  assert.match(first.text, /id="load-details-make"/);
  assert.equal(razorpay.smart_collect.accounts.size, before, 'viewing /wallet makes nothing');
  const made = await browser.post('/wallet/load-details', {}, { page: '/wallet' });
  assert.equal(made.status, 303);
  assert.equal(made.location, '/wallet#load-details');
  assert.equal(razorpay.smart_collect.accounts.size, before + 1);
  const shown = await browser.get('/wallet');
  assert.doesNotMatch(shown.text, /id="load-details-make"/);
  assert.match(shown.text, /id="va-ifsc">RATN0VAAPIS</);
  assert.match(shown.text, /id="va-account-number">\d{6,}</);
  assert.match(shown.text, /id="va-upi">[^<]+@icici</);
  assert.match(shown.text, /not in your name is held/);
  await browser.post('/wallet/load-details', {}, { page: '/wallet' });
  assert.equal(razorpay.smart_collect.accounts.size, before + 1, 'asked again: the same account');
});

test('a bank transfer from the holder: credited once however often virtual_account.credited comes', async () => {
  const { headers } = await onboard(gateway, 0);
  const details = await loadDetails(headers);
  const webhook = razorpay.smart_collect.bankTransfer(details.virtual_account_id, 150_000, {
    name: VALID_KYC.name.toUpperCase(),
    account_number: '765432123456789',
    ifsc: 'HDFC0000053',
  });
  assert.equal((await post(webhook)).status, 200);
  const many = await Promise.all(Array.from({ length: 20 }, () => post(webhook)));
  for (const reply of many) assert.equal(reply.status, 200);
  assert.equal(await balance(gateway, headers), 1500);
  const credited = (await admin(gateway).get('/admin/topups?status=credited')).body.topups.filter(
    (t: any) => t.note.includes(webhook.payment_id),
  );
  assert.equal(credited.length, 1);
});

test('a UPI payment names no payer: held for review, then released once', async () => {
  const { headers, account_id } = await onboard(gateway, 0);
  const details = await loadDetails(headers);
  const webhook = razorpay.smart_collect.upiTransfer(details.virtual_account_id, 20_000, {
    vpa: 'someone@okaxis',
    account_number: '1234567890',
    ifsc: 'UTIB0000001',
  });
  assert.equal((await post(webhook)).status, 200);
  assert.equal(await balance(gateway, headers), 0);
  const held = (await admin(gateway).get('/admin/topups?status=held')).body.topups.find(
    (t: any) => t.account_id === account_id,
  );
  assert.ok(held);
  const released = await admin(gateway).post(`/admin/topups/${held.topup_id}/release`, {});
  assert.equal(released.status, 200);
  assert.equal(released.body.payer.vpa, 'someone@okaxis');
  assert.equal(await balance(gateway, headers), 200);
  assert.equal((await post(webhook)).status, 200);
  assert.equal(await balance(gateway, headers), 200);
});

test('a credit Razorpay does not confirm (another amount in its record) credits nothing', async () => {
  const { headers } = await onboard(gateway, 0);
  const details = await loadDetails(headers);
  const webhook = razorpay.smart_collect.bankTransfer(details.virtual_account_id, 90_000, {
    name: VALID_KYC.name,
    account_number: '765432123456789',
    ifsc: 'HDFC0000053',
  });
  razorpay.smart_collect.payments.get(webhook.payment_id)!.amount = 900;
  assert.equal((await post(webhook)).status, 200);
  assert.equal(await balance(gateway, headers), 0);
  const alerts = (await admin(gateway).get('/admin/topups/alerts')).body.alerts;
  assert.ok(
    alerts.some((a: any) => a.reason === 'amount_mismatch' && a.payment_id === webhook.payment_id),
  );
});

test('verify passes', async () => {
  await verifyOk(gateway);
});

describe(
  'two gateways on one PostgreSQL database',
  { skip: !TEST_CLUSTER_URL && 'a PostgreSQL run only (AIHUB_TEST_DATABASE_URL)' },
  () => {
    test('load details asked on both at once make one virtual account; its credit across both is once', async () => {
      const scripted = await ScriptedRazorpay.start();
      const database_url = await createDatabase(TEST_CLUSTER_URL!);
      const gateways = await startGateways(database_url, 2, {
        config: {
          mode: 'live',
          topups: { provider: 'razorpay', razorpay: { base_url: scripted.url } },
        },
        env: scripted.env(),
      });
      try {
        const user = await createFundedAccount(gateways[0]!);
        const headers = { 'x-api-key': user.key };
        const replies = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            request(`${gateways[i % 2]!.url}/api/wallet/load-details`, { headers }),
          ),
        );
        for (const reply of replies) assert.equal(reply.status, 200, JSON.stringify(reply.body));
        assert.equal(new Set(replies.map((r) => r.body.virtual_account_id)).size, 1);
        assert.equal(
          scripted.calls.filter((c) => c.method === 'POST' && c.path === '/v1/virtual_accounts')
            .length,
          1,
        );
        const webhook = scripted.smart_collect.bankTransfer(
          replies[0]!.body.virtual_account_id,
          25_000,
          {
            name: 'ANYONE',
            account_number: '111122223333',
            ifsc: 'SBIN0000001',
          },
        );
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            request(`${gateways[i % 2]!.url}/webhooks/razorpay`, {
              headers: webhook.headers,
              raw: webhook.raw,
            }),
          ),
        );
        assert.deepEqual(
          results.map((r) => r.status),
          Array(20).fill(200),
        );
        assert.equal(await balance(gateways[0]!, headers), 250);
        assert.equal(await balance(gateways[1]!, headers), 250);
      } finally {
        await stopAll(gateways);
        await scripted.close();
      }
    });
  },
);
