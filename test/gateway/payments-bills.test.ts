// Bill payment over HTTP against the real gateway: billers by category, fetch → pay →
// receipt (HTML, and a PDF read back by pdf.js holding the amount), a bill paid once, exact
// amounts, declines and pending payments refunded, fetch failures; `verify` after each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from './helpers.ts';
import {
  balance,
  deletedIds,
  ledgerBalances,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  tableIds,
  verifyOk,
  waitFinal,
  waitFor,
} from '../support/payments-helpers.ts';
import { pdfText } from '../support/payments-pdf.ts';

const MOBILE = '9876543210';

const indian = (units: number) =>
  new Intl.NumberFormat('en-IN', { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(
    units,
  );

test('bills: billers, fetch → pay → receipt as HTML and PDF; paid once; refunds on failure', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers, key } = await onboard(gw, 20_000, { bills: true });
    const post = (path: string, body: unknown) =>
      request(`${gw.url}/api/bills${path}`, { headers, body });

    const all = await request(`${gw.url}/api/bills/billers`, { headers });
    assert.equal(all.status, 200);
    // The four categories from before BBPS are there, beside the rest of BBPS's.
    const categories = new Set(all.body.data.map((b: any) => b.category));
    for (const category of ['broadband', 'electricity', 'gas', 'water'])
      assert.ok(categories.has(category), category);
    assert.ok(categories.size >= 25, `${categories.size} categories`);
    const water = await request(`${gw.url}/api/bills/billers?category=water`, { headers });
    assert.ok(water.body.data.length >= 1);
    assert.ok(
      water.body.data.every(
        (b: any) =>
          b.category === 'water' && typeof b.biller_id === 'string' && typeof b.name === 'string',
      ),
    );
    assert.equal(
      (await request(`${gw.url}/api/bills/billers?category=phone`, { headers })).status,
      400,
    );

    // validation
    const unknown = await post('/fetch', {
      biller_id: 'NOPE',
      params: { consumer_number: '1234567890' },
    });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.field, 'biller_id');
    const bad_consumer = await post('/fetch', {
      biller_id: 'BESCOM',
      params: { consumer_number: '12345' },
    });
    assert.equal(bad_consumer.status, 400);
    assert.equal(bad_consumer.body.error.field, 'params.consumer_number');

    // fetch: name, amount, due date; the same bill for the same consumer within the month
    const fetched = await post('/fetch', {
      biller_id: 'bescom',
      params: { consumer_number: '1234567890' },
    });
    assert.equal(fetched.status, 200, JSON.stringify(fetched.body));
    const bill = fetched.body.data;
    assert.match(bill.bill_id, /^bill_/);
    assert.equal(bill.consumer_number, '1234567890');
    assert.equal(typeof bill.customer_name, 'string');
    assert.ok(bill.customer_name.length > 0);
    assert.ok(bill.amount >= 150 && bill.amount < 5_000, String(bill.amount));
    assert.equal(Math.round(bill.amount * 100) / 100, bill.amount, 'at most 2 decimals');
    assert.match(bill.due_date, /^\d{4}-\d{2}-\d{2}$/);
    const refetched = await post('/fetch', {
      biller_id: 'BESCOM',
      params: { consumer_number: '1234567890' },
    });
    assert.equal(refetched.body.data.amount, bill.amount);

    // exact amount with a fetched bill
    const wrong_amount = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'BESCOM',
      params: { consumer_number: '1234567890' },
      amount: bill.amount + 1,
      bill_id: bill.bill_id,
    });
    assert.equal(wrong_amount.status, 422);
    assert.equal(wrong_amount.body.error.code, 'amount_mismatch');
    const wrong_consumer = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'BESCOM',
      params: { consumer_number: '1234567891' },
      amount: bill.amount,
      bill_id: bill.bill_id,
    });
    assert.equal(wrong_consumer.status, 400);
    assert.equal(wrong_consumer.body.error.field, 'bill_id');

    // pay: commission 0.5 % as its own posting, a receipt URL
    const paid = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'BESCOM',
      params: { consumer_number: '1234567890' },
      amount: bill.amount,
      bill_id: bill.bill_id,
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.status, true);
    assert.equal(paid.body.data.status, 'success');
    const txn_id: string = paid.body.data.txn_id;
    assert.match(txn_id, /^txn_/);
    const commission = Math.floor((Math.round(bill.amount * 100) * 50) / 10_000) / 100; // 0.5 %, rounded down to the paisa
    assert.equal(paid.body.data.commission, commission);
    // credited net of TDS: 2 % of the commission, rounded half up to the paisa (section 194H)
    const tds = Math.round(commission * 2) / 100;
    assert.equal(paid.body.data.tds, tds);
    assert.equal(
      await balance(gw, headers),
      Math.round((20_000 - bill.amount + commission - tds) * 100) / 100,
    );
    const receipt_url = new URL(paid.body.data.receipt_url);
    assert.equal(receipt_url.origin, gw.url, 'an absolute URL on this gateway');
    assert.equal(receipt_url.pathname, `/api/bills/receipt/${txn_id}`);
    await verifyOk(gw);

    // the same bill is paid once
    const twice = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'BESCOM',
      params: { consumer_number: '1234567890' },
      amount: bill.amount,
      bill_id: bill.bill_id,
      allow_duplicate: true,
    });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.error.code, 'bill_already_paid');

    // receipt as HTML: with the key, or by the URL's token without it
    const html = await request(`${gw.url}/api/bills/receipt/${txn_id}`, { headers });
    assert.equal(html.status, 200);
    assert.match(html.headers.get('content-type')!, /text\/html/);
    for (const needle of [
      txn_id,
      'BESCOM',
      '1234567890',
      indian(bill.amount),
      'SUCCESS',
      bill.customer_name,
    ])
      assert.ok(html.body.includes(needle), `HTML holds ${needle}`);
    const by_token = await fetch(receipt_url);
    assert.equal(by_token.status, 200);
    assert.ok((await by_token.text()).includes(txn_id));
    const bad_token = await fetch(`${gw.url}/api/bills/receipt/${txn_id}?token=${'0'.repeat(32)}`);
    assert.equal(bad_token.status, 404);
    assert.equal((await fetch(`${gw.url}/api/bills/receipt/${txn_id}`)).status, 401);
    const other = await onboard(gw, 0, { bills: true });
    assert.equal(
      (await request(`${gw.url}/api/bills/receipt/${txn_id}`, { headers: other.headers })).status,
      404,
      "another account's receipt",
    );

    // receipt as PDF: a real PDF holding the amount, the transaction, the biller and the consumer
    const pdf_reply = await fetch(`${gw.url}/api/bills/receipt/${txn_id}?format=pdf`, {
      headers: { 'x-api-key': key },
    });
    assert.equal(pdf_reply.status, 200);
    assert.equal(pdf_reply.headers.get('content-type'), 'application/pdf');
    const bytes = new Uint8Array(await pdf_reply.arrayBuffer());
    const pdf = await pdfText(bytes);
    assert.equal(pdf.pages, 1);
    assert.ok(
      pdf.text.includes(`INR ${indian(bill.amount)}`),
      `the PDF holds the amount ${indian(bill.amount)}:\n${pdf.text}`,
    );
    for (const needle of [
      txn_id,
      'BESCOM (Bengaluru)',
      '1234567890',
      'SUCCESS',
      'Bill payment receipt',
    ])
      assert.ok(pdf.text.includes(needle), `PDF holds ${needle}`);
    const pdf_by_token = await fetch(`${receipt_url}&format=pdf`);
    assert.equal(pdf_by_token.headers.get('content-type'), 'application/pdf');

    // pay without a fetch: a pay-directly biller (any amount within its bounds)
    const direct = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'GENUSPRE',
      params: { meter_number: '5555566666' },
      amount: 432.1,
    });
    assert.equal(direct.body.data.status, 'success');
    const out_of_range = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'GENUSPRE',
      params: { meter_number: '5555566666' },
      amount: 0.5,
    });
    assert.equal(out_of_range.status, 400);
    assert.equal(out_of_range.body.error.field, 'amount');
    await verifyOk(gw);

    // a declined payment (consumer ending 0001): refunded, the bill can be paid again later, the receipt says FAILED
    const declined_bill = (
      await post('/fetch', { biller_id: 'DJB', params: { consumer_number: '9000000001' } })
    ).body.data;
    const before_decline = await balance(gw, headers);
    const declined = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'DJB',
      params: { consumer_number: '9000000001' },
      amount: declined_bill.amount,
      bill_id: declined_bill.bill_id,
    });
    assert.equal(declined.status, 200);
    assert.equal(declined.body.status, false);
    assert.equal(declined.body.data.status, 'failed');
    assert.equal(declined.body.data.refund.amount, declined_bill.amount);
    assert.equal(await balance(gw, headers), before_decline);
    const failed_pdf = await pdfText(
      new Uint8Array(
        await (await fetch(`${declined.body.data.receipt_url}&format=pdf`)).arrayBuffer(),
      ),
    );
    assert.match(failed_pdf.text, /FAILED \(refunded\)/);
    const retry_bill = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'DJB',
      params: { consumer_number: '9000000001' },
      amount: declined_bill.amount,
      bill_id: declined_bill.bill_id,
    });
    assert.equal(retry_bill.status, 200, 'a failed payment frees the bill');
    await verifyOk(gw);

    // pending then failed (0003): held, then refunded by the reconciler
    const before_pending = await balance(gw, headers);
    const pending = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'GENUSPRE',
      params: { meter_number: '900000000003' },
      amount: 250,
    });
    assert.equal(pending.body.data.status, 'pending');
    assert.equal(await balance(gw, headers), before_pending - 250);
    const settled = await waitFinal(gw, headers, pending.body.data.txn_id);
    assert.equal(settled.status, 'failed');
    assert.equal(await balance(gw, headers), before_pending);
    // pending then success (0002)
    const pending_ok = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'GENUSPRE',
      params: { meter_number: '900000000002' },
      amount: 250,
    });
    assert.equal((await waitFinal(gw, headers, pending_ok.body.data.txn_id)).status, 'success');
    await verifyOk(gw);

    // fetch failures: not found (0000) and every provider down (0005); failover (0004)
    const none = await post('/fetch', {
      biller_id: 'TPDDL',
      params: { consumer_number: '90000000000' },
    });
    assert.equal(none.status, 404);
    assert.equal(none.body.error.code, 'bill_not_found');
    const down = await post('/fetch', {
      biller_id: 'TPDDL',
      params: { consumer_number: '90000000005' },
    });
    assert.equal(down.status, 503);
    assert.equal(down.body.error.code, 'providers_unavailable');
    const slow = await post('/fetch', {
      biller_id: 'TPDDL',
      params: { consumer_number: '90000000004' },
    });
    assert.equal(slow.status, 200);

    // the ledger: provider:bills holds every successful amount
    const balances = await ledgerBalances(gw);
    const paid_total = bill.amount + 432.1 + 250; // the declined ones paid nothing
    assert.equal(balances['provider:bills'], Math.round(paid_total * 100) * 10_000);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('bills: a fetched bill expires after fetch_ttl_ms and the pruning pass deletes it; a retried payment still gets its first answer', async () => {
  const gw = await startPaymentsGateway(
    paymentsConfig({
      bills: { fetch_ttl_ms: 1_500 },
      prune: { interval_ms: 200, batch_size: 100 },
    }),
  );
  try {
    const { headers } = await onboard(gw, 20_000, { bills: true });
    const post = (path: string, body: unknown, extra: Record<string, string> = {}) =>
      request(`${gw.url}/api/bills${path}`, { headers: { ...headers, ...extra }, body });
    const a = (
      await post('/fetch', { biller_id: 'BESCOM', params: { consumer_number: '1234567890' } })
    ).body.data;
    const paid = await post(
      '/pay',
      {
        customer_mobile: MOBILE,
        biller_id: 'BESCOM',
        params: { consumer_number: '1234567890' },
        amount: a.amount,
        bill_id: a.bill_id,
      },
      { 'Idempotency-Key': 'pay-a' },
    );
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const b = (
      await post('/fetch', { biller_id: 'BESCOM', params: { consumer_number: '1234567811' } })
    ).body.data;
    // Past the TTL the pruning pass deletes both fetches: waited for in the document's state
    // (in one pass or several, whatever the machine's load), not in a log line's shape.
    const fetches = () => tableIds(gw, 'bill_fetches');
    await waitFor(
      async () => {
        const ids = await fetches();
        return !ids.has(a.bill_id) && !ids.has(b.bill_id);
      },
      async () => `the fetches are still in the document: ${[...(await fetches())].join(', ')}`,
    );
    // The JSON-file store's journal shows the del ops; the PostgreSQL store keeps no log (the
    // rows are gone from aihub.rows, as tableIds just read).
    if (!gw.database_url) {
      const deleted = deletedIds(gw, 'bill_fetches');
      assert.ok(
        deleted.has(a.bill_id) && deleted.has(b.bill_id),
        'they were stored, and deleted by del ops in the journal',
      );
    }
    const late = await post('/pay', {
      customer_mobile: MOBILE,
      biller_id: 'BESCOM',
      params: { consumer_number: '1234567811' },
      amount: b.amount,
      bill_id: b.bill_id,
    });
    assert.equal(late.status, 404);
    assert.equal(late.body.error.code, 'bill_not_found');
    assert.match(late.body.message, /can be paid by id for 2 s after its fetch/);
    // The retry of A's payment: the same answer, no second payment.
    const retried = await post(
      '/pay',
      {
        customer_mobile: MOBILE,
        biller_id: 'BESCOM',
        params: { consumer_number: '1234567890' },
        amount: a.amount,
        bill_id: a.bill_id,
      },
      { 'Idempotency-Key': 'pay-a' },
    );
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.deepEqual(retried.body, paid.body);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});
