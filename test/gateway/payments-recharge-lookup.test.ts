// Recharge's lookups through HTTP against a real gateway with the sandbox providers (their
// bundled sample number series, plans and DTH accounts): a number's operator and circle, an
// operator's plans in a circle, a number's offers, a DTH subscriber; a recharge without
// operator_id gets the looked-up operator (and says so); the plan check warns or refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Gateway } from './helpers.ts';
import {
  balance,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifyOk,
} from '../support/payments-helpers.ts';

const get = (gw: Gateway, headers: Record<string, string>, path: string) =>
  request(`${gw.url}${path}`, { headers });

test(
  'lookup, plans, offers, DTH info; a recharge without operator_id uses the looked-up operator',
  { timeout: 120_000 },
  async () => {
    const gw = await startPaymentsGateway(paymentsConfig({ recharge: { plan_check: 'warn' } }));
    try {
      const { headers } = await onboard(gw, 2_000);
      // A series in the sample: 9810 is Airtel, Delhi.
      const airtel = await get(gw, headers, '/api/recharge/lookup?number=%2B91%2098101%2023456');
      assert.equal(airtel.status, 200, JSON.stringify(airtel.body));
      assert.deepEqual(
        {
          number: airtel.body.data.number,
          operator_id: airtel.body.data.operator_id,
          operator: airtel.body.data.operator,
          type: airtel.body.data.type,
          circle: airtel.body.data.circle,
          circle_name: airtel.body.data.circle_name,
          source: airtel.body.data.source,
        },
        {
          number: '9810123456',
          operator_id: 1,
          operator: 'Airtel',
          type: 'prepaid',
          circle: 'DL',
          circle_name: 'Delhi NCR',
          source: 'series',
        },
      );
      // Postpaid (sandbox: ends in 0008): the postpaid operator of the brand.
      const postpaid = await get(gw, headers, '/api/recharge/lookup?number=9820120008');
      assert.equal(postpaid.body.data.type, 'postpaid');
      assert.equal(postpaid.body.data.operator_id, 11, 'Airtel Postpaid');
      assert.equal(postpaid.body.data.circle, 'MU');
      // A series the sample lacks: a stable made-up answer, said so.
      const made_up = await get(gw, headers, '/api/recharge/lookup?number=6999912345');
      assert.equal(made_up.body.data.source, 'sample');
      const again = await get(gw, headers, '/api/recharge/lookup?number=6999912345');
      assert.deepEqual(again.body.data, made_up.body.data);
      for (const [number, status, code] of [
        ['9810120000', 404, 'number_not_found'],
        ['9810120005', 503, 'providers_unavailable'],
        ['12345', 400, 'invalid_number'],
      ] as const) {
        const reply = await get(gw, headers, `/api/recharge/lookup?number=${number}`);
        assert.equal(reply.status, status, number);
        assert.equal(reply.body.error.code, code, number);
      }
      const no_number = await get(gw, headers, '/api/recharge/lookup');
      assert.equal(no_number.status, 400);
      assert.equal(no_number.body.error.field, 'number');

      // Plans: by operator and circle, with categories; a circle-only plan only in its circle.
      const plans = await get(gw, headers, '/api/recharge/plans?operator_id=1&circle=DL');
      assert.equal(plans.status, 200, JSON.stringify(plans.body));
      const list = plans.body.data.plans as any[];
      assert.ok(list.length >= 15);
      for (const plan of list) {
        assert.equal(typeof plan.amount, 'number');
        for (const field of ['validity', 'data', 'talktime', 'description', 'category'])
          assert.ok(field in plan, field);
      }
      assert.ok(list.some((p) => p.amount === 349 && p.data === '1.5 GB/day'));
      assert.deepEqual([...plans.body.data.categories].sort(), [
        'annual',
        'data',
        'international',
        'top-up',
        'unlimited',
        'validity',
      ]);
      assert.ok(
        list.some((p) => p.amount === 2997),
        'the Delhi-only annual plan',
      );
      const elsewhere = await get(gw, headers, '/api/recharge/plans?operator_id=1&circle=Kerala');
      assert.equal(elsewhere.body.data.circle, 'KL', 'a circle by name');
      assert.ok(!elsewhere.body.data.plans.some((p: any) => p.amount === 2997));
      const data_only = await get(
        gw,
        headers,
        '/api/recharge/plans?operator_id=2&circle=MU&category=data',
      );
      assert.ok(data_only.body.data.plans.every((p: any) => p.category === 'data'));
      const dth = await get(gw, headers, '/api/recharge/plans?operator_id=21');
      assert.equal(dth.body.data.circle, null, 'DTH packs have no circle');
      assert.ok(dth.body.data.plans.length >= 3);
      for (const [path, code, field] of [
        ['/api/recharge/plans?operator_id=1', 'invalid_value', 'circle'],
        ['/api/recharge/plans?operator_id=1&circle=XX', 'invalid_value', 'circle'],
        ['/api/recharge/plans?operator_id=999&circle=DL', 'unknown_operator', 'operator_id'],
        ['/api/recharge/plans?operator_id=31', 'no_plans', 'operator_id'],
      ] as const) {
        const reply = await get(gw, headers, path);
        assert.equal(reply.status, 400, path);
        assert.deepEqual([reply.body.error.code, reply.body.error.field], [code, field], path);
      }

      // Offers of one number (operator looked up when not given); stable.
      const offers = await get(gw, headers, '/api/recharge/offers?number=9810123456');
      assert.equal(offers.status, 200, JSON.stringify(offers.body));
      assert.equal(offers.body.data.operator_id, 1);
      assert.ok(offers.body.data.offers.length >= 1);
      assert.ok(offers.body.data.offers.every((o: any) => o.category === 'offer' && o.plan_id));
      const none = await get(gw, headers, '/api/recharge/offers?operator_id=1&number=9810120000');
      assert.equal(none.status, 404);

      // DTH: the subscriber's name, balance, monthly pack and next recharge date.
      const info = await get(gw, headers, '/api/dth/info?operator_id=21&number=1012345678');
      assert.equal(info.status, 200, JSON.stringify(info.body));
      for (const field of [
        'customer_name',
        'balance',
        'monthly_recharge',
        'next_recharge_date',
        'status',
      ])
        assert.ok(info.body.data[field] !== null && info.body.data[field] !== undefined, field);
      assert.match(info.body.data.next_recharge_date, /^\d{4}-\d{2}-\d{2}$/);
      const not_dth = await get(gw, headers, '/api/dth/info?operator_id=1&number=9810123456');
      assert.equal(not_dth.body.error.code, 'not_dth');
      const bad_id = await get(gw, headers, '/api/dth/info?operator_id=21&number=2012345678');
      assert.equal(bad_id.body.error.code, 'invalid_number');
      const gone = await get(gw, headers, '/api/dth/info?operator_id=21&number=1012340000');
      assert.equal(gone.status, 404);
      assert.equal(gone.body.error.code, 'subscriber_not_found');

      // A recharge without operator_id: the looked-up operator, said so; a listed plan passes.
      const before = await balance(gw, headers);
      const looked = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { number: '98101 23456', amount: 349 },
      });
      assert.equal(looked.status, 200, JSON.stringify(looked.body));
      assert.equal(looked.body.data.status, 'success');
      assert.equal(looked.body.data.operator_id, 1);
      assert.match(looked.body.message, /looked up from the number/);
      assert.deepEqual(looked.body.data.lookup, {
        operator_id: 1,
        operator: 'Airtel',
        circle: 'DL',
        source: 'series',
        provider: 'sandbox-a',
      });
      assert.equal(looked.body.data.plan_check.result, 'listed');
      assert.equal(looked.body.data.plan_check.mode, 'warn');
      assert.match(looked.body.data.plan_check.description, /1.5 GB\/day/);
      // warn: an amount that is no plan still goes through, and the answer says so.
      const odd = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9810123457', amount: 123 },
      });
      assert.equal(odd.body.data.status, 'success');
      assert.equal(odd.body.data.plan_check.result, 'not_listed');
      assert.match(odd.body.data.plan_check.note, /not a plan of Airtel in DL/);
      // An offer's amount is listed for its number.
      const offer = offers.body.data.offers[0];
      const by_offer = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { operator_id: 1, number: '9810123456', amount: offer.amount, allow_duplicate: true },
      });
      assert.equal(by_offer.body.data.plan_check.result, 'listed');
      assert.equal(by_offer.body.data.plan_check.plan_id, offer.plan_id);
      const commissions = [looked, odd, by_offer].map((r) => r.body.data.commission_credited);
      assert.equal(
        await balance(gw, headers),
        Math.round(
          (before - 349 - 123 - offer.amount + commissions.reduce((a, b) => a + b, 0)) * 100,
        ) / 100,
      );
      // The transaction keeps what the lookup said.
      const txn = await get(gw, headers, `/api/transactions/${looked.body.txn_id}`);
      assert.equal(txn.body.data.looked_up, 'operator');
      assert.equal(txn.body.data.circle, 'DL');
      // Without operator_id the number must be a mobile; a lookup that finds nothing moves no money.
      const landline = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { number: '1012345678', amount: 100 },
      });
      assert.equal(landline.body.error.code, 'invalid_number');
      const unknown = await request(`${gw.url}/api/recharge`, {
        headers,
        body: { number: '9810120000', amount: 100 },
      });
      assert.equal(unknown.status, 404);
      assert.equal(
        await balance(gw, headers),
        Math.round(
          (before - 349 - 123 - offer.amount + commissions.reduce((a, b) => a + b, 0)) * 100,
        ) / 100,
      );
      await verifyOk(gw);
    } finally {
      await gw.stop();
    }
  },
);

test('plan_check enforce: an amount that is no plan or offer is refused and holds nothing', async () => {
  const gw = await startPaymentsGateway(paymentsConfig({ recharge: { plan_check: 'enforce' } }));
  try {
    const { headers } = await onboard(gw, 1_000);
    const refused = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 2, number: '7011123456', amount: 123 },
    });
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'amount_not_a_plan');
    assert.equal(refused.body.error.field, 'amount');
    assert.match(refused.body.message, /listed amounts: /);
    assert.equal(await balance(gw, headers), 1_000);
    const listed = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 2, number: '7011123456', amount: 299, circle: 'DL' },
    });
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.equal(listed.body.data.plan_check.result, 'listed');
    // Postpaid bills are not plans: not checked.
    const postpaid = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 12, number: '7011123457', amount: 123 },
    });
    assert.equal(postpaid.body.data.status, 'success');
    assert.equal(postpaid.body.data.plan_check, undefined);
    // Plans that cannot be listed (the number's lookup: every provider down) refuse in enforce mode.
    const down = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 2, number: '7011120005', amount: 299 },
    });
    assert.equal(down.status, 503);
    assert.equal(down.body.error.code, 'plans_unavailable');
    await verifyOk(gw);
  } finally {
    await gw.stop();
  }
});
