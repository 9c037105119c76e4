// Issue #44: Eko's own OTPs in DMT. A remitter registered as Eko's customer with Eko's OTP
// (`dmt_remitter_otp: "eko"`): Eko sends the code (Create Customer, Resend OTP) and checks it
// (Verify Customer), wrong tries counted here. And a failed transfer refunded with Eko's own
// refund OTP (`dmt_refunds: "eko"`),
// against the scripted Eko on loopback (test/support/eko-server.ts: every call's
// developer_key, secret-key and timestamp checked as Eko documents them). The transfer goes
// through Eko, the bank fails it (Eko: refund pending); the refund OTP is Eko's, sent by Eko
// to the remitter (our SMS sender is not used), a wrong one is refused and counted, and only
// Eko's "refund done" releases the hold. `verify` is clean after each step. Run with
// AIHUB_TEST_DATABASE_URL for the PostgreSQL store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from './helpers.ts';
import { json, startUpstream } from '../support/payments-upstream.ts';
import { EKO, startEko } from '../support/eko-server.ts';
import { clientRefOf } from '../../gateway/providers/eko/adapter.ts';
import {
  balance,
  liveTransfer,
  liveVerifiedRemitter,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  txnOf,
  verifyOk,
  waitStatus,
} from '../support/payments-helpers.ts';

const round = (units: number) => Math.round(units * 100) / 100;

/** The scripted Eko, an SMS sender that takes everything, and a live gateway whose only DMT provider is Eko with `extra`. */
async function ekoDmt(extra: Record<string, unknown>) {
  const server = await startEko();
  const sms = await startUpstream((_req, res) => json(res, 200, { accepted: true }));
  const entry = {
    type: 'eko',
    name: 'eko',
    base_url: server.url,
    initiator_id: EKO.initiator_id,
    user_code: EKO.user_code,
    latlong: '12.9716,77.5946',
    timeout_ms: 3_000,
    ...extra,
  };
  const gw = await startPaymentsGateway(
    paymentsConfig({
      providers: { dmt: [entry] },
      dmt: {
        otp: {
          resend_interval_ms: 0,
          sms: { type: 'http', url: `${sms.url}/sms`, fields: { to: 'mobile', text: 'message' } },
        },
      },
    }),
    { env: { AIHUB_EKO_DEVELOPER_KEY: EKO.developer_key, AIHUB_EKO_ACCESS_KEY: EKO.access_key } },
  );
  const close = async () => {
    await gw.stop();
    await server.close();
    await sms.close();
  };
  return { server, sms, gw, close };
}

test(
  "Eko's refund OTP: a transfer Eko fails after taking it is refunded at Eko with the OTP Eko sends the remitter",
  { timeout: 120_000 },
  async () => {
    const { server, sms, gw, close } = await ekoDmt({ dmt_refunds: 'eko' });
    try {
      const { headers } = await onboard(gw, 10_000, { dmt: true });
      const mobile = '9876512345';
      // Our remitter OTP by SMS, its voter ID verified by Eko.
      await liveVerifiedRemitter(gw, headers, sms, mobile, {
        document_type: 'voter_id',
        document_number: 'ABC1234567',
      });

      const before = await balance(gw, headers);
      const sent = await liveTransfer(gw, headers, sms, mobile, '912345678903', 1_000);
      assert.equal(sent.data.status, 'pending');
      const tid_txn = sent.txn_id;
      await waitStatus(gw, headers, tid_txn, 'refund_pending');
      const held = round(before - 1_000 - sent.data.charges);
      assert.equal(await balance(gw, headers), held);
      const tid = (await txnOf(gw, headers, tid_txn)).provider_ref;
      assert.match(String(tid), /^\d+$/, "Eko's TID is the transfer's reference there");
      await verifyOk(gw);

      // The refund OTP: asked of Eko by its TID, sent by Eko, not by our SMS sender.
      const sms_before = sms.seen.length;
      const asked = await request(`${gw.url}/api/dmt/refund/${tid_txn}/otp`, { headers, body: {} });
      assert.equal(asked.status, 200, JSON.stringify(asked.body));
      assert.equal(sms.seen.length, sms_before, 'Eko sends the refund OTP');
      const eko_otp = server.refund_otps.get(String(tid));
      assert.ok(eko_otp, 'Eko was asked for the refund OTP of the TID');
      const otp_call = server.seen.find((s) =>
        s.url.startsWith(`/transactions/${tid}/refund/otp`),
      )!;
      assert.equal(otp_call.json.initiator_id, EKO.initiator_id);
      assert.equal(otp_call.json.user_code, EKO.user_code);

      // A wrong OTP is Eko's refusal: counted, nothing released.
      const wrong = await request(`${gw.url}/api/dmt/refund/${tid_txn}`, {
        headers,
        body: { otp: eko_otp === '111111' ? '222222' : '111111' },
      });
      assert.equal(wrong.status, 422, JSON.stringify(wrong.body));
      assert.equal(wrong.body.error.code, 'otp_invalid');
      assert.equal(await balance(gw, headers), held);
      assert.equal((await txnOf(gw, headers, tid_txn)).status, 'refund_pending');

      // Eko's OTP claims the refund at Eko (state 1); amount and charges come back.
      const refunded = await request(`${gw.url}/api/dmt/refund/${tid_txn}`, {
        headers,
        body: { otp: eko_otp },
      });
      assert.equal(refunded.status, 200, JSON.stringify(refunded.body));
      assert.equal(refunded.body.data.status, 'refunded');
      const claim = server.seen
        .filter((s) => s.url.startsWith(`/transactions/${tid}/refund`))
        .at(-1)!;
      assert.equal(claim.json.state, 1);
      assert.equal(claim.json.otp, eko_otp);
      assert.equal(
        [...server.txns.values()].find((t) => t.tid === String(tid))?.tx_status,
        4,
        'refunded at Eko',
      );
      assert.equal(await balance(gw, headers), before, 'amount and charges back');
      assert.deepEqual(server.refused, []);
      await verifyOk(gw);
    } finally {
      await close();
    }
  },
);

test(
  "Eko's sender/recipient product: the remitter registered as Eko's customer with Eko's OTP, paid to an Eko recipient, refunded with Eko's refund OTP",
  { timeout: 120_000 },
  async () => {
    const { server, sms, gw, close } = await ekoDmt({
      dmt_remitter_otp: 'eko',
      dmt_product: 'dmt',
      dmt_refunds: 'eko',
    });
    try {
      const { headers } = await onboard(gw, 5_000, { dmt: true });
      const mobile = '9876523456';
      const register = () =>
        request(`${gw.url}/api/dmt/remitter`, { headers, body: { mobile, name: 'Asha Nair' } });
      const first = await register();
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.data.otp_required, true);
      assert.equal(first.body.data.sandbox_otp, undefined);
      assert.ok(first.body.data.otp_expires_at);
      assert.deepEqual(server.customers.get(mobile), { name: 'Asha Nair', verified: false });
      const created = server.seen.find(
        (s) => s.method === 'PUT' && s.url === `/customers/mobile_number:${mobile}`,
      )!;
      assert.equal(created.json.name, 'Asha Nair');
      assert.equal(created.json.user_code, EKO.user_code);
      // Asked again: Eko knows the customer, so it resends (no second customer).
      const again = await register();
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.ok(
        server.seen.some(
          (s) => s.method === 'POST' && s.url === `/customers/mobile_number:${mobile}/otp`,
        ),
      );
      assert.equal(sms.seen.length, 0, 'Eko sends the OTP, not our SMS sender');
      const eko_otp = server.customer_otps.get(mobile)!;
      assert.ok(eko_otp);

      // A wrong code is Eko's refusal, counted here: 422 with the attempts left.
      const verify = (otp: string) =>
        request(`${gw.url}/api/dmt/remitter/verify`, { headers, body: { mobile, otp } });
      const wrong = await verify(eko_otp === '111111' ? '222222' : '111111');
      assert.equal(wrong.status, 422, JSON.stringify(wrong.body));
      assert.equal(wrong.body.error.code, 'otp_invalid');
      assert.match(wrong.body.message, /2 attempts left/);
      const still = await request(`${gw.url}/api/dmt/remitter/${mobile}`, { headers });
      assert.equal(still.body.data.verified, false);

      // Eko's code verifies the remitter, here and at Eko.
      const verified = await verify(eko_otp);
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      assert.equal(verified.body.data.verified, true);
      const check = server.seen.find((s) => s.url === `/customers/verification/otp:${eko_otp}`)!;
      assert.equal(check.json.id_type, 'mobile_number');
      assert.equal(check.json.id, mobile);
      assert.equal(server.customers.get(mobile)?.verified, true);
      // Verified: asking again sends nothing.
      const known = await register();
      assert.equal(known.body.data.otp_required, false);
      assert.equal(server.customer_otps.has(mobile), false);

      // Transfers go to Eko recipients: the account registered under Eko's customer, then
      // Eko's Initiate Transaction with the recipient_id (our transfer OTP stays ours, by SMS).
      const kyc = await request(`${gw.url}/api/dmt/remitter/kyc`, {
        headers,
        body: {
          mobile,
          document_type: 'voter_id',
          document_number: 'ABC1234567',
          name: 'Asha Nair',
        },
      });
      assert.equal(kyc.status, 200, JSON.stringify(kyc.body));
      const transfer = (account: string) => liveTransfer(gw, headers, sms, mobile, account, 500);
      const before = await balance(gw, headers);
      const paid = await transfer('912345678901');
      assert.equal(paid.data.status, 'success', JSON.stringify(paid.data));
      const added = server.seen.find((s) => s.url.includes('/recipients/acc_ifsc:912345678901_'))!;
      assert.equal(added.method, 'PUT');
      assert.equal(added.json.recipient_type, 3);
      const initiated = server.seen.find((s) => s.method === 'POST' && s.url === '/transactions')!;
      assert.equal(initiated.json.customer_id, mobile);
      assert.equal(initiated.json.channel, 2, 'IMPS');
      assert.equal(initiated.json.state, 1);
      assert.equal(initiated.json.client_ref_id, clientRefOf(paid.txn_id));
      assert.ok(initiated.json.recipient_id);
      const after_paid = round(before - 500 - paid.data.charges);
      assert.equal(await balance(gw, headers), after_paid);
      await verifyOk(gw);

      // Failed after Eko took it: refund pending, refunded with Eko's refund OTP.
      const bounced = await transfer('912345678903');
      await waitStatus(gw, headers, bounced.txn_id, 'refund_pending');
      const asked = await request(`${gw.url}/api/dmt/refund/${bounced.txn_id}/otp`, {
        headers,
        body: {},
      });
      assert.equal(asked.status, 200, JSON.stringify(asked.body));
      const tid = (await txnOf(gw, headers, bounced.txn_id)).provider_ref;
      const refunded = await request(`${gw.url}/api/dmt/refund/${bounced.txn_id}`, {
        headers,
        body: { otp: server.refund_otps.get(String(tid)) },
      });
      assert.equal(refunded.status, 200, JSON.stringify(refunded.body));
      assert.equal(refunded.body.data.status, 'refunded');
      assert.equal(await balance(gw, headers), after_paid, 'amount and charges back');
      assert.deepEqual(server.refused, []);
      await verifyOk(gw);
    } finally {
      await close();
    }
  },
);
