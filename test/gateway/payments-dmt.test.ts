// Money transfer over HTTP against the real gateway: remitter OTP flow (wrong, exhausted and
// expired OTPs, resend limits), beneficiary validation and penny drop, IMPS and NEFT, every
// sandbox failure refunding amount and charges, and the monthly limit to the rupee; the
// ledger checked with `verify` after each step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Gateway } from './helpers.ts';
import {
  addBeneficiary,
  balance,
  ledgerBalances,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  transferWithOtp,
  verifiedRemitter,
  verifyOk,
  waitFinal,
} from '../support/payments-helpers.ts';

/**
 * The OTP rules of the first remitter test: a resend interval and a lifetime that no request
 * sequence of the test comes near, however loaded the machine (with 300 ms and 3 s, "too soon"
 * and "the right code in time" were assumptions about speed). The hourly cap and the expiry,
 * which need time to pass, run on a gateway of their own with no resend interval and the
 * shortest lifetime, where waiting longer can only confirm them.
 */
const OTP_RULES = { ttl_ms: 600_000, max_attempts: 3, resend_interval_ms: 60_000 };
const SHORT_TTL_MS = 1_000;

async function walletKinds(gw: Gateway, headers: Record<string, string>, txn_id: string) {
  const reply = await request(`${gw.url}/api/wallet/history?txn_id=${txn_id}&order=asc`, {
    headers,
  });
  assert.equal(reply.status, 200);
  return (reply.body.data.entries as Array<{ kind: string; amount: number }>).map((e) => [
    e.kind,
    e.amount,
  ]);
}

test('remitter OTP: sandbox_otp, wrong codes counted, exhausted OTPs, the resend interval, lookup', async () => {
  const gw = await startPaymentsGateway(paymentsConfig({ dmt: { otp: OTP_RULES } }));
  try {
    const { headers } = await onboard(gw, 100, { dmt: true });
    const post = (path: string, body: unknown) =>
      request(`${gw.url}/api/dmt${path}`, { headers, body });

    // the service must be active
    const other = await onboard(gw, 0, { recharge: true });
    const inactive = await request(`${gw.url}/api/dmt/remitter`, {
      headers: other.headers,
      body: { mobile: '9876500011', name: 'A B' },
    });
    assert.equal(inactive.status, 403);
    assert.equal(inactive.body.error.code, 'service_inactive');

    // bad input names the field
    const bad_mobile = await post('/remitter', { mobile: '12345', name: 'Ravi Kumar' });
    assert.equal(bad_mobile.status, 400);
    assert.equal(bad_mobile.body.error.field, 'mobile');
    const bad_name = await post('/remitter', { mobile: '9876500011', name: 'R2D2 <script>' });
    assert.equal(bad_name.status, 400);
    assert.equal(bad_name.body.error.field, 'name');

    const registered = await post('/remitter', { mobile: '+91 98765 00011', name: 'Ravi Kumar' });
    assert.equal(registered.status, 200, JSON.stringify(registered.body));
    assert.equal(registered.body.status, true);
    assert.equal(registered.body.data.mobile, '9876500011');
    assert.equal(registered.body.data.otp_required, true);
    assert.match(registered.body.data.sandbox_otp, /^\d{6}$/);
    assert.equal(registered.body.data.verified, false);
    const otp: string = registered.body.data.sandbox_otp;
    const wrong = otp === '000000' ? '111111' : '000000';

    // a resend inside the interval is refused with Retry-After
    const too_soon = await post('/remitter', { mobile: '9876500011', name: 'Ravi Kumar' });
    assert.equal(too_soon.status, 429);
    assert.equal(too_soon.body.error.code, 'otp_rate_limited');
    assert.ok(Number(too_soon.headers.get('retry-after')) >= 1);

    const lookup_before = await request(`${gw.url}/api/dmt/remitter/9876500011`, { headers });
    assert.equal(lookup_before.status, 200);
    assert.equal(lookup_before.body.data.verified, false);

    // wrong codes: counted, then the right one works
    const first_wrong = await post('/remitter/verify', { mobile: '9876500011', otp: wrong });
    assert.equal(first_wrong.status, 422);
    assert.equal(first_wrong.body.error.code, 'otp_invalid');
    assert.match(first_wrong.body.message, /2 attempts left/);
    const malformed = await post('/remitter/verify', { mobile: '9876500011', otp: '12ab' });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.field, 'otp');
    const ok = await post('/remitter/verify', { mobile: '9876500011', otp });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.data.verified, true);
    assert.deepEqual(
      {
        limit: ok.body.data.monthly_limit,
        used: ok.body.data.used,
        available: ok.body.data.available,
      },
      { limit: 0, used: 0, available: 0 },
      'a mobile alone sends nothing under the 2024 framework: the OVD is verified first',
    );
    assert.equal(ok.body.data.kyc.verified, false);
    // verifying again is harmless; registering again needs no OTP
    assert.equal(
      (await post('/remitter/verify', { mobile: '9876500011', otp: wrong })).status,
      200,
    );
    const again = await post('/remitter', { mobile: '9876500011', name: 'Ravi Kumar' });
    assert.equal(again.body.data.otp_required, false);
    assert.equal(again.body.data.sandbox_otp, undefined);

    // attempts exhausted: the OTP is cancelled, even the right code no longer works
    const second = await post('/remitter', { mobile: '9876500022', name: 'Meena Das' });
    const second_otp: string = second.body.data.sandbox_otp;
    const second_wrong = second_otp === '000000' ? '111111' : '000000';
    assert.equal(
      (await post('/remitter/verify', { mobile: '9876500022', otp: second_wrong })).body.error.code,
      'otp_invalid',
    );
    assert.equal(
      (await post('/remitter/verify', { mobile: '9876500022', otp: second_wrong })).body.error.code,
      'otp_invalid',
    );
    const exhausted = await post('/remitter/verify', { mobile: '9876500022', otp: second_wrong });
    assert.equal(exhausted.status, 422);
    assert.equal(exhausted.body.error.code, 'otp_attempts_exceeded');
    const late_right = await post('/remitter/verify', { mobile: '9876500022', otp: second_otp });
    assert.equal(late_right.body.error.code, 'otp_not_requested');

    // another account does not see this account's remitters
    const foreign = await request(`${gw.url}/api/dmt/remitter/9876500011`, {
      headers: (await onboard(gw, 0, { dmt: true })).headers,
    });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error.code, 'remitter_not_found');

    // no money moved in any of this
    assert.equal(await balance(gw, headers), 100);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('remitter OTP: the hourly cap of sends, and an OTP past its lifetime', async () => {
  const gw = await startPaymentsGateway(
    paymentsConfig({
      dmt: {
        otp: {
          ttl_ms: SHORT_TTL_MS,
          max_attempts: 3,
          resend_interval_ms: 0,
          max_sends_per_hour: 3,
        },
      },
    }),
  );
  try {
    const { headers } = await onboard(gw, 100, { dmt: true });
    const post = (path: string, body: unknown) =>
      request(`${gw.url}/api/dmt${path}`, { headers, body });
    const meena = { mobile: '9876500022', name: 'Meena Das' };

    // the hourly cap: 3 sends, then 429 with the window's rest to wait
    for (let i = 0; i < 3; i++) assert.equal((await post('/remitter', meena)).status, 200);
    const capped = await post('/remitter', meena);
    assert.equal(capped.status, 429);
    assert.match(capped.body.message, /3 OTPs/);
    assert.ok(Number(capped.headers.get('retry-after')) > 3_000);

    // expiry: the right code, too late (after its lifetime: waiting longer only confirms it)
    const other = await post('/remitter', { mobile: '9876500033', name: 'Asha Rao' });
    await new Promise((resolve) => setTimeout(resolve, SHORT_TTL_MS + 100));
    const expired = await post('/remitter/verify', {
      mobile: '9876500033',
      otp: other.body.data.sandbox_otp,
    });
    assert.equal(expired.status, 422);
    assert.equal(expired.body.error.code, 'otp_expired');
    assert.equal(await balance(gw, headers), 100);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('beneficiaries: validation, duplicates, list, delete, penny drop charged once', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers } = await onboard(gw, 100, { dmt: true });
    const post = (path: string, body: unknown) =>
      request(`${gw.url}/api/dmt${path}`, { headers, body });
    const unverified = await post('/remitter', { mobile: '9876500033', name: 'Asha Nair' });
    assert.equal(unverified.status, 200);
    const early = await post('/beneficiary', {
      mobile: '9876500033',
      name: 'Sunita Rao',
      account_number: '123456789012',
      ifsc: 'SBIN0001234',
    });
    assert.equal(early.status, 422);
    assert.equal(early.body.error.code, 'remitter_not_verified');
    await verifiedRemitter(gw, headers, '9876500044');

    const base = {
      mobile: '9876500044',
      name: 'Sunita Rao',
      account_number: '123456789012',
      ifsc: 'SBIN0001234',
    };
    for (const [change, field] of [
      [{ account_number: '12345' }, 'account_number'], // 5 digits
      [{ account_number: '12345678' }, 'account_number'], // 8: fewer than IMPS and NEFT take
      [{ account_number: '1234567890123456789' }, 'account_number'], // 19: more
      [{ account_number: '000000000000' }, 'account_number'], // all zeros
      [{ account_number: 'ABCDEFGHIJ' }, 'account_number'], // not digits
      [{ account_number: '1234-5678_9012' }, 'account_number'],
      [{ ifsc: 'ZZZZ0001234' }, 'ifsc'], // no bank of the directory
      [{ ifsc: 'SBIN1001234' }, 'ifsc'], // fifth character must be 0
      [{ ifsc: 'SBI00001234' }, 'ifsc'],
      [{ ifsc: 'SBIN000123' }, 'ifsc'],
      [{ name: '' }, 'name'],
      [{ mobile: '5876500044' }, 'mobile'],
    ] as const) {
      const reply = await post('/beneficiary', { ...base, ...change });
      assert.equal(reply.status, 400, `${JSON.stringify(change)} → ${JSON.stringify(reply.body)}`);
      assert.equal(reply.body.error.field, field);
    }
    const unknown_remitter = await post('/beneficiary', { ...base, mobile: '9876500055' });
    assert.equal(unknown_remitter.status, 404);

    // 9 and 18 digits are the bounds; lower-case IFSC is accepted and upper-cased; bank from the IFSC
    const nine = await post('/beneficiary', {
      ...base,
      account_number: '123456789',
      ifsc: 'hdfc0000123',
    });
    assert.equal(nine.status, 200, JSON.stringify(nine.body));
    assert.match(nine.body.data.bene_id, /^bene_/);
    assert.equal(nine.body.data.ifsc, 'HDFC0000123');
    assert.equal(nine.body.data.bank, 'HDFC Bank');
    assert.equal(nine.body.data.verified, false);
    const eighteen = await post('/beneficiary', {
      ...base,
      account_number: '1234 5678 9012 3456 78',
      bank: 'State Bank of India, MG Road',
    });
    assert.equal(eighteen.status, 200);
    assert.equal(eighteen.body.data.account_number, '123456789012345678');
    assert.equal(eighteen.body.data.bank, 'State Bank of India, MG Road');
    const twin = await post('/beneficiary', {
      ...base,
      account_number: '123456789',
      ifsc: 'HDFC0000123',
    });
    assert.equal(twin.status, 409);
    assert.equal(twin.body.error.code, 'beneficiary_exists');

    const list = await request(`${gw.url}/api/dmt/beneficiary?mobile=9876500044`, { headers });
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.data.map((b: any) => b.bene_id).sort(),
      [nine.body.data.bene_id, eighteen.body.data.bene_id].sort(),
    );

    // penny drop: the fee is charged once, the registered name comes back
    const verified = await post(`/beneficiary/${nine.body.data.bene_id}/verify`, {});
    assert.equal(verified.status, 200, JSON.stringify(verified.body));
    assert.equal(verified.body.status, true);
    assert.equal(verified.body.data.registered_name, 'SUNITA RAO');
    assert.equal(verified.body.data.name_match, true);
    assert.equal(verified.body.data.fee, 3);
    assert.equal(await balance(gw, headers), 97);
    const again = await post(`/beneficiary/${nine.body.data.bene_id}/verify`, {});
    assert.equal(again.body.data.fee, 0);
    assert.equal(again.body.data.registered_name, 'SUNITA RAO');
    assert.equal(await balance(gw, headers), 97);
    const listed = await request(`${gw.url}/api/dmt/beneficiary?mobile=9876500044`, { headers });
    assert.equal(
      listed.body.data.find((b: any) => b.bene_id === nine.body.data.bene_id).verified,
      true,
    );

    // a declined penny drop (account ending 0001) costs nothing
    const declined_bene = await addBeneficiary(gw, headers, '9876500044', '555550001', 'Ram Lal');
    const declined = await post(`/beneficiary/${declined_bene}/verify`, {});
    assert.equal(declined.body.status, false);
    assert.equal(declined.body.data.verified, false);
    assert.equal(await balance(gw, headers), 97);

    // delete: gone from the list, and cannot be paid
    const removed = await request(`${gw.url}/api/dmt/beneficiary/${eighteen.body.data.bene_id}`, {
      method: 'DELETE',
      headers,
    });
    assert.equal(removed.status, 200);
    assert.equal(removed.body.data.deleted, true);
    const after = await request(`${gw.url}/api/dmt/beneficiary?mobile=9876500044`, { headers });
    assert.ok(!after.body.data.some((b: any) => b.bene_id === eighteen.body.data.bene_id));
    const pay_deleted = await post('/transact', {
      mobile: '9876500044',
      bene_id: eighteen.body.data.bene_id,
      amount: 10,
      txn_type: 'IMPS',
    });
    assert.equal(pay_deleted.status, 404);
    assert.equal(
      (
        await request(`${gw.url}/api/dmt/beneficiary/${eighteen.body.data.bene_id}`, {
          method: 'DELETE',
          headers,
        })
      ).status,
      404,
    );
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('transfers: IMPS with a 12-digit UTR, NEFT pending then settled, failures refund amount and charges, failover', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers } = await onboard(gw, 20_000, { dmt: true });
    const mobile = '9876500066';
    await verifiedRemitter(gw, headers, mobile);
    const transact = (
      bene_id: string,
      amount: number,
      txn_type: string,
      extra: Record<string, unknown> = {},
    ) => transferWithOtp(gw, headers, { mobile, bene_id, amount, txn_type }, extra);

    const good = await addBeneficiary(gw, headers, mobile, '123456789012');
    // IMPS: settles at once; charges 1 % of 5,000 in the answer, posted separately
    const imps = await transact(good, 5_000, 'IMPS');
    assert.equal(imps.status, 200, JSON.stringify(imps.body));
    assert.equal(imps.body.status, true);
    assert.equal(imps.body.data.status, 'success');
    assert.match(imps.body.data.utr, /^\d{12}$/);
    assert.match(imps.body.data.reference_id, /^txn_/);
    assert.equal(imps.body.data.amount, 5_000);
    assert.equal(imps.body.data.charges, 50);
    assert.equal(imps.body.data.balance, 14_950);
    assert.deepEqual(await walletKinds(gw, headers, imps.body.data.reference_id), [
      ['hold', -5_050],
      ['release', 50],
      ['charges', -50],
    ]);
    await verifyOk(gw);

    // small amounts: the flat slab (₹10 up to ₹1,000); lower-case txn_type accepted
    const small = await transact(good, 999.5, 'imps');
    assert.equal(small.body.data.charges, 10);
    assert.equal(small.body.data.txn_type, 'IMPS');
    assert.equal(await balance(gw, headers), 14_950 - 1_009.5);

    // bad input
    for (const [body, field] of [
      [{ amount: 50_000.01 }, 'amount'], // over ten parts of the per-transfer limit
      [{ amount: 0 }, 'amount'],
      [{ amount: 10.005 }, 'amount'],
      [{ txn_type: 'RTGS' }, 'txn_type'],
      [{ bene_id: 'nope' }, 'bene_id'],
    ] as Array<[Record<string, unknown>, string]>) {
      const reply = await request(`${gw.url}/api/dmt/transact`, {
        headers,
        body: { mobile, bene_id: good, amount: 100, txn_type: 'IMPS', ...body },
      });
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.body.error.field, field);
    }

    // NEFT: pending (held), then settled by the reconciler with a UTR
    const neft = await transact(good, 2_000, 'NEFT');
    assert.equal(neft.body.status, true);
    assert.equal(neft.body.data.status, 'pending');
    assert.equal(neft.body.data.utr, null);
    assert.equal(neft.body.data.charges, 20);
    const held_balance = 14_950 - 1_009.5 - 2_020;
    assert.equal(await balance(gw, headers), held_balance);
    const neft_final = await waitFinal(gw, headers, neft.body.data.reference_id);
    assert.equal(neft_final.status, 'success');
    assert.match(
      String(neft_final.utr),
      /^YESBN\d{11}$/,
      'a NEFT UTR: bank, N, year, day, sequence',
    );
    assert.equal(
      await balance(gw, headers),
      held_balance,
      'charges were part of the hold, so the balance stays',
    );
    await verifyOk(gw);

    // failures refund amount and charges: declined, pending then failed, every provider down
    for (const [account_number, label] of [
      ['900000000001', 'declined'],
      ['900000000003', 'pending then failed'],
      ['900000000005', 'all providers fail'],
    ] as const) {
      const bene = await addBeneficiary(gw, headers, mobile, account_number, 'Kiran Shah');
      const before = await balance(gw, headers);
      const reply = await transact(bene, 1_500, 'IMPS');
      assert.equal(reply.status, 200, label);
      let final = reply.body.data;
      if (final.status === 'pending') {
        assert.equal(
          await balance(gw, headers),
          before - 1_515,
          `${label}: amount and charges held`,
        );
        final = await waitFinal(gw, headers, reply.body.data.reference_id);
      } else {
        assert.equal(reply.body.status, false, label);
        assert.equal(
          reply.body.data.refund.amount,
          1_515,
          `${label}: the refund covers the charges`,
        );
      }
      if (label === 'pending then failed') {
        // The bank accepted it, then it failed: the money stays held until the customer's OTP.
        assert.equal(final.status, 'refund_pending', label);
        assert.equal(await balance(gw, headers), before - 1_515, `${label}: still held`);
        const id = reply.body.data.reference_id;
        const otp = await request(`${gw.url}/api/dmt/refund/${id}/otp`, { headers, body: {} });
        assert.equal(otp.status, 200, JSON.stringify(otp.body));
        const refunded = await request(`${gw.url}/api/dmt/refund/${id}`, {
          headers,
          body: { otp: otp.body.data.sandbox_otp },
        });
        assert.equal(refunded.status, 200, JSON.stringify(refunded.body));
        final = refunded.body.data;
        assert.equal(final.status, 'refunded', label);
      } else assert.equal(final.status, 'failed', label);
      assert.equal(await balance(gw, headers), before, `${label}: amount and charges back`);
      const kinds = await walletKinds(gw, headers, reply.body.data.reference_id);
      assert.deepEqual(
        kinds,
        [
          ['hold', -1_515],
          ['refund', 1_515],
        ],
        label,
      );
      await verifyOk(gw);
    }

    // 0004: the first provider times out, the second pays; both attempts recorded
    const slow = await addBeneficiary(gw, headers, mobile, '900000000004', 'Nisha Jain');
    const failover = await transact(slow, 100, 'IMPS');
    assert.equal(failover.body.data.status, 'success');
    const txn = await request(`${gw.url}/api/transactions/${failover.body.data.reference_id}`, {
      headers,
    });
    assert.deepEqual(
      txn.body.data.attempts.map((a: any) => [a.provider, a.outcome]),
      [
        ['sandbox-a', 'unavailable'],
        ['sandbox-b', 'success'],
      ],
    );

    // the remitter's month counts pending and successful transfers, not failed ones
    const remitter = await request(`${gw.url}/api/dmt/remitter/${mobile}`, { headers });
    assert.equal(remitter.body.data.used, 5_000 + 999.5 + 2_000 + 100);

    // idempotent retry: one transfer
    const once = await transact(good, 300, 'IMPS', { client_ref: 'order-77' });
    const twice = await transact(good, 300, 'IMPS', { client_ref: 'order-77' });
    assert.deepEqual(twice.body, once.body);
    const conflict = await transact(good, 301, 'IMPS', { client_ref: 'order-77' });
    assert.equal(conflict.status, 409);

    // ledger: provider:dmt got the amounts, revenue:dmt the charges' taxable value and gst:igst
    // their GST (the account's GSTIN is Maharashtra's, the operator is in Karnataka: inter-state)
    const balances = await ledgerBalances(gw);
    assert.equal(balances['provider:dmt'], (5_000 + 999.5 + 2_000 + 100 + 300) * 1e6);
    const igst = (fee: number) => Math.round((fee * 100 * 18) / 118) * 10_000;
    assert.equal(balances['gst:igst'], igst(50) + igst(20) + 3 * igst(10));
    assert.equal(balances['revenue:dmt']! + balances['gst:igst']!, (50 + 10 + 20 + 10 + 10) * 1e6);
    assert.equal(balances['gst:cgst'], undefined, 'no CGST on an inter-state supply');
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('monthly limit: ₹25,000 per remitter and calendar month, the rupee past it refused; a failed transfer gives its amount back', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers } = await onboard(gw, 30_000, { dmt: true });
    const mobile = '9876500077';
    await verifiedRemitter(gw, headers, mobile);
    const bene = await addBeneficiary(gw, headers, mobile, '223456789012');
    const declining = await addBeneficiary(gw, headers, mobile, '223456780001', 'Declined Person');
    let n = 0;
    const transact = (bene_id: string, amount: number) =>
      transferWithOtp(
        gw,
        headers,
        { mobile, bene_id, amount, txn_type: 'IMPS' },
        { client_ref: `limit-${++n}` },
      );

    const declined = await transact(declining, 5_000);
    assert.equal(declined.body.data.status, 'failed');
    assert.equal(
      (await request(`${gw.url}/api/dmt/remitter/${mobile}`, { headers })).body.data.used,
      0,
      'a failed transfer does not count',
    );

    for (let i = 0; i < 4; i++)
      assert.equal((await transact(bene, 5_000)).body.data.status, 'success');
    assert.equal((await transact(bene, 4_999)).body.data.status, 'success');
    const last_rupee = await transact(bene, 1);
    assert.equal(last_rupee.body.data.status, 'success', 'exactly ₹25,000 is within the limit');
    const lookup = await request(`${gw.url}/api/dmt/remitter/${mobile}`, { headers });
    assert.deepEqual([lookup.body.data.used, lookup.body.data.available], [25_000, 0]);

    const before = await balance(gw, headers);
    const over = await transact(bene, 1);
    assert.equal(over.status, 422);
    assert.equal(over.body.status, false);
    assert.equal(over.body.error.code, 'monthly_limit_exceeded');
    assert.equal(over.body.error.field, 'amount');
    assert.match(over.body.message, /0 left of the monthly limit of 25000/);
    assert.equal(await balance(gw, headers), before, 'nothing held or charged');
    // 30,000 − 25,000 − charges (4 × 50 + 49.99 + 10)
    assert.equal(before, 30_000 - 25_000 - 259.99);

    // the limit is the remitter's: the same mobile registered by another account shares it
    const other = await onboard(gw, 1_000, { dmt: true });
    await verifiedRemitter(gw, other.headers, mobile);
    const other_bene = await addBeneficiary(gw, other.headers, mobile, '323456789012');
    const elsewhere = await transferWithOtp(gw, other.headers, {
      mobile,
      bene_id: other_bene,
      amount: 1,
      txn_type: 'IMPS',
    });
    assert.equal(elsewhere.status, 422);
    assert.equal(elsewhere.body.error.code, 'monthly_limit_exceeded');
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('a configured monthly limit and slabs are used', async () => {
  const gw = await startPaymentsGateway(
    paymentsConfig({
      dmt: {
        monthly_limit: 1_000,
        per_txn_limit: 600,
        charges: { IMPS: [{ up_to: 600, flat: 2.5, pct: 0.5 }], NEFT: [{ up_to: 600, flat: 1 }] },
      },
    }),
  );
  try {
    const { headers } = await onboard(gw, 5_000, { dmt: true });
    await verifiedRemitter(gw, headers, '9876500088');
    const bene = await addBeneficiary(gw, headers, '9876500088', '423456789012');
    const remitter = await request(`${gw.url}/api/dmt/remitter/9876500088`, { headers });
    assert.equal(remitter.body.data.monthly_limit, 1_000);
    const first = await transferWithOtp(gw, headers, {
      mobile: '9876500088',
      bene_id: bene,
      amount: 600,
      txn_type: 'IMPS',
    });
    assert.equal(first.body.data.charges, 5.5, '2.50 + 0.5 % of 600');
    // 600.01 would be two parts (600 + 0.01), but the month has 400 left
    const over_txn = await transferWithOtp(gw, headers, {
      mobile: '9876500088',
      bene_id: bene,
      amount: 600.01,
      txn_type: 'IMPS',
    });
    assert.equal(over_txn.status, 422);
    assert.equal(over_txn.body.error.code, 'monthly_limit_exceeded');
    const second = await transferWithOtp(gw, headers, {
      mobile: '9876500088',
      bene_id: bene,
      amount: 401,
      txn_type: 'NEFT',
    });
    assert.equal(second.status, 422);
    assert.equal(second.body.error.code, 'monthly_limit_exceeded');
    const fits = await transferWithOtp(gw, headers, {
      mobile: '9876500088',
      bene_id: bene,
      amount: 400,
      txn_type: 'NEFT',
    });
    assert.equal(fits.body.data.charges, 1);
    await waitFinal(gw, headers, fits.body.data.reference_id);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});
