// Reports over HTTP against the real gateway, after a mix of every service on two accounts:
// totals equal to the ledger (per ledger account, and the wallet's own movement), CSV holding
// exactly the JSON's rows, filters and pages, API logs without secrets, admin views across
// accounts; `verify` at the end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, request, type Gateway } from './helpers.ts';
import {
  addBeneficiary,
  balance,
  ledgerBalances,
  onboard,
  parseCsv,
  startPaymentsGateway,
  transferWithOtp,
  verifiedRemitter,
  verifyOk,
  waitFinal,
} from '../support/payments-helpers.ts';

const ALL = { recharge: true, dmt: true, pan: true, bills: true };
const round2 = (n: number) => Math.round(n * 100) / 100;

/** The CSV of the same query, as objects keyed by its header; JSON rows turned to strings the same way. */
async function csvRows(url: string, headers: Record<string, string>) {
  const response = await fetch(url, { headers });
  assert.equal(response.status, 200, url);
  assert.match(response.headers.get('content-type')!, /^text\/csv/);
  const [header, ...lines] = parseCsv(await response.text());
  return {
    header: header!,
    rows: lines.map((line) => Object.fromEntries(header!.map((name, i) => [name, line[i]!]))),
    total: Number(response.headers.get('x-total-count')),
  };
}
const asStrings = (rows: Array<Record<string, unknown>>) =>
  rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [
        k,
        v === null ? '' : typeof v === 'string' && /^[=+\-@]/.test(v) ? `'${v}` : String(v),
      ]),
    ),
  );

async function activity(gw: Gateway, headers: Record<string, string>, mobile: string) {
  const txns: string[] = [];
  const recharge = (number: string, amount: number) =>
    request(`${gw.url}/api/recharge`, { headers, body: { operator_id: 1, number, amount } });
  txns.push((await recharge(`${mobile.slice(0, 6)}4321`, 100)).body.txn_id);
  txns.push((await recharge(`${mobile.slice(0, 6)}0001`, 50)).body.txn_id); // declined
  const pending = await recharge(`${mobile.slice(0, 6)}0002`, 30); // pending → success
  txns.push(pending.body.txn_id);
  await verifiedRemitter(gw, headers, mobile);
  const bene = await addBeneficiary(gw, headers, mobile, `5${mobile}12`);
  const declining = await addBeneficiary(
    gw,
    headers,
    mobile,
    `5${mobile.slice(0, 6)}0001`,
    'Failing Person',
  );
  const pay = (bene_id: string, amount: number, txn_type: string) =>
    transferWithOtp(gw, headers, { mobile, bene_id, amount, txn_type });
  txns.push((await pay(bene, 2_500, 'IMPS')).body.data.reference_id);
  txns.push((await pay(declining, 700, 'IMPS')).body.data.reference_id);
  const neft = await pay(bene, 1_200, 'NEFT');
  txns.push(neft.body.data.reference_id);
  txns.push(
    (await request(`${gw.url}/api/dmt/beneficiary/${bene}/verify`, { headers, body: {} })).body
      .txn_id,
  );
  txns.push(
    (await request(`${gw.url}/api/pan-find`, { headers, body: { pan_number: 'ABCPE1234F' } })).body
      .txn_id,
  );
  txns.push(
    (await request(`${gw.url}/api/pan-find`, { headers, body: { pan_number: 'ABCPE0000F' } })).body
      .txn_id,
  ); // not found
  const bill = (
    await request(`${gw.url}/api/bills/fetch`, {
      headers,
      body: { biller_id: 'ACTFIBER', params: { consumer_number: mobile } },
    })
  ).body.data;
  txns.push(
    (
      await request(`${gw.url}/api/bills/pay`, {
        headers,
        body: {
          biller_id: 'ACTFIBER',
          params: { consumer_number: mobile },
          amount: bill.amount,
          bill_id: bill.bill_id,
          customer_mobile: mobile,
        },
      })
    ).body.txn_id,
  );
  await waitFinal(gw, headers, pending.body.txn_id);
  await waitFinal(gw, headers, neft.body.data.reference_id);
  return txns;
}

test('reports: totals equal the ledger, CSV equals JSON, filters, pages, API logs, admin across accounts', async () => {
  const gw = await startPaymentsGateway();
  try {
    const a = await onboard(gw, 10_000, ALL);
    const b = await onboard(gw, 8_000, ALL);
    const a_txns = await activity(gw, a.headers, '9812345678');
    const b_txns = await activity(gw, b.headers, '9823456789');
    assert.equal(new Set([...a_txns, ...b_txns]).size, 20);
    const report = (headers: Record<string, string>, name: string, query = '') =>
      request(`${gw.url}/api/reports/${name}${query ? `?${query}` : ''}`, { headers });

    // transactions: every one of the account's, newest first, with totals
    const txns = await report(a.headers, 'transactions', 'limit=500');
    assert.equal(txns.status, 200, JSON.stringify(txns.body));
    assert.equal(txns.body.status, true);
    const data = txns.body.data;
    assert.equal(data.total, 10);
    assert.deepEqual(new Set(data.rows.map((r: any) => r.txn_id)), new Set(a_txns));
    assert.deepEqual(data.totals.by_status, {
      success: 7,
      pending: 0,
      failed: 3,
      on_hold: 0,
      refund_pending: 0,
      refunded: 0,
      reversed: 0,
    });
    const sorted = [...data.rows].sort((x: any, y: any) =>
      y.created_at.localeCompare(x.created_at),
    );
    assert.deepEqual(
      data.rows.map((r: any) => r.txn_id),
      sorted.map((r: any) => r.txn_id),
    );

    // totals = the wallet's movement: credited − balance = Σ success (amount + charges − commission + its TDS)
    const spent = round2(
      data.totals.success.amount +
        data.totals.success.charges -
        data.totals.success.commission +
        data.totals.success.tds,
    );
    assert.equal(spent, round2(10_000 - (await balance(gw, a.headers))));

    // wallet report: closing = balance; each row's closing = opening + amount; Σ amounts = closing − opening
    const wallet = await report(a.headers, 'wallet', 'limit=500&order=asc');
    assert.equal(wallet.status, 200);
    const w = wallet.body.data;
    assert.equal(w.totals.closing_balance, await balance(gw, a.headers));
    assert.equal(w.totals.opening_balance, 0);
    let running = 0;
    for (const row of w.rows) {
      assert.equal(row.opening_balance, round2(running), row.posting_id);
      running = round2(running + row.amount);
      assert.equal(row.closing_balance, running, row.posting_id);
    }
    assert.equal(running, w.totals.closing_balance);
    assert.equal(round2(w.totals.credits - w.totals.debits), w.totals.closing_balance);

    // admin, every account: each ledger account the transactions touched equals the ledger
    const api = admin(gw);
    const all = await api.get('/admin/reports/transactions?limit=500');
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.equal(all.body.total, 20);
    assert.deepEqual(
      new Set(all.body.rows.map((r: any) => r.account_id)),
      new Set([a.account_id, b.account_id]),
    );
    const balances = await ledgerBalances(gw);
    const ledger = all.body.totals.ledger as Record<string, number>;
    for (const account of [
      'provider:recharge',
      'provider:dmt',
      'provider:bills',
      'revenue:dmt',
      'revenue:pan',
      'commission:recharge',
      'commission:bills',
      'gst:igst',
      'tds:194h',
    ]) {
      assert.ok(account in ledger, `${account} in the report`);
      assert.equal(Math.round(ledger[account]! * 1e6), balances[account], account);
    }
    assert.equal(Object.keys(ledger).length, 9);
    const one = await api.get(`/admin/reports/transactions?account_id=${b.account_id}&limit=500`);
    assert.equal(one.body.total, 10);
    assert.ok(one.body.rows.every((r: any) => r.account_id === b.account_id));

    // commissions: the commission postings
    const commissions = await report(a.headers, 'commissions');
    assert.equal(commissions.body.data.total, 3, 'two recharges and a bill');
    assert.equal(commissions.body.data.totals.commission, data.totals.success.commission);
    const commission_postings = w.rows.filter((r: any) => r.kind === 'commission');
    assert.deepEqual(
      new Set(commissions.body.data.rows.map((r: any) => r.posting_id)),
      new Set(commission_postings.map((r: any) => r.posting_id)),
    );

    // CSV holds the same rows as the JSON, for each report, for a whole set and for one page
    // (API logs up to a fixed instant: each report request is itself logged)
    const cutoff = new Date().toISOString();
    // Later records must carry a later timestamp than the cutoff (millisecond resolution).
    while (new Date().toISOString() <= cutoff)
      await new Promise((resolve) => setTimeout(resolve, 1));
    for (const [name, query] of [
      ['transactions', ''],
      ['transactions', 'service=dmt'],
      ['commissions', ''],
      ['wallet', 'order=asc'],
      ['api-logs', `to=${cutoff}`],
    ] as const) {
      const json = await report(a.headers, name, `${query}&limit=500`);
      assert.equal(json.status, 200, `${name} ${JSON.stringify(json.body)}`);
      const csv = await csvRows(`${gw.url}/api/reports/${name}?${query}&format=csv`, a.headers);
      assert.deepEqual(csv.header, json.body.data.columns, name);
      assert.equal(csv.total, json.body.data.total);
      assert.deepEqual(csv.rows, asStrings(json.body.data.rows), `${name}?${query}`);
      assert.ok(csv.rows.length > 0, name);
    }
    const page2 = await report(a.headers, 'transactions', 'page=2&limit=3');
    assert.equal(page2.body.data.rows.length, 3);
    assert.deepEqual(
      page2.body.data.rows.map((r: any) => r.txn_id),
      data.rows.slice(3, 6).map((r: any) => r.txn_id),
    );
    const csv_page2 = await csvRows(
      `${gw.url}/api/reports/transactions?page=2&limit=3&format=csv`,
      a.headers,
    );
    assert.deepEqual(csv_page2.rows, asStrings(page2.body.data.rows));
    const admin_csv = await csvRows(`${gw.url}/admin/reports/transactions?format=csv`, {
      authorization: `Bearer ${gw.admin_token}`,
    });
    assert.deepEqual(admin_csv.rows, asStrings(all.body.rows));

    // filters
    const failed = await report(a.headers, 'transactions', 'status=failed');
    assert.deepEqual(failed.body.data.rows.map((r: any) => r.service).sort(), [
      'dmt',
      'pan',
      'recharge',
    ]);
    const by_mobile = await report(a.headers, 'transactions', 'mobile=%2B91%2098123%2045678');
    assert.deepEqual(
      by_mobile.body.data.rows.map((r: any) => r.kind).sort(),
      ['beneficiary_verification', 'bill_payment', 'transfer', 'transfer', 'transfer'],
      'the remitter mobile, and the bill paid for that number',
    );
    const by_txn = await report(a.headers, 'transactions', `txn_id=${a_txns[3]}`);
    assert.equal(by_txn.body.data.total, 1);
    assert.match(by_txn.body.data.rows[0].reference, /^\d{12}$/, 'the UTR');
    const today = new Date().toISOString().slice(0, 10);
    assert.equal(
      (await report(a.headers, 'transactions', `from=${today}&to=${today}`)).body.data.total,
      10,
    );
    assert.equal((await report(a.headers, 'transactions', 'to=2000-01-01')).body.data.total, 0);
    const pan_wallet = await report(a.headers, 'wallet', 'service=pan&order=asc');
    // found: the fee held, released and charged with its GST split (a fee is always a wallet
    // posting, for the statements); not found: held, then refunded
    assert.deepEqual(
      pan_wallet.body.data.rows.map((r: any) => [r.kind, r.amount]),
      [
        ['hold', -2],
        ['release', 2],
        ['charges', -2],
        ['hold', -2],
        ['refund', 2],
      ],
    );
    for (const [name, query, field] of [
      ['transactions', 'status=done', 'status'],
      ['transactions', 'from=yesterday', 'from'],
      ['transactions', 'limit=501', 'limit'],
      ['wallet', 'status=success', 'status'],
      ['api-logs', 'status=2x', 'status'],
      ['transactions', 'account_id=acc_x', 'account_id'],
      ['transactions', 'bogus=1', 'bogus'],
    ] as const) {
      const reply = await report(a.headers, name, query);
      assert.equal(reply.status, 400, `${name}?${query}`);
      assert.equal(reply.body.error.field, field, `${name}?${query}`);
    }
    assert.equal((await report(a.headers, 'ledger')).status, 400);

    // API logs: method, path, status, latency, IP, key prefix; never the key
    const logs = await report(a.headers, 'api-logs', 'limit=500');
    const rows = logs.body.data.rows as any[];
    assert.ok(rows.length >= 20);
    const pay_log = rows.find((r) => r.path === '/api/dmt/transact' && r.txn_id === a_txns[3]);
    assert.ok(pay_log, 'the transfer is logged with its transaction id');
    assert.equal(pay_log.method, 'POST');
    assert.equal(pay_log.status, 200);
    assert.equal(typeof pay_log.latency_ms, 'number');
    assert.match(pay_log.ip, /127\.0\.0\.1/);
    assert.equal(a.key.startsWith(pay_log.key_prefix), true);
    assert.ok(!JSON.stringify(logs.body).includes(a.key), 'no key in the logs');
    assert.ok(
      rows.every((r) => r.key_prefix === null || a.key.startsWith(r.key_prefix)),
      "only this account's requests",
    );
    const errors = await report(a.headers, 'api-logs', 'status=4xx&limit=500');
    assert.ok(
      errors.body.data.rows.length >= 7 &&
        errors.body.data.rows.every((r: any) => r.status >= 400 && r.status < 500),
    );
    const dmt_logs = await report(a.headers, 'api-logs', 'service=dmt&limit=500');
    assert.ok(dmt_logs.body.data.rows.every((r: any) => r.path.startsWith('/api/dmt/')));
    const admin_logs = await api.get('/admin/reports/api-logs?limit=500');
    assert.ok(admin_logs.body.rows.some((r: any) => r.account_id === b.account_id));

    // the wallet history endpoint is the same report
    const history = await request(`${gw.url}/api/wallet/history?order=asc&limit=500`, {
      headers: a.headers,
    });
    assert.deepEqual(history.body.data.entries, w.rows);
    assert.equal(history.body.data.closing_balance, w.totals.closing_balance);

    // without a key: 401
    assert.equal((await request(`${gw.url}/api/reports/transactions`)).status, 401);

    // the OpenAPI document lists the payments routes, with the request schemas they parse with
    const openapi = await request(`${gw.url}/openapi.json`);
    for (const path of [
      '/api/dmt/transact',
      '/api/dmt/remitter',
      '/api/pan-find',
      '/api/bills/pay',
      '/api/bills/receipt/{txn_id}',
      '/api/reports/{report}',
      '/admin/reports/{report}',
    ]) {
      assert.ok(path in openapi.body.paths, path);
    }
    const transact_schema =
      openapi.body.paths['/api/dmt/transact'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(transact_schema.required.sort(), ['amount', 'bene_id', 'mobile', 'txn_type']);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});
