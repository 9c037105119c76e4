// A month of sandbox business (issue #28): a distributor with three retailers in three tax
// positions (same state as the operator: CGST + SGST; another state by GSTIN: IGST; no GSTIN
// and no state: the operator's state), run day by day on a fake clock through February 2025
// (IST) by a gateway built in-process as main.ts builds it, over real HTTP on loopback.
// Every statement's totals must reconcile to the ledger to the paisa: commissions and
// overrides (gross, TDS, net) to commission:*, override:* and tds:194h, fees to revenue:* and
// gst:*, each account's net to its wallet's commission postings; the quarter's TDS statement
// (per account, and the admin's per deductee) to tds:194h; the PDF read back as text by
// pdf.js; and `verify` passes on the data dir afterwards.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { admin, request, runVerify, tempDir } from './helpers.js';
import { VALID_KYC, paymentsConfig } from '../support/payments-helpers.js';
import { pdfText } from '../support/payments-pdf.ts';
import { serveInProcess } from '../support/route-table.ts';
import { gstinCheckCharacter } from '../../gateway/payments/identity/gstin.ts';

const ADMIN_TOKEN = 'month-test-admin-token-0123456789abcdef';
const DAY_MS = 86_400_000;
const micros = (units: number) => Math.round(units * 1e6);

test('a month of a distributor and three retailers: statements reconcile to the ledger to the paisa', async () => {
  const data_dir = tempDir('aihub-month-');
  const config_file = join(tempDir('aihub-month-config-'), 'config.json');
  const config = paymentsConfig({ duplicate_window_ms: 0 }) as {
    payments: Record<string, unknown>;
  };
  config.payments.tax = {
    operator: {
      name: 'AIHub Payments Pvt Ltd',
      gstin: '29AAACA1234A1ZG',
      pan: 'AAACA1234A',
      tan: 'BLRA12345B',
      address: '1 MG Road, Bengaluru',
    },
  };
  config.payments.bills = {
    billers: [
      {
        biller_id: 'BESCOM',
        name: 'BESCOM (Bengaluru)',
        category: 'electricity',
        consumer_pattern: '^\\d{10}$',
        fee: 5,
        commission_pct: 0.5,
      },
    ],
  };
  writeFileSync(config_file, JSON.stringify(config));
  // 1 February 2025, 00:00 IST.
  let now_ms = Date.parse('2025-01-31T18:30:00Z');
  const clock = { now: () => new Date(now_ms) };
  const {
    url,
    store,
    stop: close,
  } = await serveInProcess(data_dir, ADMIN_TOKEN, {
    clock,
    config_file,
  });
  const gw = { url, admin_token: ADMIN_TOKEN };
  const api = admin(gw);
  const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    request(`${url}${path}`, { method, headers, ...(body ? { body } : {}) });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await close();
  };
  try {
    // The distributor, with a scheme from the admin.
    const onboardOne = async (name: string, kyc: Record<string, unknown>, credit: number) => {
      const registered = await request(`${url}/api/register`, {
        body: { email: `${name}@example.com`, password: 'correct horse battery', name },
      });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      const headers = { 'x-api-key': registered.body.data.api_key as string };
      const account_id = registered.body.data.account_id as string;
      assert.equal((await call('POST', '/api/kyc', headers, kyc)).status, 200);
      assert.equal((await api.post(`/admin/kyc/${account_id}/approve`, {})).status, 200);
      const services = { recharge: true, bills: true, pan: true };
      assert.equal(
        (await api.post(`/admin/accounts/${account_id}/services`, services)).status,
        200,
      );
      if (credit > 0)
        assert.equal(
          (
            await api.post(`/admin/accounts/${account_id}/credit`, {
              amount: credit,
              reference: `fund-${name}`,
            })
          ).status,
          200,
        );
      return { account_id, headers };
    };
    const d = await onboardOne(
      'distributor',
      { ...VALID_KYC, gstin: undefined, state: '29' },
      500_000,
    );
    const gold = await api.post('/admin/schemes', {
      name: 'Gold',
      slabs: [
        { id: 'airtel', service: 'recharge', operator: 1, type: 'percent', value: 3.2 },
        { id: 'recharge', service: 'recharge', type: 'percent', value: 2.1, cap: 25 },
        { id: 'bills', service: 'bills', type: 'percent', value: 0.9 },
        { id: 'pan', service: 'pan', type: 'flat', value: 0.5 },
      ],
    });
    assert.equal(gold.status, 201, JSON.stringify(gold.body));
    assert.equal(
      (
        await api.put(`/admin/accounts/${d.account_id}/network`, {
          role: 'distributor',
          scheme_id: gold.body.scheme_id,
        })
      ).status,
      200,
    );
    const silver = await call('POST', '/api/network/schemes', d.headers, {
      name: 'Silver',
      slabs: [
        { id: 'airtel', service: 'recharge', operator: 1, type: 'percent', value: 2.7 },
        { id: 'recharge', service: 'recharge', type: 'percent', value: 1.75, cap: 20 },
        { id: 'bills', service: 'bills', type: 'percent', value: 0.6 },
        { id: 'pan', service: 'pan', type: 'flat', value: 0.3 },
      ],
    });
    assert.equal(silver.status, 201, JSON.stringify(silver.body));

    // Three retailers onboarded by the distributor, eKYC'd and activated, on Silver, funded.
    const kycs = [
      {
        ...VALID_KYC,
        name: 'Bengaluru Mobiles',
        gstin: `29AAPFU0939F1Z${gstinCheckCharacter('29AAPFU0939F1Z')}`,
      }, // intra-state
      { ...VALID_KYC, name: 'Pune Recharge Point' }, // GSTIN 27: inter-state (IGST)
      { ...VALID_KYC, name: 'Village Kiosk', gstin: undefined }, // nothing on record: the operator's state
    ];
    const retailers: Array<{ account_id: string; headers: Record<string, string> }> = [];
    for (const [i, kyc] of kycs.entries()) {
      const created = await call('POST', '/api/network/retailers', d.headers, {
        email: `retailer${i}@example.com`,
        password: 'correct horse battery',
        name: kyc.name,
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const r = {
        account_id: created.body.data.account_id as string,
        headers: { 'x-api-key': created.body.data.api_key as string },
      };
      assert.equal((await call('POST', '/api/kyc', r.headers, kyc)).status, 200);
      assert.equal((await api.post(`/admin/kyc/${r.account_id}/approve`, {})).status, 200);
      assert.equal(
        (
          await api.post(`/admin/accounts/${r.account_id}/services`, {
            recharge: true,
            bills: true,
            pan: true,
          })
        ).status,
        200,
      );
      assert.equal(
        (
          await call('PUT', `/api/network/retailers/${r.account_id}/scheme`, d.headers, {
            scheme_id: silver.body.data.scheme_id,
          })
        ).status,
        200,
      );
      const funded = await call('POST', '/api/network/funds', d.headers, {
        retailer_id: r.account_id,
        amount: 150_000, // fetched bills run to ₹5,000
        reference: `float-${i}`,
      });
      assert.equal(funded.status, 200, JSON.stringify(funded.body));
      retailers.push(r);
    }

    // February, day by day: recharges of every operator kind, bills with a fee, PAN lookups,
    // a decline now and then, and the distributor's own recharges.
    const numbers = ['9876543210', '9812345678', '9900012345', '9876540001'];
    let successes = 0;
    for (let day = 0; day < 28; day++) {
      now_ms = Date.parse('2025-01-31T18:30:00Z') + day * DAY_MS + 10 * 3_600_000;
      for (const [i, r] of retailers.entries()) {
        const amount = 99 + ((day * 37 + i * 53) % 900) + (day % 3) * 0.5;
        const operator_id = [1, 2, 3, 4][(day + i) % 4]!;
        const number = numbers[(day + i) % numbers.length]!;
        const recharge = await call('POST', '/api/recharge', r.headers, {
          operator_id,
          number,
          // Jio sells plans only: one of its plans.
          amount: operator_id === 2 ? 299 : amount,
        });
        assert.equal(recharge.status, 200, JSON.stringify(recharge.body));
        if (recharge.body.data.status === 'success') successes++;
        // A fetch-and-pay biller: its fetched bill, paid with the customer's mobile.
        const consumer_number = `12345${String(10_000 + day * 7 + i).slice(-5)}`;
        const fetched = await call('POST', '/api/bills/fetch', r.headers, {
          biller_id: 'BESCOM',
          params: { consumer_number },
        });
        // The sandbox finds no bill for a number ending 0000 and no provider answers for 0005.
        if (/000[05]$/.test(consumer_number)) assert.notEqual(fetched.status, 200);
        else {
          assert.equal(fetched.status, 200, JSON.stringify(fetched.body));
          const bill = await call('POST', '/api/bills/pay', r.headers, {
            biller_id: 'BESCOM',
            params: { consumer_number },
            bill_id: fetched.body.data.bill_id,
            amount: fetched.body.data.amount,
            customer_mobile: '9876543210',
          });
          assert.equal(bill.status, 200, JSON.stringify(bill.body));
        }
        if (day % 4 === i) {
          const pan = await call('POST', '/api/pan-find', r.headers, {
            pan_number: `ABCPE${String(1000 + day).padStart(4, '1')}F`,
          });
          assert.equal(pan.status, 200, JSON.stringify(pan.body));
        }
      }
      if (day % 5 === 0) {
        const own = await call('POST', '/api/recharge', d.headers, {
          operator_id: 2,
          number: '9812345678',
          amount: 299,
        });
        assert.equal(own.body.data.status, 'success');
      }
    }
    assert.ok(successes > 50, `${successes} successful recharges`);
    // 3 March: the statements of February.
    now_ms = Date.parse('2025-03-03T06:00:00Z');

    const ledger = () => store.state.balances;
    const sumOf = (prefix: string) =>
      Object.entries(ledger())
        .filter(([account]) => account.startsWith(prefix))
        .reduce((sum, [, balance]) => sum + balance, 0);
    const accounts = [d, ...retailers];
    const statements: any[] = [];
    for (const a of accounts) {
      const reply = await call('GET', '/api/reports/commission-statement?month=2025-02', a.headers);
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      statements.push(reply.body.data);
    }
    const total = (field: string) =>
      statements.reduce((sum, s) => sum + micros(s.totals[field]), 0);
    // Commissions and overrides: gross = what commission:* and override:* paid; TDS = tds:194h; net = gross − TDS.
    assert.equal(total('gross'), -(sumOf('commission:') + sumOf('override:')));
    assert.equal(total('tds'), ledger()['tds:194h']);
    assert.equal(total('net'), total('gross') - total('tds'));
    // Fees: taxable value = revenue:*; CGST, SGST, IGST = their accounts; the parts add up to the fees.
    assert.equal(total('taxable_value'), sumOf('revenue:'));
    assert.equal(total('cgst'), ledger()['gst:cgst']);
    assert.equal(total('sgst'), ledger()['gst:sgst']);
    assert.equal(total('igst'), ledger()['gst:igst']);
    assert.equal(
      total('fees'),
      total('taxable_value') + total('cgst') + total('sgst') + total('igst'),
    );
    assert.ok(
      ledger()['gst:cgst']! > 0 && ledger()['gst:igst']! > 0,
      'both kinds of supply occurred',
    );
    // Who paid which GST: the Bengaluru retailer and the kiosk CGST+SGST, Pune IGST.
    assert.equal(statements[1].totals.igst, 0);
    assert.equal(statements[2].totals.cgst, 0);
    assert.ok(statements[2].totals.igst > 0);
    assert.equal(statements[3].totals.igst, 0);
    assert.ok(statements[3].totals.cgst > 0);
    // The distributor's statement holds its overrides (one per retailer commission) and its own commissions.
    const d_rows = statements[0].rows as Array<{
      kind: string;
      retailer_id: string | null;
      slab: string;
    }>;
    assert.ok(
      d_rows.some(
        (r) => r.kind === 'override' && retailers.some((x) => x.account_id === r.retailer_id),
      ),
    );
    assert.ok(d_rows.some((r) => r.kind === 'commission'));
    assert.ok(d_rows.every((r) => r.kind === 'charges' || r.slab.startsWith(gold.body.scheme_id)));

    // Each account: the statement's net is what its wallet's commission postings credited in February;
    // per month equals the total (one month); rows add up to the totals.
    for (const [i, a] of accounts.entries()) {
      const s = statements[i];
      const history = await call(
        'GET',
        '/api/reports/wallet?from=2025-01-31T18:30:00Z&to=2025-02-28T18:29:59.999Z&limit=500',
        a.headers,
      );
      const credited = history.body.data.rows
        .filter((row: { kind: string }) => row.kind === 'commission')
        .reduce((sum: number, row: { amount: number }) => sum + micros(row.amount), 0);
      assert.equal(
        micros(s.totals.net),
        credited,
        `account ${i}: net = the wallet's commission credits`,
      );
      assert.deepEqual(
        s.by_month.map((m: { month: string }) => m.month),
        ['2025-02'],
      );
      assert.equal(s.by_month[0].tds, s.totals.tds);
      const rows_tds = s.rows.reduce(
        (sum: number, row: { tds: number | null }) => sum + micros(row.tds ?? 0),
        0,
      );
      assert.equal(rows_tds, micros(s.totals.tds));
      assert.equal(s.truncated, false);
    }

    // The CSV: the same rows, and the header lines name the parties and the totals.
    const csv = await fetch(`${url}/api/reports/commission-statement?month=2025-02&format=csv`, {
      headers: retailers[1]!.headers,
    });
    const csv_text = await csv.text();
    assert.equal(csv.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.match(csv_text, /# account_pan,AAPFU0939F/);
    assert.match(csv_text, /# operator_gstin,29AAACA1234A1ZG/);
    assert.match(csv_text, new RegExp(`# total_tds,${statements[2].totals.tds}\\r\\n`));
    assert.equal(
      csv_text.split('\r\n').filter((line) => line.startsWith('20')).length,
      statements[2].rows.length,
    );

    // The PDF, read back as text.
    const pdf = await fetch(`${url}/api/reports/commission-statement?month=2025-02&format=pdf`, {
      headers: d.headers,
    });
    assert.equal(pdf.headers.get('content-type'), 'application/pdf');
    const read = await pdfText(new Uint8Array(await pdf.arrayBuffer()));
    assert.ok(read.pages >= 2, `${read.pages} pages`);
    assert.equal(read.title, 'Commission statement and tax invoice summary, 2025-02');
    assert.match(read.text, /GSTIN 29AAACA1234A1ZG/);
    assert.match(read.text, /TAN of the deductor: BLRA12345B/);
    assert.match(read.text, /PAN AAPFU0939F/);
    assert.match(
      read.text,
      new RegExp(
        `gross ${statements[0].totals.gross.toFixed(2)}, TDS ${statements[0].totals.tds.toFixed(2)}, net credited ${statements[0].totals.net.toFixed(2)}`,
      ),
    );
    assert.match(read.text, /2025-02: gross/);

    // The quarter (January–March 2025 is Q4 of FY 2024-25): per account, and the admin's per deductee.
    const quarter = await call(
      'GET',
      '/api/reports/tds-statement?fy=2024-25&quarter=Q4',
      d.headers,
    );
    assert.equal(quarter.status, 200, JSON.stringify(quarter.body));
    assert.equal(quarter.body.data.totals.tds, statements[0].totals.tds);
    assert.deepEqual(
      quarter.body.data.by_month.map((m: { month: string }) => m.month),
      ['2025-01', '2025-02', '2025-03'],
    );
    const all = await api.get('/admin/reports/tds-statement?fy=2024-25&quarter=Q4');
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.equal(all.body.rows.length, 4);
    assert.equal(micros(all.body.totals.tds), ledger()['tds:194h']);
    assert.ok(all.body.rows.every((row: { pan: string | null }) => row.pan === 'AAPFU0939F'));
    const admin_pdf = await fetch(
      `${url}/admin/reports/tds-statement?fy=2024-25&quarter=Q4&format=pdf`,
      {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      },
    );
    const admin_read = await pdfText(new Uint8Array(await admin_pdf.arrayBuffer()));
    assert.match(admin_read.text, /TDS statement \(section 194H\), FY 2024-25 Q4/);
    assert.match(admin_read.text, new RegExp(`TDS ${all.body.totals.tds.toFixed(2)}`));
    // A retailer reads its distributor's statement: no; the distributor reads its retailer's: yes.
    assert.equal(
      (
        await call(
          'GET',
          `/api/reports/commission-statement?month=2025-02&account_id=${d.account_id}`,
          retailers[0]!.headers,
        )
      ).status,
      400,
    );
    const of_retailer = await call(
      'GET',
      `/api/reports/commission-statement?month=2025-02&account_id=${retailers[0]!.account_id}`,
      d.headers,
    );
    assert.equal(of_retailer.body.data.totals.net, statements[1].totals.net);

    await stop();
    const verified = await runVerify(data_dir);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
  } finally {
    await stop();
  }
});
