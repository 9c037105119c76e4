// The top-ups room's pure parts: the fee and its GST, the limits, the mode a configured
// gateway implies, and Razorpay's webhook signature and events.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { configSchema, resolveMode, type Config } from '../../../gateway/config.ts';
import { ApiError } from '../../../gateway/http/errors.ts';
import { createLogger } from '../../../gateway/log.ts';
import { priceTopup } from '../../../gateway/topups/fees.ts';
import {
  createRazorpay,
  signatureMatches,
} from '../../../gateway/topups/providers/razorpay/index.ts';
import { withChecks, type Topup } from '../../../gateway/topups/tables.ts';
import { WebhookRejected } from '../../../gateway/topups/types.ts';

function config(input: Record<string, unknown>): Config {
  const parsed = configSchema.parse(input);
  return { ...parsed, ...resolveMode(parsed, null) };
}

test('a configured top-up gateway makes an unset mode live', () => {
  assert.equal(config({}).mode, 'sandbox');
  const live = config({ topups: { provider: 'razorpay' } });
  assert.equal(live.mode, 'live');
  assert.match(live.mode_reason, /top-ups through razorpay/);
});

test('the fee: percent of the amount, GST on it only for a registered operator, to the paisa', () => {
  const fees = { topups: { fees: { card: 1.5, default: 0.5 } } };
  const registered = config({
    ...fees,
    payments: { tax: { operator: { gstin: '29AAACA1234A1ZG' } } },
  });
  // 1.5 % of ₹333.33 is ₹5.00 (4.99995 rounded half up), 18 % GST on it ₹0.90.
  const card = priceTopup(registered, 333_330_000, 'card');
  assert.equal(card.fee_micros, 5_900_000);
  assert.equal(card.fee_gst_micros, 900_000);
  assert.equal(card.total_micros, 339_230_000);
  assert.equal(card.tax!.cgst_micros, card.tax!.sgst_micros);
  // Another method: the default; no GSTIN: no GST.
  const upi = priceTopup(config(fees), 100_000_000, 'upi');
  assert.equal(upi.fee_micros, 500_000);
  assert.equal(upi.fee_gst_micros, 0);
  // No fee configured: none.
  assert.equal(priceTopup(config({}), 100_000_000, 'card').fee_micros, 0);
});

test('limits: below the minimum or above the maximum is a 400 naming amount', () => {
  const limited = config({ topups: { min_amount: 10, max_amount: 100 } });
  for (const micros of [9_990_000, 100_010_000]) {
    assert.throws(
      () => priceTopup(limited, micros, null),
      (error: unknown) =>
        error instanceof ApiError && error.status === 400 && error.param === 'amount',
    );
  }
  assert.equal(priceTopup(limited, 10_000_000, null).total_micros, 10_000_000);
  assert.throws(() => configSchema.parse({ topups: { min_amount: 10, max_amount: 5 } }));
});

test('Razorpay signature: hex HMAC-SHA256 of the raw body; any other length or key is a no', () => {
  const body = Buffer.from('{"event":"payment.captured"}');
  const good = createHmac('sha256', 'secret').update(body).digest('hex');
  assert.equal(signatureMatches(body, good, 'secret'), true);
  assert.equal(signatureMatches(body, good.toUpperCase(), 'secret'), true);
  assert.equal(signatureMatches(body, good, 'other'), false);
  assert.equal(signatureMatches(body, good.slice(0, 62), 'secret'), false);
  assert.equal(signatureMatches(body, `${good}00`, 'secret'), false);
  assert.equal(signatureMatches(Buffer.from(`${body} `), good, 'secret'), false);
});

test('Razorpay webhooks read into the room’s events, paise into micro-units', () => {
  const provider = createRazorpay({
    config: config({}).topups,
    env: {
      AIHUB_RAZORPAY_KEY_ID: 'rzp_test_x',
      AIHUB_RAZORPAY_KEY_SECRET: 'k',
      AIHUB_RAZORPAY_WEBHOOK_SECRET: 'w',
    },
    logger: createLogger('silent'),
    currency: 'INR',
  });
  const signed = (event: unknown) => {
    const body = Buffer.from(JSON.stringify(event));
    return {
      headers: { 'x-razorpay-signature': createHmac('sha256', 'w').update(body).digest('hex') },
      body,
    };
  };
  const payment = {
    id: 'pay_1',
    amount: 12_345,
    currency: 'INR',
    status: 'captured',
    order_id: 'order_1',
  };
  const captured = signed({ event: 'payment.captured', payload: { payment: { entity: payment } } });
  assert.deepEqual(provider.readWebhook(captured.headers, captured.body), [
    {
      type: 'payment.captured',
      event_id: null,
      order_id: 'order_1',
      payment_id: 'pay_1',
      amount_micros: 123_450_000,
      currency: 'INR',
    },
  ]);
  const refund = signed({
    event: 'refund.processed',
    payload: {
      refund: { entity: { id: 'rfnd_1', payment_id: 'pay_1', amount: 100, currency: 'INR' } },
    },
  });
  assert.equal(provider.readWebhook(refund.headers, refund.body)[0]!.type, 'refund.processed');
  const other = signed({ event: 'settlement.processed', payload: {} });
  assert.equal(provider.readWebhook(other.headers, other.body)[0]!.type, 'ignored');
  const not_json = Buffer.from('not json');
  const sig = createHmac('sha256', 'w').update(not_json).digest('hex');
  assert.throws(
    () => provider.readWebhook({ 'x-razorpay-signature': sig }, not_json),
    (error: unknown) => error instanceof WebhookRejected && error.reason === 'malformed',
  );
  assert.throws(
    () => provider.readWebhook({}, captured.body),
    (error: unknown) => error instanceof WebhookRejected && error.reason === 'bad_signature',
  );
});

test('the reconciliation index holds a failed top-up only while a check is due (not every failure ever)', () => {
  const row = (status: Topup['status'], next_at: string | null, awaiting?: 'check') =>
    ({
      id: 'tup_x',
      status,
      checks: { count: 1, next_at },
      ...(awaiting ? { awaiting } : {}),
    }) as Topup;
  const due = '2026-12-07T10:00:00.000Z';
  assert.equal(withChecks(row('failed', due)).awaiting, 'check');
  // Expired (no check due), credited, or never failed: out of the index.
  assert.equal('awaiting' in withChecks(row('failed', null, 'check')), false);
  assert.equal('awaiting' in withChecks(row('credited', due, 'check')), false);
  assert.equal('awaiting' in withChecks(row('created', due)), false);
});
