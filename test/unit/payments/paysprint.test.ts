// PaySprint's JWT and AES (gateway/providers/paysprint/auth.ts) against values computed
// outside this code base, with the openssl command line:
//   JWT: base64url(header).base64url(payload) HMAC-SHA256'd by `openssl dgst -sha256 -hmac`;
//   AES: `openssl enc -aes-128-cbc -K <hex key> -iv <hex iv>` of the JSON, base64.
// And the callback check: a token of another secret, another partner, a stale one and a
// replayed one are refused before the body is believed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decryptBody,
  encryptBody,
  newReqid,
  readJwt,
  signJwt,
} from '../../../gateway/providers/paysprint/auth.ts';
import { PaysprintCallbacks } from '../../../gateway/providers/paysprint/callbacks.ts';
import { paysprintProviderSchema } from '../../../gateway/providers/paysprint/config.ts';
import { PaysprintProvider } from '../../../gateway/providers/paysprint/adapter.ts';
import { CallbackRefusedError } from '../../../gateway/providers/types.ts';
import { startPaysprint } from '../../support/paysprint-server.ts';
import { json, startUpstream } from '../../support/payments-upstream.ts';

const CLAIMS = { timestamp: 1765090000, partnerId: 'PS001234', reqid: '1765090000000123456789' };
const OPENSSL_JWT =
  'eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJ0aW1lc3RhbXAiOjE3NjUwOTAwMDAsInBhcnRuZXJJZCI6IlBTMDAxMjM0IiwicmVxaWQiOiIxNzY1MDkwMDAwMDAwMTIzNDU2Nzg5In0.ycMIBH6JRn3eOd5scs8Oev17Kr-NrruSLt5kMbQULQE';
const KEY = 'a1b2c3d4e5f60718';
const IV = '0f1e2d3c4b5a6978';
const PLAIN = '{"referenceid":"txn_1","amount":100}';
const OPENSSL_AES = 'RuDXI3YY3lOiOB96zlAX6z/+i14AXhVP/PpBU7E88jCXvduXe8Tg15Na3GNHrq7i';
/** The scripted PaySprint's secrets, and the environment an adapter reads them from. */
const secrets = {
  partner_id: 'PS001234',
  jwt_secret: 'jwt-secret-for-a-test',
  authorised_key: 'auth-key',
  aes_key: KEY,
  aes_iv: IV,
};
const env = {
  AIHUB_PAYSPRINT_PARTNER_ID: secrets.partner_id,
  AIHUB_PAYSPRINT_JWT_SECRET: secrets.jwt_secret,
  AIHUB_PAYSPRINT_AUTHORISED_KEY: secrets.authorised_key,
  AIHUB_PAYSPRINT_AES_KEY: KEY,
  AIHUB_PAYSPRINT_AES_IV: IV,
};

test('the Token JWT is HS256 over {timestamp, partnerId, reqid}, byte for byte as openssl computes it', () => {
  assert.equal(signJwt(CLAIMS, 'jwt-secret-for-a-test'), OPENSSL_JWT);
  assert.deepEqual(readJwt(OPENSSL_JWT, 'jwt-secret-for-a-test'), CLAIMS);
});

test('a JWT of another secret, a tampered payload or alg "none" is refused', () => {
  assert.ok('refused' in readJwt(OPENSSL_JWT, 'another-secret'));
  const [head, , signature] = OPENSSL_JWT.split('.');
  const tampered = Buffer.from(JSON.stringify({ ...CLAIMS, partnerId: 'PS999999' })).toString(
    'base64url',
  );
  assert.ok('refused' in readJwt(`${head}.${tampered}.${signature}`, 'jwt-secret-for-a-test'));
  const none = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
  const payload = OPENSSL_JWT.split('.')[1];
  assert.deepEqual(readJwt(`${none}.${payload}.`, 'jwt-secret-for-a-test'), {
    refused: 'the JWT is not HS256',
  });
  assert.ok('refused' in readJwt('not-a-token', 'jwt-secret-for-a-test'));
});

test('the AES body is AES-128-CBC with the key and IV as given, as openssl computes it', () => {
  assert.equal(encryptBody(PLAIN, KEY, IV), OPENSSL_AES);
  assert.equal(decryptBody(OPENSSL_AES, KEY, IV), PLAIN);
  assert.throws(() => encryptBody(PLAIN, 'short', IV), /16 bytes/);
});

test('reqids are integers, unique per request', () => {
  const now = new Date();
  const ids = new Set(Array.from({ length: 1_000 }, () => newReqid(now)));
  assert.equal(ids.size, 1_000);
  for (const id of ids) assert.match(id, /^\d{22}$/);
});

test('a PaySprint entry takes secrets only by environment variable names', () => {
  const entry = { type: 'paysprint', name: 'ps', base_url: 'https://api.paysprint.in' };
  const parsed = paysprintProviderSchema.parse(entry);
  assert.equal(parsed.jwt_secret_env, 'AIHUB_PAYSPRINT_JWT_SECRET');
  assert.equal(parsed.paths.recharge, '/api/v1/service/recharge/recharge/dorecharge');
  assert.equal(paysprintProviderSchema.safeParse({ ...entry, jwt_secret: 'x' }).success, false);
  const second = paysprintProviderSchema.parse({ ...entry, jwt_secret_env: 'PS2_JWT' });
  assert.equal(second.jwt_secret_env, 'PS2_JWT');
});

test('a callback is believed only with a fresh token of our partner and secret, and only once', () => {
  let now = new Date(CLAIMS.timestamp * 1000 + 10_000);
  const config = paysprintProviderSchema.parse({
    type: 'paysprint',
    name: 'ps',
    base_url: 'https://api.paysprint.in',
  });
  const callbacks = new PaysprintCallbacks(
    config,
    { AIHUB_PAYSPRINT_JWT_SECRET: 'jwt-secret-for-a-test', AIHUB_PAYSPRINT_PARTNER_ID: 'PS001234' },
    () => now,
  );
  const body = Buffer.from(
    JSON.stringify({ event: 'X', param: { referenceid: 'txn_1', status: '1' } }),
  );
  const refused = (token: string) =>
    assert.throws(() => callbacks.read({ token }, body), CallbackRefusedError);
  refused(signJwt(CLAIMS, 'another-secret'));
  refused(signJwt({ ...CLAIMS, partnerId: 'PS999999' }, 'jwt-secret-for-a-test'));
  const event = callbacks.read({ token: OPENSSL_JWT }, body);
  assert.equal(event?.outcome, 'success');
  assert.equal(event?.txn_id, 'txn_1');
  refused(OPENSSL_JWT); // the same reqid again: a replay
  now = new Date(CLAIMS.timestamp * 1000 + 301_000);
  refused(signJwt({ ...CLAIMS, reqid: '1' }, 'jwt-secret-for-a-test')); // stale
  assert.throws(() => callbacks.checkHead({}), CallbackRefusedError);
});

test('the adapter against the scripted PaySprint: a duplicate reference settled by the enquiry, a failed transfer refunded with PaySprint OTP', async () => {
  const server = await startPaysprint(secrets, { encrypted: ['dmt'] });
  try {
    const provider = new PaysprintProvider(
      paysprintProviderSchema.parse({
        type: 'paysprint',
        name: 'ps',
        base_url: server.url,
        timeout_ms: 2_000,
        encrypt: ['dmt'],
      }),
      env,
      () => new Date(),
    );
    const signal = new AbortController().signal;
    const base = { amount_micros: 100_000_000, submitted_at: new Date().toISOString() };
    const duplicate = await provider.submit(
      {
        ...base,
        txn_id: 'txn_dup',
        service: 'recharge',
        subject: '9876500005',
        params: { operator_id: 1 },
      },
      signal,
    );
    assert.equal(duplicate.outcome, 'success', 'a duplicate reference is asked about, not failed');

    server.remitters.set('9876512345', { fname: 'Ravi', lname: 'Kumar' });
    const transfer = {
      ...base,
      txn_id: 'txn_dmt',
      service: 'dmt' as const,
      subject: '912345670003',
      params: {
        kind: 'transfer',
        txn_type: 'IMPS',
        ifsc: 'SBIN0001234',
        name: 'Sunita Rao',
        mobile: '9876512345',
      },
    };
    const accepted = await provider.submit(transfer, signal);
    assert.equal(accepted.outcome, 'pending');
    const query = { ...transfer, provider_ref: accepted.provider_ref };
    assert.equal((await provider.status(query, signal)).outcome, 'pending');
    const failed = await provider.status(query, signal);
    assert.equal(failed.outcome, 'failed');
    assert.equal((await provider.refundOtp(query, signal)).done, true);
    const otp = server.refund_otps.get('txn_dmt')!;
    assert.equal((await provider.claimRefund(query, '000000', signal)).done, false);
    assert.equal((await provider.claimRefund(query, otp, signal)).done, true);
    assert.equal(server.txns.get('txn_dmt')!.status, 'R');
    assert.deepEqual(server.refusals, []);
  } finally {
    await server.close();
  }
});

test("a bill's further parameters go as ad1..ad3 only in a known order; an answer that does not decrypt is no answer", async () => {
  const server = await startPaysprint(secrets);
  const entry = (extra: Record<string, unknown>) =>
    new PaysprintProvider(
      paysprintProviderSchema.parse({
        type: 'paysprint',
        name: 'ps',
        base_url: server.url,
        timeout_ms: 2_000,
        ...extra,
      }),
      env,
      () => new Date(),
    );
  const signal = new AbortController().signal;
  const bill = {
    service: 'bills' as const,
    kind: 'bill' as const,
    subject: '123456789',
    params: { biller_id: 'LICPOL', policy_number: '123456789', email: 'a@b.in', dob: '01-01-1980' },
  };
  try {
    // Two further parameters, their order at PaySprint unknown: not sent on a guess.
    await assert.rejects(entry({}).lookup(bill, signal), (error: any) => {
      assert.equal(error.kind, 'misconfigured');
      assert.match(error.message, /bill_params/);
      return true;
    });
    assert.equal(server.accepted.length, 0);
    // Configured: ad1 and ad2 in the order given.
    const found = await entry({ bill_params: { LICPOL: ['dob', 'email'] } }).lookup(bill, signal);
    assert.equal(found.outcome, 'found');
    const sent = server.accepted.at(-1)!.body;
    assert.equal(sent.canumber, '123456789');
    assert.equal(sent.ad1, '01-01-1980');
    assert.equal(sent.ad2, 'a@b.in');
    assert.equal(sent.ad3, undefined);

    // An answer PaySprint should have encrypted but whose body is not ours to decrypt.
    const upstream = await startUpstream((_req, res) =>
      json(res, 200, { body: Buffer.from('not a ciphertext').toString('base64') }),
    );
    try {
      const sealed = new PaysprintProvider(
        paysprintProviderSchema.parse({
          type: 'paysprint',
          name: 'ps',
          base_url: upstream.url,
          timeout_ms: 2_000,
          decrypt: ['recharge'],
        }),
        env,
        () => new Date(),
      );
      await assert.rejects(
        sealed.lookup(
          { service: 'recharge', kind: 'hlr', subject: '9876543210', params: {} },
          signal,
        ),
        (error: any) => error.kind === 'bad_response' && /decrypt/.test(error.message),
      );
    } finally {
      await upstream.close();
    }
  } finally {
    await server.close();
  }
});
