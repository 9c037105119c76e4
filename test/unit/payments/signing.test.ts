import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { RequestSigning } from '../../../gateway/payments/signing.ts';
import { signingSecretAad } from '../../../gateway/payments/sealing.ts';
import { Sealer, newKey } from '../../../gateway/util/sealed.ts';
import type { Account } from '../../../gateway/store/state.ts';

const sealer = new Sealer([newKey()]);
const SECRET = 'sigsec_unit';
const account = {
  id: 'acct_1',
  signing: {
    secret: sealer.sealText(SECRET, signingSecretAad('acct_1')),
    created_at: '2026-01-01T00:00:00Z',
  },
} as Account;

function req(timestamp: string, body = ''): IncomingMessage {
  const signature = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
  return {
    headers: { 'x-aihub-timestamp': timestamp, 'x-aihub-signature': signature },
  } as unknown as IncomingMessage;
}

test('the replay cache is bounded per account: past the bound new signatures get 429 until old ones go stale', () => {
  let now_ms = 1_767_225_600_000;
  const signing = new RequestSigning(
    { now_ms: () => now_ms, sealer, v1_until: '2099-01-01T00:00:00Z' },
    { max_per_account: 3, max_total: 100 },
  );
  const base = now_ms / 1000;
  for (let i = 0; i < 3; i++) signing.begin(req(String(base + i)), account);
  assert.throws(
    () => signing.begin(req(String(base + 3)), account),
    (error: any) => error.status === 429 && error.code === 'too_many_signed_requests',
  );
  assert.throws(
    () => signing.begin(req(String(base + 1)), account),
    (error: any) => error.status === 401 && error.code === 'signature_replayed',
  );
  now_ms += 5 * 60_000 + 1_000; // the first signatures are stale now
  signing.begin(req(String(now_ms / 1000)), account);
});

test('the total bound holds across accounts, and a stale timestamp is refused before any cache', () => {
  const now_ms = 1_767_225_600_000;
  const signing = new RequestSigning(
    { now_ms: () => now_ms, sealer, v1_until: '2099-01-01T00:00:00Z' },
    { max_per_account: 10, max_total: 2 },
  );
  signing.begin(req(String(now_ms / 1000)), account);
  signing.begin(req(String(now_ms / 1000 + 1)), account);
  assert.throws(
    () => signing.begin(req(String(now_ms / 1000 + 2)), account),
    (error: any) => error.status === 429,
  );
  assert.throws(
    () => signing.begin(req(String(now_ms / 1000 - 301)), account),
    (error: any) => error.code === 'signature_expired',
  );
});

test('a settled signature is claimed for the deployment: a claim another gateway holds is a replay', async () => {
  const now_ms = 1_767_225_600_000;
  const claims = new Map<string, number>();
  const shared = {
    async claimShared(key: string, until_ms: number, at_ms: number) {
      const held = claims.get(key);
      if (held !== undefined && held >= at_ms) return false;
      claims.set(key, until_ms);
      return true;
    },
  };
  // Two gateways' RequestSigning, each with its own memory, one shared table.
  const [a, b] = [0, 1].map(
    () =>
      new RequestSigning({
        now_ms: () => now_ms,
        sealer,
        v1_until: '2099-01-01T00:00:00Z',
        store: shared,
      }),
  );
  const first = req(String(now_ms / 1000));
  a!.begin(first, account);
  await a!.claimShared(first);
  const replay = req(String(now_ms / 1000));
  b!.begin(replay, account); // b's own memory has not seen it
  await assert.rejects(b!.claimShared(replay), (error: any) => error.code === 'signature_replayed');
  assert.equal(claims.size, 1);
  assert.equal(
    [...claims.values()][0],
    now_ms + 5 * 60_000,
    'claimed until the timestamp goes stale',
  );
});
