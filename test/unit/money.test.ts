import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AmountError, microsToUnits, unitsToMicros } from '../../gateway/util/money.ts';

test('units to micro-units is exact for decimal amounts', () => {
  assert.equal(unitsToMicros(0.1), 100_000);
  assert.equal(unitsToMicros(0.29), 290_000);
  assert.equal(unitsToMicros(1.005, 3), 1_005_000);
  assert.equal(unitsToMicros(123456.78, 2), 123_456_780_000);
  assert.equal(unitsToMicros(0.000001), 1);
  assert.equal(unitsToMicros(-2.5), -2_500_000);
  let total = 0;
  for (let i = 0; i < 10; i++) total += unitsToMicros(0.1);
  assert.equal(total, 1_000_000);
});

test('too many decimals, non-finite and huge amounts are refused', () => {
  assert.throws(() => unitsToMicros(1.001, 2), AmountError);
  assert.throws(() => unitsToMicros(1e-7), AmountError);
  assert.throws(() => unitsToMicros(Number.NaN), AmountError);
  assert.throws(() => unitsToMicros(Infinity), AmountError);
  assert.throws(() => unitsToMicros(1e21), AmountError);
  assert.throws(() => unitsToMicros(1e12), AmountError);
});

test('micro-units to units round-trips through JSON', () => {
  for (const micros of [0, 1, 100_000, 1_234_567, 99_999_999_999, 250_750_000]) {
    assert.equal(unitsToMicros(JSON.parse(JSON.stringify(microsToUnits(micros)))), micros);
  }
  assert.throws(() => microsToUnits(0.5));
});
