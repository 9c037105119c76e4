import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  aadhaarError,
  maskAadhaar,
  normalizeMobile,
  panError,
  verhoeffCheckDigit,
  verhoeffValid,
} from '../../../gateway/payments/validators.ts';
import { parseWhitelistEntry, whitelistMatcher } from '../../../gateway/accounts/ip-whitelist.ts';
import { commissionMicros } from '../../../gateway/payments/engine/intent.ts';
import { backoffMs } from '../../../gateway/payments/engine/transactions.ts';

test('Verhoeff: the published example, and every single-digit error and adjacent transposition is caught', () => {
  assert.equal(verhoeffCheckDigit('236'), '3');
  assert.ok(verhoeffValid('2363'));
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

test('Aadhaar: 12 digits, first 2–9, Verhoeff; spaces allowed; masked to the last four', () => {
  assert.equal(aadhaarError('2341 2341 2346'), null);
  assert.equal(aadhaarError('234123412346'), null);
  assert.match(aadhaarError('234123412347')!, /Verhoeff/);
  assert.match(aadhaarError('23412341234')!, /12 digits/);
  const starts_with_1 = `12341234123${verhoeffCheckDigit('12341234123')}`;
  assert.match(aadhaarError(starts_with_1)!, /0 or 1/);
  assert.match(aadhaarError('2341x3412346')!, /12 digits/);
  assert.equal(maskAadhaar('234123412346'), 'XXXX-XXXX-2346');
});

test('PAN: five letters, four digits, a letter', () => {
  assert.equal(panError('ABCDE1234F'), null);
  for (const bad of [
    'ABCD1234F',
    'ABCDE1234',
    'abcde1234f',
    'ABCDE12345',
    '1BCDE1234F',
    'ABCDE1234FF',
  ])
    assert.notEqual(panError(bad), null, bad);
});

test('mobile numbers: +91 and a leading 0 are stripped', () => {
  assert.equal(normalizeMobile('+91 98765 43210'), '9876543210');
  assert.equal(normalizeMobile('09876543210'), '9876543210');
  assert.equal(normalizeMobile('9876543210'), '9876543210');
});

test('IP whitelist entries: IPv4, IPv6, CIDR; matching includes IPv4-mapped IPv6', () => {
  assert.deepEqual(parseWhitelistEntry(' 203.0.113.7 '), { entry: '203.0.113.7' });
  assert.deepEqual(parseWhitelistEntry('10.0.0.0/8'), { entry: '10.0.0.0/8' });
  assert.deepEqual(parseWhitelistEntry('2001:DB8::/32'), { entry: '2001:db8::/32' });
  for (const bad of [
    '10.0.0.0/33',
    '2001:db8::/129',
    'example.com',
    '10.0.0.256',
    '10.0.0.0/x',
    '',
  ])
    assert.ok('error' in parseWhitelistEntry(bad), bad);
  const allowed = whitelistMatcher(['203.0.113.7', '10.0.0.0/8', '2001:db8::/32']);
  assert.ok(allowed('203.0.113.7'));
  assert.ok(!allowed('203.0.113.8'));
  assert.ok(allowed('10.200.3.4'));
  assert.ok(allowed('::ffff:10.200.3.4'));
  assert.ok(!allowed('11.0.0.1'));
  assert.ok(allowed('2001:db8:1::5'));
  assert.ok(!allowed('2001:db9::5'));
  assert.ok(!allowed(undefined));
  assert.ok(whitelistMatcher([])('192.0.2.1'));
});

test('commission rounds down to the paisa; backoff doubles and is capped', () => {
  assert.equal(commissionMicros(100_000_000, 250), 2_500_000);
  assert.equal(commissionMicros(333_330_000, 250), 8_330_000); // 8.33325 → 8.33
  assert.equal(commissionMicros(10_000_000, 0), 0);
  assert.deepEqual(
    [0, 1, 2, 3, 10].map((n) => backoffMs(n, 100, 1_000)),
    [100, 200, 400, 800, 1_000],
  );
  assert.equal(backoffMs(10_000, 100, 1_000), 1_000);
});
