// Issue #44: Eko as a provider (providers/eko/) against a scripted Eko on loopback built from
// its reference (test/support/eko-server.ts), through the real gateway in live mode, on the
// JSON store (and on PostgreSQL when AIHUB_TEST_DATABASE_URL is set). Every call Eko takes is
// signed as Eko documents (a provider whose access key is wrong is refused with 403 and the
// chain goes on); recharges (prepaid, postpaid, DTH) play success, pending then success by
// Eko's Transaction Inquiry, failure, a timeout, a duplicate reference and a hold settled by it; a bill is
// fetched and paid with Eko's fetch token; a transfer with its OTP, and one the bank fails
// (refund pending) refunded with the remitter's OTP; a PAN found and verified; a number's
// operator from Eko. A callback moves money only as Eko's own inquiry confirms: a forged one
// changes nothing, and a refund Eko reports after a success reverses it. `verify` is clean.
// An operator's plans in a circle are Eko's Get Recharge Plans, and a prepaid recharge's
// amount is checked against them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Gateway } from './helpers.ts';
import { json, startUpstream } from '../support/payments-upstream.ts';
import { EKO, EKO_PLANS, startEko, type EkoServer } from '../support/eko-server.ts';
import {
  addBeneficiary,
  balance,
  onboard,
  paymentsConfig,
  smsOtp,
  startPaymentsGateway,
  txnOf,
  verifyOk,
  waitStatus,
} from '../support/payments-helpers.ts';
import { clientRefOf } from '../../gateway/providers/eko/adapter.ts';

/** Only the calls Eko never answers wait it out (see payments-http-provider.test.ts). */
const TIMEOUT_MS = 3_000;

const round = (units: number) => Math.round(units * 100) / 100;

function eko(url: string, name = 'eko', extra: Record<string, unknown> = {}) {
  return {
    type: 'eko',
    name,
    base_url: url,
    initiator_id: EKO.initiator_id,
    user_code: EKO.user_code,
    latlong: '12.9716,77.5946',
    timeout_ms: TIMEOUT_MS,
    codes: { operator_id: { '1': '400', '11': '401', '23': '22' }, biller_id: { BESCOM: '83' } },
    ...extra,
  };
}

/** The OTP in the latest SMS sent to `mobile`. */
async function recharge(
  gw: Gateway,
  headers: Record<string, string>,
  number: string,
  amount = 100,
) {
  const reply = await request(`${gw.url}/api/recharge`, {
    headers,
    body: { operator_id: 1, number, amount },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body;
}

test(
  'Eko on loopback: signed calls, recharge status paths, bill fetch and pay, DMT with OTP and refund, PAN, callbacks confirmed by inquiry; verify clean',
  { timeout: 180_000 },
  async () => {
    const server: EkoServer = await startEko();
    const sms = await startUpstream((_req, res) => json(res, 200, { accepted: true }));
    const gw = await startPaymentsGateway(
      paymentsConfig({
        providers: {
          recharge: [eko(server.url)],
          bills: [eko(server.url)],
          dmt: [eko(server.url)],
          // A second Eko entry with its own (wrong) access key: refused, and the next is asked.
          pan: [
            eko(server.url, 'eko-stale', { access_key_env: 'EKO_OLD_ACCESS_KEY' }),
            eko(server.url),
          ],
        },
        dmt: {
          otp: {
            resend_interval_ms: 0,
            sms: { type: 'http', url: `${sms.url}/sms`, fields: { to: 'mobile', text: 'message' } },
          },
        },
      }),
      {
        env: {
          AIHUB_EKO_DEVELOPER_KEY: EKO.developer_key,
          AIHUB_EKO_ACCESS_KEY: EKO.access_key,
          EKO_OLD_ACCESS_KEY: 'an-access-key-eko-no-longer-has',
        },
      },
    );
    try {
      const { headers } = await onboard(gw, 20_000, {
        recharge: true,
        dmt: true,
        bills: true,
        pan: true,
      });
      let expected = await balance(gw, headers);

      // A number's operator from Eko (its operator 400 is our 1).
      const looked = await request(`${gw.url}/api/recharge/lookup?number=9876500001`, { headers });
      assert.equal(looked.status, 200, JSON.stringify(looked.body));
      assert.equal(looked.body.data.operator_id, 1);
      assert.equal(looked.body.data.provider, 'eko');

      // Success: our txn id is Eko's client_ref_id, our operator Eko's code, the amount in rupees.
      const ok = await recharge(gw, headers, '9876500001');
      assert.equal(ok.data.status, 'success');
      const sent = server.txns.get(clientRefOf(ok.txn_id))!;
      assert.ok(sent, 'Eko has the transaction under our reference');
      assert.equal(sent.body.operator_id, '400');
      assert.equal(sent.body.amount, '100');
      assert.equal(sent.body.user_code, EKO.user_code);
      expected = round(expected - 100 + ok.data.commission_credited);
      assert.equal(await balance(gw, headers), expected);

      // Postpaid and DTH are BBPS operators at Eko too; a DTH subscriber has no mobile number,
      // so Eko's confirmation number is ours.
      for (const [operator_id, number, eko_operator, mobile] of [
        [11, '9876500011', '401', '9876500011'],
        [23, '01234567891', '22', EKO.initiator_id],
      ] as const) {
        const reply = await request(`${gw.url}/api/recharge`, {
          headers,
          body: { operator_id, number, amount: 300 },
        });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        assert.equal(reply.body.data.status, 'success');
        const at_eko = server.txns.get(clientRefOf(reply.body.txn_id))!;
        assert.equal(at_eko.body.operator_id, eko_operator);
        assert.equal(at_eko.body.utility_acc_no, number);
        assert.equal(at_eko.body.confirmation_mobile_no, mobile);
        expected = round(expected - 300 + reply.body.data.commission_credited);
      }
      assert.equal(await balance(gw, headers), expected);

      // Failure: declined, the money back.
      const failed = await recharge(gw, headers, '9876500003');
      assert.equal(failed.data.status, 'failed');
      assert.equal(await balance(gw, headers), expected);

      // Pending, then success at Eko's Transaction Inquiry; a timeout, a duplicate reference and
      // a hold each settled the same way (never a second payment).
      for (const number of ['9876500002', '9876500004', '9876500005', '9876500006']) {
        const before = server.txns.size;
        const reply = await recharge(gw, headers, number, 50);
        // Pending (Eko's awaited answer); after a timeout the engine may ask at once and answer final.
        if (number.endsWith('2')) assert.equal(reply.data.status, 'pending');
        else if (number.endsWith('6')) assert.equal(reply.data.status, 'on_hold');
        else
          assert.ok(['pending', 'success'].includes(reply.data.status), JSON.stringify(reply.data));
        const settled = await waitStatus(gw, headers, reply.txn_id, 'success');
        assert.equal(server.txns.size, before + 1, `${number}: one transaction at Eko`);
        assert.ok(
          server.seen.some((s) =>
            s.url.startsWith(`/tools/reference/transaction/${clientRefOf(reply.txn_id)}?`),
          ),
          `${number}: settled by Eko's inquiry`,
        );
        expected = round(expected - 50 + settled.commission_breakup.net);
      }
      assert.equal(await balance(gw, headers), expected);
      await verifyOk(gw);

      // Callbacks: Eko signs none, so each is confirmed by the inquiry. A forged failure of a
      // success changes nothing; a callback for a reference Eko never had is refused.
      const callbackUrl = `${gw.url}/api/callbacks/recharge/eko`;
      const forged = await server.sendCallback(callbackUrl, clientRefOf(ok.txn_id), {
        tx_status: 1,
        txstatus_desc: 'Fail',
      });
      assert.equal(forged.status, 200);
      assert.equal((await forged.json()).applied, false);
      assert.equal((await txnOf(gw, headers, ok.txn_id)).status, 'success');
      const unknown = await server.sendCallback(callbackUrl, clientRefOf(`txn_${'0'.repeat(23)}1`));
      assert.equal(unknown.status, 401);
      assert.equal(await balance(gw, headers), expected);
      // Eko refunds the success later (tx_status 4) and calls back: the recharge is reversed.
      server.txns.get(clientRefOf(ok.txn_id))!.tx_status = 4;
      const refundedCallback = await server.sendCallback(callbackUrl, clientRefOf(ok.txn_id));
      assert.equal(refundedCallback.status, 200);
      const applied = await refundedCallback.json();
      assert.equal(applied.applied, true, JSON.stringify(applied));
      assert.equal(applied.data.status, 'reversed');
      expected = round(expected + 100 - ok.data.commission_credited);
      assert.equal(await balance(gw, headers), expected);
      await verifyOk(gw);

      // BBPS: a bill fetched (Eko's fetch token kept) and paid with that token.
      const bill = await request(`${gw.url}/api/bills/fetch`, {
        headers,
        body: { biller_id: 'BESCOM', params: { consumer_number: '1234567891' } },
      });
      assert.equal(bill.status, 200, JSON.stringify(bill.body));
      assert.equal(bill.body.data.amount, 845.5);
      assert.equal(bill.body.data.customer_name, 'ANIL SHARMA');
      const paid = await request(`${gw.url}/api/bills/pay`, {
        headers,
        body: {
          biller_id: 'BESCOM',
          params: { consumer_number: '1234567891' },
          bill_id: bill.body.data.bill_id,
          amount: 845.5,
          customer_mobile: '9876543210',
        },
      });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.data.status, 'success');
      const bbps = server.txns.get(clientRefOf(paid.body.txn_id))!;
      assert.equal(bbps.body.operator_id, '83');
      assert.equal(bbps.body.consumer_number, '1234567891');
      assert.equal(bbps.body.confirmation_mobile_no, '9876543210');
      assert.match(String(bbps.body.billfetchresponse), /^bfr-/);
      // Eko's references document no BBPS complaint call: a complaint about a payment Eko
      // made has nowhere to go (503), and nothing is kept.
      const complaint = await request(`${gw.url}/api/bills/complaints`, {
        headers,
        body: { txn_id: paid.body.txn_id, reason: 'transaction_successful_account_not_updated' },
      });
      assert.equal(complaint.status, 503, JSON.stringify(complaint.body));
      assert.equal(complaint.body.error.code, 'complaints_unavailable');
      expected = round(await balance(gw, headers));
      await verifyOk(gw);

      // DMT: the remitter's OTP by SMS, its voter ID verified by Eko, a transfer with its OTP.
      const mobile = '9876512345';
      const registered = await request(`${gw.url}/api/dmt/remitter`, {
        headers,
        body: { mobile, name: 'Ravi Kumar' },
      });
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const verified = await request(`${gw.url}/api/dmt/remitter/verify`, {
        headers,
        body: { mobile, otp: smsOtp(sms, mobile) },
      });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      const kyc = await request(`${gw.url}/api/dmt/remitter/kyc`, {
        headers,
        body: {
          mobile,
          document_type: 'voter_id',
          document_number: 'ABC1234567',
          name: 'Ravi Kumar',
        },
      });
      assert.equal(kyc.status, 200, JSON.stringify(kyc.body));
      assert.equal(kyc.body.data.kyc.verified, true);
      const transfer = async (account: string) => {
        const bene = await addBeneficiary(gw, headers, mobile, account);
        const order = { mobile, bene_id: bene, amount: 1_000, txn_type: 'IMPS' };
        const otp = await request(`${gw.url}/api/dmt/transact/otp`, { headers, body: order });
        assert.equal(otp.status, 200, JSON.stringify(otp.body));
        const reply = await request(`${gw.url}/api/dmt/transact`, {
          headers,
          body: { ...order, otp_ref: otp.body.data.otp_ref, otp: smsOtp(sms, mobile) },
        });
        assert.equal(reply.status, 200, JSON.stringify(reply.body));
        return reply.body;
      };
      const done = await transfer('912345678901');
      assert.equal(done.data.status, 'success', JSON.stringify(done.data));
      const ft = server.txns.get(clientRefOf(done.txn_id))!;
      assert.equal(ft.body.payment_mode, 5, 'IMPS');
      assert.equal(ft.body.ifsc, 'SBIN0001234');
      assert.ok(String(ft.body.client_ref_id).length < 20);
      expected = round(expected - 1_000 - done.data.charges);
      assert.equal(await balance(gw, headers), expected);

      // The bank fails a transfer after taking it (Eko: refund pending): refund_pending, then
      // refunded with the remitter's OTP, amount and charges back.
      const bounced = await transfer('912345678903');
      assert.equal(bounced.data.status, 'pending');
      await waitStatus(gw, headers, bounced.txn_id, 'refund_pending');
      const refundOtp = await request(`${gw.url}/api/dmt/refund/${bounced.txn_id}/otp`, {
        headers,
        body: {},
      });
      assert.equal(refundOtp.status, 200, JSON.stringify(refundOtp.body));
      const refunded = await request(`${gw.url}/api/dmt/refund/${bounced.txn_id}`, {
        headers,
        body: { otp: smsOtp(sms, mobile) },
      });
      assert.equal(refunded.status, 200, JSON.stringify(refunded.body));
      assert.equal(refunded.body.data.status, 'refunded');
      assert.equal(await balance(gw, headers), expected, 'amount and charges back');
      await verifyOk(gw);

      // PAN through Eko (the entry with the stale access key is refused first): found, verified.
      const found = await request(`${gw.url}/api/pan-find`, {
        headers,
        body: { pan_number: 'ABCPK1234F' },
      });
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.equal(found.body.data.name, 'RAVI KUMAR');
      const missing = await request(`${gw.url}/api/pan-find`, {
        headers,
        body: { pan_number: 'ABCPK0000F' },
      });
      assert.equal(missing.body.status, false, JSON.stringify(missing.body));
      assert.equal(missing.body.error.code, 'pan_not_found');
      const checked = await request(`${gw.url}/api/pan/verify`, {
        headers,
        body: {
          pan_number: 'ABCPK1234F',
          variant: 'name_dob',
          name: 'Ravi Kumar',
          dob: '1980-02-01',
        },
      });
      assert.equal(checked.status, 200, JSON.stringify(checked.body));
      assert.equal(checked.body.data.pan_status, 'valid');
      assert.equal(checked.body.data.name_match, true);
      assert.equal(checked.body.data.dob_match, true);
      assert.ok(
        server.refused.some((r) => r.why === 'secret-key wrong'),
        'the entry with the wrong access key was refused by Eko',
      );

      // Every other call was signed as Eko documents.
      assert.deepEqual(
        server.refused.filter((r) => r.why !== 'secret-key wrong'),
        [],
      );
      await verifyOk(gw);
      // The keys are never logged (a refused signature is logged by the chain, without them).
      const logged = gw.output.join('\n');
      assert.ok(logged.includes('eko-stale'), 'the refused entry was logged');
      for (const secret of [EKO.developer_key, EKO.access_key, 'an-access-key-eko-no-longer-has'])
        assert.ok(!logged.includes(secret), 'no key in the log');
    } finally {
      await gw.stop();
      await server.close();
      await sms.close();
    }
  },
);

test(
  "plans through Eko's Get Recharge Plans: listed by operator and circle, a prepaid recharge's amount checked against them",
  { timeout: 60_000 },
  async () => {
    const server = await startEko();
    const entry = eko(server.url, 'eko', {
      codes: { operator_id: { '1': '400' }, biller_id: {}, circle: { KA: '23' } },
    });
    const gw = await startPaymentsGateway(
      paymentsConfig({ providers: { recharge: [entry] }, recharge: { plan_check: 'enforce' } }),
      { env: { AIHUB_EKO_DEVELOPER_KEY: EKO.developer_key, AIHUB_EKO_ACCESS_KEY: EKO.access_key } },
    );
    try {
      const { headers } = await onboard(gw, 5_000, { recharge: true });
      // Our operator 1 is Eko's phone_operator_code 400, our circle KA its circleid 23.
      const listed = await request(`${gw.url}/api/recharge/plans?operator_id=1&circle=KA`, {
        headers,
      });
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      assert.equal(listed.body.data.provider, 'eko');
      assert.deepEqual(
        listed.body.data.plans.map((p: { amount: number }) => p.amount),
        EKO_PLANS.map((p) => Number(p.amount)),
      );
      assert.equal(listed.body.data.plans[0].validity, '28 Days');
      assert.equal(listed.body.data.plans[0].description, EKO_PLANS[0]!.plan_description);
      const asked = server.seen.find((s) => s.url.includes('/operator/plans?'))!;
      const url = new URL(asked.url, 'http://eko');
      assert.equal(
        url.pathname,
        `/customer/payment/bbps/recharge/${EKO.initiator_id}/operator/plans`,
      );
      assert.equal(url.searchParams.get('phone_operator_code'), '400');
      assert.equal(url.searchParams.get('circleid'), '23');
      // A circle Eko cannot list (its 1805, status 0) is no answer, not "no plans": 503.
      const other = await request(`${gw.url}/api/recharge/plans?operator_id=1&circle=DL`, {
        headers,
      });
      assert.equal(other.status, 503, JSON.stringify(other.body));

      // A recharge without a circle: Eko's operator lookup gives circle_area 23 (our KA), and
      // the amount is one of the plans there.
      const ok = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { number: '9876500001', amount: 299 },
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.data.status, 'success');
      assert.equal(ok.body.data.plan_check.result, 'listed');
      assert.equal(ok.body.data.lookup.circle, 'KA');
      // An amount that is no plan is refused before anything is held (Eko lists no offers).
      const before = await balance(gw, headers);
      const refused = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9876500001', amount: 123, circle: 'KA' },
      });
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, 'amount_not_a_plan');
      assert.match(refused.body.message, /listed amounts: /);
      assert.equal(await balance(gw, headers), before);
      assert.deepEqual(server.refused, []);
      await verifyOk(gw);
    } finally {
      await gw.stop();
      await server.close();
    }
  },
);

test('the scripted Eko refuses a missing developer_key, a stale timestamp and a wrong signature', async () => {
  const { createHmac } = await import('node:crypto');
  const server = await startEko();
  try {
    const at = (ms: number) => String(ms);
    const sign = (timestamp: string, access_key = EKO.access_key) =>
      createHmac('sha256', Buffer.from(access_key).toString('base64'))
        .update(timestamp)
        .digest('base64');
    const ask = (headers: Record<string, string>) =>
      fetch(
        `${server.url}/tools/reference/transaction/123?initiator_id=${EKO.initiator_id}&user_code=${EKO.user_code}`,
        { headers },
      );
    const now = at(Date.now());
    const good = {
      developer_key: EKO.developer_key,
      'secret-key': sign(now),
      'secret-key-timestamp': now,
    };
    assert.equal((await ask(good)).status, 200);
    const { developer_key: _, ...without } = good;
    assert.equal((await ask(without)).status, 403);
    const stale = at(Date.now() - 10 * 60_000);
    assert.equal(
      (await ask({ ...good, 'secret-key': sign(stale), 'secret-key-timestamp': stale })).status,
      403,
    );
    assert.equal((await ask({ ...good, 'secret-key': sign(now, 'another-key') })).status, 403);
    assert.deepEqual(
      server.refused.map((r) => r.why),
      ['developer_key missing or wrong', 'secret-key-timestamp stale', 'secret-key wrong'],
    );
  } finally {
    await server.close();
  }
});
