import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWhitelistEntry, whitelistMatcher } from '../../gateway/accounts/ip-whitelist.ts';

const entry = (raw: string, options = {}) => {
  const parsed = parseWhitelistEntry(raw, options);
  return 'entry' in parsed ? parsed.entry : `error: ${parsed.error}`;
};

test('whitelist entries: canonical forms, host bits refused naming the network, a floor on the prefix unless forced', () => {
  assert.equal(entry(' 203.0.113.7/32 '), '203.0.113.7');
  assert.equal(entry('2001:DB8:0:0:0:0:0:1/128'), '2001:db8::1');
  assert.equal(entry('2001:DB8::/32'), '2001:db8::/32');
  assert.equal(entry('::ffff:127.0.0.1'), '127.0.0.1');
  assert.equal(entry('::ffff:10.0.0.0/104'), '10.0.0.0/8');
  assert.equal(entry('64:ff9b::/96'), '64:ff9b::/96', 'not mapped: stays IPv6');
  assert.match(entry('10.9.9.9/1'), /host bits.*0\.0\.0\.0\/1.*10\.9\.9\.9 for the one address/);
  assert.match(entry('2001:db8::1/64'), /host bits.*2001:db8::\/64/);
  assert.match(entry('0.0.0.0/0'), /every address, wider than \/8/);
  assert.equal(entry('0.0.0.0/0', { force: true }), '0.0.0.0/0');
  assert.match(entry('10.0.0.0/8', { floor: { ipv4: 16, ipv6: 48 } }), /wider than \/16/);
  assert.match(entry('2001:db8::/32', { floor: { ipv4: 16, ipv6: 48 } }), /wider than \/48/);
  for (const bad of ['fe80::1%eth0', '10.0.0.0/33', '10.0.0.0/x', '1.2.3', 'example.com'])
    assert.match(entry(bad), /^error: /, bad);
  const allowed = whitelistMatcher(['10.0.0.0/8', '2001:db8::/32', '127.0.0.1']);
  assert.equal(allowed('10.200.1.1'), true);
  assert.equal(allowed('11.0.0.1'), false);
  assert.equal(allowed('::ffff:127.0.0.1'), true);
  assert.equal(allowed('2001:db8:ffff::1'), true);
});
