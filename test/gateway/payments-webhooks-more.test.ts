// Webhooks beyond recharge: money transfers (IMPS, NEFT settled later, a decline, a penny
// drop), PAN lookups (found, not found) and bill payments (paid, pending then failed) go
// through the same signed outbox. The receiver fails the first attempt of every delivery
// (HTTP 500, a reset connection, or no answer in time); each is retried once with the same
// signed bytes and never sent again after it was accepted, not even after a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { request, gatewayHistory } from './helpers.ts';
import { json, startUpstream, type Seen } from '../support/payments-upstream.ts';
import {
  addBeneficiary,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  transferWithOtp,
  verifiedRemitter,
  verifyOk,
  waitFinal,
} from '../support/payments-helpers.ts';

const WEBHOOK_TIMEOUT_MS = 500;

/** What a customer's receiver does (docs/payments-api.md): hex HMAC-SHA256 of the raw body with the secret, compared in constant time. */
function validSignature(secret: string, raw: string, signature: unknown): boolean {
  if (typeof signature !== 'string' || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(raw, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('DMT, PAN and bill payment events are delivered signed through the outbox, retried after a failure, never twice after success', async () => {
  // The first attempt of each delivery fails in turn by a 500, a reset connection, or silence past the timeout.
  const first_attempts = new Map<string, number>();
  const receiver = await startUpstream((req, res) => {
    const delivery = String(req.headers['x-aihub-delivery']);
    if (!first_attempts.has(delivery)) {
      const failure = first_attempts.size % 3;
      first_attempts.set(delivery, failure);
      if (failure === 0) return json(res, 500, { error: 'receiver down' });
      if (failure === 1) return void res.socket?.destroy();
      return; // never answers; the gateway gives up after webhooks.timeout_ms
    }
    json(res, 200, { ok: true });
  });
  const config = paymentsConfig({
    webhooks: { first_retry_ms: 100, max_backoff_ms: 400, timeout_ms: WEBHOOK_TIMEOUT_MS },
  });
  let gw = await startPaymentsGateway(config);
  try {
    const { headers, account_id } = await onboard(gw, 20_000, {
      dmt: true,
      pan: true,
      bills: true,
    });
    const set = await request(`${gw.url}/api/webhook`, {
      method: 'PUT',
      headers,
      body: { url: `${receiver.url}/hooks/payments` },
    });
    assert.equal(set.status, 200);
    const secret: string = set.body.data.secret;

    // Money transfer: IMPS, NEFT (pending, then settled by the status checks), a decline, a penny drop.
    const mobile = '9876500101';
    await verifiedRemitter(gw, headers, mobile);
    const good = await addBeneficiary(gw, headers, mobile, '123456789012');
    const declining = await addBeneficiary(gw, headers, mobile, '900000000001', 'Kiran Shah');
    const transact = (bene_id: string, amount: number, txn_type: string) =>
      transferWithOtp(gw, headers, { mobile, bene_id, amount, txn_type });
    const imps = await transact(good, 1_000, 'IMPS');
    assert.equal(imps.body.data.status, 'success', JSON.stringify(imps.body));
    const neft = await transact(good, 2_000, 'NEFT');
    assert.equal(neft.body.data.status, 'pending');
    const declined = await transact(declining, 1_500, 'IMPS');
    assert.equal(declined.body.data.status, 'failed');
    const penny = await request(`${gw.url}/api/dmt/beneficiary/${good}/verify`, {
      headers,
      body: {},
    });
    assert.equal(penny.body.data.status, 'success', JSON.stringify(penny.body));

    // PAN: found, and not found (no charge).
    const pan_found = await request(`${gw.url}/api/pan-find`, {
      headers,
      body: { pan_number: 'ABCPE1234F' },
    });
    assert.equal(pan_found.body.status, true);
    const pan_missing = await request(`${gw.url}/api/pan-find`, {
      headers,
      body: { pan_number: 'ABCPE0000F' },
    });
    assert.equal(pan_missing.body.error.code, 'pan_not_found');

    // Bills: a fetched bill paid, and a payment that goes pending and then fails (consumer ending 0003).
    const bill = (
      await request(`${gw.url}/api/bills/fetch`, {
        headers,
        body: { biller_id: 'BESCOM', params: { consumer_number: '1234567890' } },
      })
    ).body.data;
    const paid = await request(`${gw.url}/api/bills/pay`, {
      headers,
      body: {
        biller_id: 'BESCOM',
        params: { consumer_number: '1234567890' },
        amount: bill.amount,
        bill_id: bill.bill_id,
        customer_mobile: '9876543210',
      },
    });
    assert.equal(paid.body.data.status, 'success', JSON.stringify(paid.body));
    const bill_pending = await request(`${gw.url}/api/bills/pay`, {
      headers,
      body: {
        biller_id: 'GENUSPRE',
        params: { meter_number: '900000000003' },
        amount: 250,
        customer_mobile: '9876543210',
      },
    });
    assert.equal(bill_pending.body.data.status, 'pending');

    assert.equal((await waitFinal(gw, headers, neft.body.data.reference_id)).status, 'success');
    assert.equal((await waitFinal(gw, headers, bill_pending.body.data.txn_id)).status, 'failed');

    const txn_ids = {
      imps: imps.body.data.reference_id as string,
      neft: neft.body.data.reference_id as string,
      declined: declined.body.data.reference_id as string,
      penny: penny.body.data.txn_id as string,
      pan_found: pan_found.body.txn_id as string,
      pan_missing: pan_missing.body.txn_id as string,
      bill_paid: paid.body.data.txn_id as string,
      bill_failed: bill_pending.body.data.txn_id as string,
    };
    const events = Object.keys(txn_ids).length;

    // Every event: a failed first attempt and an accepted second one.
    await receiver.waitFor(events * 2, 20_000);
    await settle(4 * 400); // several retry periods: nothing more may arrive
    assert.equal(
      receiver.seen.length,
      events * 2,
      'each delivery is sent exactly twice: the failed attempt and the accepted retry',
    );

    const by_txn = new Map<string, Seen[]>();
    for (const seen of receiver.seen) {
      assert.equal(seen.method, 'POST');
      assert.equal(seen.url, '/hooks/payments');
      assert.match(String(seen.headers['content-type']), /^application\/json/);
      assert.ok(
        validSignature(secret, seen.raw, seen.headers['x-aihub-signature']),
        `a valid signature on ${seen.raw.slice(0, 80)}`,
      );
      assert.ok(
        !validSignature(
          secret,
          seen.raw.replace('"status":"', '"status":"x'),
          seen.headers['x-aihub-signature'],
        ),
        'a tampered body does not verify',
      );
      assert.ok(
        !validSignature(`${secret}0`, seen.raw, seen.headers['x-aihub-signature']),
        'another secret does not verify',
      );
      assert.equal(seen.headers['x-aihub-event'], seen.json.event);
      assert.equal(seen.headers['x-aihub-delivery'], seen.json.id);
      const list = by_txn.get(seen.json.data.txn_id) ?? [];
      list.push(seen);
      by_txn.set(seen.json.data.txn_id, list);
    }
    assert.deepEqual(
      [...by_txn.keys()].sort(),
      Object.values(txn_ids).sort(),
      'one delivery per final transaction, none for anything else',
    );
    assert.deepEqual(
      [...new Set(first_attempts.values())].sort(),
      [0, 1, 2],
      'every kind of receiver failure happened',
    );

    const delivered = new Map<string, any>();
    for (const [txn_id, attempts] of by_txn) {
      assert.equal(attempts.length, 2, txn_id);
      const [first, second] = attempts as [Seen, Seen];
      assert.deepEqual(
        [first.headers['x-aihub-attempt'], second.headers['x-aihub-attempt']],
        ['1', '2'],
        txn_id,
      );
      assert.equal(second.raw, first.raw, `${txn_id}: a retry sends the same bytes`);
      assert.equal(second.headers['x-aihub-signature'], first.headers['x-aihub-signature']);
      assert.match(second.json.id, /^whd_/);
      assert.ok(!Number.isNaN(Date.parse(second.json.created_at)));
      // The payload is the transaction as GET /api/transactions/:txn_id shows it once final.
      const shown = await request(`${gw.url}/api/transactions/${txn_id}`, { headers });
      assert.deepEqual(
        second.json.data,
        shown.body.data,
        `${txn_id}: the webhook carries the final transaction`,
      );
      delivered.set(txn_id, second.json);
    }
    const event = (name: keyof typeof txn_ids) => delivered.get(txn_ids[name])!;

    // DMT
    const e_imps = event('imps');
    assert.equal(e_imps.event, 'transaction.success');
    assert.equal(e_imps.data.service, 'dmt');
    assert.equal(e_imps.data.status, 'success');
    assert.equal(e_imps.data.kind, 'transfer');
    assert.equal(e_imps.data.txn_type, 'IMPS');
    assert.equal(e_imps.data.amount, 1_000);
    assert.equal(e_imps.data.charges, 10);
    assert.equal(e_imps.data.mobile, mobile);
    assert.equal(e_imps.data.bene_id, good);
    assert.equal(e_imps.data.number, '123456789012');
    assert.equal(e_imps.data.utr, imps.body.data.utr);
    assert.match(e_imps.data.utr, /^\d{12}$/);
    assert.equal(e_imps.data.refund, null);
    const e_neft = event('neft');
    assert.equal(e_neft.event, 'transaction.success');
    assert.equal(e_neft.data.txn_type, 'NEFT');
    assert.equal(e_neft.data.amount, 2_000);
    assert.equal(e_neft.data.charges, 20);
    assert.match(
      e_neft.data.utr,
      /^[A-Z]{4}N\d{11}$/,
      'the NEFT event carries the UTR learnt by the status check',
    );
    assert.equal(e_neft.data.history[0].status, 'pending');
    assert.equal(e_neft.data.history.at(-1).status, 'success');
    const e_declined = event('declined');
    assert.equal(e_declined.event, 'transaction.failed');
    assert.equal(e_declined.data.service, 'dmt');
    assert.equal(e_declined.data.status, 'failed');
    assert.equal(e_declined.data.refund.amount, 1_515, 'amount and charges refunded');
    const e_penny = event('penny');
    assert.equal(e_penny.event, 'transaction.success');
    assert.equal(e_penny.data.service, 'dmt');
    assert.equal(e_penny.data.kind, 'beneficiary_verification');
    assert.equal(e_penny.data.registered_name, 'SUNITA RAO');
    assert.equal(e_penny.data.amount, 3);

    // PAN
    const e_pan = event('pan_found');
    assert.equal(e_pan.event, 'transaction.success');
    assert.equal(e_pan.data.service, 'pan');
    assert.equal(e_pan.data.number, 'ABCPE1234F');
    assert.equal(e_pan.data.pan_type, 'Individual');
    assert.equal(e_pan.data.name, pan_found.body.data.name);
    assert.equal(e_pan.data.amount, 2);
    const e_pan_missing = event('pan_missing');
    assert.equal(e_pan_missing.event, 'transaction.failed');
    assert.equal(e_pan_missing.data.service, 'pan');
    assert.equal(e_pan_missing.data.number, 'ABCPE0000F');
    assert.equal(e_pan_missing.data.decline_code, 'not_found');
    assert.equal(e_pan_missing.data.refund.amount, 2, 'the held fee went back');

    // Bills
    const e_bill = event('bill_paid');
    assert.equal(e_bill.event, 'transaction.success');
    assert.equal(e_bill.data.service, 'bills');
    assert.equal(e_bill.data.biller_id, 'BESCOM');
    assert.equal(e_bill.data.number, '1234567890');
    assert.equal(e_bill.data.bill_id, bill.bill_id);
    assert.equal(e_bill.data.customer_name, bill.customer_name);
    assert.equal(e_bill.data.amount, bill.amount);
    assert.equal(e_bill.data.commission, paid.body.data.commission);
    const e_bill_failed = event('bill_failed');
    assert.equal(e_bill_failed.event, 'transaction.failed');
    assert.equal(e_bill_failed.data.service, 'bills');
    assert.equal(e_bill_failed.data.biller_id, 'GENUSPRE');
    assert.equal(e_bill_failed.data.refund.amount, 250);
    await verifyOk(gw);

    // A restart on the same data dir does not send anything again: delivered entries left the outbox.
    await gw.stop();
    gw = await startPaymentsGateway(config, { data_dir: gw.data_dir });
    await settle(1_000);
    assert.equal(receiver.seen.length, events * 2, 'nothing is re-sent after a restart');

    // Each delivery is in the API logs: one will_retry, then delivered.
    await gw.stop();
    const logged = new Map<string, string[]>();
    for await (const item of gatewayHistory(gw)) {
      if (item.type !== 'api_log' || item.kind !== 'webhook') continue;
      const record = item as Record<string, unknown>;
      assert.equal(record.account_id, account_id);
      const list = logged.get(String(record.txn_id)) ?? [];
      list.push(`${String(record.attempt)}:${String(record.result)}`);
      logged.set(String(record.txn_id), list);
    }
    assert.deepEqual([...logged.keys()].sort(), Object.values(txn_ids).sort());
    for (const [txn_id, results] of logged)
      assert.deepEqual(results, ['1:will_retry', '2:delivered'], txn_id);
    await verifyOk(gw);
  } finally {
    await gw.stop();
    await receiver.close();
  }
});
