// Issue #44: PaySprint as a provider of every payment service, against a scripted PaySprint
// on loopback (test/support/paysprint-server.ts) that checks each request's JWT, Authorisedkey
// and reqid as PaySprint's reference describes them and decrypts the AES bodies of DMT and
// PAN. Through the real gateway in live mode: recharges on each status path (success,
// declined, pending settled by PaySprint's status enquiry, a timeout settled by it, a
// "duplicate reference" settled by it, a 503 settled by it), a reversal by PaySprint's
// callback (forged, stale and replayed ones refused), a bill fetched and paid, a DMT transfer
// with its OTP and a failed one refunded with the customer's OTP, and a PAN check. After
// each step the books verify. Run with AIHUB_TEST_DATABASE_URL for the PostgreSQL store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Gateway } from './helpers.ts';
import { json, startUpstream } from '../support/payments-upstream.ts';
import {
  aadhaar,
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
import {
  paysprintToken,
  startPaysprint,
  type PaysprintSecrets,
  type PaysprintServer,
} from '../support/paysprint-server.ts';

const SECRETS: PaysprintSecrets = {
  partner_id: 'PS001234',
  jwt_secret: 'UFMwMDEyMzQ-test-jwt-secret',
  authorised_key: 'auth-key-9f3c2a71',
  aes_key: 'a1b2c3d4e5f60718',
  aes_iv: '0f1e2d3c4b5a6978',
};
const ENV = {
  AIHUB_PAYSPRINT_PARTNER_ID: SECRETS.partner_id,
  AIHUB_PAYSPRINT_JWT_SECRET: SECRETS.jwt_secret,
  AIHUB_PAYSPRINT_AUTHORISED_KEY: SECRETS.authorised_key,
  AIHUB_PAYSPRINT_AES_KEY: SECRETS.aes_key,
  AIHUB_PAYSPRINT_AES_IV: SECRETS.aes_iv,
};
/** Only the one submission PaySprint never answers waits this out; a loaded machine must not time out the rest. */
const TIMEOUT_MS = 3_000;
const round = (units: number) => Math.round(units * 100) / 100;

function entry(url: string) {
  return {
    type: 'paysprint',
    name: 'paysprint',
    base_url: url,
    timeout_ms: TIMEOUT_MS,
    encrypt: ['dmt', 'pan'],
    operators: { '1': '11' },
    billers: { BESCOM: '45' },
    latitude: '12.9716',
    longitude: '77.5946',
  };
}

/** PaySprint's status enquiries for one reference. */
function enquiries(server: PaysprintServer, ref: string): number {
  return server.accepted.filter((a) => a.path.endsWith('/status') && a.body.referenceid === ref)
    .length;
}

function callback(gw: Gateway, token: string, body: unknown) {
  return request(`${gw.url}/api/callbacks/recharge/paysprint`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', token },
    raw: JSON.stringify(body),
  });
}

test(
  'PaySprint on loopback: JWT per request, AES bodies, every status path reconciled, callbacks verified, bills, DMT with OTP and refund, PAN',
  { timeout: 180_000 },
  async () => {
    const server = await startPaysprint(SECRETS, { encrypted: ['dmt', 'pan'] });
    const sms = await startUpstream((_req, res) => json(res, 200, { accepted: true }));
    // A second recharge provider after PaySprint: failover must never reach it for a
    // transaction PaySprint may have taken (a 503, a timeout, a duplicate reference).
    const backup = await startUpstream((_req, res) => json(res, 200, { status: 'SUCCESS' }));
    const ps = entry(server.url);
    const gw = await startPaymentsGateway(
      paymentsConfig({
        providers: {
          recharge: [
            ps,
            {
              type: 'http',
              name: 'backup',
              submit: { url: `${backup.url}/pay`, fields: { ref: 'txn_id' } },
              status: { url: `${backup.url}/status/{txn_id}` },
              response: { status_field: 'status' },
              status_map: { success: ['SUCCESS'] },
            },
          ],
          dmt: [ps],
          pan: [ps],
          bills: [ps],
        },
        dmt: {
          otp: {
            resend_interval_ms: 0,
            sms: { type: 'http', url: `${sms.url}/sms`, fields: { to: 'mobile', text: 'message' } },
          },
        },
      }),
      { env: ENV },
    );
    try {
      const { headers } = await onboard(gw, 10_000, {
        recharge: true,
        dmt: true,
        bills: true,
        pan: true,
      });
      const start = await balance(gw, headers);
      const recharge = (number: string, amount = 100) =>
        request(`${gw.url}/api/recharge`, { headers, body: { operator_id: 1, number, amount } });

      // Success: our operator 1 sent as PaySprint's 11, our txn id as its referenceid, signed.
      const ok = await recharge('9876500011');
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.data.status, 'success');
      const sent = server.accepted.find((a) => a.path === '/recharge/recharge/dorecharge')!;
      assert.deepEqual(sent.body, {
        operator: '11',
        canumber: '9876500011',
        amount: 100,
        referenceid: ok.body.txn_id,
      });
      const seen = server.seen.find((s) => s.url.endsWith('/dorecharge'))!;
      assert.equal(seen.headers.authorisedkey, SECRETS.authorised_key);
      assert.match(String(seen.headers.token), /^[\w-]+\.[\w-]+\.[\w-]+$/);
      const after_ok = round(start - 100 + ok.body.data.commission_credited);
      assert.equal(await balance(gw, headers), after_ok);
      await verifyOk(gw);

      // Declined (response_code 0): final, the money back.
      const declined = await recharge('9876500001');
      assert.equal(declined.body.data.status, 'failed', JSON.stringify(declined.body));
      assert.equal(await balance(gw, headers), after_ok);

      // Pending (response_code 2), then success by PaySprint's status enquiry.
      const pending = await recharge('9876500002');
      assert.equal(pending.body.data.status, 'pending', JSON.stringify(pending.body));
      await waitStatus(gw, headers, pending.body.txn_id, 'success');
      assert.ok(enquiries(server, pending.body.txn_id) >= 1, 'settled by the enquiry');

      // Taken and never answered: after the timeout, PaySprint's enquiry says it went through.
      const hung = await recharge('9876500004');
      assert.equal(hung.status, 200, JSON.stringify(hung.body));
      await waitStatus(gw, headers, hung.body.txn_id, 'success');
      assert.ok(enquiries(server, hung.body.txn_id) >= 1, 'settled by the enquiry');
      assert.equal(
        server.accepted.filter(
          (a) => a.body.referenceid === hung.body.txn_id && a.path.endsWith('/dorecharge'),
        ).length,
        1,
        'submitted once: never paid twice',
      );

      // "Duplicate reference": read as "ask the status", which says success.
      const duplicate = await recharge('9876500005');
      assert.equal(duplicate.body.data.status, 'success', JSON.stringify(duplicate.body));
      assert.equal(enquiries(server, duplicate.body.txn_id), 1);
      // Settled by the enquiry within the one attempt: never recorded as pending or declined.
      const attempts = async (id: string) =>
        (await txnOf(gw, headers, id)).attempts.map((a: any) => a.outcome);
      assert.deepEqual(await attempts(duplicate.body.txn_id), ['success']);

      // A 503 after PaySprint took it: the enquiry finds it, no failover, no second payment.
      const unavailable = await recharge('9876500006');
      assert.equal(unavailable.body.data.status, 'success', JSON.stringify(unavailable.body));
      assert.equal(enquiries(server, unavailable.body.txn_id), 1);
      assert.deepEqual(await attempts(unavailable.body.txn_id), ['success']);
      assert.deepEqual(backup.seen, [], 'no transaction PaySprint may have taken went elsewhere');
      await verifyOk(gw);

      // A reversal by PaySprint's callback: a forged, a stale and (after it is applied) a
      // replayed token are refused; the genuine one brings the amount back less the commission.
      const before_reversal = await balance(gw, headers);
      const reversal = {
        event: 'RECHARGE_STATUS_UPDATE',
        param: { referenceid: ok.body.txn_id, status: '4', message: 'reversed by the operator' },
      };
      const forged = await callback(gw, paysprintToken(SECRETS, {}, 'not-the-secret'), reversal);
      assert.equal(forged.status, 401);
      assert.equal(forged.body.error.code, 'callback_unauthenticated');
      const stale = paysprintToken(SECRETS, { timestamp: Math.floor(Date.now() / 1000) - 3_600 });
      assert.equal((await callback(gw, stale, reversal)).status, 401);
      const other = paysprintToken(SECRETS, { partnerId: 'PS999999' });
      assert.equal((await callback(gw, other, reversal)).status, 401);
      assert.equal((await txnOf(gw, headers, ok.body.txn_id)).status, 'success');
      const token = paysprintToken(SECRETS);
      const applied = await callback(gw, token, reversal);
      assert.equal(applied.status, 200, JSON.stringify(applied.body));
      assert.equal(applied.body.data.status, 'reversed');
      const replayed = await callback(gw, token, reversal);
      assert.equal(replayed.status, 401, 'a reused reqid is a replay');
      assert.equal(
        await balance(gw, headers),
        round(before_reversal + 100 - ok.body.data.commission_credited),
      );
      await verifyOk(gw);

      // BBPS: fetch (PaySprint operator 45), pay with the fetched bill; an unknown consumer is 404.
      const bill = await request(`${gw.url}/api/bills/fetch`, {
        headers,
        body: { biller_id: 'BESCOM', params: { consumer_number: '1234567890' } },
      });
      assert.equal(bill.status, 200, JSON.stringify(bill.body));
      assert.equal(bill.body.data.amount, 845.5);
      const none = await request(`${gw.url}/api/bills/fetch`, {
        headers,
        body: { biller_id: 'BESCOM', params: { consumer_number: '1234569999' } },
      });
      assert.equal(none.status, 404, JSON.stringify(none.body));
      const paid = await request(`${gw.url}/api/bills/pay`, {
        headers,
        body: {
          biller_id: 'BESCOM',
          params: { consumer_number: '1234567890' },
          bill_id: bill.body.data.bill_id,
          amount: 845.5,
          customer_mobile: '9876543210',
        },
      });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.data.status, 'success');
      const pay_sent = server.accepted.find((a) => a.path === '/bill-payment/bill/paybill')!;
      assert.equal(pay_sent.body.operator, '45');
      assert.equal(pay_sent.body.referenceid, paid.body.txn_id);
      assert.equal(pay_sent.body.latitude, '12.9716');
      assert.equal(pay_sent.body.bill_fetch.billnetamount, '845.50');
      await verifyOk(gw);

      // DMT: a remitter PaySprint has onboarded, verified with our OTP by SMS; its document
      // from PaySprint's remitter query. Bodies go AES-encrypted.
      const mobile = '9876512345';
      server.remitters.set(mobile, { fname: 'Ravi', lname: 'Kumar' });
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
        body: { mobile, document_type: 'aadhaar', document_number: aadhaar(), name: 'Ravi Kumar' },
      });
      assert.equal(kyc.status, 200, JSON.stringify(kyc.body));
      const query = server.seen.find((s) => s.url.endsWith('/queryremitter'))!;
      assert.deepEqual(Object.keys(query.json), ['body'], 'sent encrypted');
      const transfer = async (account: string, amount: number) => {
        const bene_id = await addBeneficiary(gw, headers, mobile, account);
        const order = { mobile, bene_id, amount, txn_type: 'IMPS' };
        const otp = await request(`${gw.url}/api/dmt/transact/otp`, { headers, body: order });
        assert.equal(otp.status, 200, JSON.stringify(otp.body));
        const done = await request(`${gw.url}/api/dmt/transact`, {
          headers,
          body: { ...order, otp_ref: otp.body.data.otp_ref, otp: smsOtp(sms, mobile) },
        });
        assert.equal(done.status, 200, JSON.stringify(done.body));
        return done;
      };
      // A penny drop through PaySprint's name verification: the bank's name comes back.
      const checked_bene = await addBeneficiary(gw, headers, mobile, '912345611111');
      const penny = await request(`${gw.url}/api/dmt/beneficiary/${checked_bene}/verify`, {
        headers,
        body: {},
      });
      assert.equal(penny.status, 200, JSON.stringify(penny.body));
      const penny_sent = server.accepted.find(
        (a) => a.path === '/dmt/beneficiary/registerbeneficiary/benenameverify',
      )!;
      assert.equal(penny_sent.body.accno, '912345611111');
      await verifyOk(gw);
      const before_dmt = await balance(gw, headers);
      const sent_ok = await transfer('912345678901', 1_000);
      assert.equal(sent_ok.body.data.status, 'success');
      const transact = server.accepted.find((a) => a.path === '/dmt/transact/transact')!;
      assert.equal(transact.body.referenceid, sent_ok.body.txn_id);
      assert.equal(transact.body.txntype, 'IMPS');
      assert.equal(transact.body.amount, 1_000);
      const after_ok_dmt = round(before_dmt - 1_000 - sent_ok.body.data.charges);
      assert.equal(
        await balance(gw, headers),
        round(after_ok_dmt + (sent_ok.body.data.commission_credited ?? 0)),
      );
      await verifyOk(gw);

      // Accepted, then failed at the bank (enquiry): refund_pending, refunded at PaySprint with
      // the OTP PaySprint sends the remitter (not ours): a wrong one is refused and counted.
      const held_from = await balance(gw, headers);
      const failing = await transfer('912345670003', 500);
      assert.equal(failing.body.data.status, 'pending');
      const tid = failing.body.txn_id;
      await waitStatus(gw, headers, tid, 'refund_pending');
      assert.equal(await balance(gw, headers), round(held_from - 500 - failing.body.data.charges));
      const sms_before = sms.seen.length;
      const refund_otp = await request(`${gw.url}/api/dmt/refund/${tid}/otp`, {
        headers,
        body: {},
      });
      assert.equal(refund_otp.status, 200, JSON.stringify(refund_otp.body));
      assert.equal(sms.seen.length, sms_before, 'PaySprint sends the refund OTP, not our SMS');
      const paysprint_otp = server.refund_otps.get(tid);
      assert.ok(paysprint_otp, 'PaySprint was asked for the refund OTP of our reference');
      const wrong = await request(`${gw.url}/api/dmt/refund/${tid}`, {
        headers,
        body: { otp: paysprint_otp === '000000' ? '111111' : '000000' },
      });
      assert.equal(wrong.status, 422, JSON.stringify(wrong.body));
      assert.equal(wrong.body.error?.code ?? wrong.body.code, 'otp_invalid');
      assert.equal(await balance(gw, headers), round(held_from - 500 - failing.body.data.charges));
      const refunded = await request(`${gw.url}/api/dmt/refund/${tid}`, {
        headers,
        body: { otp: paysprint_otp },
      });
      assert.equal(refunded.status, 200, JSON.stringify(refunded.body));
      assert.equal(refunded.body.data.status, 'refunded');
      assert.equal(server.txns.get(tid)?.status, 'R', 'the refund is claimed at PaySprint');
      assert.equal(await balance(gw, headers), held_from, 'amount and charges back');
      await verifyOk(gw);

      // PAN through PaySprint, encrypted; a PAN PaySprint declines is failed and costs nothing.
      const pan = await request(`${gw.url}/api/pan-find`, {
        headers,
        body: { pan_number: 'ABCPK1234L' },
      });
      assert.equal(pan.status, 200, JSON.stringify(pan.body));
      assert.equal(pan.body.data.name, 'RAVI KUMAR', JSON.stringify(pan.body));
      const pan_balance = await balance(gw, headers);
      const no_pan = await request(`${gw.url}/api/pan-find`, {
        headers,
        body: { pan_number: 'ABCPK0001L' },
      });
      assert.equal(no_pan.body.data.status, 'failed', JSON.stringify(no_pan.body));
      assert.equal(await balance(gw, headers), pan_balance, 'a declined check costs nothing');
      const pan_sent = server.accepted.find((a) => a.path === '/pan/verify')!;
      assert.equal(pan_sent.body.pannumber, 'ABCPK1234L');
      assert.equal(pan_sent.body.referenceid, pan.body.txn_id);

      // Every request the gateway made was signed correctly, each with its own reqid.
      assert.deepEqual(server.refusals, []);
      await verifyOk(gw);
    } finally {
      await gw.stop();
      await server.close();
      await sms.close();
      await backup.close();
    }
  },
);
