import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sealer, SealError, keyId, newKey, parseKey } from '../../../gateway/util/sealed.ts';

test('sealed text: round trip, fresh IV each time, bound to its place, tamper-evident', () => {
  const sealer = new Sealer([newKey()]);
  const a = sealer.sealText('whsec_secret', 'webhook_secret:acct_1');
  const b = sealer.sealText('whsec_secret', 'webhook_secret:acct_1');
  assert.notEqual(a, b, 'a new IV per value');
  assert.ok(!a.includes('whsec_secret'));
  assert.match(a, new RegExp(`^enc:v1:${sealer.current_id}:`));
  assert.equal(sealer.openText(a, 'webhook_secret:acct_1'), 'whsec_secret');
  assert.throws(
    () => sealer.openText(a, 'webhook_secret:acct_2'),
    SealError,
    'moved to another account',
  );
  const flipped = a.slice(0, -2) + (a.at(-2) === 'A' ? 'B' : 'A') + a.at(-1);
  assert.throws(() => sealer.openText(flipped, 'webhook_secret:acct_1'), SealError);
  assert.ok(sealer.isCurrentText(a));
});

test('values from before encryption open as they are; they are not current', () => {
  const sealer = new Sealer([newKey()]);
  assert.equal(sealer.openText('whsec_plain', 'x'), 'whsec_plain');
  assert.equal(sealer.isCurrentText('whsec_plain'), false);
  const pdf = Buffer.from('%PDF-1.4 plain');
  assert.ok(sealer.openBytes(pdf, 'kyc_document:p').equals(pdf));
  assert.equal(sealer.isCurrentBytes(pdf), false);
});

test('sealed bytes and key rotation: a ring opens old and new, seals with the first; a missing key is named', () => {
  const old_key = newKey();
  const new_key = newKey();
  const old_sealer = new Sealer([old_key]);
  const sealed = old_sealer.sealBytes(
    Buffer.from('document bytes'),
    'kyc_document:kyc-documents/a/doc_1.pdf',
  );
  assert.ok(!sealed.includes(Buffer.from('document bytes')));
  const ring = new Sealer([new_key, old_key]);
  assert.equal(
    ring.openBytes(sealed, 'kyc_document:kyc-documents/a/doc_1.pdf').toString(),
    'document bytes',
  );
  assert.equal(ring.isCurrentBytes(sealed), false);
  assert.equal(ring.isCurrentBytes(ring.sealBytes(Buffer.from('x'), 'y')), true);
  const only_new = new Sealer([new_key]);
  assert.throws(
    () => only_new.openBytes(sealed, 'kyc_document:kyc-documents/a/doc_1.pdf'),
    new RegExp(`encryption key ${keyId(old_key)}`),
  );
});

test('keys are 32 bytes in hex or base64; anything else is refused with the way to make one', () => {
  const key = newKey();
  assert.ok(parseKey(key.toString('hex'), 'K').equals(key));
  assert.ok(parseKey(key.toString('base64'), 'K').equals(key));
  assert.ok(parseKey(key.toString('base64url'), 'K').equals(key));
  for (const bad of ['', 'short', 'z'.repeat(64), key.toString('hex').slice(2)])
    assert.throws(() => parseKey(bad, 'K'), /openssl rand -hex 32/);
});

test('a file sealed as a stream opens as one sealed whole, and only at its own place', () => {
  const sealer = new Sealer([newKey()]);
  const plain = Buffer.from('%PDF-1.4\n' + 'x'.repeat(100_000));
  const stream = sealer.sealingStream('kyc_document:a/b.pdf');
  const parts = [stream.head];
  for (let at = 0; at < plain.length; at += 7_777)
    parts.push(stream.update(plain.subarray(at, at + 7_777)));
  const { rest, tag } = stream.final();
  parts.push(rest);
  const sealed = Buffer.concat(parts);
  tag.copy(sealed, stream.tag_offset);
  assert.ok(sealer.isCurrentBytes(sealed));
  assert.deepEqual(sealer.openBytes(sealed, 'kyc_document:a/b.pdf'), plain);
  assert.throws(() => sealer.openBytes(sealed, 'kyc_document:a/c.pdf'), /does not authenticate/);
});

test('fingerprints: equal values equal under one key, apart by purpose and key, never the value; a rotation turns old into new', () => {
  const old_key = newKey();
  const new_key = newKey();
  const before = new Sealer([old_key]);
  const fp = before.fingerprint('234123412346', 'aadhaar');
  assert.equal(before.fingerprint('234123412346', 'aadhaar'), fp);
  assert.notEqual(before.fingerprint('234123412347', 'aadhaar'), fp);
  assert.notEqual(before.fingerprint('234123412346', 'other'), fp);
  assert.ok(!fp.includes('2341'), fp);
  assert.ok(before.isCurrentFingerprint(fp));
  assert.equal(before.refingerprint(fp, 'aadhaar'), null, 'current already');
  const after = new Sealer([new_key, old_key]);
  assert.ok(!after.isCurrentFingerprint(fp));
  assert.equal(after.refingerprint(fp, 'aadhaar'), after.fingerprint('234123412346', 'aadhaar'));
  assert.throws(() => new Sealer([new_key]).refingerprint(fp, 'aadhaar'), SealError);
  assert.throws(() => before.fingerprint('x'.repeat(16), 'aadhaar'), SealError);
});
