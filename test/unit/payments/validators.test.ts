import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWhitelistEntry, whitelistMatcher } from '../../../gateway/accounts/ip-whitelist.ts';
import { commissionMicros } from '../../../gateway/payments/engine/intent.ts';
import { backoffMs } from '../../../gateway/payments/engine/transactions.ts';

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
