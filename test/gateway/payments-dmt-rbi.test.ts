// Money transfer under RBI's Framework for Domestic Money Transfer (in force since 1 November
// 2024), each rule at the HTTP level against a real gateway with the sandbox providers: the
// remitter's officially valid document verified once; an OTP on every transfer (missing,
// wrong, for another transfer, used twice); the remitter's details carried to the provider;
// a transfer above the per-transfer limit split into legs, each its own transaction under one
// parent, and a leg failing mid-split (the parent's status, the refunds, the month's limit);
// limits by the remitter's KYC level; bank formats (NEFT UTR, IMPS RRN, sublet IFSC).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admin, request } from './helpers.js';
import {
  aadhaar,
  addBeneficiary,
  balance,
  ledgerBalances,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  transferWithOtp,
  verifyOk,
  waitFinal,
} from '../support/payments-helpers.js';

test('DMT (RBI 2024): OVD verified once, an OTP on every transfer, remitter details carried, split legs and a leg failing mid-split', async () => {
  const config = paymentsConfig({ dmt: { rbi: { levels: { full: { monthly_limit: 60_000 } } } } });
  const gw = await startPaymentsGateway(config);
  try {
    const { headers, account_id } = await onboard(gw, 100_000, { dmt: true });
    const post = (path: string, body: unknown, extra: Record<string, string> = {}) =>
      request(`${gw.url}/api/dmt${path}`, { headers: { ...headers, ...extra }, body });
    const mobile = '9876501234';
    const registered = await post('/remitter', { mobile, name: 'Ravi Kumar' });
    await post('/remitter/verify', { mobile, otp: registered.body.data.sandbox_otp });
    const good = await addBeneficiary(
      gw,
      headers,
      mobile,
      '5566778899',
      'Sunita Rao',
      'HDFC0CAACOB',
    );
    const bene = await request(`${gw.url}/api/dmt/beneficiary?mobile=${mobile}`, { headers });
    assert.equal(bene.body.data[0].account_number, '5566778899');
    assert.equal(
      bene.body.data[0].bank,
      'Akhand Anand Co.op Bank',
      'a sublet IFSC names its own bank',
    );
    const transfer = { mobile, bene_id: good, amount: 100, txn_type: 'IMPS' };

    // No OVD yet: nothing can be sent, not even an OTP asked for.
    const early = await post('/transact/otp', transfer);
    assert.equal(early.status, 422);
    assert.equal(early.body.error.code, 'remitter_kyc_required');

    // The OVD: a malformed number is a 400; one the provider cannot verify a 422; then verified once.
    const malformed = await post('/remitter/kyc', {
      mobile,
      document_type: 'aadhaar',
      document_number: '2341 2341 2345',
      name: 'Ravi Kumar',
    });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.field, 'document_number');
    const unknown = await post('/remitter/kyc', {
      mobile,
      document_type: 'voter_id',
      document_number: 'ABC1230000',
      name: 'Ravi Kumar',
    });
    assert.equal(unknown.status, 422);
    assert.equal(unknown.body.error.code, 'kyc_not_verified');
    const number = aadhaar('98765432101');
    const kyc = await post('/remitter/kyc', {
      mobile,
      document_type: 'aadhaar',
      document_number: number,
      name: 'Ravi Kumar',
      address: '12 Station Road, Pune',
    });
    assert.equal(kyc.status, 200, JSON.stringify(kyc.body));
    assert.equal(kyc.body.data.kyc.document_number, `XXXX-XXXX-${number.slice(-4)}`);
    assert.equal(kyc.body.data.kyc.level, 'minimum');
    assert.deepEqual([kyc.body.data.monthly_limit, kyc.body.data.per_txn_limit], [25_000, 5_000]);
    const again = await post('/remitter/kyc', {
      mobile,
      document_type: 'passport',
      document_number: 'J8369854',
      name: 'Ravi Kumar',
    });
    assert.equal(again.status, 200);
    assert.match(again.body.message, /verified already/);
    assert.equal(again.body.data.kyc.document_type, 'aadhaar', 'verified once: never replaced');

    // The OTP: missing, wrong (counted), for another transfer, then right, then used twice.
    const missing = await post('/transact', transfer);
    assert.equal(missing.status, 422);
    assert.equal(missing.body.error.code, 'otp_required');
    const otp = (await post('/transact/otp', transfer)).body.data;
    assert.match(otp.otp_ref, /^otp_/);
    const wrong_code = otp.sandbox_otp === '000000' ? '111111' : '000000';
    const wrong = await post('/transact', { ...transfer, otp_ref: otp.otp_ref, otp: wrong_code });
    assert.equal(wrong.status, 422);
    assert.equal(wrong.body.error.code, 'otp_invalid');
    assert.match(wrong.body.message, /2 attempts left/);
    const other = await post('/transact', {
      ...transfer,
      amount: 101,
      otp_ref: otp.otp_ref,
      otp: otp.sandbox_otp,
    });
    assert.equal(other.status, 422);
    assert.equal(other.body.error.code, 'otp_mismatch');
    const before = await balance(gw, headers);
    const sent = await post('/transact', {
      ...transfer,
      otp_ref: otp.otp_ref,
      otp: otp.sandbox_otp,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal(sent.body.data.status, 'success');
    assert.match(sent.body.data.utr, /^\d{12}$/, 'an IMPS RRN: 12 digits');
    const reused = await post('/transact', {
      ...transfer,
      otp_ref: otp.otp_ref,
      otp: otp.sandbox_otp,
    });
    assert.equal(reused.status, 409);
    assert.equal(reused.body.error.code, 'otp_used');
    assert.equal(
      await balance(gw, headers),
      before - 110,
      'one transfer moved: 100 and ₹10 charges',
    );

    // The remitter's details ride with the transfer (and to the provider).
    const txn = (await request(`${gw.url}/api/transactions/${sent.body.txn_id}`, { headers })).body
      .data;
    assert.equal(txn.remitter_name, 'Ravi Kumar');
    assert.equal(txn.remitter_id_type, 'aadhaar');
    assert.equal(txn.remitter_id_number, `XXXX-XXXX-${number.slice(-4)}`);
    assert.equal(txn.remitter_address, '12 Station Road, Pune');

    // Above the per-transfer limit: split into legs, each its own transaction under one parent,
    // one OTP for the whole, the month's limit taken for the whole in one commit.
    const split_body = { mobile, bene_id: good, amount: 12_000, txn_type: 'IMPS' };
    const split_otp = (await post('/transact/otp', split_body)).body.data;
    assert.deepEqual(split_otp.parts, [5_000, 5_000, 2_000]);
    const split = await post(
      '/transact',
      { ...split_body, otp_ref: split_otp.otp_ref, otp: split_otp.sandbox_otp },
      { 'Idempotency-Key': 'split-1' },
    );
    assert.equal(split.status, 200, JSON.stringify(split.body));
    assert.match(split.body.data.reference_id, /^dmtp_/);
    assert.equal(split.body.data.status, 'success');
    assert.deepEqual(
      split.body.data.legs.map((leg: any) => [leg.leg, leg.amount, leg.charges, leg.status]),
      [
        [1, 5_000, 50, 'success'],
        [2, 5_000, 50, 'success'],
        [3, 2_000, 20, 'success'],
      ],
    );
    const leg2 = (
      await request(`${gw.url}/api/transactions/${split.body.data.legs[1].txn_id}`, { headers })
    ).body.data;
    assert.equal(leg2.parent_id, split.body.data.reference_id);
    const retried = await post(
      '/transact',
      { ...split_body, otp_ref: split_otp.otp_ref, otp: split_otp.sandbox_otp },
      { 'Idempotency-Key': 'split-1' },
    );
    assert.deepEqual(retried.body.data.legs, split.body.data.legs, 'a retry moves nothing');
    const looked = await request(`${gw.url}/api/dmt/transfers/${split.body.data.reference_id}`, {
      headers,
    });
    assert.equal(looked.body.data.status, 'success');
    const remitter = (await request(`${gw.url}/api/dmt/remitter/${mobile}`, { headers })).body.data;
    assert.equal(remitter.used, 12_100);

    // A leg failing mid-split (sandbox 0009: parts 2 and later declined): part 1 is sent, part 2
    // declined and refunded, part 3 never sent and refunded; the parent is partial; only part 1
    // counts against the month.
    const declining = await addBeneficiary(gw, headers, mobile, '334455660009', 'Kiran Shah');
    const mid_body = { mobile, bene_id: declining, amount: 11_000, txn_type: 'IMPS' };
    const wallet_before = await balance(gw, headers);
    const mid = await transferWithOtp(gw, headers, mid_body);
    assert.equal(mid.status, 200, JSON.stringify(mid.body));
    assert.equal(mid.body.status, true, 'part of it was sent');
    assert.equal(mid.body.data.status, 'partial');
    const legs = mid.body.data.legs;
    assert.deepEqual(
      legs.map((leg: any) => [leg.amount, leg.status]),
      [
        [5_000, 'success'],
        [5_000, 'failed'],
        [1_000, 'failed'],
      ],
    );
    assert.match(legs[1].message, /declined/);
    assert.match(legs[2].message, /not sent: part 2 failed/);
    assert.equal(legs[1].refund.amount, 5_050, 'amount and charges refunded');
    assert.equal(legs[2].refund.amount, 1_010);
    assert.deepEqual([mid.body.data.sent, mid.body.data.refunded], [5_000, 6_060]);
    assert.equal(await balance(gw, headers), wallet_before - 5_050);
    const month = (await request(`${gw.url}/api/dmt/remitter/${mobile}`, { headers })).body.data;
    assert.equal(month.used, 12_100 + 5_000, 'the failed parts gave their amount back');

    // Every part failing: the parent is failed, all refunded, HTTP 200 with status false.
    const first_declines = await addBeneficiary(gw, headers, mobile, '334455660001', 'Asha Rao');
    const all_fail = await transferWithOtp(gw, headers, {
      mobile,
      bene_id: first_declines,
      amount: 6_000,
      txn_type: 'IMPS',
    });
    assert.equal(all_fail.body.status, false);
    assert.equal(all_fail.body.data.status, 'failed');
    assert.equal(all_fail.body.data.refunded, 6_060);

    // Over the month's room (25,000 − 17,100): refused before anything is held.
    const over = await post('/transact/otp', { ...transfer, amount: 8_000 });
    assert.equal(over.status, 422);
    assert.equal(over.body.error.code, 'monthly_limit_exceeded');

    // The level sets the limits: the administrator raises the remitter to `full` (60,000 a month).
    const raised = await admin(gw).put(`/admin/dmt/remitters/${account_id}/${mobile}/level`, {
      level: 'full',
    });
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    assert.equal(raised.body.monthly_limit, 60_000);
    const neft = await transferWithOtp(gw, headers, {
      ...transfer,
      amount: 8_000,
      txn_type: 'NEFT',
    });
    assert.equal(neft.body.data.status, 'pending');
    const settled = await waitFinal(gw, headers, neft.body.data.legs[0].txn_id);
    assert.match(settled.utr, /^YESBN\d{11}$/, 'a NEFT UTR: 16 characters');

    const ledger = await ledgerBalances(gw);
    assert.equal(ledger['network:transfers'] ?? 0, 0);
    await verifyOk(gw);

    // A split transfer and its Idempotency-Key are history from the commit that opened the
    // legs (no live row keeps them): after a restart both are still found by id.
    await gw.stop();
    const restarted = await startPaymentsGateway(config, { data_dir: gw.data_dir });
    try {
      const reread = await request(
        `${restarted.url}/api/dmt/transfers/${split.body.data.reference_id}`,
        { headers },
      );
      assert.equal(reread.status, 200, JSON.stringify(reread.body));
      assert.equal(reread.body.data.status, 'success');
      assert.deepEqual(reread.body.data.legs, split.body.data.legs);
      const retried_later = await request(`${restarted.url}/api/dmt/transact`, {
        headers: { ...headers, 'Idempotency-Key': 'split-1' },
        body: { ...split_body, otp_ref: split_otp.otp_ref, otp: split_otp.sandbox_otp },
      });
      assert.equal(retried_later.status, 200, JSON.stringify(retried_later.body));
      assert.equal(retried_later.body.data.reference_id, split.body.data.reference_id);
      assert.deepEqual(retried_later.body.data.legs, split.body.data.legs, 'still moves nothing');
      await verifyOk(restarted);
    } finally {
      await restarted.stop();
    }
  } finally {
    await gw.stop();
  }
});

test('DMT (RBI 2024) off for a migration window: the rules before it, no OVD and no transfer OTP', async () => {
  const gw = await startPaymentsGateway(paymentsConfig({ dmt: { rbi: { enforce: false } } }));
  try {
    const { headers } = await onboard(gw, 1_000, { dmt: true });
    const mobile = '9876501235';
    const registered = await request(`${gw.url}/api/dmt/remitter`, {
      headers,
      body: { mobile, name: 'Old Client' },
    });
    await request(`${gw.url}/api/dmt/remitter/verify`, {
      headers,
      body: { mobile, otp: registered.body.data.sandbox_otp },
    });
    const bene_id = await addBeneficiary(gw, headers, mobile, '123456789012');
    const sent = await request(`${gw.url}/api/dmt/transact`, {
      headers,
      body: { mobile, bene_id, amount: 100, txn_type: 'IMPS' },
    });
    assert.equal(sent.body.data.status, 'success', JSON.stringify(sent.body));
    const too_big = await request(`${gw.url}/api/dmt/transact`, {
      headers,
      body: { mobile, bene_id, amount: 5_000.01, txn_type: 'IMPS' },
    });
    assert.equal(too_big.status, 400, 'no split without the framework: one transfer at most 5,000');
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test("DMT (RBI 2024): the transfer OTP is checked like every DMT OTP: wrong codes cancel it, a right code is needed on every try, the hour's sends are counted", async () => {
  const gw = await startPaymentsGateway(paymentsConfig({ dmt: { rbi: { otp_per_hour: 2 } } }));
  try {
    const { headers, account_id } = await onboard(gw, 50, { dmt: true });
    const post = (path: string, body: unknown) =>
      request(`${gw.url}/api/dmt${path}`, { headers, body });
    const mobile = '9876501299';
    const registered = await post('/remitter', { mobile, name: 'Ravi Kumar' });
    await post('/remitter/verify', { mobile, otp: registered.body.data.sandbox_otp });
    const kyc = await post('/remitter/kyc', {
      mobile,
      document_type: 'aadhaar',
      document_number: aadhaar('98765432109'),
      name: 'Ravi Kumar',
    });
    assert.equal(kyc.status, 200, JSON.stringify(kyc.body));
    const bene_id = await addBeneficiary(gw, headers, mobile, '123456789012', 'Sunita Rao');
    const transfer = { mobile, bene_id, amount: 100, txn_type: 'IMPS' };
    const wrong = (code: string) => (code === '000000' ? '111111' : '000000');

    // Three wrong codes: counted, then the OTP is cancelled; its right code no longer works.
    const first = (await post('/transact/otp', transfer)).body.data;
    const codes: string[] = [];
    for (let i = 0; i < 3; i++) {
      const refused = await post('/transact', {
        ...transfer,
        otp_ref: first.otp_ref,
        otp: wrong(first.sandbox_otp),
      });
      assert.equal(refused.status, 422);
      codes.push(refused.body.error.code);
    }
    assert.deepEqual(codes, ['otp_invalid', 'otp_invalid', 'otp_attempts_exceeded']);
    assert.match(
      (await post('/transact', { ...transfer, otp_ref: first.otp_ref, otp: first.sandbox_otp }))
        .body.error.code,
      /^otp_(expired|attempts_exceeded)$/,
      'a cancelled OTP confirms nothing',
    );

    // A right code whose transfer could not be paid (the wallet holds 50): the OTP is not used,
    // and a later try still needs the right code, not any code.
    const second = (await post('/transact/otp', transfer)).body.data;
    const short = await post('/transact', {
      ...transfer,
      otp_ref: second.otp_ref,
      otp: second.sandbox_otp,
    });
    assert.equal(short.status, 402, JSON.stringify(short.body));
    const funded = await admin(gw).post(`/admin/accounts/${account_id}/credit`, {
      amount: 500,
      reference: 'otp-test-topup',
    });
    assert.equal(funded.status, 200);
    const guessed = await post('/transact', {
      ...transfer,
      otp_ref: second.otp_ref,
      otp: wrong(second.sandbox_otp),
    });
    assert.equal(guessed.status, 422, JSON.stringify(guessed.body));
    assert.equal(guessed.body.error.code, 'otp_invalid');
    const sent = await post('/transact', {
      ...transfer,
      otp_ref: second.otp_ref,
      otp: second.sandbox_otp,
    });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    assert.equal(sent.body.data.status, 'success');

    // otp_per_hour (2 here) transfer OTPs to one remitter an hour, no resend interval between.
    const third = await post('/transact/otp', transfer);
    assert.equal(third.status, 429, JSON.stringify(third.body));
    assert.equal(third.body.error.code, 'otp_rate_limited');
    assert.match(third.body.message, /2 OTPs were sent in the last hour/);
    assert.ok(Number(third.headers.get('retry-after')) > 3_000, 'Retry-After: the window');
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});
