// Eko's request signature (providers/eko/auth.ts) against worked examples computed outside
// the adapter: with OpenSSL (`openssl dgst -sha256 -hmac <base64(access_key)> -binary | base64`)
// for Eko's published UAT access key, and with node:crypto here for arbitrary keys. And our
// transaction id as Eko's client_ref_id: under 20 characters, one-to-one, read back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { ekoHeaders, ekoRequestHash, ekoSecretKey } from '../../gateway/providers/eko/auth.ts';
import { clientRefOf, txnOfClientRef } from '../../gateway/providers/eko/adapter.ts';

// Eko's published UAT access key (developers.eko.in, "Platform Credentials").
const UAT_ACCESS_KEY = 'd2fe1d99-6298-4af2-8cc5-d97dcf46df30';

test('secret-key and request_hash match the worked examples computed with OpenSSL', () => {
  assert.equal(
    ekoSecretKey(UAT_ACCESS_KEY, '1700000000000'),
    'qIir8tILHtqxO1Mu3/fC3pVElIa0oIxXMRDUP0463Bc=',
  );
  // Eko's Pay Bill order: timestamp + utility_acc_no + amount + user_code (its PHP example's values).
  assert.equal(
    ekoRequestHash(UAT_ACCESS_KEY, ['1700000000000', '151627591', '50', '20810200']),
    'TO65c2+vieXFx4+yDLN50NoAHe1fnfyWfIAB2NJkiNc=',
  );
});

test('secret-key is HMAC-SHA256 keyed with the base64 text of the access key, for any key and time', () => {
  for (let i = 0; i < 50; i++) {
    const access_key = randomBytes(1 + (i % 40)).toString('hex');
    const timestamp = String(1_600_000_000_000 + i * 7_919_123);
    const key = Buffer.from(access_key).toString('base64');
    const expected = createHmac('sha256', key).update(timestamp).digest('base64');
    assert.equal(ekoSecretKey(access_key, timestamp), expected);
    const headers = ekoHeaders('dev-key', access_key, timestamp);
    assert.equal(headers['secret-key'], expected);
    assert.equal(headers['secret-key-timestamp'], timestamp);
    assert.equal(headers.developer_key, 'dev-key');
    // Never the access key itself on the wire (a key of a few characters can occur in any
    // timestamp or base64 text by chance, so only keys of real length are looked for).
    if (access_key.length >= 16)
      assert.ok(!Object.values(headers).some((value) => value.includes(access_key)));
  }
});

test('client_ref_id: our txn id in under 20 characters, read back one-to-one', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 500; i++) {
    const txn_id = `txn_${randomBytes(12).toString('hex')}`;
    const ref = clientRefOf(txn_id);
    assert.ok(ref.length < 20, ref);
    assert.match(ref, /^[0-9a-z]+$/);
    assert.equal(txnOfClientRef(ref), txn_id);
    seen.add(ref);
  }
  assert.equal(seen.size, 500);
  for (const edge of ['txn_000000000000000000000000', 'txn_ffffffffffffffffffffffff'])
    assert.equal(txnOfClientRef(clientRefOf(edge)), edge);
  assert.equal(txnOfClientRef('not a reference!'), null);
  assert.equal(txnOfClientRef('zzzzzzzzzzzzzzzzzzz'), null, 'beyond 96 bits is no id of ours');
});
