// Issue #35, the eKYC and formats rows: identity numbers are checked once, by the rules of
// gateway/payments/identity/, in every request shape that takes them, over real HTTP against
// the real gateway (on PostgreSQL too in the suite's PostgreSQL pass: the duplicate index is
// the store's). Each refusal is a 400 in the /api error shape naming the field, and charges
// nothing. Then duplicates flagged to the admin, and IMPS/NEFT references dated in IST.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { admin, request, tempDir, type Gateway } from './helpers.ts';
import {
  VALID_KYC,
  aadhaar,
  addBeneficiary,
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  transferWithOtp,
  verifiedRemitter,
  waitFinal,
} from '../support/payments-helpers.ts';
import { inProcessGateway } from '../support/route-table.ts';
import { dashboardSession } from '../support/dashboard-session.ts';
import { Store } from '../../gateway/store/store.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

/** A 400 in the /api error shape naming `field`, with `code`. */
function refused(reply: { status: number; body: any }, field: string, code: string) {
  assert.equal(reply.status, 400, JSON.stringify(reply.body));
  assert.equal(reply.body.status, false);
  assert.equal(reply.body.error.field, field, JSON.stringify(reply.body));
  assert.equal(reply.body.error.code, code, JSON.stringify(reply.body));
  assert.match(reply.body.message, new RegExp(`^${field}: `));
}

async function register(gw: Gateway, name: string) {
  const registered = await request(`${gw.url}/api/register`, {
    body: {
      email: `${name}-${process.pid}-${Date.now()}@example.com`,
      password: 'correct horse battery',
      name,
    },
  });
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  return {
    account_id: registered.body.data.account_id as string,
    headers: { 'x-api-key': registered.body.data.api_key as string },
  };
}

/** An eKYC submission as a form (multipart/form-data, what a browser or curl -F sends), with one PDF. */
async function postForm(
  url: string,
  headers: Record<string, string>,
  fields: Record<string, string>,
) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  form.append(
    'pan_document',
    new Blob([new Uint8Array(Buffer.from('%PDF-1.4\n%%EOF\n'))]),
    'pan.pdf',
  );
  const response = await fetch(url, { method: 'POST', headers, body: form });
  return { status: response.status, body: (await response.json()) as any };
}

describe('identity numbers at the /api edge', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startPaymentsGateway();
  });
  after(async () => {
    await gw.stop();
  });

  test('eKYC: a PAN whose 4th character is no holder type and a name with a NUL are refused, JSON and multipart; nothing is stored', async () => {
    const { headers } = await register(gw, 'kyc-refusals');
    const send = (body: Record<string, string>) => request(`${gw.url}/api/kyc`, { headers, body });
    // /api/pan-find refuses ABCQE1234F (Q is no holder status); eKYC must too.
    // Without a GSTIN, whose PAN would have to match: the PAN alone decides.
    const { gstin: _gstin, ...no_gstin } = VALID_KYC;
    refused(await send({ ...no_gstin, pan_number: 'ABCQE1234F' }), 'pan_number', 'invalid_pan');
    refused(await send({ ...VALID_KYC, name: 'Asha\u0000Verma' }), 'name', 'invalid_name');
    refused(await send({ ...VALID_KYC, name: 'आशा वर्मा' }), 'name', 'invalid_name');
    refused(
      await send({ ...VALID_KYC, aadhaar_number: '2341 2341 2347' }),
      'aadhaar_number',
      'invalid_aadhaar',
    );
    const form = (fields: Record<string, string>) => postForm(`${gw.url}/api/kyc`, headers, fields);
    refused(await form({ ...no_gstin, pan_number: 'ABCQE1234F' }), 'pan_number', 'invalid_pan');
    refused(await form({ ...VALID_KYC, name: 'Asha\u0000Verma' }), 'name', 'invalid_name');
    const kyc = await request(`${gw.url}/api/kyc`, { headers });
    assert.equal(kyc.body.data.status, 'none');
  });

  test('DMT: an IFSC of no bank, accounts of 8 and 19 digits or all zeros, a Devanagari or NUL name are refused', async () => {
    const { headers } = await onboard(gw, 1_000, { dmt: true });
    const mobile = '9876512345';
    const remitter = (name: string) =>
      request(`${gw.url}/api/dmt/remitter`, { headers, body: { mobile, name } });
    refused(await remitter('रवि कुमार'), 'name', 'invalid_name');
    refused(await remitter('Ravi\u0000Kumar'), 'name', 'invalid_name');
    const registered = await remitter('Ravi Kumar');
    assert.equal(registered.status, 200, JSON.stringify(registered.body));
    const otp = await request(`${gw.url}/api/dmt/remitter/verify`, {
      headers,
      body: { mobile, otp: registered.body.data.sandbox_otp },
    });
    assert.equal(otp.status, 200, JSON.stringify(otp.body));
    // The remitter's KYC takes an Aadhaar number by the same rule, and a name too.
    const ovd = (document_number: string, name = 'Ravi Kumar') =>
      request(`${gw.url}/api/dmt/remitter/kyc`, {
        headers,
        body: { mobile, document_type: 'aadhaar', document_number, name },
      });
    const bad_ovd = await ovd('234123412347');
    assert.equal(bad_ovd.status, 400, JSON.stringify(bad_ovd.body));
    assert.equal(bad_ovd.body.error.field, 'document_number');
    refused(await ovd(aadhaar(), 'Ravi\u0000Kumar'), 'name', 'invalid_name');
    assert.equal((await ovd(aadhaar())).status, 200);
    const bene = (fields: Record<string, string>) =>
      request(`${gw.url}/api/dmt/beneficiary`, {
        headers,
        body: {
          mobile,
          name: 'Sunita Rao',
          account_number: '123456789012',
          ifsc: 'SBIN0001234',
          ...fields,
        },
      });
    refused(await bene({ ifsc: 'ZZZZ0001234' }), 'ifsc', 'invalid_ifsc');
    refused(await bene({ account_number: '12345678' }), 'account_number', 'invalid_account_number');
    refused(
      await bene({ account_number: '1234567890123456789' }),
      'account_number',
      'invalid_account_number',
    );
    refused(
      await bene({ account_number: '000000000000' }),
      'account_number',
      'invalid_account_number',
    );
    refused(await bene({ name: 'सुनीता राव' }), 'name', 'invalid_name');
    refused(await bene({ mobile: '5876512345' }), 'mobile', 'invalid_mobile');
    const listed = await request(`${gw.url}/api/dmt/beneficiary?mobile=${mobile}`, { headers });
    assert.equal(listed.body.data.length, 0, 'nothing was added');
    // A good one: the bank's name comes from the IFSC directory.
    const added = await bene({});
    assert.equal(added.status, 200, JSON.stringify(added.body));
    assert.equal(added.body.data.bank, 'State Bank of India');
  });

  test('PAN verification: a dob of 2023-02-30, or in the future, is refused and charged nothing', async () => {
    const { headers } = await onboard(gw, 100, { pan: true });
    const before_balance = await balance(gw, headers);
    const verify = (dob: string) =>
      request(`${gw.url}/api/pan/verify`, {
        headers,
        body: { pan_number: 'ABCPE1234F', variant: 'name_dob', name: 'Asha Verma', dob },
      });
    refused(await verify('2023-02-30'), 'dob', 'invalid_date');
    refused(await verify('2999-01-01'), 'dob', 'invalid_date');
    refused(
      await request(`${gw.url}/api/pan/verify`, {
        headers,
        body: { pan_number: 'ABCQE1234F', variant: 'basic' },
      }),
      'pan_number',
      'invalid_pan',
    );
    assert.equal(await balance(gw, headers), before_balance, 'nothing was charged');
    const history = await request(`${gw.url}/api/transactions?service=pan`, { headers });
    assert.equal(history.body.data.total, 0, JSON.stringify(history.body));
    // A real date of birth goes through (and is charged).
    const ok = await verify('1983-05-19');
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.ok((await balance(gw, headers)) < before_balance);
  });

  test('BBPS customer PAN and mobile, recharge numbers: the same rules', async () => {
    const { headers } = await onboard(gw, 1_000, { recharge: true, bills: true });
    const recharge = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 1, number: '5876543210', amount: 199 },
    });
    assert.equal(recharge.status, 400, JSON.stringify(recharge.body));
    assert.equal(recharge.body.error.field, 'number');
    // A fetched bill, paid as BBPS asks in every respect but the customer's PAN.
    const fetched = await request(`${gw.url}/api/bills/fetch`, {
      headers,
      body: { biller_id: 'LIC', params: { policy_number: '123456789' } },
    });
    assert.equal(fetched.status, 200, JSON.stringify(fetched.body));
    const pay = await request(`${gw.url}/api/bills/pay`, {
      headers,
      body: {
        biller_id: 'LIC',
        params: { policy_number: '123456789' },
        bill_id: fetched.body.data.bill_id,
        amount: fetched.body.data.amount,
        customer_mobile: '9876543210',
        customer_pan: 'ABCQE1234F',
      },
    });
    assert.equal(pay.status, 400, JSON.stringify(pay.body));
    assert.equal(pay.body.error.field, 'customer_pan');
    assert.equal(pay.body.error.code, 'invalid_pan');
  });
});

describe('duplicate Aadhaar and PAN across accounts', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startPaymentsGateway();
  });
  after(async () => {
    await gw.stop();
  });

  test('one Aadhaar and one PAN on two accounts: both submissions accepted, each flagged with the other in the admin API', async () => {
    const api = admin(gw);
    const shared = {
      name: 'Suresh Patil',
      aadhaar_number: aadhaar('98765432109'),
      pan_number: 'AKJPS7788K',
    };
    const a = await register(gw, 'shop-one');
    const b = await register(gw, 'shop-two');
    const c = await register(gw, 'elsewhere');
    for (const [who, kyc] of [
      [a, shared],
      // The same number typed with spaces is the same number.
      [
        b,
        {
          ...shared,
          aadhaar_number: shared.aadhaar_number.replace(/(\d{4})/g, '$1 ').trim(),
          pan_number: 'akjps7788k',
        },
      ],
      [c, { ...shared, aadhaar_number: aadhaar('98765432110'), pan_number: 'AKJPS7789K' }],
    ] as const) {
      const reply = await request(`${gw.url}/api/kyc`, { headers: who.headers, body: kyc });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
    }
    const one = await api.get(`/admin/kyc/${a.account_id}`);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.deepEqual(one.body.duplicates, {
      aadhaar: { count: 1, accounts: [{ account_id: b.account_id, status: 'submitted' }] },
      pan: { count: 1, accounts: [{ account_id: b.account_id, status: 'submitted' }] },
    });
    const third = await api.get(`/admin/kyc/${c.account_id}`);
    assert.deepEqual(third.body.duplicates, {
      aadhaar: { count: 0, accounts: [] },
      pan: { count: 0, accounts: [] },
    });
    // The number itself is nowhere in the answer: only its last four digits.
    assert.ok(!JSON.stringify(one.body).includes(shared.aadhaar_number));
    const list = await api.get('/admin/kyc?status=submitted&limit=500');
    assert.equal(list.status, 200);
    const listed = new Map<string, any>(list.body.data.map((s: any) => [s.account_id, s]));
    assert.deepEqual(
      listed.get(b.account_id).duplicates.aadhaar.accounts.map((x: any) => x.account_id),
      [a.account_id],
    );
    assert.equal(listed.get(c.account_id).duplicates.pan.count, 0);
    // The admin's eKYC page shows the flag beside the number, with the other account.
    const cookie = await dashboardSession(gw.url, '/admin/login', { token: gw.admin_token });
    const page = await (
      await fetch(`${gw.url}/admin/console/kyc?status=submitted`, { headers: { cookie } })
    ).text();
    const card = page.slice(page.indexOf(`id="kyc-${a.account_id}"`));
    const mine = card.slice(0, card.indexOf('</section>'));
    assert.match(mine, /data-duplicate="aadhaar">also on 1 other account:/);
    assert.match(mine, /data-duplicate="pan">also on 1 other account:/);
    assert.ok(mine.includes(`/admin/console/accounts/${b.account_id}`), mine);
    const theirs = page.slice(page.indexOf(`id="kyc-${c.account_id}"`));
    assert.ok(!theirs.slice(0, theirs.indexOf('</section>')).includes('data-duplicate'));
  });
});

test('IMPS RRN and NEFT UTR are dated in IST: at 20:00 UTC it is 01:30 of the next day in India', async () => {
  const data_dir = tempDir('aihub-ist-');
  const config_file = join(tempDir('aihub-ist-config-'), 'config.json');
  writeFileSync(config_file, JSON.stringify(paymentsConfig()));
  // 31 December 2025, 20:00 UTC: 1 January 2026, 01:30 IST (year 6, day 001, hour 01).
  let now_ms = Date.parse('2025-12-31T20:00:00Z');
  const clock = { now: () => new Date(now_ms) };
  const store = await Store.open(data_dir, { history_tags: PAYMENT_HISTORY_TAGS, now: clock.now });
  const ADMIN_TOKEN = 'ist-admin-token';
  const token_hash = createHash('sha256').update(ADMIN_TOKEN).digest('hex');
  const built = inProcessGateway(store, data_dir, token_hash, { clock, config_file });
  const server = createServer(built.gateway.handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const gw = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    admin_token: ADMIN_TOKEN,
  } as Gateway;
  built.payments.start();
  try {
    const { headers } = await onboard(gw, 50_000, { dmt: true });
    const mobile = '9876598765';
    await verifiedRemitter(gw, headers, mobile);
    const bene_id = await addBeneficiary(gw, headers, mobile, '123456789012');
    const imps = await transferWithOtp(gw, headers, {
      mobile,
      bene_id,
      amount: 1_000,
      txn_type: 'IMPS',
    });
    assert.equal(imps.status, 200, JSON.stringify(imps.body));
    assert.equal(imps.body.data.status, 'success', JSON.stringify(imps.body));
    // UTC would give 5365 20: year 5, day 365, hour 20.
    assert.match(imps.body.data.utr, /^600101\d{6}$/, imps.body.data.utr);
    const neft = await transferWithOtp(gw, headers, {
      mobile,
      bene_id,
      amount: 1_001,
      txn_type: 'NEFT',
    });
    assert.equal(neft.status, 200, JSON.stringify(neft.body));
    // NEFT settles in a batch: pending at first, its UTR given on the status check a minute on.
    now_ms += 60_000;
    const settled = await waitFinal(gw, headers, neft.body.data.reference_id);
    assert.equal(settled.status, 'success', JSON.stringify(settled));
    const utr = settled.utr ?? settled.result?.utr;
    assert.match(String(utr), /^[A-Z]{4}N6001\d{7}$/, JSON.stringify(settled));
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await built.payments.stop();
    await built.close();
    await store.close();
  }
});
