// GST tax invoices, bills of supply and credit notes (issue #35 item 5; docs/payments-api.md,
// "GST invoices"), over real HTTP against a gateway built as main.ts builds it, on a fake
// clock: on the JSON-file store, or on PostgreSQL in a run with AIHUB_TEST_DATABASE_URL (and
// there two gateways on one database issue at once). Retailer A is in Maharashtra (IGST),
// retailer B in Karnataka, the operator's state (CGST + SGST); each PAN lookup's fee is ₹2.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { verifyPg } from '../../gateway/store/pg/tools.ts';
import { GstDocumentsCheck } from '../../gateway/payments/invoices/verify.ts';
import { request, runCli, TEST_CLUSTER_URL } from './helpers.ts';
import {
  fakeClock,
  fakeClockGateway,
  type FakeClockGateway,
} from '../support/fake-clock-gateway.ts';
import {
  OPERATOR_GSTIN,
  VALID_KYC,
  paymentsConfig,
  startPaymentsGateway,
} from '../support/payments-helpers.ts';
import { pdfText } from '../support/payments-pdf.ts';
import { createDatabase } from '../support/postgres.ts';
import { gstinCheckCharacter } from '../../gateway/payments/identity/gstin.ts';

/**
 * The payments config of these tests: documents from December 2026 on (a store's first month
 * is otherwise the month it was made, which for PostgreSQL is the database's real time).
 */
function config(operator: Record<string, unknown> = { gstin: OPERATOR_GSTIN }) {
  return paymentsConfig({
    duplicate_window_ms: 0,
    tax: { operator, invoices: { from_month: '2026-12' } },
  });
}

const IST = (local: string) => new Date(`${local}+05:30`).toISOString();

async function database(): Promise<string | undefined> {
  return TEST_CLUSTER_URL ? createDatabase(TEST_CLUSTER_URL) : undefined;
}

async function onboard(gw: FakeClockGateway, name: string, kyc: Record<string, unknown>) {
  const registered = await request(`${gw.url}/api/register`, {
    body: { email: `${name}-${process.pid}@example.com`, password: 'correct horse battery', name },
  });
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const headers = { 'x-api-key': registered.body.data.api_key as string };
  const account_id = registered.body.data.account_id as string;
  const kyc_reply = await gw.call('POST', '/api/kyc', headers, kyc);
  assert.equal(kyc_reply.status, 200, JSON.stringify(kyc_reply.body));
  assert.equal((await gw.api.post(`/admin/kyc/${account_id}/approve`, {})).status, 200);
  assert.equal(
    (await gw.api.post(`/admin/accounts/${account_id}/services`, { pan: true })).status,
    200,
  );
  const credit = await gw.api.post(`/admin/accounts/${account_id}/credit`, {
    amount: 1_000,
    reference: `fund-${name}`,
  });
  assert.equal(credit.status, 200, JSON.stringify(credit.body));
  return { account_id, headers };
}

async function panFind(gw: FakeClockGateway, headers: Record<string, string>, n: number) {
  const reply = await gw.call('POST', '/api/pan-find', headers, {
    pan_number: `ABCPE${String(1000 + n)}F`,
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.equal(reply.body.status, true, JSON.stringify(reply.body));
  return reply.body.txn_id as string;
}

async function reverse(gw: FakeClockGateway, txn_id: string) {
  const reply = await gw.api.post(`/admin/transactions/${txn_id}/reverse`, { reason: 'test' });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
}

async function documents(gw: FakeClockGateway, headers: Record<string, string>, month: string) {
  const reply = await gw.call('GET', `/api/reports/gst-invoices?month=${month}`, headers);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.data.documents as any[];
}

const KYC_A = { ...VALID_KYC, name: 'Asha Traders' }; // 27AAPFU0939F1ZV: Maharashtra
const KYC_B = {
  ...VALID_KYC,
  name: 'Village Kiosk',
  pan_number: 'AABCB5576G',
  gstin: '29AABCB5576G1Z' + gstinCheckCharacter('29AABCB5576G1Z'),
};

/** `aihub-gateway verify` (with the GST documents' check) on the gateway's store: its breaches. */
async function verifyBreaches(gw: FakeClockGateway, url: string | undefined): Promise<string[]> {
  if (url) return (await verifyPg(url, [new GstDocumentsCheck()])).breaches;
  const run = await runCli(['verify', '--data-dir', gw.data_dir, '--full']);
  const report = JSON.parse(run.stdout) as { ok: boolean; breaches: string[] };
  assert.equal(run.code, report.ok ? 0 : 1, run.stderr);
  return report.breaches;
}

test('GST documents: a tax invoice per account and month from the postings, credit notes for reversals, numbered per financial year without gaps', async () => {
  const clock = fakeClock(IST('2027-02-10T10:00:00'));
  const url = await database();
  const gw = await fakeClockGateway(config(), clock, url);
  try {
    const a = await onboard(gw, 'asha', KYC_A);
    const b = await onboard(gw, 'kiosk', KYC_B);
    // February 2027 (FY 2026-27): A three lookups, one reversed the same month; B two.
    const a_feb = [
      await panFind(gw, a.headers, 1),
      await panFind(gw, a.headers, 2),
      await panFind(gw, a.headers, 3),
    ];
    await panFind(gw, b.headers, 4);
    await panFind(gw, b.headers, 5);
    await reverse(gw, a_feb[0]!);
    const open = await gw.call('GET', '/api/reports/gst-invoices?month=2027-02', a.headers);
    assert.equal(open.status, 409);
    assert.equal(open.body.error.code, 'month_not_closed');
    // March: A one lookup, and one of its February lookups reversed.
    clock.set(IST('2027-03-05T10:00:00'));
    await panFind(gw, a.headers, 6);
    await reverse(gw, a_feb[1]!);
    // April 2027 (FY 2027-28): B one lookup. 3 May: the documents.
    clock.set(IST('2027-04-02T10:00:00'));
    await panFind(gw, b.headers, 7);
    clock.set(IST('2027-05-03T09:00:00'));

    // Asked for April first: February and March are issued before it, in order.
    const b_apr = await documents(gw, b.headers, '2027-04');
    const a_feb_docs = await documents(gw, a.headers, '2027-02');
    const b_feb_docs = await documents(gw, b.headers, '2027-02');
    const a_mar_docs = await documents(gw, a.headers, '2027-03');
    const b_mar_docs = await documents(gw, b.headers, '2027-03');
    assert.deepEqual(b_mar_docs, [], 'no fees moved: no document');

    // A, February: 3 × ₹2 at IGST 18 % (inclusive): ₹1.69 + ₹0.31 each; one given back.
    const [a_invoice, a_note] = a_feb_docs;
    assert.equal(a_feb_docs.length, 2);
    assert.equal(a_invoice.kind, 'tax_invoice');
    assert.equal(a_invoice.supplier.gstin, OPERATOR_GSTIN);
    assert.equal(a_invoice.recipient.gstin, '27AAPFU0939F1ZV');
    assert.equal(a_invoice.place_of_supply, '27');
    assert.equal(a_invoice.lines[0].sac, '997158');
    assert.equal(a_invoice.lines[0].rate, 18);
    assert.deepEqual(a_invoice.totals, {
      taxable_value: 5.07,
      cgst: 0,
      sgst: 0,
      igst: 0.93,
      gst: 0.93,
      total: 6,
    });
    assert.equal(a_note.kind, 'credit_note');
    assert.deepEqual(a_note.totals, {
      taxable_value: 1.69,
      cgst: 0,
      sgst: 0,
      igst: 0.31,
      gst: 0.31,
      total: 2,
    });
    assert.deepEqual(a_note.refers_to, [{ month: '2027-02', number: a_invoice.invoice_number }]);
    // B, February: intra-state, ₹0.15 CGST + ₹0.15 SGST each.
    assert.equal(b_feb_docs.length, 1);
    assert.deepEqual(b_feb_docs[0].totals, {
      taxable_value: 3.4,
      cgst: 0.3,
      sgst: 0.3,
      igst: 0,
      gst: 0.6,
      total: 4,
    });
    assert.equal(b_feb_docs[0].place_of_supply, '29');
    // A, March: one fee invoiced, and a credit note against February's invoice.
    assert.deepEqual(
      a_mar_docs.map((d) => d.kind),
      ['tax_invoice', 'credit_note'],
    );
    assert.deepEqual(a_mar_docs[1].refers_to, [
      { month: '2027-02', number: a_invoice.invoice_number },
    ]);
    assert.deepEqual(a_mar_docs[1].totals, a_note.totals);

    // Numbering: per series and financial year, 1..n with no gap and no repeat, ≤ 16 characters.
    const all = [...a_feb_docs, ...b_feb_docs, ...a_mar_docs, ...b_apr];
    const series = new Map<string, number[]>();
    for (const d of all) {
      assert.ok(d.invoice_number.length <= 16, d.invoice_number);
      const key = `${d.series}:${d.financial_year}`;
      series.set(key, [...(series.get(key) ?? []), Number(d.invoice_number.slice(-6))]);
    }
    const sorted = (key: string) => [...(series.get(key) ?? [])].sort((x, y) => x - y);
    assert.deepEqual(sorted('invoice:2026-27'), [1, 2, 3]);
    assert.deepEqual(sorted('credit_note:2026-27'), [1, 2]);
    assert.deepEqual(sorted('invoice:2027-28'), [1]);
    assert.equal(b_apr[0].invoice_number, 'AH/27-28/000001');
    assert.match(a_invoice.invoice_number, /^AH\/26-27\/00000[12]$/);
    assert.match(a_note.invoice_number, /^AHC\/26-27\/000001$/);
    assert.equal(a_mar_docs[0].invoice_number, 'AH/26-27/000003', 'March after February');

    // Asking again gives the same documents; so does the admin.
    assert.deepEqual(await documents(gw, a.headers, '2027-02'), a_feb_docs);
    const by_admin = await gw.api.get(
      `/admin/reports/gst-invoices?month=2027-03&account_id=${a.account_id}`,
    );
    assert.equal(by_admin.status, 200);
    assert.deepEqual(by_admin.body.documents, a_mar_docs);

    // The PDF, read back by a PDF reader.
    const pdf = await fetch(`${gw.url}/api/reports/gst-invoices?month=2027-02&format=pdf`, {
      headers: a.headers,
    });
    assert.equal(pdf.status, 200);
    assert.equal(pdf.headers.get('content-type'), 'application/pdf');
    const read = await pdfText(new Uint8Array(await pdf.arrayBuffer()));
    assert.equal(read.pages, 2);
    for (const text of [
      'Tax invoice',
      'Credit note',
      a_invoice.invoice_number,
      '27AAPFU0939F1ZV',
      OPERATOR_GSTIN,
      '997158',
      'IGST Rs.0.93',
    ])
      assert.ok(read.text.includes(text), `${text} in ${read.text}`);

    await gw.stop();
    assert.deepEqual(await verifyBreaches(gw, url), []);
  } finally {
    await gw.stop();
  }
});

test('without a GSTIN the operator charges no GST: fees are split at 0 % and documented on bills of supply', async () => {
  const clock = fakeClock(IST('2027-01-20T10:00:00'));
  const url = await database();
  const gw = await fakeClockGateway(config({ name: 'Unregistered Payments' }), clock, url);
  try {
    const a = await onboard(gw, 'asha', KYC_A);
    const txn_id = await panFind(gw, a.headers, 1);
    const txn = await gw.call('GET', `/api/transactions/${txn_id}`, a.headers);
    assert.equal(txn.status, 200);
    clock.set(IST('2027-02-01T09:00:00'));
    const statement = await gw.call(
      'GET',
      '/api/reports/commission-statement?month=2027-01',
      a.headers,
    );
    assert.equal(statement.status, 200);
    assert.equal(statement.body.data.totals.fees, 2);
    assert.equal(statement.body.data.totals.gst, 0, 'no GST without a GSTIN');
    assert.equal(statement.body.data.totals.taxable_value, 2);
    const docs = await documents(gw, a.headers, '2027-01');
    assert.equal(docs.length, 1);
    assert.equal(docs[0].kind, 'bill_of_supply');
    assert.equal(docs[0].supplier.gstin, null);
    assert.deepEqual(docs[0].totals, {
      taxable_value: 2,
      cgst: 0,
      sgst: 0,
      igst: 0,
      gst: 0,
      total: 2,
    });
    const pdf = await fetch(`${gw.url}/api/reports/gst-invoices?month=2027-01&format=pdf`, {
      headers: a.headers,
    });
    const read = await pdfText(new Uint8Array(await pdf.arrayBuffer()));
    assert.ok(read.text.includes('Bill of supply'), read.text);
    assert.ok(!read.text.includes('Tax invoice'), read.text);
    await gw.stop();
    assert.deepEqual(await verifyBreaches(gw, url), []);
  } finally {
    await gw.stop();
  }
});

test('a month that is over is issued in the background, unasked', async () => {
  const clock = fakeClock(IST('2027-01-20T10:00:00'));
  const url = await database();
  const settings = config();
  (settings.payments as Record<string, unknown>).prune = { interval_ms: 50 };
  const gw = await fakeClockGateway(settings, clock, url);
  try {
    const a = await onboard(gw, 'asha', KYC_A);
    await panFind(gw, a.headers, 1);
    clock.set(IST('2027-02-01T00:30:00'));
    const deadline = Date.now() + 15_000;
    while ((await gw.store.fetch('gst_invoicing', 'state'))?.issued_through !== '2027-01') {
      assert.ok(Date.now() < deadline, 'January not issued in the background');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const docs = await documents(gw, a.headers, '2027-01');
    assert.equal(docs[0].invoice_number, 'AH/26-27/000001');
  } finally {
    await gw.stop();
  }
});

test('verify finds a fee posted into a month whose documents are issued (a clock behind)', async () => {
  const clock = fakeClock(IST('2027-01-20T10:00:00'));
  const url = await database();
  const gw = await fakeClockGateway(config(), clock, url);
  try {
    const a = await onboard(gw, 'asha', KYC_A);
    await panFind(gw, a.headers, 1);
    clock.set(IST('2027-02-01T09:00:00'));
    const issued = await documents(gw, a.headers, '2027-01');
    assert.deepEqual(issued[0].totals.igst, 0.31);
    // The clock goes back into January: one more fee lands in an issued month.
    clock.set(IST('2027-01-31T23:00:00'));
    await panFind(gw, a.headers, 2);
    clock.set(IST('2027-02-01T09:30:00'));
    assert.deepEqual(
      await documents(gw, a.headers, '2027-01'),
      issued,
      'issued documents never change',
    );
    await gw.stop();
    const breaches = await verifyBreaches(gw, url);
    assert.equal(breaches.length, 1, breaches.join('\n'));
    assert.match(
      breaches[0]!,
      new RegExp(
        `GST invoice of ${a.account_id} for 2027-01: the documents say taxable 1690000, CGST 0, SGST/UTGST 0, IGST 310000 .*, the fee and GST accounts moved taxable 3380000, CGST 0, SGST/UTGST 0, IGST 620000`,
      ),
    );
  } finally {
    await gw.stop();
  }
});

test(
  'two gateways on one PostgreSQL issuing at once: every number once, no gap, the same documents from both',
  { skip: TEST_CLUSTER_URL ? false : 'needs AIHUB_TEST_DATABASE_URL (the PostgreSQL pass)' },
  async () => {
    const clock = fakeClock(IST('2027-02-10T10:00:00'));
    const url = await database();
    const one = await fakeClockGateway(config(), clock, url);
    const two = await fakeClockGateway(config(), clock, url);
    try {
      const accounts = [];
      for (const [i, kyc] of [KYC_A, KYC_B, KYC_A, KYC_B, KYC_A].entries())
        accounts.push(await onboard(one, `acct${i}`, { ...kyc, name: `Shop ${'ABCDE'[i]}` }));
      let n = 0;
      const charged = { '2026-27': 0, '2027-28': 0 };
      for (const month of ['2027-02-10', '2027-03-10', '2027-04-10']) {
        clock.set(IST(`${month}T10:00:00`));
        for (const [i, a] of accounts.entries()) {
          if ((i + n) % 3 === 0) {
            n++;
            continue;
          }
          await panFind(i % 2 ? two : one, a.headers, ++n);
          charged[month < '2027-04' ? '2026-27' : '2027-28']++;
        }
      }
      clock.set(IST('2027-05-02T10:00:00'));
      // Every account asks for every month, half through each gateway, all at once.
      const months = ['2027-04', '2027-02', '2027-03'];
      const asked = accounts.flatMap((a, i) =>
        months.map((month, j) => ({ gw: (i + j) % 2 ? one : two, a, month })),
      );
      const answers = await Promise.all(
        asked.map(({ gw, a, month }) => documents(gw, a.headers, month)),
      );
      const numbers = new Map<string, number[]>();
      for (const [k, docs] of answers.entries()) {
        const { gw, a, month } = asked[k]!;
        // The other gateway reads the same documents.
        const other = await documents(gw === one ? two : one, a.headers, month);
        assert.deepEqual(other, docs);
        for (const d of docs) {
          const key = `${d.series}:${d.financial_year}`;
          numbers.set(key, [...(numbers.get(key) ?? []), Number(d.invoice_number.slice(-6))]);
        }
      }
      for (const [key, serials] of numbers) {
        const sorted = [...serials].sort((x, y) => x - y);
        assert.deepEqual(
          sorted,
          Array.from({ length: sorted.length }, (_, i) => i + 1),
          key,
        );
      }
      assert.equal(numbers.get('invoice:2026-27')?.length, charged['2026-27']);
      assert.equal(numbers.get('invoice:2027-28')?.length, charged['2027-28']);
      await one.stop();
      await two.stop();
      assert.deepEqual(await verifyBreaches(one, url), []);
    } finally {
      await one.stop();
      await two.stop();
    }
  },
);

test("the operator's GSTIN is checked in full at start, and an eKYC GSTIN's PAN must have a holder type", async () => {
  const refused = await startPaymentsGateway(
    paymentsConfig({ tax: { operator: { gstin: '29AAACA1234A1Z5' } } }),
  ).then(
    (gw) => gw.stop().then(() => 'started'),
    (error: Error) => error.message,
  );
  assert.match(refused, /gstin/);
  assert.match(refused, /mod-36 check character/);

  const clock = fakeClock(IST('2027-01-20T10:00:00'));
  const gw = await fakeClockGateway(paymentsConfig(), clock);
  try {
    const registered = await request(`${gw.url}/api/register`, {
      body: { email: `q-${process.pid}@example.com`, password: 'correct horse battery', name: 'Q' },
    });
    const headers = { 'x-api-key': registered.body.data.api_key as string };
    const first14 = '27ABCQE1234F1Z';
    const kyc = await gw.call('POST', '/api/kyc', headers, {
      ...VALID_KYC,
      pan_number: 'ABCQE1234F',
      gstin: first14 + gstinCheckCharacter(first14),
    });
    assert.equal(kyc.status, 400, JSON.stringify(kyc.body));
    assert.ok(['gstin', 'pan_number'].includes(kyc.body.error.field), JSON.stringify(kyc.body));
  } finally {
    await gw.stop();
  }
});
