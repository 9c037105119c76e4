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
