// The trust-proxy rule main.ts compiles once and hands to Express (req.ip) and to the /v1
// lane: for every value the config accepts it must trust exactly the hops Express's own
// `trust proxy` setting trusts, so an IP whitelist reads the same address on both surfaces.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import express from 'express';
import { compileTrustProxy, type TrustProxy } from '../../gateway/accounts/ip-whitelist.ts';

const ADDRESSES = [
  '127.0.0.1',
  '10.1.2.3',
  '192.168.0.9',
  '203.0.113.7',
  '::1',
  'fd00::1',
  '2001:db8::5',
];
const SETTINGS: Array<boolean | number | string> = [
  false,
  true,
  0,
  1,
  2,
  'loopback',
  'loopback, 10.0.0.0/8',
  'uniquelocal',
  '203.0.113.7,2001:db8::/32',
];

function expressRule(setting: boolean | number | string): TrustProxy {
  const app = express();
  app.set('trust proxy', setting);
  return app.get('trust proxy fn') as TrustProxy;
}

test('compileTrustProxy trusts exactly the addresses and hops Express trusts, for every kind of setting', () => {
  for (const setting of SETTINGS) {
    const ours = compileTrustProxy(setting);
    const theirs = expressRule(setting);
    for (const address of ADDRESSES) {
      for (let hop = 0; hop < 4; hop++) {
        assert.equal(
          ours(address, hop),
          theirs(address, hop),
          `trust_proxy ${JSON.stringify(setting)}, ${address} at hop ${hop}`,
        );
      }
    }
  }
  // The comparison above is not vacuous: the settings both trust and refuse.
  assert.equal(compileTrustProxy(1)('203.0.113.7', 0), true);
  assert.equal(compileTrustProxy(1)('203.0.113.7', 1), false);
  assert.equal(compileTrustProxy('loopback')('10.1.2.3', 0), false);
});

test('compileTrustProxy refuses a malformed address with a TypeError naming it (main.ts exits 2 on it)', () => {
  assert.throws(
    () => compileTrustProxy('10.0.0.0/8, not-an-ip'),
    (error: unknown) => error instanceof TypeError && error.message.includes('not-an-ip'),
  );
});
