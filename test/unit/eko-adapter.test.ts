// The Eko adapter (providers/eko/adapter.ts) called directly against the scripted Eko
// (test/support/eko-server.ts): Eko's tx_status values as our outcomes, a duplicate reference
// read as pending, the inquiry's "TID does not exist" as not found, a missing key or an
// unmapped operator as unavailable (never a decline), and a stale clock refused by Eko; Get
// Recharge Plans' answer read as our plan items, an unmapped circle unavailable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ekoProviderSchema } from '../../gateway/providers/eko/config.ts';
import { EkoProvider, clientRefOf, ekoPlans } from '../../gateway/providers/eko/adapter.ts';
import { ProviderUnavailableError, type ProviderRequest } from '../../gateway/providers/types.ts';
import { EKO, startEko } from '../support/eko-server.ts';

const ENV = { AIHUB_EKO_DEVELOPER_KEY: EKO.developer_key, AIHUB_EKO_ACCESS_KEY: EKO.access_key };

function provider(url: string, env: NodeJS.ProcessEnv = ENV, circle: Record<string, string> = {}) {
  const config = ekoProviderSchema.parse({
    type: 'eko',
    name: 'eko',
    base_url: url,
    initiator_id: EKO.initiator_id,
    user_code: EKO.user_code,
    latlong: '12.9716,77.5946',
    timeout_ms: 1_000,
    codes: { operator_id: { '1': '400' }, circle },
  });
  return new EkoProvider(config, env, () => new Date());
}

let n = 0;
function recharge(number: string, operator_id = 1): ProviderRequest {
  n += 1;
  return {
    txn_id: `txn_${n.toString(16).padStart(24, 'a')}`,
    service: 'recharge',
    amount_micros: 100_000_000,
    subject: number,
    params: { operator_id },
    submitted_at: new Date().toISOString(),
  };
}

const signal = () => AbortSignal.timeout(2_000);

test("Eko's statuses as ours, a duplicate reference as pending, an unknown reference as not found", async () => {
  const server = await startEko();
  const eko = provider(server.url);
  try {
    const ok = recharge('9876500001');
    assert.equal((await eko.submit(ok, signal())).outcome, 'success');
    // The same reference again is Eko's duplicate answer: ask the status, never a decline.
    const again = await eko.submit(ok, signal());
    assert.equal(again.outcome, 'pending');
    assert.equal(server.txns.size, 1);
    assert.equal((await eko.status({ ...ok, provider_ref: null }, signal())).outcome, 'success');
    const failed = await eko.submit(recharge('9876500003'), signal());
    assert.equal(failed.outcome, 'failed');
    // Refunded (4) after a success is a reversal; refund pending (3) a failure; hold (5) on hold.
    for (const [tx_status, outcome, code] of [
      [4, 'failed', 'reversed'],
      [3, 'failed', 'refund_pending'],
      [5, 'on_hold', undefined],
      [2, 'pending', undefined],
    ] as const) {
      const txn = server.txns.get(clientRefOf(ok.txn_id))!;
      Object.assign(txn, { tx_status, awaited: 99 });
      const status = await eko.status({ ...ok, provider_ref: null }, signal());
      assert.equal(status.outcome, outcome, `tx_status ${tx_status}`);
      assert.equal((status as { code?: string }).code, code);
    }
    const unknown = await eko.status({ ...recharge('9876500001'), provider_ref: null }, signal());
    assert.equal(unknown.outcome, 'not_found');
  } finally {
    await server.close();
  }
});

test('a missing key, an unmapped operator and a clock Eko finds stale are unavailable, not declines', async () => {
  const server = await startEko(() => Date.now() + 10 * 60_000);
  try {
    const unavailable = async (promise: Promise<unknown>, kind: string, pattern: RegExp) => {
      const error = await promise.then(
        () => assert.fail('expected unavailable'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ProviderUnavailableError, String(error));
      assert.equal(error.kind, kind);
      assert.match(error.message, pattern);
    };
    const keyless = provider(server.url, { AIHUB_EKO_DEVELOPER_KEY: EKO.developer_key });
    await unavailable(
      keyless.submit(recharge('9876500001'), signal()),
      'misconfigured',
      /AIHUB_EKO_ACCESS_KEY/,
    );
    const eko = provider(server.url);
    await unavailable(
      eko.submit(recharge('9876500001', 7), signal()),
      'misconfigured',
      /operator_id 7/,
    );
    // The scripted Eko's clock is ten minutes ahead: our timestamp is stale there (403).
    await unavailable(eko.submit(recharge('9876500001'), signal()), 'misconfigured', /403/);
    assert.deepEqual(
      server.refused.map((r) => r.why),
      ['secret-key-timestamp stale'],
    );
    assert.equal(server.txns.size, 0, 'nothing was paid');
  } finally {
    await server.close();
  }
});

test("Get Recharge Plans' answer as our plan items: req_list's value, its fields named by type_metadata", () => {
  const answer = [
    { name: 'something_else', value: [{ amount: '1' }] },
    {
      name: 'req_list',
      type_metadata: [
        {
          headers: [
            { name: 'mrp', value: 'price' },
            { name: 'days', value: 'validity' },
            { name: 'toString', value: 'constructor' },
          ],
        },
      ],
      value: [
        { mrp: '349', days: '28 Days', plan_description: '1.5 GB/day' },
        { mrp: '0', days: '1 Day', plan_description: 'free' },
        { mrp: 'n/a', plan_description: 'no price' },
        null,
        { mrp: 19.5, plan_description: 'Data add-on' },
      ],
    },
  ];
  assert.deepEqual(ekoPlans(answer), [
    { amount: 349, validity: '28 Days', description: '1.5 GB/day' },
    { amount: 19.5, description: 'Data add-on' },
  ]);
  // The reference's own field names when no metadata renames them.
  assert.deepEqual(
    ekoPlans([
      { name: 'req_list', value: [{ amount: '224', validity: '30 Days', plan_description: 'x' }] },
    ]),
    [{ amount: 224, validity: '30 Days', description: 'x' }],
  );
  for (const nothing of [
    undefined,
    null,
    {},
    [],
    [{ name: 'req_list' }],
    [{ name: 'req_list', value: 'x' }],
  ])
    assert.deepEqual(ekoPlans(nothing), []);
  const many = Array.from({ length: 2_000 }, (_, i) => ({ amount: String(i + 1) }));
  assert.equal(ekoPlans([{ name: 'req_list', value: many }]).length, 500, 'bounded');
});

test("plans: our operator and circle in Eko's codes, the operator lookup's circle read back as ours", async () => {
  const server = await startEko();
  try {
    const mapped = provider(server.url, ENV, { KA: '23' });
    const looked = await mapped.lookup(
      { service: 'recharge', kind: 'hlr', subject: '9876500001', params: {} },
      signal(),
    );
    assert.deepEqual(looked.outcome === 'found' && looked.data, { operator_id: '1', circle: 'KA' });
    const plans = await mapped.lookup(
      { service: 'recharge', kind: 'plans', subject: '', params: { operator_id: 1, circle: 'KA' } },
      signal(),
    );
    assert.equal(plans.outcome, 'found');
    assert.equal(plans.outcome === 'found' && plans.items?.length, 3);
    // Unmapped, Eko's own circle_area (as its operator lookup gave it) is sent as it is.
    const unmapped = provider(server.url);
    const byEko = await unmapped.lookup(
      { service: 'recharge', kind: 'plans', subject: '', params: { operator_id: 1, circle: '23' } },
      signal(),
    );
    assert.equal(byEko.outcome, 'found');
    const error = await unmapped
      .lookup(
        {
          service: 'recharge',
          kind: 'plans',
          subject: '',
          params: { operator_id: 1, circle: 'KA' },
        },
        signal(),
      )
      .then(
        () => assert.fail('expected unavailable'),
        (e: unknown) => e,
      );
    assert.ok(error instanceof ProviderUnavailableError);
    assert.equal(error.kind, 'misconfigured');
    assert.match(error.message, /circle KA/);
  } finally {
    await server.close();
  }
});
