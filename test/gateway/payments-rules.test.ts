// Issue #35's rules, each at the door a user meets it, against the real gateway (on the
// PostgreSQL store too when AIHUB_TEST_DATABASE_URL is set):
// - BBPS: a fetch-and-pay biller is paid only against its fetched bill, with its amount rule;
//   the customer's mobile and PAN in every shape, through /api/bills/pay and through an
//   electricity board's /api/recharge alike; the shape from before BBPS off by default, and
//   when an operator turns it on, answered with Deprecation and Sunset headers;
// - a prepaid operator that sells plans only takes a plan's amount (₹10.50 of Jio: refused);
// - a retailer scheme above its distributor's (3.5 % and 3.9 % under 3 %) is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admin, request } from './helpers.ts';
import {
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
} from '../support/payments-helpers.ts';

const MOBILE = '9876543210';

test('BBPS: fetch-and-pay billers only against a fetched bill; mobile and PAN on every door; the old shape off', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { headers } = await onboard(gw, 100_000, { bills: true, recharge: true });
    const post = (path: string, body: unknown) =>
      request(`${gw.url}/api${path}`, { headers, body });

    // Every fetch-and-pay biller of the catalogue says a fetch is required, the ten from
    // before BBPS and the three that said otherwise included.
    const billers = (await request(`${gw.url}/api/bills/billers`, { headers })).body.data;
    const fetch_and_pay = billers.filter((b: any) => b.mode === 'fetch_and_pay');
    assert.ok(fetch_and_pay.length >= 40, `${fetch_and_pay.length} fetch-and-pay billers`);
    for (const biller of fetch_and_pay) assert.equal(biller.fetch_required, true, biller.biller_id);
    for (const id of ['BESCOM', 'PMCWATER', 'HATHWAYBB', 'HATHWAYCTV'])
      assert.ok(
        fetch_and_pay.some((b: any) => b.biller_id === id),
        id,
      );

    // The reproduction: the shape from before BBPS is refused, naming its field.
    const legacy = await post('/bills/pay', {
      biller_id: 'BESCOM',
      consumer_number: '1234567899',
      amount: 60000,
    });
    assert.equal(legacy.status, 400, JSON.stringify(legacy.body));
    assert.equal(legacy.body.status, false);
    assert.equal(legacy.body.error.field, 'consumer_number');
    assert.equal(legacy.body.error.code, 'legacy_request_shape');
    assert.match(legacy.body.message, /params: \{"consumer_number"/);
    const legacy_fetch = await post('/bills/fetch', {
      biller_id: 'BESCOM',
      consumer_number: '1234567899',
    });
    assert.equal(legacy_fetch.status, 400);
    assert.equal(legacy_fetch.body.error.field, 'consumer_number');

    // In the current shape, with every detail but a fetched bill: refused for each biller
    // that is fetch-and-pay, those that used to take it included.
    for (const [biller_id, params] of [
      ['BESCOM', { consumer_number: '1234567899' }],
      ['PMCWATER', { connection_number: 'PMC123456' }],
      ['HATHWAYBB', { customer_id: 'HW123456' }],
    ] as const) {
      const unfetched = await post('/bills/pay', {
        biller_id,
        params,
        amount: 600,
        customer_mobile: MOBILE,
      });
      assert.equal(unfetched.status, 400, `${biller_id}: ${JSON.stringify(unfetched.body)}`);
      assert.equal(unfetched.body.error.code, 'fetch_required');
      assert.equal(unfetched.body.error.field, 'bill_id');
    }

    // Against the fetched bill: its exact amount, the customer's mobile.
    const bill = (
      await post('/bills/fetch', { biller_id: 'BESCOM', params: { consumer_number: '1234567899' } })
    ).body.data;
    assert.match(bill.bill_id, /^bill_/);
    const pay = (fields: Record<string, unknown>) =>
      post('/bills/pay', {
        biller_id: 'BESCOM',
        params: { consumer_number: '1234567899' },
        bill_id: bill.bill_id,
        amount: bill.amount,
        customer_mobile: MOBILE,
        ...fields,
      });
    const more = await pay({ amount: bill.amount + 1 });
    assert.equal(more.status, 422);
    assert.equal(more.body.error.code, 'amount_mismatch');
    const no_mobile = await pay({ customer_mobile: undefined });
    assert.equal(no_mobile.status, 400);
    assert.equal(no_mobile.body.error.field, 'customer_mobile');
    const bad_mobile = await pay({ customer_mobile: '12345' });
    assert.equal(bad_mobile.status, 400);
    assert.equal(bad_mobile.body.error.field, 'customer_mobile');
    assert.equal(await balance(gw, headers), 100_000, 'nothing moved for a refusal');

    // ₹60,000 against a bill (a biller that takes the bill or more): the PAN is asked.
    const upp = (
      await post('/bills/fetch', {
        biller_id: 'UPPCLURB',
        params: { account_number: '1234567899' },
      })
    ).body.data;
    const big = {
      biller_id: 'UPPCLURB',
      params: { account_number: '1234567899' },
      bill_id: upp.bill_id,
      amount: 60_000,
      customer_mobile: MOBILE,
    };
    const no_pan = await post('/bills/pay', big);
    assert.equal(no_pan.status, 400);
    assert.equal(no_pan.body.error.code, 'pan_required');
    assert.equal(no_pan.body.error.field, 'customer_pan');

    // An electricity board's recharge is that biller's payment, with the same rules.
    const board = await post('/recharge', { operator_id: 31, number: '1234567899', amount: 600 });
    assert.equal(board.status, 400, JSON.stringify(board.body));
    assert.equal(board.body.error.field, 'bill_id');
    const board_no_mobile = await post('/recharge', {
      operator_id: 31,
      number: '1234567899',
      amount: bill.amount,
      bill_id: bill.bill_id,
    });
    assert.equal(board_no_mobile.status, 400);
    assert.equal(board_no_mobile.body.error.field, 'customer_mobile');
    const mobile_on_prepaid = await post('/recharge', {
      operator_id: 1,
      number: MOBILE,
      amount: 100,
      customer_mobile: MOBILE,
    });
    assert.equal(mobile_on_prepaid.status, 400);
    assert.equal(mobile_on_prepaid.body.error.field, 'customer_mobile');
    assert.equal(await balance(gw, headers), 100_000, 'nothing moved for a refusal');

    const board_paid = await post('/recharge', {
      operator_id: 31,
      number: '1234567899',
      amount: bill.amount,
      bill_id: bill.bill_id,
      customer_mobile: MOBILE,
    });
    assert.equal(board_paid.status, 200, JSON.stringify(board_paid.body));
    assert.equal(board_paid.body.data.status, 'success');
    assert.equal(board_paid.body.data.bill_id, bill.bill_id);
    // The bill is paid once, whichever door.
    const again = await pay({ allow_duplicate: true });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'bill_already_paid');
    const paid = await post('/bills/pay', { ...big, customer_pan: 'AAPFU0939F' });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.data.status, 'success');
    assert.equal(paid.headers.get('deprecation'), null, 'the current shape is not deprecated');
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('BBPS: the shape from before BBPS, switched on, keeps every rule and is answered as deprecated', async () => {
  const gw = await startPaymentsGateway(paymentsConfig({ bills: { allow_legacy_requests: true } }));
  try {
    const { headers } = await onboard(gw, 100_000, { bills: true });
    const post = (path: string, body: unknown) =>
      request(`${gw.url}/api/bills${path}`, { headers, body });
    const deprecated = (reply: { headers: Headers }) => {
      assert.match(reply.headers.get('deprecation') ?? '', /^@\d+$/);
      const sunset = Date.parse(reply.headers.get('sunset') ?? '');
      assert.equal(new Date(sunset).toISOString(), '2027-06-30T23:59:59.000Z');
    };
    const legacy = await post('/pay', {
      biller_id: 'BESCOM',
      consumer_number: '1234567899',
      amount: 60000,
    });
    assert.equal(legacy.status, 400, JSON.stringify(legacy.body));
    assert.equal(legacy.body.error.field, 'bill_id');
    deprecated(legacy);
    const fetched = await post('/fetch', { biller_id: 'BESCOM', consumer_number: '1234567899' });
    assert.equal(fetched.status, 200);
    deprecated(fetched);
    const body = {
      biller_id: 'BESCOM',
      consumer_number: '1234567899',
      bill_id: fetched.body.data.bill_id,
      amount: fetched.body.data.amount,
    };
    const no_mobile = await post('/pay', body);
    assert.equal(no_mobile.status, 400);
    assert.equal(no_mobile.body.error.field, 'customer_mobile');
    const paid = await post('/pay', { ...body, customer_mobile: MOBILE });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.data.status, 'success');
    deprecated(paid);
    const current = await post('/fetch', {
      biller_id: 'BESCOM',
      params: { consumer_number: '1234567898' },
    });
    assert.equal(current.status, 200);
    assert.equal(current.headers.get('deprecation'), null);
    assert.equal(current.headers.get('sunset'), null);
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test('recharge: an operator that sells plans only refuses an amount that is no plan (₹10.50 of Jio)', async () => {
  // plan_check is off (the default): the operator's own rule holds whatever it says.
  const gw = await startPaymentsGateway();
  try {
    const { headers } = await onboard(gw, 1_000);
    const post = (body: unknown) => request(`${gw.url}/api/recharge`, { headers, body });
    const operators = (await request(`${gw.url}/api/operators?type=prepaid`, { headers })).body
      .data;
    assert.equal(operators.find((o: any) => o.operator_id === 2).plans_only, true);
    const odd = await post({ operator_id: 2, number: '7011123456', amount: 10.5 });
    assert.equal(odd.status, 422, JSON.stringify(odd.body));
    assert.equal(odd.body.status, false);
    assert.equal(odd.body.error.code, 'amount_not_a_plan');
    assert.equal(odd.body.error.field, 'amount');
    assert.match(odd.body.message, /Jio sells plans only/);
    // Looked up from the number, the operator's rule is the same.
    const looked = await post({ number: '7011123456', amount: 10.5 });
    assert.equal(looked.status, 422, JSON.stringify(looked.body));
    assert.equal(await balance(gw, headers), 1_000, 'nothing held or charged');
    const plan = await post({ operator_id: 2, number: '7011123456', amount: 299, circle: 'DL' });
    assert.equal(plan.status, 200, JSON.stringify(plan.body));
    assert.equal(plan.body.data.status, 'success');
    assert.equal(plan.body.data.plan_check.result, 'listed');
    // An operator not marked so follows plan_check (off): any amount within its range.
    const open = await post({ operator_id: 1, number: '9876543210', amount: 10.5 });
    assert.equal(open.status, 200, JSON.stringify(open.body));
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});

test("network: a retailer scheme of 3.5 % or 3.9 % under a distributor's 3 % is refused; 3 % is taken", async () => {
  const gw = await startPaymentsGateway();
  try {
    const api = admin(gw);
    const d = await onboard(gw, 0, { recharge: true });
    const three = await api.post('/admin/schemes', {
      name: 'Three',
      slabs: [{ id: 'all', service: 'recharge', type: 'percent', value: 3 }],
    });
    assert.equal(three.status, 201, JSON.stringify(three.body));
    const set = await api.put(`/admin/accounts/${d.account_id}/network`, {
      role: 'distributor',
      scheme_id: three.body.scheme_id,
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const create = (value: number) =>
      request(`${gw.url}/api/network/schemes`, {
        headers: d.headers,
        body: {
          name: `Retail ${value}`,
          slabs: [{ id: 'all', service: 'recharge', type: 'percent', value }],
        },
      });
    for (const [value, at] of [
      [3.5, '0.29'],
      [3.9, '0.26'],
    ] as const) {
      const refused = await create(value);
      assert.equal(refused.status, 409, `${value} %: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error.code, 'scheme_above_margin');
      assert.match(
        refused.body.message,
        new RegExp(`recharge at ${at}: the retailer's scheme pays 0.01, the distributor's 0`),
      );
    }
    assert.equal((await create(3)).status, 201);
  } finally {
    await gw.stop();
  }
});
