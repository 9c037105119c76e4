import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  gstinCheckCharacter,
  gstinError,
  gstinSchema,
} from '../../../gateway/payments/identity/gstin.ts';
import { taxSchema } from '../../../gateway/payments/tax-config.ts';

// Real registrations, as published: the GST portal's own example (27AAPFU0939F1ZV), BSNL's
// Puducherry registration used as the worked check-character example in write-ups of the
// scheme (34AABCB5576G1ZQ), and BSNL's Tamil Nadu and 3rd Andhra Pradesh registrations as
// printed on its bills (33AABCB5576G1ZS, 37AABCB5576G3ZI).
const REAL = ['27AAPFU0939F1ZV', '34AABCB5576G1ZQ', '33AABCB5576G1ZS', '37AABCB5576G3ZI'];

test('GSTIN: published registrations pass, their check characters are recomputed', () => {
  for (const gstin of REAL) {
    assert.equal(gstinError(gstin), null, gstin);
    assert.equal(gstinCheckCharacter(gstin.slice(0, 14)), gstin[14], gstin);
  }
  assert.equal(gstinError('34AABCB5576G1ZQ', 'AABCB5576G'), null);
});

test('GSTIN: each rule has its own refusal', () => {
  // The docs' old example: a wrong check character (its own is G).
  assert.match(gstinError('29AAACA1234A1Z5')!, /mod-36 check character/);
  assert.equal(gstinError('29AAACA1234A1ZG'), null);
  assert.match(gstinError('27AAPFU0939F1ZV', 'ABCPE1234F')!, /PAN given/);
  const withState = (state: string) => {
    const first14 = `${state}AAPFU0939F1Z`;
    return first14 + gstinCheckCharacter(first14);
  };
  assert.match(gstinError(withState('00'))!, /state code/);
  assert.match(gstinError(withState('39'))!, /state code/);
  assert.match(gstinError(withState('99'))!, /state code/);
  assert.equal(gstinError(withState('38')), null, 'Ladakh');
  assert.equal(gstinError(withState('97')), null, 'Other Territory');
  // A PAN whose 4th character is no holder type (Q), with a correct check character.
  const badPan = '27ABCQE1234F1Z';
  assert.match(gstinError(badPan + gstinCheckCharacter(badPan))!, /4th character \(Q\)/);
  assert.match(gstinError('27AAPFU0939F1XV')!, /15 characters/, 'the 14th is Z');
  assert.match(gstinError('27AAPFU0939F0ZV')!, /15 characters/, 'entity number 0');
  assert.match(gstinError('27AAPFU0939F1Z')!, /15 characters/);
  assert.match(gstinError('27aapfu0939f1zv')!, /15 characters/);
});

test('GSTIN: every single-character change of a valid GSTIN is refused', () => {
  const charset = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  for (const valid of REAL)
    for (let i = 0; i < 15; i++)
      for (const c of charset) {
        if (c === valid[i]) continue;
        const changed = valid.slice(0, i) + c + valid.slice(i + 1);
        assert.notEqual(gstinError(changed), null, changed);
      }
});

test('GSTIN: the schema trims and upper-cases before it checks', () => {
  assert.equal(gstinSchema.parse(' 27aapfu0939f1zv '), '27AAPFU0939F1ZV');
  assert.equal(gstinSchema.safeParse('27AAPFU0939F1ZW').success, false);
});

test("the operator's GSTIN setting is checked in full, with its PAN and state", () => {
  const operator = (o: Record<string, unknown>) => taxSchema.safeParse({ operator: o });
  const bad = operator({ gstin: '29AAACA1234A1Z5' });
  assert.equal(bad.success, false);
  assert.match(JSON.stringify(bad.error?.issues), /mod-36/);
  assert.equal(
    operator({ gstin: '29AAACA1234A1ZG', pan: 'AAACA1234A', state: '29' }).success,
    true,
  );
  assert.equal(operator({ gstin: '29AAACA1234A1ZG', pan: 'AAACB1234A' }).success, false);
  assert.equal(operator({ gstin: '29AAACA1234A1ZG', state: '27' }).success, false);
  assert.equal(operator({}).success, true, 'no GSTIN: not registered');
});
