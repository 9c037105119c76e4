// The Cashfree adapter against the scripted Cashfree server: orders, the fetches a credit is
// checked against, webhooks read only when signed by the client secret and fresh, virtual
// bank accounts made once.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../../gateway/log.ts';
import { topupsConfigSchema } from '../../../gateway/topups/config.ts';
import { cashfreeProvider, vbaId } from '../../../gateway/topups/providers/cashfree/index.ts';
import { createTopupProvider } from '../../../gateway/topups/providers/index.ts';
import { TopupConfigError } from '../../../gateway/topups/providers/deps.ts';
import { WebhookRejected, type TopupProvider } from '../../../gateway/topups/types.ts';
import { startCashfree, type Cashfree } from '../../support/cashfree-upstream.ts';

const KEYS = { client_id: 'cf-test-client', client_secret: 'cf-test-secret-0123456789' };
const ENV = {
  AIHUB_CASHFREE_CLIENT_ID: KEYS.client_id,
  AIHUB_CASHFREE_CLIENT_SECRET: KEYS.client_secret,
};
let cashfree: Cashfree;
let provider: TopupProvider;

before(async () => {
  cashfree = await startCashfree(KEYS);
  provider = cashfreeProvider({
    config: topupsConfigSchema.parse({
      provider: 'cashfree',
      cashfree: { base_url: cashfree.url },
    }),
    env: ENV,
    logger: createLogger('silent'),
    currency: 'INR',
  });
});
after(() => cashfree.close());

const order = (topup_id: string, amount_micros = 500_000_000) =>
  provider.createOrder({
    topup_id,
    account_id: 'acc_0123456789abcdef01234567',
    amount_micros,
    currency: 'INR',
    customer: { name: 'Asha Rao', email: 'asha@example.com' },
    return_url: 'http://127.0.0.1/wallet?topup=' + topup_id,
    notify_url: 'http://127.0.0.1/webhooks/cashfree',
  });

const read = (webhook: { headers: Record<string, string>; raw: string }) =>
  provider.readWebhook(webhook.headers, Buffer.from(webhook.raw));

test('config: topups.provider cashfree builds the adapter; without its keys the start names the variable', () => {
  const config = topupsConfigSchema.parse({ provider: 'cashfree' });
  const deps = { config, logger: createLogger('silent'), currency: 'INR' };
  assert.equal(createTopupProvider({ ...deps, env: ENV })?.name, 'cashfree');
  assert.throws(
    () => createTopupProvider({ ...deps, env: { AIHUB_CASHFREE_CLIENT_ID: 'x' } }),
    (e: unknown) => e instanceof TopupConfigError && /AIHUB_CASHFREE_CLIENT_SECRET/.test(e.message),
  );
});

test('an order: the checkout is the session id with the keys only in headers, and the fetch agrees once paid', async () => {
  const created = await order('tu_order1');
  assert.equal(created.order_id, 'tu_order1');
  assert.equal(created.checkout.provider, 'cashfree');
  assert.match(String(created.checkout.options.paymentSessionId), /^session_/);
  assert.doesNotMatch(JSON.stringify(created.checkout), new RegExp(KEYS.client_secret));
  const sent = cashfree.seen.find((s) => s.method === 'POST' && s.url === '/pg/orders')!;
  assert.equal(sent.json.order_amount, 500);
  assert.equal(sent.headers['x-api-version'], '2023-08-01');

  assert.equal((await provider.fetchOrder('tu_order1')).status, 'created');
  const events = read(cashfree.pay('tu_order1'));
  assert.equal(events.length, 1);
  const event = events[0]!;
  assert.equal(event.type, 'payment.captured');
  if (event.type !== 'payment.captured') return;
  assert.equal(event.amount_micros, 500_000_000);
  const fetched = await provider.fetchOrder('tu_order1');
  assert.equal(fetched.status, 'paid');
  assert.equal(fetched.payments[0]!.payment_id, event.payment_id);
  assert.equal(fetched.payments[0]!.status, 'captured');
  const payment = await provider.fetchPayment(event.payment_id);
  assert.equal(payment?.amount_micros, 500_000_000);
  assert.equal(payment?.method, 'upi');
  assert.equal(await provider.fetchPayment('123@tu_order1'), null);
  assert.equal(await provider.fetchPayment('no-order-in-it'), null);
});

test("webhooks: a bad signature, another secret, a stale timestamp and a body not Cashfree's are refused", async () => {
  await order('tu_hooks');
  const good = cashfree.pay('tu_hooks');
  assert.equal(read(good)[0]!.type, 'payment.captured');
  const rejected = (webhook: { headers: Record<string, string>; raw: string }, reason: string) =>
    assert.throws(
      () => read(webhook),
      (e: unknown) => e instanceof WebhookRejected && e.reason === reason,
    );
  rejected(
    { ...good, raw: good.raw.replace('"payment_amount":500', '"payment_amount":5000') },
    'bad_signature',
  );
  rejected(
    { ...good, headers: { ...good.headers, 'x-webhook-signature': 'AAAA' } },
    'bad_signature',
  );
  const { 'x-webhook-signature': _dropped, ...unsigned } = good.headers;
  rejected({ ...good, headers: unsigned }, 'bad_signature');
  rejected(cashfree.sign(JSON.parse(good.raw), Date.now() - 10 * 60_000), 'bad_signature');
  rejected(cashfree.sign({ hello: 'world' }), 'malformed');
  assert.deepEqual(
    read(cashfree.sign({ type: 'SETTLEMENT_WEBHOOK', data: {} })).map((e) => e.type),
    ['ignored'],
  );
});

test('refund and dispute webhooks name the payment as the captured one did', async () => {
  await order('tu_refund');
  const captured = read(cashfree.pay('tu_refund'))[0]!;
  const refund = read(cashfree.refund('tu_refund', 200))[0]!;
  const dispute = read(cashfree.dispute('tu_refund', 300))[0]!;
  assert.equal(refund.type, 'refund.processed');
  assert.equal(dispute.type, 'dispute.created');
  if (
    captured.type !== 'payment.captured' ||
    refund.type !== 'refund.processed' ||
    dispute.type !== 'dispute.created'
  )
    return;
  assert.equal(refund.payment_id, captured.payment_id);
  assert.equal(refund.amount_micros, 200_000_000);
  assert.equal((await provider.fetchPayment(refund.payment_id))?.refunded_micros, 200_000_000);
  assert.equal(dispute.payment_id, captured.payment_id);
  assert.equal(dispute.amount_micros, 300_000_000);
});

test('a virtual bank account is made once per account, and a transfer into it is a virtual_account.credited with the payer', async () => {
  const input = {
    account_id: 'acc_aaaaaaaaaaaabbbbbbbbbbbb',
    name: 'Asha Rao',
    email: 'asha@example.com',
  };
  const made = await provider.createVirtualAccount!(input);
  assert.equal(made.virtual_account_id, vbaId(input.account_id));
  assert.match(made.account_number, /^\d+$/);
  assert.equal(made.ifsc, 'UTIB0CCH274');
  const again = await provider.createVirtualAccount!(input);
  assert.deepEqual(again, made, 'a second ask (409 at Cashfree) answers the same account');
  assert.equal(cashfree.vbas.size, 1);

  const { webhook } = cashfree.transfer(made.virtual_account_id, {
    amount: 2500,
    remitter_name: 'ASHA RAO',
    remitter_account: '026291800001191',
    remitter_ifsc: 'YESB0000262',
  });
  const event = read(webhook)[0]!;
  assert.equal(event.type, 'virtual_account.credited');
  if (event.type !== 'virtual_account.credited') return;
  assert.equal(event.virtual_account_id, made.virtual_account_id);
  assert.equal(event.amount_micros, 2_500_000_000);
  assert.deepEqual(event.payer, {
    name: 'ASHA RAO',
    account_number: '026291800001191',
    ifsc: 'YESB0000262',
    vpa: null,
  });
  const payment = await provider.fetchPayment(event.payment_id);
  assert.equal(payment?.status, 'captured');
  assert.equal(payment?.virtual_account_id, made.virtual_account_id);
  assert.equal(payment?.amount_micros, 2_500_000_000);
});

test('Cashfree down or refusing: a ProviderCallError with its status, never a credit', async () => {
  cashfree.fail((s) => s.url === '/pg/orders/tu_down', 500, {
    message: 'internal',
    code: 'internal_error',
  });
  await assert.rejects(
    provider.fetchOrder('tu_down'),
    (e: Error) => e.name === 'ProviderCallError' && /500/.test(e.message),
  );
  await assert.rejects(
    order('tu_order1'),
    (e: Error) => e.name === 'ProviderCallError' && /409/.test(e.message),
  );
});
