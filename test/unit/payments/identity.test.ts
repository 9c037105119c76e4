// The identity rules (gateway/payments/identity/): every validator with known vectors and
// the near misses a customer types.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  aadhaarError,
  maskAadhaar,
  normalizeAadhaar,
  verhoeffCheckDigit,
  verhoeffValid,
} from '../../../gateway/payments/identity/aadhaar.ts';
import {
  accountNumberError,
  bankForIfsc,
  ifscError,
  normalizeAccountNumber,
} from '../../../gateway/payments/identity/bank.ts';
import { mobileError, normalizeMobile } from '../../../gateway/payments/identity/mobile.ts';
import { panError, parsePan } from '../../../gateway/payments/identity/pan.ts';
import {
  calendarDateError,
  dateOfBirthError,
  normalizeName,
  personNameError,
} from '../../../gateway/payments/identity/person.ts';
import { indiaTime } from '../../../gateway/kernel/india-time.ts';

test('Verhoeff: published vectors, and every single-digit error and adjacent transposition is caught', () => {
  // Verhoeff (1969) / the usual worked examples: 236 → 3, 12345 → 1, 142857 → 0.
  assert.equal(verhoeffCheckDigit('236'), '3');
  assert.equal(verhoeffCheckDigit('12345'), '1');
  assert.equal(verhoeffCheckDigit('142857'), '0');
  for (const valid of ['2363', '123451', '1428570']) assert.ok(verhoeffValid(valid), valid);
  assert.ok(!verhoeffValid('2364'));
  assert.ok(!verhoeffValid('23a3'));
  const valid = '234123412346';
  assert.ok(verhoeffValid(valid));
  for (let i = 0; i < valid.length; i++) {
    for (let d = 0; d <= 9; d++) {
      if (String(d) === valid[i]) continue;
      const changed = valid.slice(0, i) + d + valid.slice(i + 1);
      assert.equal(verhoeffValid(changed), false, `single-digit change ${changed}`);
    }
    if (i + 1 < valid.length && valid[i] !== valid[i + 1]) {
      const swapped = valid.slice(0, i) + valid[i + 1] + valid[i] + valid.slice(i + 2);
      assert.equal(verhoeffValid(swapped), false, `transposition ${swapped}`);
    }
  }
});

test("Aadhaar: 12 digits, first 2–9, Verhoeff; UIDAI's sandbox numbers pass; masked to the last four", () => {
  assert.equal(aadhaarError(normalizeAadhaar('2341 2341 2346')), null);
  assert.equal(aadhaarError(normalizeAadhaar('2341-2341-2346')), null);
  // UIDAI's published test residents (developer sandbox).
  assert.equal(aadhaarError('999941057058'), null);
  assert.equal(aadhaarError('999971658847'), null);
  assert.match(aadhaarError('234123412347')!, /Verhoeff/);
  assert.match(aadhaarError('23412341234')!, /12 digits/);
  assert.match(aadhaarError('2341234123467')!, /12 digits/);
  assert.match(aadhaarError(`12341234123${verhoeffCheckDigit('12341234123')}`)!, /0 or 1/);
  assert.match(aadhaarError(`02341234123${verhoeffCheckDigit('02341234123')}`)!, /0 or 1/);
  assert.match(aadhaarError('2341x3412346')!, /12 digits/);
  assert.equal(maskAadhaar('234123412346'), 'XXXX-XXXX-2346');
});

test('PAN: five letters, four digits, a letter; the fourth a holder status (the rule /api/pan-find applies)', () => {
  assert.equal(panError('ABCPE1234F'), null);
  assert.equal(panError('abcpe 1234 f'), null);
  assert.deepEqual(parsePan('AAPFU0939F'), { pan: 'AAPFU0939F', type: 'Firm' });
  assert.match(panError('ABCQE1234F')!, /fourth character/);
  assert.match(panError('ABCDE1234F')!, /fourth character/);
  for (const bad of ['ABCD1234F', 'ABCPE1234', 'ABCPE12345', '1BCPE1234F', 'ABCPE1234FF', ''])
    assert.match(panError(bad)!, /5 letters/, bad);
  // A holder letter that is a key of Object.prototype is still no holder status.
  assert.ok('error' in parsePan('ABC_E1234F'));
});

test('mobile: ten digits starting 6–9; +91, a trunk 0, spaces and hyphens are stripped', () => {
  assert.equal(normalizeMobile('+91 98765 43210'), '9876543210');
  assert.equal(normalizeMobile('09876543210'), '9876543210');
  assert.equal(normalizeMobile('98765-43210'), '9876543210');
  assert.equal(mobileError('9876543210'), null);
  assert.equal(mobileError('6000000000'), null);
  for (const bad of ['5876543210', '987654321', '98765432100', '98765x3210', ''])
    assert.notEqual(mobileError(bad), null, bad);
});

test('IFSC: the pattern, and a bank code of the directory; bank names from it', () => {
  for (const good of ['SBIN0001234', 'HDFC0ABC123', 'UTIB0000000', 'YESB0000001', 'HDFC0CAACOB'])
    assert.equal(ifscError(good), null, good);
  for (const bad of ['SBIN1001234', 'SBI00001234', 'sbin0001234', 'SBIN000123', 'SBIN00012345'])
    assert.match(ifscError(bad)!, /4 letters, 0/, bad);
  assert.match(ifscError('ZZZZ0001234')!, /names no bank: ZZZZ/);
  assert.match(ifscError('ABCD0001234')!, /names no bank/);
  assert.equal(bankForIfsc('SBIN0001234'), 'State Bank of India');
  assert.equal(bankForIfsc('HDFC0CAACOB'), 'Akhand Anand Co.op Bank');
});

test('account numbers: 9 to 18 digits, not all zeros; separators dropped', () => {
  assert.equal(normalizeAccountNumber('1234-5678 90/12'), '123456789012');
  for (const good of ['123456789', '123456789012345678', '000123456789', '100000000'])
    assert.equal(accountNumberError(good), null, good);
  assert.match(accountNumberError('12345678')!, /9 to 18 digits \(this is 8\)/);
  assert.match(accountNumberError('1234567890123456789')!, /this is 19/);
  assert.match(accountNumberError('000000000000')!, /all zeros/);
  assert.match(accountNumberError('AB12345678')!, /digits only/);
});

test("names: Latin letters, space and . ' -, at most 50; no control characters, no other script", () => {
  for (const good of ["Asha O'Brien-Verma", 'R. K. Narayan', 'Ravi'])
    assert.equal(personNameError(good), null, good);
  assert.equal(normalizeName('  Ravi   Kumar '), 'Ravi Kumar');
  assert.match(personNameError('Asha\u0000Verma')!, /control characters/);
  assert.match(personNameError('Asha\tVerma')!, /control characters/);
  assert.match(personNameError('रवि कुमार')!, /Latin letters/);
  assert.match(personNameError('Ravi Kumar 2')!, /Latin letters/);
  assert.match(personNameError('-Ravi')!, /starting with a letter/);
  assert.match(personNameError('José')!, /Latin letters/);
  assert.match(personNameError('A'.repeat(51))!, /at most 50/);
  assert.equal(personNameError('A'.repeat(50)), null);
  assert.match(personNameError('')!, /empty/);
});

test('dates of birth: a day of the calendar, in the past, not before 1900', () => {
  assert.equal(calendarDateError('2024-02-29'), null);
  assert.match(calendarDateError('2023-02-30')!, /not a day of the calendar/);
  assert.match(calendarDateError('2023-02-29')!, /not a day of the calendar/);
  assert.match(calendarDateError('2023-13-01')!, /not a day/);
  assert.match(calendarDateError('2023-2-3')!, /YYYY-MM-DD/);
  assert.equal(dateOfBirthError('1980-01-01', '2026-12-07'), null);
  assert.match(dateOfBirthError('2026-12-07', '2026-12-07')!, /in the past/);
  assert.match(dateOfBirthError('2030-01-01', '2026-12-07')!, /in the past/);
  assert.match(dateOfBirthError('1899-12-31', '2026-12-07')!, /1900/);
  assert.match(dateOfBirthError('2023-02-30', '2026-12-07')!, /not a day/);
});

test("India's time: 20:00 UTC is 01:30 the next day in IST; the day of the year follows it", () => {
  assert.deepEqual(indiaTime(new Date('2026-12-31T20:00:00Z')), {
    year: 2027,
    day_of_year: 1,
    hour: 1,
    date: '2027-01-01',
  });
  assert.deepEqual(indiaTime(new Date('2026-03-01T18:29:59Z')), {
    year: 2026,
    day_of_year: 60,
    hour: 23,
    date: '2026-03-01',
  });
});
