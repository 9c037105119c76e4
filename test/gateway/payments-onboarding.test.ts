// The whole onboarding and recharge flow over HTTP against the real gateway process, with
// every refusal on the way (issue 4, "Tests that must exist").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { admin, request, runVerify, waitForOutput } from './helpers.ts';
import {
  VALID_KYC,
  aadhaar,
  balance,
  onboard,
  startPaymentsGateway,
} from '../support/payments-helpers.ts';

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n',
);
const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.alloc(64, 7),
]);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

async function multipart(
  url: string,
  headers: Record<string, string>,
  fields: Record<string, string>,
  files: Array<[string, Buffer, string]>,
) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  for (const [name, bytes, filename] of files)
    form.append(name, new Blob([new Uint8Array(bytes)]), filename);
  const response = await fetch(url, { method: 'POST', headers, body: form });
  return { status: response.status, body: (await response.json()) as any };
}

test('register → eKYC → approval → activation → credit → recharge, refusing every wrong step', async () => {
  const gw = await startPaymentsGateway();
  const api = admin(gw);
  try {
    // Register: AI on, payments off.
    const registered = await request(`${gw.url}/api/register`, {
      body: { email: 'Owner@Shop.in', password: 'correct horse battery', name: 'Shop Owner' },
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    assert.equal(registered.body.status, true);
    const { account_id, api_key } = registered.body.data;
    assert.match(api_key, /^sk-aihub-/);
    assert.deepEqual(registered.body.data.services, {
      ai: true,
      recharge: false,
      dmt: false,
      pan: false,
      bills: false,
    });
    const again = await request(`${gw.url}/api/register`, {
      body: { email: 'owner@shop.in', password: 'another password', name: 'X' },
    });
    assert.equal(again.status, 409);
    const weak = await request(`${gw.url}/api/register`, {
      body: { email: 'b@shop.in', password: 'short', name: 'X' },
    });
    assert.equal(weak.status, 400);
    assert.equal(weak.body.error.field, 'password');
    const key = { 'x-api-key': api_key };
    const recharge = (body: unknown, headers: Record<string, string> = key) =>
      request(`${gw.url}/api/recharge`, { headers, body });

    // Before activation: 403, and nothing is held.
    const inactive = await recharge({ operator_id: 1, number: '9876543210', amount: 10 });
    assert.equal(inactive.status, 403);
    assert.equal(inactive.body.error.code, 'service_inactive');

    // eKYC: each bad number is refused with its field named.
    const kyc = (body: unknown) => request(`${gw.url}/api/kyc`, { headers: key, body });
    const bad_aadhaar = await kyc({ ...VALID_KYC, aadhaar_number: '2341 2341 2347' });
    assert.equal(bad_aadhaar.status, 400);
    assert.equal(bad_aadhaar.body.error.field, 'aadhaar_number');
    assert.match(bad_aadhaar.body.message, /Verhoeff/);
    const aadhaar_from_1 = await kyc({ ...VALID_KYC, aadhaar_number: aadhaar('12341234123') });
    assert.equal(aadhaar_from_1.body.error.field, 'aadhaar_number');
    const bad_pan = await kyc({ ...VALID_KYC, pan_number: 'AAPF0939F' });
    assert.equal(bad_pan.status, 400);
    assert.equal(bad_pan.body.error.field, 'pan_number');
    const bad_gstin = await kyc({ ...VALID_KYC, gstin: '27AAPFU0939F1ZW' });
    assert.equal(bad_gstin.status, 400);
    assert.equal(bad_gstin.body.error.field, 'gstin');
    assert.match(bad_gstin.body.message, /mod-36/);
    const other_pan_gstin = await kyc({ ...VALID_KYC, gstin: '29AAGCB7383J1Z4' });
    assert.equal(other_pan_gstin.body.error.field, 'gstin');
    assert.equal((await request(`${gw.url}/api/kyc`, { headers: key })).body.data.status, 'none');

    // Documents: wrong type 415, too large 413, unknown field 400; nothing is stored for a refused upload.
    const text_file = await multipart(`${gw.url}/api/kyc`, key, VALID_KYC, [
      ['pan_document', Buffer.from('not a document'), 'pan.txt'],
    ]);
    assert.equal(text_file.status, 415);
    assert.equal(text_file.body.error.field, 'pan_document');
    const huge = await multipart(`${gw.url}/api/kyc`, key, VALID_KYC, [
      ['pan_document', Buffer.concat([PDF, Buffer.alloc(70 * 1024)]), 'pan.pdf'],
    ]);
    assert.equal(huge.status, 413);
    const unknown = await multipart(`${gw.url}/api/kyc`, key, VALID_KYC, [
      ['selfie', PNG, 'me.png'],
    ]);
    assert.equal(unknown.status, 400);
    // (Uploads are written to disk as they arrive, so the directory may exist; no file is left in it.)
    const documents_dir = join(gw.data_dir, 'kyc-documents');
    assert.deepEqual(existsSync(documents_dir) ? filesUnder(documents_dir) : [], []);

    // A valid submission with two documents.
    const submitted = await multipart(`${gw.url}/api/kyc`, key, VALID_KYC, [
      ['aadhaar_document', PNG, 'aadhaar.png'],
      ['pan_document', PDF, 'pan.pdf'],
    ]);
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body));
    assert.equal(submitted.body.data.status, 'submitted');
    assert.equal(submitted.body.data.aadhaar_number, 'XXXX-XXXX-2346');
    assert.deepEqual(
      submitted.body.data.documents.map((d: any) => [d.kind, d.content_type, d.size_bytes]),
      [
        ['aadhaar', 'image/png', PNG.length],
        ['pan', 'application/pdf', PDF.length],
      ],
    );
    const stored = filesUnder(join(gw.data_dir, 'kyc-documents'));
    assert.equal(stored.length, 2);
    for (const file of stored)
      assert.ok(
        !readFileSync(file).includes(PDF.subarray(0, 24)) &&
          !readFileSync(file).includes(PNG.subarray(8)),
        `${file} is sealed, not plaintext`,
      );
    assert.equal(
      (await kyc(VALID_KYC)).status,
      409,
      'a second submission while one is under review',
    );

    // Activation before approval is refused; the admin lists, approves, activates.
    const early = await api.post(`/admin/accounts/${account_id}/services`, { recharge: true });
    assert.equal(early.status, 409);
    assert.equal(early.body.error.code, 'kyc_not_approved');
    const listed = await api.get('/admin/kyc?status=submitted');
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.data.map((s: any) => s.account_id),
      [account_id],
    );
    const document_id = listed.body.data[0].documents[1].id;
    const download = await fetch(`${gw.url}/admin/kyc/${account_id}/documents/${document_id}`, {
      headers: { authorization: `Bearer ${gw.admin_token}` },
    });
    assert.equal(download.status, 200);
    assert.ok(Buffer.from(await download.arrayBuffer()).equals(PDF));
    const approved = await api.post(`/admin/kyc/${account_id}/approve`, {});
    assert.equal(approved.status, 200);
    assert.equal(approved.body.status, 'approved');
    assert.equal(
      (await request(`${gw.url}/api/kyc`, { headers: key })).body.data.status,
      'approved',
    );
    const activated = await api.post(`/admin/accounts/${account_id}/services`, { recharge: true });
    assert.equal(activated.status, 200);
    assert.equal(activated.body.services.recharge, true);
    assert.equal(activated.body.services.dmt, false, 'services are activated one by one');

    // Balance too low: 402 before any money moves.
    const poor = await recharge({ operator_id: 1, number: '9876543210', amount: 10 });
    assert.equal(poor.status, 402);
    assert.equal(poor.body.error.code, 'insufficient_balance');
    assert.equal(
      (await api.post(`/admin/accounts/${account_id}/credit`, { amount: 500, reference: 'bank-1' }))
        .status,
      200,
    );

    // Auth refusals.
    assert.equal(
      (await recharge({ operator_id: 1, number: '9876543210', amount: 10 }, {})).status,
      401,
    );
    const unknown_key = await recharge(
      { operator_id: 1, number: '9876543210', amount: 10 },
      { 'x-api-key': 'sk-aihub-nope' },
    );
    assert.equal(unknown_key.status, 401);
    assert.equal(unknown_key.body.status, false);

    // Bad input, field named each time.
    const bad = async (body: unknown, field: string) => {
      const reply = await recharge(body);
      assert.equal(reply.status, 400, JSON.stringify(reply.body));
      assert.equal(reply.body.error.field, field, JSON.stringify(reply.body));
    };
    await bad({ operator_id: 1, number: '5876543210', amount: 10 }, 'number');
    await bad({ operator_id: 1, number: '98765', amount: 10 }, 'number');
    await bad({ operator_id: 21, number: '9876543210', amount: 100 }, 'number'); // a DTH id, not a mobile
    await bad({ operator_id: 999, number: '9876543210', amount: 10 }, 'operator_id');
    await bad({ operator_id: 1, number: '9876543210', amount: 0 }, 'amount');
    await bad({ operator_id: 1, number: '9876543210', amount: 10.005 }, 'amount');
    await bad({ operator_id: 1, number: '9876543210', amount: 5 }, 'amount'); // below the operator's minimum
    await bad({ operator_id: 1, number: '9876543210', amount: '10' }, 'amount');
    await bad({ operator_id: 1, number: '9876543210', amount: 10, extra: 1 }, 'extra');
    assert.equal(await balance(gw, key), 500, 'refusals move no money');

    // Success: the amount goes, the commission comes back as its own posting.
    const ok = await recharge({ operator_id: 1, number: '+91 98765 43210', amount: 199 });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.status, true);
    assert.equal(ok.body.txn_id, ok.body.data.txn_id);
    assert.equal(ok.body.data.status, 'success');
    assert.equal(ok.body.data.operator, 'Airtel');
    assert.equal(ok.body.data.number, '9876543210');
    assert.equal(ok.body.data.commission, 4.97); // 2.5 % of 199 = 4.975, rounded down to the paisa
    // Credited net of TDS (section 194H: 2 % of 4.97 = 0.0994, rounded to the paisa).
    assert.equal(ok.body.data.tds, 0.1);
    assert.equal(ok.body.data.commission_credited, 4.87);
    assert.equal(ok.body.data.balance, 305.87);
    assert.equal(await balance(gw, key), 305.87);

    // Duplicate window: same number and amount without a key → 409, unless allow_duplicate.
    const duplicate = await recharge({ operator_id: 1, number: '9876543210', amount: 199 });
    assert.equal(duplicate.status, 409);
    assert.equal(duplicate.body.error.code, 'duplicate_transaction');
    const on_purpose = await recharge({
      operator_id: 1,
      number: '9876543210',
      amount: 199,
      allow_duplicate: true,
    });
    assert.equal(on_purpose.status, 200);
    assert.equal(on_purpose.body.data.status, 'success');
    assert.notEqual(on_purpose.body.txn_id, ok.body.txn_id);

    // Idempotent retry: the first answer again, money moved once; another body under the key → 409.
    const idem = { ...key, 'idempotency-key': 'order-7781' };
    const first = await recharge({ operator_id: 1, number: '9123456789', amount: 49 }, idem);
    const before_retry = await balance(gw, key);
    const retry = await recharge({ operator_id: 1, number: '9123456789', amount: 49 }, idem);
    assert.equal(retry.status, 200);
    assert.deepEqual(retry.body, first.body);
    assert.equal(await balance(gw, key), before_retry);
    const other_body = await recharge({ operator_id: 1, number: '9123456789', amount: 50 }, idem);
    assert.equal(other_body.status, 409);
    assert.equal(other_body.body.error.code, 'idempotency_conflict');

    // client_ref works the same way, also for retries sent all at once.
    const before_parallel = await balance(gw, key);
    const parallel = await Promise.all(
      Array.from({ length: 8 }, () =>
        recharge({ operator_id: 3, number: '9000000123', amount: 20, client_ref: 'po-55' }),
      ),
    );
    assert.ok(parallel.every((reply) => reply.status === 200));
    assert.equal(
      new Set(parallel.map((reply) => reply.body.txn_id)).size,
      1,
      'one transaction for one client_ref',
    );
    // Vi: 3.5 % commission (0.70), credited net of 2 % TDS (0.014, rounded to 0.01)
    assert.equal(await balance(gw, key), Math.round((before_parallel - 20 + 0.69) * 100) / 100);
    const listed_txns = await request(
      `${gw.url}/api/transactions?service=recharge&status=success`,
      { headers: key },
    );
    assert.equal(listed_txns.body.data.total, 4);

    // IP whitelist: an address outside it gets 403 (and is logged); inside it passes; empty = anyone.
    const outside = await api.put(`/admin/accounts/${account_id}/ip-whitelist`, {
      ips: ['203.0.113.0/24', '2001:db8::/32'],
    });
    assert.equal(outside.status, 200);
    assert.deepEqual(outside.body.ip_whitelist, ['203.0.113.0/24', '2001:db8::/32']);
    const blocked = await recharge({ operator_id: 1, number: '9876543211', amount: 10 });
    assert.equal(blocked.status, 403);
    assert.equal(blocked.body.error.code, 'ip_not_allowed');
    assert.equal((await request(`${gw.url}/api/wallet/balance`, { headers: key })).status, 403);
    await waitForOutput(
      gw,
      (line) => line.includes('outside the IP whitelist') && line.includes(account_id),
      'about the refused address',
    );
    const bad_list = await api.put(`/admin/accounts/${account_id}/ip-whitelist`, {
      ips: ['10.0.0.0/8', '300.1.1.1'],
    });
    assert.equal(bad_list.status, 400);
    assert.equal(bad_list.body.error.param, 'ips.1');
    assert.equal(
      (await api.put(`/admin/accounts/${account_id}/ip-whitelist`, { ips: ['127.0.0.0/8'] }))
        .status,
      200,
    );
    assert.equal(
      (await recharge({ operator_id: 1, number: '9876543211', amount: 10 })).status,
      200,
    );
    assert.equal(
      (await api.put(`/admin/accounts/${account_id}/ip-whitelist`, { ips: [] })).status,
      200,
    );

    // The audit log has every admin action, with refused ones.
    const audit = await api.get(`/admin/audit?account_id=${account_id}&limit=100`);
    const actions = audit.body.data.map((r: any) => `${r.action}:${r.status}`);
    for (const expected of ['kyc.approve:200', 'account.services:200', 'account.ip_whitelist:200'])
      assert.ok(actions.includes(expected), `${expected} in ${actions}`);
    assert.ok(
      actions.some((a: string) => a.endsWith('/services:409')),
      'the refused activation is audited too',
    );
    assert.ok(
      actions.some((a: string) => a.includes('/credit:200')),
      'credits are audited',
    );

    // Only the last four Aadhaar digits reach the disk.
    assert.equal(await gw.stop(), 0);
    for (const file of filesUnder(gw.data_dir)) {
      const text = readFileSync(file, 'latin1');
      assert.ok(
        !text.includes('234123412346') && !text.includes('2341 2341 2346'),
        `${file} holds the full Aadhaar number`,
      );
    }
    const verify = await runVerify(gw.data_dir);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  } finally {
    await gw.stop();
  }
});

test('operators: prepaid, postpaid, DTH and electricity with commission and bounds; rejection with a reason', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers, account_id } = await onboard(gw, 0);
    const all = await request(`${gw.url}/api/operators`, { headers });
    assert.equal(all.status, 200);
    assert.deepEqual([...new Set(all.body.data.map((o: any) => o.type))].sort(), [
      'dth',
      'electricity',
      'postpaid',
      'prepaid',
    ]);
    for (const operator of all.body.data) {
      assert.deepEqual(Object.keys(operator).slice(0, 6), [
        'operator_id',
        'name',
        'type',
        'commission_pct',
        'min_amount',
        'max_amount',
      ]);
      assert.ok(operator.min_amount > 0 && operator.min_amount <= operator.max_amount);
    }
    const dth = await request(`${gw.url}/api/operators?type=dth`, { headers });
    assert.ok(dth.body.data.length > 0 && dth.body.data.every((o: any) => o.type === 'dth'));
    assert.equal((await request(`${gw.url}/api/operators?type=gas`, { headers })).status, 400);
    assert.equal((await request(`${gw.url}/api/operators`)).status, 401);

    // A second account is rejected with a reason, then resubmits.
    const other = await request(`${gw.url}/api/register`, {
      body: { email: 'second@shop.in', password: 'correct horse battery', name: 'Second' },
    });
    const other_key = { 'x-api-key': other.body.data.api_key };
    await request(`${gw.url}/api/kyc`, { headers: other_key, body: VALID_KYC });
    const api = admin(gw);
    assert.equal(
      (await api.post(`/admin/kyc/${other.body.data.account_id}/reject`, {})).status,
      400,
      'a rejection needs a reason',
    );
    const rejected = await api.post(`/admin/kyc/${other.body.data.account_id}/reject`, {
      reason: 'PAN document unreadable',
    });
    assert.equal(rejected.status, 200);
    const seen = await request(`${gw.url}/api/kyc`, { headers: other_key });
    assert.deepEqual(
      [seen.body.data.status, seen.body.data.reason],
      ['rejected', 'PAN document unreadable'],
    );
    assert.equal(
      (await api.post(`/admin/accounts/${other.body.data.account_id}/services`, { recharge: true }))
        .status,
      409,
    );
    assert.equal(
      (await api.post(`/admin/kyc/${other.body.data.account_id}/approve`, {})).status,
      409,
      'only a submission under review is decided',
    );
    const resubmitted = await request(`${gw.url}/api/kyc`, { headers: other_key, body: VALID_KYC });
    assert.equal(resubmitted.body.data.status, 'submitted');
    assert.equal(resubmitted.body.data.submissions, 2);
    assert.equal((await api.get(`/admin/kyc?status=approved`)).body.data[0].account_id, account_id);
  } finally {
    await gw.stop();
  }
});
