// The dashboard's wallet history download (GET /wallet/history.csv): every posting of the
// account, oldest first, each opening where the one before closed, the last closing at the
// balance, and the same rows as GET /api/wallet/history. It is streamed from one walk of the
// account's history (not one walk per page), waiting for the client between chunks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCsv } from '../support/payments-helpers.ts';
import { dashboardLogin } from '../support/multi-gateway.ts';
import { admin, request, startGateway } from './helpers.ts';

test('the wallet CSV holds every posting, oldest first, as the wallet history API does', async () => {
  const gateway = await startGateway();
  try {
    const email = 'ledger-reader@example.com';
    const password = 'a long enough passphrase';
    const registered = await request(`${gateway.url}/api/register`, {
      body: { email, password, name: 'Ledger Reader' },
    });
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const { account_id, api_key } = registered.body.data;
    const api = admin(gateway);
    const CREDITS = 620; // more than one 500-row page and one 256-entry batch
    for (let i = 0; i < CREDITS; i++) {
      const credit = await api.post(`/admin/accounts/${account_id}/credit`, {
        amount: 1 + (i % 5),
        reference: `csv-${i}`,
      });
      assert.equal(credit.status, 200);
    }
    const cookie = await dashboardLogin(gateway, email, password);
    const response = await fetch(`${gateway.url}/wallet/history.csv`, { headers: { cookie } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type')!, /^text\/csv/);
    const [header, ...rows] = parseCsv(await response.text());
    assert.deepEqual(header, [
      'date',
      'description',
      'reference',
      'opening',
      'amount',
      'closing',
      'currency',
    ]);
    assert.equal(rows.length, CREDITS);
    for (let i = 1; i < rows.length; i++) assert.equal(rows[i]![3], rows[i - 1]![5], `row ${i}`);
    const history = [];
    for (let page = 1; page <= 2; page++) {
      const reply = await request(
        `${gateway.url}/api/wallet/history?order=asc&limit=500&page=${page}`,
        { headers: { 'x-api-key': api_key } },
      );
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      history.push(...reply.body.data.entries);
    }
    assert.deepEqual(
      rows.map((row) => row[2]),
      history.map((entry: { ref: string | null }) => entry.ref ?? ''),
      'the same postings in the same order',
    );
  } finally {
    await gateway.stop();
  }
});
