// BBPS as NPCI defines it, through HTTP against a real gateway with the sandbox providers:
// the categories and billers with their customer parameters, modes and amount rules; fetch
// and pay, validate and pay, pay directly; partial payment; the customer's mobile and, from
// ₹50,000, PAN; the receipt with the BBPS reference (HTML and PDF); complaints with their
// status over time; an electricity board's "recharge" and its BBPS biller as one path with
// one duplicate rule. The books verify at the end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Gateway } from './helpers.ts';
import {
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
  waitFor,
} from '../support/payments-helpers.ts';
import { pdfText } from '../support/payments-pdf.ts';

async function api(gw: Gateway, headers: Record<string, string>, path: string, body?: unknown) {
  return request(`${gw.url}/api${path}`, { headers, ...(body === undefined ? {} : { body }) });
}

test(
  'BBPS: categories, billers with parameters, the three modes, amount rules, customer details, receipt, complaints, electricity as one path',
  { timeout: 120_000 },
  async () => {
    const gw = await startPaymentsGateway(
      paymentsConfig({ bills: { complaints: { refresh_ms: 0 } } }),
    );
    try {
      const { headers } = await onboard(gw, 200_000, { bills: true, recharge: true });
      const call = (path: string, body?: unknown) => api(gw, headers, path, body);

      // Categories: every BBPS category, with its name and how many billers it has.
      const categories = await call('/bills/categories');
      assert.equal(categories.status, 200);
      const by_id = new Map(categories.body.data.map((c: any) => [c.category, c]));
      for (const id of [
        'electricity',
        'water',
        'gas',
        'lpg',
        'broadband',
        'landline',
        'postpaid',
        'dth',
        'fastag',
        'insurance',
        'loan_repayment',
        'credit_card',
        'municipal_tax',
        'education_fees',
        'cable_tv',
        'subscription',
        'housing_society',
        'hospital',
        'clubs_associations',
        'recurring_deposit',
        'nps',
        'prepaid_meter',
      ])
        assert.ok((by_id.get(id) as any)?.billers >= 1, id);
      assert.equal((by_id.get('gas') as any).name, 'Piped Gas');
      const piped = await call('/bills/billers?category=piped_gas');
      assert.ok(
        piped.body.data.length >= 2 && piped.body.data.every((b: any) => b.category === 'gas'),
      );

      // A biller's customer parameters, mode and amount rule.
      const life = await call('/bills/billers?category=life_insurance');
      const lic = life.body.data.find((b: any) => b.biller_id === 'LIC');
      assert.deepEqual(
        lic.params.map((p: any) => [p.name, p.optional]),
        [
          ['policy_number', false],
          ['email', true],
        ],
      );
      assert.equal(lic.mode, 'fetch_and_pay');
      assert.equal(lic.amount_rule, 'EXACT');
      assert.equal(lic.fetch_required, true);
      const search = await call('/bills/billers?q=fastag');
      assert.ok(search.body.data.length >= 3);

      // Fetch and pay with parameters; the BBPS request shape must carry the customer's mobile.
      const fetched = await call('/bills/fetch', {
        biller_id: 'LIC',
        params: { policy_number: '123456789' },
      });
      assert.equal(fetched.status, 200, JSON.stringify(fetched.body));
      const bill = fetched.body.data;
      assert.deepEqual(bill.params, { policy_number: '123456789' });
      assert.equal(bill.amount_rule, 'EXACT');
      for (const [body, field, code] of [
        [{ params: { policy_number: '12345' } }, 'params.policy_number', 'invalid_param'],
        [{ params: { email: 'a@b.in' } }, 'params.policy_number', 'missing_param'],
        [{ params: { policy_number: '123456789', dob: 'x' } }, 'params.dob', 'unknown_param'],
      ] as const) {
        const reply = await call('/bills/fetch', { biller_id: 'LIC', ...body });
        assert.equal(reply.status, 400, JSON.stringify(body));
        assert.deepEqual([reply.body.error.field, reply.body.error.code], [field, code]);
      }
      const pay = {
        biller_id: 'LIC',
        params: { policy_number: '123456789' },
        bill_id: bill.bill_id,
      };
      const no_mobile = await call('/bills/pay', { ...pay, amount: bill.amount });
      assert.equal(no_mobile.status, 400);
      assert.equal(no_mobile.body.error.field, 'customer_mobile');
      const exact = await call('/bills/pay', {
        ...pay,
        amount: bill.amount + 1,
        customer_mobile: '9876501234',
      });
      assert.equal(exact.status, 422);
      assert.equal(exact.body.error.code, 'amount_mismatch');
      const no_fetch = await call('/bills/pay', {
        biller_id: 'LIC',
        params: { policy_number: '123456789' },
        amount: bill.amount,
        customer_mobile: '9876501234',
      });
      assert.equal(no_fetch.body.error.code, 'fetch_required');
      const paid = await call('/bills/pay', {
        ...pay,
        amount: bill.amount,
        customer_mobile: '+91 98765 01234',
      });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      assert.equal(paid.body.data.status, 'success');
      assert.match(paid.body.data.bbps_ref, /^CC01\d{16}$/);
      assert.equal(paid.body.data.customer_mobile, '9876501234');
      // The receipt carries the BBPS reference (and the customer's mobile, masked).
      const html = await fetch(paid.body.data.receipt_url);
      const page = await html.text();
      assert.match(page, new RegExp(`BBPS reference</th><td>${paid.body.data.bbps_ref}`));
      assert.match(page, /98XXXXXX34/);
      const pdf = await fetch(`${paid.body.data.receipt_url}&format=pdf`);
      const { text } = await pdfText(new Uint8Array(await pdf.arrayBuffer()));
      assert.match(text, /BBPS reference/);
      assert.ok(text.includes(paid.body.data.bbps_ref));

      // PAN from ₹50,000 (pay directly: a rent payment).
      const rent = {
        biller_id: 'NOBROKER',
        params: { tenant_mobile: '9876501234', landlord_account: '123456789012' },
        amount: 60_000,
        customer_mobile: '9876501234',
      };
      const no_pan = await call('/bills/pay', rent);
      assert.equal(no_pan.status, 400);
      assert.deepEqual(
        [no_pan.body.error.field, no_pan.body.error.code],
        ['customer_pan', 'pan_required'],
      );
      const bad_pan = await call('/bills/pay', { ...rent, customer_pan: 'ABCDE12345' });
      assert.equal(bad_pan.body.error.code, 'invalid_pan');
      const with_pan = await call('/bills/pay', { ...rent, customer_pan: 'aapfu0939f' });
      assert.equal(with_pan.status, 200, JSON.stringify(with_pan.body));
      assert.equal(with_pan.body.data.status, 'success');
      const below = await call('/bills/pay', { ...rent, amount: 49_999.99, allow_duplicate: true });
      assert.equal(below.body.data.status, 'success', 'below ₹50,000 no PAN is asked');

      // Pay directly: no fetch, no bill_id.
      const direct = await call('/bills/fetch', {
        biller_id: 'IDFCFT',
        params: { vehicle_number: 'MH12AB1234' },
      });
      assert.equal(direct.body.error.code, 'fetch_not_supported');
      // Validate and pay: the validation first, named as bill_id; any amount within bounds.
      const fastag = {
        biller_id: 'ICICIFT',
        params: { vehicle_number: 'MH12AB1234' },
        customer_mobile: '9876501234',
      };
      const unvalidated = await call('/bills/pay', { ...fastag, amount: 500 });
      assert.equal(unvalidated.body.error.code, 'validation_required');
      const validation = await call('/bills/validate', fastag);
      assert.equal(validation.status, 200, JSON.stringify(validation.body));
      assert.equal(validation.body.data.kind, 'validation');
      assert.equal(validation.body.data.amount, null);
      assert.ok(validation.body.data.customer_name.length > 0);
      const topped = await call('/bills/pay', {
        ...fastag,
        amount: 750,
        bill_id: validation.body.data.validation_id,
      });
      assert.equal(topped.body.data.status, 'success', JSON.stringify(topped.body));
      const wrong_mode = await call('/bills/validate', {
        biller_id: 'LIC',
        params: { policy_number: '123456789' },
      });
      assert.equal(wrong_mode.body.error.code, 'validation_not_supported');

      // Amount rules: EXACT_AND_ABOVE (UPPCL), partial payment (WBSEDCL).
      const up = await call('/bills/fetch', {
        biller_id: 'UPPCLURB',
        params: { account_number: '1234567890' },
      });
      const up_pay = {
        biller_id: 'UPPCLURB',
        params: { account_number: '1234567890' },
        bill_id: up.body.data.bill_id,
        customer_mobile: '9876501234',
      };
      const less = await call('/bills/pay', { ...up_pay, amount: up.body.data.amount - 1 });
      assert.equal(less.body.error.code, 'amount_mismatch');
      assert.match(less.body.message, /or more/);
      const more = await call('/bills/pay', { ...up_pay, amount: up.body.data.amount + 100 });
      assert.equal(more.body.data.status, 'success', JSON.stringify(more.body));
      const wb = await call('/bills/fetch', {
        biller_id: 'WBSEDCL',
        params: { consumer_id: '123456789' },
      });
      const part = await call('/bills/pay', {
        biller_id: 'WBSEDCL',
        params: { consumer_id: '123456789' },
        bill_id: wb.body.data.bill_id,
        amount: Math.floor(wb.body.data.amount / 2),
        customer_mobile: '9876501234',
      });
      assert.equal(part.body.data.status, 'success', 'partial payment');

      // Complaints: about the LIC payment; its status over time (sandbox: assigned, in progress, resolved).
      const complaint = await call('/bills/complaints', {
        txn_id: paid.body.txn_id,
        reason: 'transaction_successful_account_not_updated',
        description: 'The policy still shows the premium as due.',
      });
      assert.equal(complaint.status, 201, JSON.stringify(complaint.body));
      const c = complaint.body.data;
      assert.match(c.complaint_id, /^cmp_/);
      assert.match(c.complaint_ref, /^CC0\d{12}$/);
      assert.equal(c.type, 'transaction');
      assert.equal(c.status, 'assigned');
      assert.equal(c.assigned_to, 'biller');
      assert.deepEqual(
        c.history.map((h: any) => h.status),
        ['registered', 'assigned'],
      );
      const twice = await call('/bills/complaints', {
        txn_id: paid.body.txn_id,
        reason: 'others',
        description: 'again',
      });
      assert.equal(twice.status, 409);
      assert.equal(twice.body.error.code, 'complaint_exists');
      const bad_reason = await call('/bills/complaints', {
        txn_id: rent.biller_id && with_pan.body.txn_id,
        reason: 'agent_overcharging',
      });
      assert.equal(bad_reason.status, 400);
      assert.equal(bad_reason.body.error.field, 'reason');
      let last: any = null;
      await waitFor(
        async () =>
          (last = (await call(`/bills/complaints/${c.complaint_id}`)).body.data).status ===
          'resolved',
        () => JSON.stringify(last),
      );
      assert.deepEqual(
        last.history.map((h: any) => h.status),
        ['registered', 'assigned', 'in_progress', 'resolved'],
      );
      assert.match(last.resolution, /updated/);
      // A service complaint (about the agent), and one the biller rejects.
      const service = await call('/bills/complaints', {
        type: 'service',
        biller_id: 'BESCOM',
        reason: 'agent_overcharging',
        description: 'Charged Rs 20 extra',
      });
      assert.equal(service.status, 201);
      assert.equal(service.body.data.assigned_to, 'agent institution');
      const rejected = await call('/bills/complaints', {
        txn_id: with_pan.body.txn_id,
        reason: 'double_payment_updated',
      });
      await waitFor(
        async () =>
          (last = (await call(`/bills/complaints/${rejected.body.data.complaint_id}`)).body.data)
            .status === 'rejected',
        () => JSON.stringify(last),
      );
      const listed = await call('/bills/complaints');
      assert.equal(listed.body.data.length, 3);
      const none = await call('/bills/complaints/cmp_000000000000000000000000');
      assert.equal(none.status, 404);

      // An electricity board's recharge is a BBPS payment of its biller: one path, one duplicate rule.
      // It pays a fetched bill, with the customer's mobile, as /api/bills/pay does.
      const fetchBescom = async () =>
        (
          await call('/bills/fetch', {
            biller_id: 'BESCOM',
            params: { consumer_number: '1234567891' },
          })
        ).body.data;
      const board_bill = await fetchBescom();
      const amount = board_bill.amount;
      const before = await balance(gw, headers);
      const by_recharge = await call('/recharge', {
        operator_id: 31,
        number: '1234567891',
        amount,
        bill_id: board_bill.bill_id,
        customer_mobile: '9876501234',
      });
      assert.equal(by_recharge.status, 200, JSON.stringify(by_recharge.body));
      assert.equal(by_recharge.body.data.status, 'success');
      assert.equal(by_recharge.body.data.operator, 'BESCOM (Bengaluru)');
      assert.equal(by_recharge.body.data.operator_id, 31);
      assert.equal(by_recharge.body.data.biller_id, 'BESCOM');
      assert.equal(
        by_recharge.body.data.commission_credited,
        Math.round((by_recharge.body.data.commission - by_recharge.body.data.tds) * 100) / 100,
        'the commission credited, as a recharge answers it',
      );
      assert.match(by_recharge.body.data.receipt_url, /\/api\/bills\/receipt\//);
      const txn = await call(`/transactions/${by_recharge.body.txn_id}`);
      assert.equal(txn.body.data.service, 'bills');
      // The same consumer and amount again (a second fetch of the same bill), through either door.
      const again = await fetchBescom();
      const twin = await call('/bills/pay', {
        biller_id: 'BESCOM',
        params: { consumer_number: '1234567891' },
        bill_id: again.bill_id,
        amount,
        customer_mobile: '9876501234',
      });
      assert.equal(twin.status, 409, 'the same bill through the other door is a duplicate');
      assert.equal(twin.body.error.code, 'duplicate_transaction');
      const twin_back = await call('/recharge', {
        operator_id: 31,
        number: '1234567891',
        amount,
        bill_id: again.bill_id,
        customer_mobile: '9876501234',
      });
      assert.equal(twin_back.status, 409);
      assert.equal(
        await balance(gw, headers),
        Math.round(
          (before - amount + by_recharge.body.data.commission - (by_recharge.body.data.tds ?? 0)) *
            100,
        ) / 100,
      );
      await verifyOk(gw);
    } finally {
      await gw.stop();
    }
  },
);
