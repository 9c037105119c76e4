// Commission schemes (slab choice, caps) and the distributor's margin, proved: a retailer scheme is refused exactly when, for some
// operator and some amount, it pays more than its distributor's. A property test draws random
// scheme pairs (slabs, bounds, percent and flat, caps, the "any operator" fallback) and checks
// the verdict against a brute force over every paisa amount of a range; the sampling
// `marginBreach` of before #35 fails it (3.5 % under 3 %: equal at every sampled amount).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  commissionOf,
  findBreach,
  marginBreach,
  operatorBreach,
  type CommissionScheme,
  type CommissionSlab,
} from '../../../gateway/payments/network/schemes.ts';

const PAISA = 10_000;
const units = (u: number) => Math.round(u * 1_000_000);

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

/** Operators the random slabs name; `9` is named by none: an operator only "any" slabs reach. */
const OPERATORS = ['1', '2', '9'] as const;
/** The brute force's range: every paisa from 1 to this. */
const RANGE_PAISE = 6_000;

const slabArb = (id: string) =>
  fc
    .record({
      operator: fc.constantFrom<string | null>(null, null, '1', '2'),
      min_paise: fc.integer({ min: 0, max: 3_000 }),
      span_paise: fc.option(fc.integer({ min: 0, max: 3_000 }), { nil: null }),
      kind: fc.constantFrom<'percent' | 'flat'>('percent', 'percent', 'flat'),
      // Close rates are where rounding hides a difference: 2.99 % to 3.10 %, and anything to 10 %.
      bp: fc.oneof(fc.integer({ min: 299, max: 310 }), fc.integer({ min: 0, max: 1_000 })),
      flat_paise: fc.integer({ min: 0, max: 60 }),
      cap_paise: fc.option(fc.integer({ min: 0, max: 150 }), { nil: null }),
    })
    .map((s): CommissionSlab =>
      slab({
        id,
        operator: s.operator,
        min_micros: s.min_paise * PAISA,
        max_micros: s.span_paise === null ? null : (s.min_paise + s.span_paise) * PAISA,
        kind: s.kind,
        value: s.kind === 'percent' ? s.bp : s.flat_paise * PAISA,
        cap_micros: s.kind === 'percent' && s.cap_paise !== null ? s.cap_paise * PAISA : null,
      }),
    );
const schemeArb = (id: string) =>
  fc
    .array(fc.nat(), { minLength: 1, maxLength: 4 })
    .chain((ids) => fc.tuple(...ids.map((_, i) => slabArb(`${id}${i}`))))
    .map((slabs) => scheme(id, slabs));

/** The smallest paisa amount in 1..RANGE_PAISE where the retailer earns more, per operator. */
function bruteForce(retailer: CommissionScheme, distributor: CommissionScheme) {
  for (const operator of OPERATORS)
    for (let paise = 1; paise <= RANGE_PAISE; paise++) {
      const priced = { service: 'recharge' as const, operator, amount_micros: paise * PAISA };
      if (
        commissionOf(retailer, priced).gross_micros > commissionOf(distributor, priced).gross_micros
      )
        return { operator, paise };
    }
  return null;
}

test('margin: the verdict equals a brute force over every paisa amount (random scheme pairs)', () => {
  fc.assert(
    fc.property(schemeArb('r'), schemeArb('d'), (retailer, distributor) => {
      const brute = bruteForce(retailer, distributor);
      const verdict = marginBreach(retailer, distributor);
      if (brute)
        assert.notEqual(
          verdict,
          null,
          `a breach for operator ${brute.operator} at ${brute.paise} paise`,
        );
      const breach = findBreach(retailer, distributor);
      assert.equal(verdict === null, breach === null);
      if (!breach) return;
      // The breach named is one: the retailer earns more there, by the schemes themselves.
      const priced = {
        service: breach.service,
        operator: breach.operator ?? '9',
        amount_micros: breach.amount_micros,
      };
      assert.equal(breach.amount_micros % PAISA, 0);
      assert.equal(commissionOf(retailer, priced).gross_micros, breach.retailer_micros);
      assert.equal(commissionOf(distributor, priced).gross_micros, breach.distributor_micros);
      assert.ok(breach.retailer_micros > breach.distributor_micros);
    }),
    { numRuns: 300 },
  );
});

test("margin: the smallest breaching amount of each operator is the brute force's", () => {
  fc.assert(
    fc.property(schemeArb('r'), schemeArb('d'), (retailer, distributor) => {
      for (const operator of OPERATORS) {
        let first: number | null = null;
        for (let paise = 1; paise <= RANGE_PAISE && first === null; paise++) {
          const priced = { service: 'recharge' as const, operator, amount_micros: paise * PAISA };
          if (
            commissionOf(retailer, priced).gross_micros >
            commissionOf(distributor, priced).gross_micros
          )
            first = paise;
        }
        const named = [...retailer.slabs, ...distributor.slabs].some(
          (s) => s.operator === operator,
        );
        const breach = operatorBreach(retailer, distributor, 'recharge', named ? operator : null);
        if (first !== null)
          assert.equal(breach?.amount_micros, first * PAISA, `operator ${operator}`);
        else if (breach) assert.ok(breach.amount_micros > RANGE_PAISE * PAISA);
      }
    }),
    { numRuns: 300 },
  );
});

test("margin: 3.5 % and 3.9 % under a distributor's 3 % recharge scheme are breaches, from a few paise", () => {
  const distributor = scheme('D', [slab({ id: 'all', value: 300 })]);
  for (const [bp, at] of [
    [350, '0.29'], // 1 paisa against 0 (0.87 paise rounded down)
    [390, '0.26'],
    [301, '1.33'], // 4 paise against 3 (3.99 rounded down)
  ] as const) {
    const retailer = scheme('R', [slab({ id: 'all', value: bp })]);
    assert.match(marginBreach(retailer, distributor) ?? '', new RegExp(`^recharge at ${at}: `));
  }
  assert.equal(marginBreach(distributor, distributor), null);
  // A rate above the distributor's on a piece so short that rounding hides it is within the
  // margin: 3.5 % against 3 % up to ₹0.28 never pays a paisa more; up to ₹0.29 it does.
  const short = scheme('R', [slab({ id: 'small', value: 350, max_micros: units(0.28) })]);
  assert.equal(marginBreach(short, distributor), null);
  const reaching = scheme('R', [slab({ id: 'small', value: 350, max_micros: units(0.29) })]);
  assert.match(marginBreach(reaching, distributor) ?? '', /^recharge at 0.29: /);
  // Past the last bound: 3.01 % from ₹500 (where 3 % is capped at ₹15 from ₹500) is above at once.
  const capped = scheme('D', [slab({ id: 'all', value: 300, cap_micros: units(15) })]);
  const from500 = scheme('R', [slab({ id: 'big', value: 301, min_micros: units(500) })]);
  assert.equal(findBreach(from500, capped)?.amount_micros, units(500));
  assert.equal(findBreach(from500, capped)?.retailer_micros, units(15.05));
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
