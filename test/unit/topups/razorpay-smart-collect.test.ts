// Razorpay Smart Collect through the Razorpay adapter against the scripted server: a virtual
// account with a bank account and a UPI ID, and its credits read as virtual_account.credited
// with the payer, then confirmed by the payment's own fetch.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../../gateway/log.ts';
import { topupsConfigSchema } from '../../../gateway/topups/config.ts';
import { createRazorpay } from '../../../gateway/topups/providers/razorpay/index.ts';
import type { TopupProvider } from '../../../gateway/topups/types.ts';
import { startSmartCollect } from '../../support/razorpay-smart-collect.ts';

const KEYS = {
  key_id: 'rzp_test_sc',
  key_secret: 'sc-secret',
  webhook_secret: 'sc-webhook-secret',
};
let server: Awaited<ReturnType<typeof startSmartCollect>>;
let provider: TopupProvider;

before(async () => {
  server = await startSmartCollect(KEYS);
  provider = createRazorpay({
    config: topupsConfigSchema.parse({ provider: 'razorpay', razorpay: { base_url: server.url } }),
    env: {
      AIHUB_RAZORPAY_KEY_ID: KEYS.key_id,
      AIHUB_RAZORPAY_KEY_SECRET: KEYS.key_secret,
      AIHUB_RAZORPAY_WEBHOOK_SECRET: KEYS.webhook_secret,
    },
    logger: createLogger('silent'),
    currency: 'INR',
  });
});
after(() => server.close());

test('a virtual account: bank account, IFSC and UPI ID; read back by id', async () => {
  const made = await provider.createVirtualAccount!({
    account_id: 'acc_0123',
    name: 'Asha Verma',
    email: 'asha@example.com',
  });
  assert.match(made.virtual_account_id, /^va_/);
  assert.equal(made.ifsc, 'RATN0VAAPIS');
  assert.match(made.upi_id ?? '', /^rpy\.payto.+@icici$/);
  const sent = server.seen.find((s) => s.method === 'POST')!;
  assert.deepEqual(sent.json.receivers.types, ['bank_account', 'vpa']);
  assert.deepEqual(await provider.fetchVirtualAccount!(made.virtual_account_id), made);
});

test('a bank transfer and a UPI payment into it: virtual_account.credited with the payer, confirmed by the fetch', async () => {
  const made = await provider.createVirtualAccount!({
    account_id: 'acc_0456',
    name: 'Ravi',
    email: 'r@example.com',
  });
  const bank = server.bankTransfer(made.virtual_account_id, 61_900, {
    name: 'RAVI KUMAR',
    account_number: '765432123456789',
    ifsc: 'HDFC0000053',
  });
  const [event] = provider.readWebhook(bank.headers, Buffer.from(bank.raw));
  assert.equal(event?.type, 'virtual_account.credited');
  if (event?.type !== 'virtual_account.credited') return;
  assert.equal(event.virtual_account_id, made.virtual_account_id);
  assert.equal(event.amount_micros, 619_000_000);
  assert.equal(event.payer.name, 'RAVI KUMAR');
  assert.equal(event.payer.ifsc, 'HDFC0000053');
  const payment = await provider.fetchPayment(event.payment_id);
  assert.equal(payment?.status, 'captured');
  assert.equal(payment?.amount_micros, 619_000_000);

  const upi = server.upiTransfer(made.virtual_account_id, 10_000, {
    vpa: 'ravi@okhdfc',
    account_number: '765432123456789',
    ifsc: 'HDFC0000053',
  });
  const [paid] = provider.readWebhook(upi.headers, Buffer.from(upi.raw));
  if (paid?.type !== 'virtual_account.credited') return assert.fail('not a credit');
  assert.equal(paid.payer.vpa, 'ravi@okhdfc');
  assert.equal(paid.payer.account_number, '765432123456789');
  assert.equal(paid.payer.name, null);
  assert.throws(() =>
    provider.readWebhook(
      { ...upi.headers, 'x-razorpay-signature': '0'.repeat(64) },
      Buffer.from(upi.raw),
    ),
  );
});
