// The catalogue's own rules (#35): a fetch-and-pay biller cannot be configured payable
// without a fetch, every built-in fetch-and-pay biller requires its fetch, and only a prepaid
// operator can sell plans only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { billerSchema, billsConfigSchema } from '../../../gateway/payments/bills/config.ts';
import { operatorSchema, paymentsConfigSchema } from '../../../gateway/payments/config.ts';

test('billers: fetch-and-pay means a fetched bill; false is refused, naming pay_directly', () => {
  const base = { biller_id: 'X1', name: 'X', category: 'electricity' as const };
  const refused = billerSchema.safeParse({ ...base, fetch_required: false });
  assert.equal(refused.success, false);
  assert.match(JSON.stringify(refused.error?.issues), /pay_directly/);
  // The shape from before BBPS (consumer_pattern, no params) is fetch-and-pay too.
  const legacy = billerSchema.parse({ ...base, consumer_pattern: '^\\d{10}$' });
  assert.equal(legacy.fetch_required, true);
  const direct = billerSchema.parse({ ...base, mode: 'pay_directly', fetch_required: false });
  assert.equal(direct.fetch_required, false);
  const defaults = billsConfigSchema.parse(undefined);
  assert.equal(defaults.allow_legacy_requests, false);
  for (const biller of defaults.billers)
    assert.equal(biller.fetch_required, biller.mode === 'fetch_and_pay', biller.biller_id);
});

test('operators: plans_only is for prepaid operators; Jio is one in the built-in catalogue', () => {
  const base = { operator_id: 99, name: 'Y', commission_pct: 1, min_amount: 10, max_amount: 100 };
  assert.equal(operatorSchema.safeParse({ ...base, type: 'dth', plans_only: true }).success, false);
  assert.equal(
    operatorSchema.parse({ ...base, type: 'prepaid', plans_only: true }).plans_only,
    true,
  );
  const operators = paymentsConfigSchema.parse({}).operators;
  assert.deepEqual(
    operators.filter((o) => o.plans_only).map((o) => o.name),
    ['Jio'],
  );
});
