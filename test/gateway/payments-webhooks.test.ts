// Webhooks: a receiver on loopback checks the signature of each delivery; a failed delivery
// is retried with the same signed body; deliveries are API log records in the journal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { request, waitForOutput, gatewayHistory } from './helpers.ts';
import { json, startUpstream } from '../support/payments-upstream.ts';
import {
  onboard,
  startPaymentsGateway,
  tableIds,
  waitFinal,
  waitFor,
} from '../support/payments-helpers.ts';

function validSignature(secret: string, raw: string, signature: unknown): boolean {
  if (typeof signature !== 'string' || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

test('final statuses are POSTed signed; a failed delivery is retried with backoff; deliveries are logged', async () => {
  // The receiver refuses the first delivery (500), then accepts.
  const receiver = await startUpstream((_req, res, index) =>
    json(res, index === 0 ? 500 : 200, { ok: index !== 0 }),
  );
  const gw = await startPaymentsGateway();
  try {
    const { headers, account_id } = await onboard(gw, 500);
    const bad_url = await request(`${gw.url}/api/webhook`, {
      method: 'PUT',
      headers,
      body: { url: 'ftp://example.com/hook' },
    });
    assert.equal(bad_url.status, 400);
    assert.equal(bad_url.body.error.field, 'url');
    const set = await request(`${gw.url}/api/webhook`, {
      method: 'PUT',
      headers,
      body: { url: `${receiver.url}/hooks/aihub` },
    });
    assert.equal(set.status, 200);
    const { url, secret } = set.body.data;
    assert.equal(url, `${receiver.url}/hooks/aihub`);
    assert.match(secret, /^whsec_[0-9a-f]{48}$/);

    const success = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 1, number: '9876543210', amount: 100 },
    });
    assert.equal(success.body.data.status, 'success');
    const deliveries = await receiver.waitFor(2);
    const [refused, accepted] = deliveries as [any, any];
    for (const delivery of deliveries) {
      assert.equal(delivery.method, 'POST');
      assert.equal(delivery.url, '/hooks/aihub');
      assert.ok(
        validSignature(secret, delivery.raw, delivery.headers['x-aihub-signature']),
        'the signature is the HMAC of the raw body',
      );
      assert.ok(
        !validSignature('whsec_wrong', delivery.raw, delivery.headers['x-aihub-signature']),
      );
    }
    assert.equal(accepted.raw, refused.raw, 'a retry sends the same bytes');
    assert.deepEqual(
      [refused.headers['x-aihub-attempt'], accepted.headers['x-aihub-attempt']],
      ['1', '2'],
    );
    assert.equal(accepted.headers['x-aihub-event'], 'transaction.success');
    assert.equal(accepted.json.event, 'transaction.success');
    assert.equal(accepted.json.data.txn_id, success.body.txn_id);
    assert.equal(accepted.json.data.status, 'success');
    assert.equal(accepted.json.data.amount, 100);

    // A pending transaction is announced once, when final (failed, with its refund).
    const pending = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 1, number: '9876540003', amount: 50 },
    });
    assert.equal(pending.body.data.status, 'pending');
    await waitFinal(gw, headers, pending.body.txn_id);
    const third = (await receiver.waitFor(3))[2]!;
    assert.equal(third.json.event, 'transaction.failed');
    assert.equal(third.json.data.txn_id, pending.body.txn_id);
    assert.equal(third.json.data.refund.amount, 50);
    assert.ok(validSignature(secret, third.raw, third.headers['x-aihub-signature']));

    // Deliveries appear in the API logs (history records in the journal), with the retry.
    await gw.stop();
    const logged = [];
    for await (const record of gatewayHistory(gw)) {
      if (record.type === 'api_log' && record.kind === 'webhook') logged.push(record);
    }
    assert.deepEqual(
      logged.map((r) => [r.account_id, r.status, r.attempt, r.result]),
      [
        [account_id, 500, 1, 'will_retry'],
        [account_id, 200, 2, 'delivered'],
        [account_id, 200, 1, 'delivered'],
      ],
    );
    assert.equal(receiver.seen.length, 3, 'no delivery is sent twice once accepted');
  } finally {
    await gw.stop();
    await receiver.close();
  }
});

test('a receiver that never accepts gets a bounded number of attempts', async () => {
  const receiver = await startUpstream((_req, res) => json(res, 503, {}));
  const gw = await startPaymentsGateway(
    (await import('../support/payments-helpers.ts')).paymentsConfig({
      webhooks: { first_retry_ms: 20, max_backoff_ms: 40, max_attempts: 3 },
    }),
  );
  try {
    const { headers } = await onboard(gw, 100);
    await request(`${gw.url}/api/webhook`, { method: 'PUT', headers, body: { url: receiver.url } });
    await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 1, number: '9876543210', amount: 10 },
    });
    await receiver.waitFor(3);
    // Abandoned: the delivery is gone from the document, so no attempt can follow.
    await waitFor(
      async () => (await tableIds(gw, 'webhook_deliveries')).size === 0,
      () => 'the delivery is still pending',
    );
    assert.equal(receiver.seen.length, 3);
    await waitForOutput(
      gw,
      (line) => line.includes('webhook delivery abandoned'),
      'saying the delivery was abandoned',
    );
  } finally {
    await gw.stop();
    await receiver.close();
  }
});
