// PAN lookup over HTTP against the real gateway: the seed's answer shape (no message on
// success), holder types, the exact fee, malformed and not-found PANs costing nothing,
// failover between the two sandbox providers, idempotent retries; `verify` after each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from './helpers.ts';
import {
  balance,
  ledgerBalances,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
} from '../support/payments-helpers.ts';

test('PAN lookup: found, holder types, fee, malformed, not found, failover', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers } = await onboard(gw, 20, { pan: true });
    const find = (
      pan_number: unknown,
      extra: Record<string, unknown> = {},
      more: Record<string, string> = {},
    ) =>
      request(`${gw.url}/api/pan-find`, {
        headers: { ...headers, ...more },
        body: { pan_number, ...extra },
      });

    const found = await find('ABCPV1234F');
    assert.equal(found.status, 200, JSON.stringify(found.body));
    assert.equal(found.body.status, true);
    assert.ok(!('message' in found.body), 'no message on success, as the seed shows');
    assert.deepEqual(Object.keys(found.body.data).sort(), ['name', 'pan', 'type']);
    assert.equal(found.body.data.pan, 'ABCPV1234F');
    assert.equal(found.body.data.type, 'Individual');
    assert.match(
      found.body.data.name,
      /^[A-Z]+ V[A-Z]+$/,
      'a person whose surname starts with the 5th character',
    );
    assert.equal(found.body.fee, 2);
    assert.equal(await balance(gw, headers), 18);
    await verifyOk(gw);

    // lower case and spaces are accepted; the holder type follows the 4th character
    const expected: Record<string, string> = {
      C: 'Company',
      H: 'HUF',
      F: 'Firm',
      A: 'AOP',
      T: 'Trust',
      B: 'BOI',
      L: 'Local Authority',
      J: 'Artificial Juridical Person',
      G: 'Government',
    };
    let spent = 2;
    for (const [letter, type] of Object.entries(expected).slice(0, 3)) {
      const reply = await find(`abc${letter.toLowerCase()}d 5678 k`);
      assert.equal(reply.body.status, true, letter);
      assert.equal(reply.body.data.type, type, letter);
      assert.equal(reply.body.data.pan, `ABC${letter}D5678K`);
      spent += 2;
    }
    assert.equal(await balance(gw, headers), 20 - spent);

    // malformed: 400 naming pan_number, nothing charged, no transaction
    for (const bad of ['ABCDE1234', 'ABCDE12345', '1BCPE1234F', 'ABCXE1234F', 'ABCPE1234FF', '']) {
      const reply = await find(bad);
      assert.equal(reply.status, 400, bad);
      assert.equal(reply.body.status, false);
      assert.equal(reply.body.error.field, 'pan_number', bad);
    }
    const missing = await request(`${gw.url}/api/pan-find`, { headers, body: {} });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.field, 'pan_number');
    assert.equal(await balance(gw, headers), 20 - spent);

    // not found (digits 0000): status false, a clear message, no charge
    const before_not_found = await balance(gw, headers);
    const not_found = await find('ABCPE0000F');
    assert.equal(not_found.status, 200);
    assert.equal(not_found.body.status, false);
    assert.match(not_found.body.message, /no PAN record found for ABCPE0000F; nothing was charged/);
    assert.equal(not_found.body.error.code, 'pan_not_found');
    assert.equal(not_found.body.fee, 0);
    assert.equal(await balance(gw, headers), before_not_found);
    await verifyOk(gw);

    // 0004: the first provider times out, the second answers; 0005: nobody answers, no charge
    const failover = await find('ABCPE0004F');
    assert.equal(failover.body.status, true);
    spent += 2;
    const txn = await request(`${gw.url}/api/transactions/${failover.body.txn_id}`, { headers });
    assert.deepEqual(
      txn.body.data.attempts.map((a: any) => [a.provider, a.outcome]),
      [
        ['sandbox-a', 'unavailable'],
        ['sandbox-b', 'success'],
      ],
    );
    const down = await find('ABCPE0005F');
    assert.equal(down.body.status, false);
    assert.equal(down.body.error.code, 'lookup_failed');
    assert.equal(await balance(gw, headers), 20 - spent);

    // the same PAN twice is two lookups; with an Idempotency-Key it is one
    const first = await find('ABCPE4321Q', {}, { 'Idempotency-Key': 'pan-1' });
    const retry = await find('ABCPE4321Q', {}, { 'Idempotency-Key': 'pan-1' });
    assert.deepEqual(retry.body, first.body);
    spent += 2;
    assert.equal(await balance(gw, headers), 20 - spent);

    // 402 when the wallet cannot pay the fee, and nothing moves
    const poor = await onboard(gw, 1, { pan: true });
    const refused = await request(`${gw.url}/api/pan-find`, {
      headers: poor.headers,
      body: { pan_number: 'ABCPE1111F' },
    });
    assert.equal(refused.status, 402);
    assert.equal(await balance(gw, poor.headers), 1);

    // the ledger: every fee is revenue:pan, less its GST (IGST: the account is in Maharashtra,
    // the operator in Karnataka), ₹2 = 1.69 + 0.31
    const balances = await ledgerBalances(gw);
    assert.equal(balances['revenue:pan']! + balances['gst:igst']!, spent * 1e6);
    assert.equal(balances['gst:igst'], (spent / 2) * 310_000);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('PAN fee is configurable, and the service must be active', async () => {
  const gw = await startPaymentsGateway(paymentsConfig({ pan: { fee: 1.25 } }));
  try {
    const { headers } = await onboard(gw, 5, { pan: true });
    const reply = await request(`${gw.url}/api/pan-find`, {
      headers,
      body: { pan_number: 'AAAGP9999Z' },
    });
    assert.equal(reply.body.data.type, 'Government');
    assert.equal(reply.body.fee, 1.25);
    assert.equal(await balance(gw, headers), 3.75);
    const off = await onboard(gw, 5, { recharge: true });
    const refused = await request(`${gw.url}/api/pan-find`, {
      headers: off.headers,
      body: { pan_number: 'AAAGP9999Z' },
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'service_inactive');
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('PAN verification variants: status, name and date-of-birth flags, Aadhaar seeding, one fee each', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers } = await onboard(gw, 100, { pan: true });
    const verify = (body: Record<string, unknown>) =>
      request(`${gw.url}/api/pan/verify`, { headers, body });
    // The holder's name from a lookup; the sandbox's date of birth is 1980-01-01 + the digits in days.
    const holder = (
      await request(`${gw.url}/api/pan-find`, { headers, body: { pan_number: 'ABCPE1234F' } })
    ).body.data.name as string;
    let spent = 2;

    const status = await verify({ pan_number: 'ABCPE1234F', variant: 'status' });
    assert.equal(status.status, 200, JSON.stringify(status.body));
    assert.deepEqual(status.body.data, {
      pan: 'ABCPE1234F',
      variant: 'status',
      pan_status: 'valid',
      valid: true,
      type: 'Individual',
    });
    assert.equal(status.body.fee, 1);
    spent += 1;

    const matched = await verify({
      pan_number: 'ABCPE1234F',
      variant: 'name_dob',
      name: holder.toLowerCase(),
      dob: '1983-05-19',
    });
    assert.equal(matched.body.data.name_match, true);
    assert.equal(matched.body.data.dob_match, true);
    assert.equal(matched.body.data.name, undefined, "name_dob does not give the holder's name");
    assert.equal(matched.body.fee, 3);
    assert.equal(matched.body.tax.igst, 0.46, 'its GST: ₹3 = 2.54 + 0.46 IGST');
    spent += 3;
    const mismatched = await verify({
      pan_number: 'ABCPE1234F',
      variant: 'name_dob',
      name: 'Somebody Else',
      dob: '1983-05-20',
    });
    assert.deepEqual(
      [mismatched.body.data.name_match, mismatched.body.data.dob_match],
      [false, false],
    );
    spent += 3;

    const seeding = await verify({ pan_number: 'ABCPE0008F', variant: 'aadhaar_seeding' });
    assert.equal(seeding.body.data.aadhaar_seeding, 'N');
    const company = await verify({ pan_number: 'ABCCE1234F', variant: 'aadhaar_seeding' });
    assert.equal(company.body.data.aadhaar_seeding, 'NA', 'a company has no Aadhaar');
    spent += 6;

    for (const [pan, expected] of [
      ['ABCPE0000F', 'fake'],
      ['ABCPE0006F', 'deactivated'],
      ['ABCPE0007F', 'deleted'],
    ]) {
      const reply = await verify({ pan_number: pan, variant: 'status' });
      assert.equal(reply.body.data.pan_status, expected, pan);
      assert.equal(reply.body.data.valid, false);
      spent += 1;
    }

    const full = await verify({
      pan_number: 'ABCPE1234F',
      variant: 'comprehensive',
      name: holder,
      dob: '1983-05-19',
    });
    assert.equal(full.body.data.name, holder);
    assert.equal(full.body.data.aadhaar_seeding, 'Y');
    assert.equal(full.body.fee, 5);
    spent += 5;

    const missing = await verify({ pan_number: 'ABCPE1234F', variant: 'name_dob', name: 'X' });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.field, 'dob');
    const unknown = await verify({ pan_number: 'ABCPE1234F', variant: 'everything' });
    assert.equal(unknown.body.error.field, 'variant');
    assert.equal(await balance(gw, headers), 100 - spent);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});
