// Distributors and retailers over HTTP against a real gateway (issue #28): the admin makes a
// distributor and gives it a scheme; the distributor onboards a retailer (who still passes
// eKYC and the admin's activation), gives it a scheme within its margin (above it: 409),
// funds it once per reference, and earns an override on its transactions, credited net of
// TDS to its own wallet, its slab named; it sees its retailers' transactions, no one else's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admin, request } from './helpers.js';
import { pdfText } from '../support/payments-pdf.ts';
import {
  VALID_KYC,
  balance,
  ledgerBalances,
  onboard,
  startPaymentsGateway,
  verifyOk,
} from '../support/payments-helpers.js';
import { dashboardSession } from '../support/dashboard-session.ts';

test('network: distributor, schemes within its margin, a retailer funded once per reference, the override posted net of TDS', async () => {
  const gw = await startPaymentsGateway();
  try {
    const api = admin(gw);
    const d = await onboard(gw, 2_000, { recharge: true });
    const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
      request(`${gw.url}${path}`, { method, headers, ...(body ? { body } : {}) });

    // Not a distributor yet: its network routes are refused.
    const early = await call('POST', '/api/network/retailers', d.headers, {
      email: 'early@example.com',
      password: 'correct horse battery',
      name: 'Early',
    });
    assert.equal(early.status, 403);
    assert.equal(early.body.error.code, 'not_a_distributor');

    // The admin: a scheme for the distributor, and the role.
    const gold = await api.post('/admin/schemes', {
      name: 'Gold',
      slabs: [
        { id: 'airtel', service: 'recharge', operator: 1, type: 'percent', value: 3, cap: 50 },
        { id: 'any', service: 'recharge', type: 'percent', value: 2 },
      ],
    });
    assert.equal(gold.status, 201, JSON.stringify(gold.body));
    const set = await api.put(`/admin/accounts/${d.account_id}/network`, {
      role: 'distributor',
      scheme_id: gold.body.scheme_id,
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.equal(set.body.role, 'distributor');

    // The distributor onboards a retailer: a new account under it, services off until eKYC and activation.
    const created = await call('POST', '/api/network/retailers', d.headers, {
      email: `retailer-${Date.now()}@example.com`,
      password: 'correct horse battery',
      name: 'Corner Shop',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const r = {
      account_id: created.body.data.account_id as string,
      headers: { 'x-api-key': created.body.data.api_key as string },
    };
    assert.equal(created.body.data.parent_id, d.account_id);
    const refused = await call('POST', '/api/recharge', r.headers, {
      operator_id: 1,
      number: '9876543210',
      amount: 100,
    });
    assert.equal(refused.status, 403, 'no service before eKYC and activation');
    assert.equal((await call('POST', '/api/kyc', r.headers, VALID_KYC)).status, 200);
    assert.equal((await api.post(`/admin/kyc/${r.account_id}/approve`, {})).status, 200);
    assert.equal(
      (await api.post(`/admin/accounts/${r.account_id}/services`, { recharge: true })).status,
      200,
    );

    // A retailer scheme above the distributor's margin is refused, naming where; within it, accepted.
    const greedy = await call('POST', '/api/network/schemes', d.headers, {
      name: 'Greedy',
      slabs: [{ id: 'all', service: 'recharge', type: 'percent', value: 2.5 }],
    });
    assert.equal(greedy.status, 409, JSON.stringify(greedy.body));
    assert.equal(greedy.body.error.code, 'scheme_above_margin');
    assert.match(greedy.body.message, /the retailer's scheme pays .*, the distributor's/);
    const silver = await call('POST', '/api/network/schemes', d.headers, {
      name: 'Silver',
      slabs: [
        { id: 'airtel', service: 'recharge', operator: 1, type: 'percent', value: 2.5, cap: 40 },
        { id: 'any', service: 'recharge', type: 'percent', value: 1.5 },
      ],
    });
    assert.equal(silver.status, 201, JSON.stringify(silver.body));
    const assigned = await call('PUT', `/api/network/retailers/${r.account_id}/scheme`, d.headers, {
      scheme_id: silver.body.data.scheme_id,
    });
    assert.equal(assigned.status, 200, JSON.stringify(assigned.body));
    const admins = await call('PUT', `/api/network/retailers/${r.account_id}/scheme`, d.headers, {
      scheme_id: gold.body.scheme_id,
    });
    assert.equal(admins.status, 403, "the admin's schemes are not the distributor's to give");

    // Funds: once per reference; the same reference with another amount is a conflict.
    const fund = (amount: number, reference: string, retailer_id = r.account_id) =>
      call('POST', '/api/network/funds', d.headers, { retailer_id, amount, reference });
    const first = await fund(500, 'float-1');
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.data.retailer_balance, 500);
    assert.equal(first.body.data.balance, 1_500);
    const again = await fund(500, 'float-1');
    assert.equal(again.body.data.duplicate, true);
    assert.deepEqual(again.body.data.posting_ids, first.body.data.posting_ids);
    assert.equal(await balance(gw, r.headers), 500);
    assert.equal((await fund(400, 'float-1')).status, 409);
    const stranger = await onboard(gw, 0);
    assert.equal((await fund(10, 'float-2', stranger.account_id)).status, 404);
    assert.equal((await fund(5_000, 'float-3')).status, 402);

    // The retailer's recharge: its commission by Silver (2.5 %), the distributor's override by
    // Gold minus Silver (0.5 %), each credited net of 2 % TDS and naming its slab.
    const recharge = await call('POST', '/api/recharge', r.headers, {
      operator_id: 1,
      number: '9876543210',
      amount: 100,
    });
    assert.equal(recharge.body.data.status, 'success', JSON.stringify(recharge.body));
    assert.equal(recharge.body.data.commission, 2.5);
    assert.equal(recharge.body.data.commission_credited, 2.45);
    const txn = (await call('GET', `/api/transactions/${recharge.body.txn_id}`, r.headers)).body
      .data;
    assert.equal(txn.commission_breakup.slab, `${silver.body.data.scheme_id}/airtel`);
    assert.equal(txn.override, undefined, "a retailer does not see its distributor's override");
    assert.equal(await balance(gw, d.headers), 1_500.49);
    const d_history = await call('GET', '/api/wallet/history?order=desc&limit=1', d.headers);
    assert.match(d_history.body.data.entries[0].memo, /override commission/);
    assert.equal(d_history.body.data.entries[0].ref, recharge.body.txn_id);

    const ledger = await ledgerBalances(gw);
    assert.equal(ledger['override:recharge'], -500_000);
    assert.equal(ledger['commission:recharge'], -2_500_000);
    assert.equal(ledger['tds:194h'], 50_000 + 10_000);
    assert.equal(ledger['network:transfers'] ?? 0, 0);

    // The distributor sees its retailer's transactions with its override; not another's.
    const seen = await call(
      'GET',
      `/api/network/retailers/${r.account_id}/transactions`,
      d.headers,
    );
    assert.equal(seen.status, 200);
    assert.equal(seen.body.data.transactions[0].override, 0.5);
    assert.equal(
      (await call('GET', `/api/network/retailers/${stranger.account_id}/transactions`, d.headers))
        .status,
      404,
    );
    const report = await call(
      'GET',
      `/api/reports/transactions?account_id=${r.account_id}`,
      d.headers,
    );
    assert.equal(report.status, 200);
    assert.equal(report.body.data.total, 1);
    assert.equal(
      (await call('GET', `/api/reports/transactions?account_id=${d.account_id}`, r.headers)).status,
      400,
      'a retailer reads no one else',
    );

    // The admin sees the hierarchy; a distributor with retailers stays one.
    const tree = await api.get(`/admin/accounts/${d.account_id}/network`);
    assert.equal(tree.body.retailers.total, 1);
    assert.equal(tree.body.retailers.retailers[0].account_id, r.account_id);
    const demote = await api.put(`/admin/accounts/${d.account_id}/network`, { role: 'retailer' });
    assert.equal(demote.status, 409);

    // The dashboard: the distributor downloads its month's statement; the admin console shows
    // the schemes and the account's place in the network.
    const month = new Date(Date.now() + 330 * 60_000).toISOString().slice(0, 7);
    const email = (await api.get(`/admin/accounts/${d.account_id}`)).body.email as string;
    const user = await dashboardSession(gw.url, '/login', {
      email,
      password: 'correct horse battery',
    });
    const pdf = await fetch(
      `${gw.url}/reports/statement?kind=commission&month=${month}&format=pdf`,
      {
        headers: { cookie: user },
      },
    );
    assert.equal(pdf.status, 200);
    assert.equal(pdf.headers.get('content-type'), 'application/pdf');
    const read = await pdfText(new Uint8Array(await pdf.arrayBuffer()));
    assert.match(read.text, /override/);
    const page = await fetch(`${gw.url}/reports`, { headers: { cookie: user } });
    assert.match(await page.text(), /Tax documents/);
    const console_cookie = await dashboardSession(gw.url, '/admin/login', {
      token: gw.admin_token,
    });
    const schemes = await (
      await fetch(`${gw.url}/admin/console/schemes`, { headers: { cookie: console_cookie } })
    ).text();
    assert.match(schemes, /Gold/);
    assert.match(schemes, /Silver/);
    const account_page = await (
      await fetch(`${gw.url}/admin/console/accounts/${d.account_id}`, {
        headers: { cookie: console_cookie },
      })
    ).text();
    assert.match(account_page, /Role: <strong>distributor<\/strong>/);
    assert.match(account_page, new RegExp(r.account_id));
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});
