// Issue #44, PaySprint's remaining services, against the scripted PaySprint on loopback
// (test/support/paysprint-server.ts, which checks every request's JWT, Authorisedkey and reqid
// as PaySprint documents them): a number's operator and circle, an operator's plans (and the
// plan check that needs them) and a DTH subscriber's account through PaySprint's HLR API; a
// bill's further parameter sent as ad1 on the fetch and the payment; a PAN verified with name
// and date of birth; answers PaySprint sends AES-encrypted (recharge and PAN here), read on
// the payment, its status enquiry and the lookups; and a complaint about a bill PaySprint
// paid, which PaySprint cannot take (no public complaint API): 503 complaints_unavailable.
// After each step the books verify. Run with AIHUB_TEST_DATABASE_URL for the PostgreSQL store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from './helpers.ts';
import {
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
  waitStatus,
} from '../support/payments-helpers.ts';
import { startPaysprint, type PaysprintSecrets } from '../support/paysprint-server.ts';

const SECRETS: PaysprintSecrets = {
  partner_id: 'PS004321',
  jwt_secret: 'lookups-test-jwt-secret',
  authorised_key: 'auth-key-77d1e0c2',
  aes_key: '0123456789abcdef',
  aes_iv: 'fedcba9876543210',
};
const ENV = {
  AIHUB_PAYSPRINT_PARTNER_ID: SECRETS.partner_id,
  AIHUB_PAYSPRINT_JWT_SECRET: SECRETS.jwt_secret,
  AIHUB_PAYSPRINT_AUTHORISED_KEY: SECRETS.authorised_key,
  AIHUB_PAYSPRINT_AES_KEY: SECRETS.aes_key,
  AIHUB_PAYSPRINT_AES_IV: SECRETS.aes_iv,
};

test(
  'PaySprint: HLR, plans and DTH-info lookups, ad1 bill parameters, PAN name/DOB, encrypted answers, complaints answered clearly',
  { timeout: 120_000 },
  async () => {
    const server = await startPaysprint(SECRETS, { encrypted_answers: ['recharge', 'pan'] });
    const ps = {
      type: 'paysprint',
      name: 'paysprint',
      base_url: server.url,
      timeout_ms: 3_000,
      decrypt: ['recharge', 'pan'],
      operators: { '1': '11', '21': '27' },
      lookup_operators: { '21': 'TataSky' },
      billers: { KSEB: '61' },
    };
    const gw = await startPaymentsGateway(
      paymentsConfig({
        providers: { recharge: [ps], pan: [ps], bills: [ps], dmt: [ps] },
        recharge: { plan_check: 'enforce' },
      }),
      { env: ENV },
    );
    try {
      const { headers } = await onboard(gw, 5_000, { recharge: true, bills: true, pan: true });
      const get = (path: string) => request(`${gw.url}${path}`, { headers });

      // A number's operator and circle: PaySprint's names read back into our catalogue.
      const found = await get('/api/recharge/lookup?number=9810012345');
      assert.equal(found.status, 200, JSON.stringify(found.body));
      assert.equal(found.body.data.operator_id, 1);
      assert.equal(found.body.data.circle, 'DL');
      assert.equal(found.body.data.provider, 'paysprint');
      const hlr = server.accepted.find((a) => a.path === '/recharge/hlrapi/hlrcheck')!;
      assert.deepEqual(hlr.body, { number: '9810012345', type: 'mobile' });
      const unknown = await get('/api/recharge/lookup?number=9810010000');
      assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
      assert.equal(unknown.body.error.code, 'number_not_found');

      // Plans of Airtel in Delhi NCR (PaySprint's names for our 1 and DL), categories kept.
      const plans = await get('/api/recharge/plans?operator_id=1&circle=DL');
      assert.equal(plans.status, 200, JSON.stringify(plans.body));
      assert.deepEqual(
        plans.body.data.plans.map((p: any) => [p.amount, p.category, p.validity]),
        [
          [10, 'fulltt', 'NA'],
          [299, 'data', '28 days'],
          [719, 'data', '84 days'],
        ],
      );
      const browse = server.accepted.find((a) => a.path === '/recharge/hlrapi/browseplan')!;
      assert.deepEqual(browse.body, { circle: 'Delhi NCR', op: 'Airtel' });
      // PaySprint lists no plans for Jio here: no answer, never "no plans".
      const none = await get('/api/recharge/plans?operator_id=2&circle=DL');
      assert.equal(none.status, 503, JSON.stringify(none.body));

      // The plan check (enforce) runs on PaySprint's list: 299 is a plan, 123 is not.
      const recharge = (amount: number) =>
        request(`${gw.url}/api/recharge`, {
          headers,
          body: { operator_id: 1, number: '9810012345', amount, circle: 'DL' },
        });
      const start = await balance(gw, headers);
      const not_plan = await recharge(123);
      assert.equal(not_plan.status, 422, JSON.stringify(not_plan.body));
      assert.equal(not_plan.body.error.code, 'amount_not_a_plan');
      assert.equal(await balance(gw, headers), start, 'a refused amount holds nothing');
      // A plan, paid with PaySprint's answer encrypted.
      const paid = await recharge(299);
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.data.status, 'success', JSON.stringify(paid.body));
      assert.equal(paid.body.data.plan_check.result, 'listed');
      const seen = server.seen.find((s) => s.url.endsWith('/dorecharge'))!;
      assert.ok(seen, 'the recharge reached PaySprint');
      await verifyOk(gw);

      // A pending recharge settled by PaySprint's status enquiry, whose answer is encrypted too.
      const pending = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9810000002', amount: 299, circle: 'DL' },
      });
      assert.equal(pending.body.data.status, 'pending', JSON.stringify(pending.body));
      await waitStatus(gw, headers, pending.body.txn_id, 'success');
      assert.ok(
        server.accepted.some(
          (a) =>
            a.path === '/recharge/recharge/status' && a.body.referenceid === pending.body.txn_id,
        ),
      );
      await verifyOk(gw);

      // A DTH subscriber's account: our Tata Play (21) is PaySprint's "TataSky".
      const dth = await get('/api/dth/info?operator_id=21&number=1234567890');
      assert.equal(dth.status, 200, JSON.stringify(dth.body));
      assert.equal(dth.body.data.customer_name, 'Meena Iyer');
      assert.equal(dth.body.data.balance, 152.5);
      assert.equal(dth.body.data.monthly_recharge, 399);
      assert.equal(dth.body.data.plan_name, 'Family HD');
      assert.equal(dth.body.data.next_recharge_date, '2026-12-20');
      const dth_sent = server.accepted.find((a) => a.path === '/recharge/hlrapi/dthinfo')!;
      assert.deepEqual(dth_sent.body, { canumber: '1234567890', op: 'TataSky' });
      const no_dth = await get('/api/dth/info?operator_id=21&number=1234569999');
      assert.equal(no_dth.status, 404, JSON.stringify(no_dth.body));
      assert.equal(no_dth.body.error.code, 'subscriber_not_found');

      // KSEB takes the consumer number and the registered mobile: the mobile goes as ad1, on
      // the fetch and on the payment.
      const params = { consumer_number: '1234567890123', registered_mobile: '9876543210' };
      const bill = await request(`${gw.url}/api/bills/fetch`, {
        headers,
        body: { biller_id: 'KSEB', params },
      });
      assert.equal(bill.status, 200, JSON.stringify(bill.body));
      const fetch_sent = server.accepted.find((a) => a.path === '/bill-payment/bill/fetchbill')!;
      assert.equal(fetch_sent.body.canumber, '1234567890123');
      assert.equal(fetch_sent.body.ad1, '9876543210');
      assert.equal(fetch_sent.body.operator, '61');
      const bill_paid = await request(`${gw.url}/api/bills/pay`, {
        headers,
        body: {
          biller_id: 'KSEB',
          params,
          bill_id: bill.body.data.bill_id,
          amount: bill.body.data.amount,
          customer_mobile: '9876543210',
        },
      });
      assert.equal(bill_paid.status, 200, JSON.stringify(bill_paid.body));
      assert.equal(bill_paid.body.data.status, 'success');
      const pay_sent = server.accepted.find((a) => a.path === '/bill-payment/bill/paybill')!;
      assert.equal(pay_sent.body.ad1, '9876543210');
      assert.equal(pay_sent.body.ad2, undefined);
      await verifyOk(gw);

      // A complaint about a bill PaySprint paid: PaySprint publishes no complaint API, so the
      // gateway says so (nothing is registered anywhere, nothing is charged).
      const complaint = await request(`${gw.url}/api/bills/complaints`, {
        headers,
        body: {
          txn_id: bill_paid.body.txn_id,
          reason: 'transaction_successful_account_not_updated',
        },
      });
      assert.equal(complaint.status, 503, JSON.stringify(complaint.body));
      assert.equal(complaint.body.error.code, 'complaints_unavailable');

      // PAN verified with name and date of birth; PaySprint's (encrypted) answer gives the
      // holder's name and date of birth, compared with those asked.
      const verify = (name: string, dob: string) =>
        request(`${gw.url}/api/pan/verify`, {
          headers,
          body: { pan_number: 'ABCPK1234L', variant: 'name_dob', name, dob },
        });
      const matched = await verify('ravi kumar', '1983-05-19');
      assert.equal(matched.status, 200, JSON.stringify(matched.body));
      assert.equal(matched.body.data.pan_status, 'valid');
      assert.equal(matched.body.data.name_match, true);
      assert.equal(matched.body.data.dob_match, true);
      const pan_sent = server.accepted.filter((a) => a.path === '/pan/verify').at(-1)!;
      assert.equal(String(pan_sent.body.name).toLowerCase(), 'ravi kumar');
      assert.equal(pan_sent.body.dob, '1983-05-19');
      const mismatched = await verify('Ravi Kumar Singh', '1983-05-20');
      assert.equal(mismatched.status, 200, JSON.stringify(mismatched.body));
      assert.equal(mismatched.body.data.name_match, false);
      assert.equal(mismatched.body.data.dob_match, false);

      // Every request the gateway made was signed right.
      assert.deepEqual(server.refusals, []);
      await verifyOk(gw);
    } finally {
      await gw.stop();
      await server.close();
    }
  },
);
