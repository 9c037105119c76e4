// The tax rules of issue #28: a fee's GST split (parts add up to the fee, CGST = SGST, the
// place of supply), TDS at the 194H and 206AA rates, and commission schemes (slab choice,
// caps, the distributor's margin check).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  gstSplit,
  gstMicros,
  tdsMicros,
  tdsRateBp,
  taxView,
} from '../../../gateway/payments/engine/tax.ts';
import {
  commissionOf,
  marginBreach,
  type CommissionScheme,
  type CommissionSlab,
} from '../../../gateway/payments/network/schemes.ts';

const units = (u: number) => Math.round(u * 1_000_000);

test('GST: every split adds up to the fee to the micro-unit; CGST equals SGST; whole paise', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 10_000_000 }), // paise: up to ₹1,00,000
      fc.integer({ min: 0, max: 4_000 }),
      fc.boolean(),
      (paise, rate_bp, intra) => {
        const fee = paise * 10_000;
        const split = gstSplit(fee, rate_bp, '29', intra ? '29' : '27');
        assert.equal(split.taxable_micros + gstMicros(split), fee);
        assert.equal(split.cgst_micros, split.sgst_micros);
        for (const part of [split.taxable_micros, split.cgst_micros, split.igst_micros])
          assert.equal(part % 10_000, 0, 'a whole number of paise');
        assert.ok(split.taxable_micros >= 0);
        if (intra) assert.equal(split.igst_micros, 0);
        else assert.equal(split.cgst_micros + split.sgst_micros, 0);
      },
    ),
  );
});

test('GST: ₹10 at 18 %: inter-state IGST 1.53 on 8.47, intra-state 0.76 + 0.76 on 8.48', () => {
  const inter = gstSplit(units(10), 1_800, '29', '27');
  assert.deepEqual(
    [inter.taxable_micros, inter.igst_micros, inter.supply, inter.place_of_supply],
    [units(8.47), units(1.53), 'inter_state', '27'],
  );
  const intra = gstSplit(units(10), 1_800, '29', '29');
  assert.deepEqual(
    [intra.taxable_micros, intra.cgst_micros, intra.sgst_micros, intra.supply],
    [units(8.48), units(0.76), units(0.76), 'intra_state'],
  );
  // No state on record: the supplier's location (IGST Act s.12(2)(b)) makes it intra-state.
  assert.equal(gstSplit(units(10), 1_800, '29', null).supply, 'intra_state');
  // An operator in a union territory without a legislature charges UTGST, not SGST.
  const ut = gstSplit(units(118), 1_800, '04', '04');
  assert.equal(ut.state_tax, 'utgst');
  assert.deepEqual(taxView(ut), {
    fee: 118,
    taxable_value: 100,
    gst_rate: 18,
    supply: 'intra_state',
    place_of_supply: '04',
    cgst: 9,
    utgst: 9,
    igst: 0,
    gst: 18,
  });
});

test('TDS: 2 % under 194H, rounded half up to the paisa; 20 % under 206AA without a PAN', () => {
  const tds = { rate: 200, rate_without_pan: 2_000 };
  assert.equal(tdsRateBp(tds, 'AAPFU0939F'), 200);
  assert.equal(tdsRateBp(tds, null), 2_000);
  assert.equal(tdsMicros(units(2.5), 200), units(0.05));
  assert.equal(tdsMicros(units(0.25), 200), units(0.01), '0.005 rounds up');
  assert.equal(tdsMicros(units(0.24), 200), 0, '0.0048 rounds down');
  assert.equal(tdsMicros(units(10), 2_000), units(2));
});

const slab = (fields: Partial<CommissionSlab> & Pick<CommissionSlab, 'id'>): CommissionSlab => ({
  service: 'recharge',
  operator: null,
  min_micros: 0,
  max_micros: null,
  kind: 'percent',
  value: 0,
  cap_micros: null,
  ...fields,
});
const scheme = (id: string, slabs: CommissionSlab[]): CommissionScheme => ({
  id,
  name: id,
  owner_id: null,
  slabs,
  created_at: '',
  updated_at: '',
});

test('schemes: an operator slab wins over an any-operator one; ranges, caps and flat amounts', () => {
  const s = scheme('S', [
    slab({ id: 'any', value: 100 }),
    slab({ id: 'airtel-small', operator: '1', max_micros: units(499.99), value: 300 }),
    slab({
      id: 'airtel-big',
      operator: '1',
      min_micros: units(500),
      value: 250,
      cap_micros: units(20),
    }),
    slab({ id: 'dmt', service: 'dmt', kind: 'flat', value: units(4) }),
  ]);
  const at = (operator: string, amount: number, service: 'recharge' | 'dmt' = 'recharge') =>
    commissionOf(s, { service, operator, amount_micros: units(amount) });
  assert.deepEqual(at('1', 100), { slab: 'S/airtel-small', gross_micros: units(3) });
  assert.deepEqual(at('1', 500), { slab: 'S/airtel-big', gross_micros: units(12.5) });
  assert.deepEqual(at('1', 5_000), { slab: 'S/airtel-big', gross_micros: units(20) }, 'capped');
  assert.deepEqual(at('2', 100), { slab: 'S/any', gross_micros: units(1) });
  assert.deepEqual(at('IMPS', 2_500, 'dmt'), { slab: 'S/dmt', gross_micros: units(4) });
  assert.deepEqual(
    commissionOf(s, { service: 'pan', operator: 'lookup', amount_micros: units(2) }),
    { slab: null, gross_micros: 0 },
  );
});

test('schemes: a retailer scheme above its distributor anywhere is named; within it, none', () => {
  const distributor = scheme('D', [
    slab({ id: 'd1', value: 300, cap_micros: units(30) }),
    slab({ id: 'd2', service: 'dmt', kind: 'flat', value: units(5) }),
  ]);
  const within = scheme('R', [
    slab({ id: 'r1', value: 250, cap_micros: units(25) }),
    slab({ id: 'r2', service: 'dmt', kind: 'flat', value: units(4) }),
  ]);
  assert.equal(marginBreach(within, distributor), null);
  // 2.5 % with a cap of 35 passes 3 % capped at 30 from ₹1,200.40 on: the first amount is named.
  const above_cap = scheme('R2', [slab({ id: 'r1', value: 250, cap_micros: units(35) })]);
  assert.match(
    marginBreach(above_cap, distributor) ?? '',
    /recharge at 1200.4: the retailer's scheme pays 30.01, the distributor's 30$/,
  );
  // A flat slab for one operator above the distributor's percent at small amounts.
  const flat = scheme('R3', [slab({ id: 'r1', operator: '4', kind: 'flat', value: units(1) })]);
  assert.match(marginBreach(flat, distributor) ?? '', /operator 4 at 0.01: /);
});
