// The tax rules of issue #28: a fee's GST split (parts add up to the fee, CGST = SGST, the
// place of supply), TDS at the 194H and 206AA rates. Commission schemes: margin.test.ts.
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
