// Issue #25, items 4 and 6: signed /api requests and the encryption key across gateways on
// one PostgreSQL database. A captured signed request replayed on another gateway is refused
// (the seen signatures are claimed in the database every gateway sees, for the signature's
// window, and pruned after); a gateway given another encryption key than the deployment's
// refuses to start, naming the fix, instead of answering 500 on every secret the others sealed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { admin, request, type Gateway } from './helpers.ts';
import { balance, onboard, paymentsConfig, waitFor } from '../support/payments-helpers.ts';
import {
  freshDatabase,
  postgresStoreMissing,
  startGateways,
  startMember,
  stopAll,
  verifyDatabase,
} from '../support/multi-gateway.ts';
import { psql } from '../support/postgres.ts';

const skip = await postgresStoreMissing();

function sign(secret: string, method: string, target: string, body = '', at = Date.now() / 1000) {
  const timestamp = at.toFixed(3);
  const hex = createHmac('sha256', secret)
    .update(`v2\n${timestamp}\n${method}\n${target}\n`)
    .update(body)
    .digest('hex');
  return { 'X-AIHub-Timestamp': timestamp, 'X-AIHub-Signature': `v2=${hex}` };
}

test(
  'item 4: two gateways on one database: a signed request accepted by one is refused as a replay by the other, money moves once, and stale claims are pruned',
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, { config: paymentsConfig() });
    const [g1, g2] = gateways as [Gateway, Gateway];
    try {
      const { account_id, headers } = await onboard(g1, 1_000);
      const enabled = await admin(g1).post(`/admin/accounts/${account_id}/signing-secret`, {});
      assert.equal(enabled.status, 201);
      const secret = enabled.body.secret as string;
      // g2 knows the account's secret (the log reached its replica) before the replay is tried.
      await waitFor(
        async () =>
          (await request(`${g2.url}/api/wallet/balance`, { headers })).body?.error?.code ===
          'signature_required',
        () => 'the signing secret reaches the second gateway',
      );

      const read = sign(secret, 'GET', '/api/wallet/balance');
      const first = await request(`${g1.url}/api/wallet/balance`, {
        headers: { ...headers, ...read },
      });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const replay = await request(`${g2.url}/api/wallet/balance`, {
        headers: { ...headers, ...read },
      });
      assert.equal(replay.status, 401, JSON.stringify(replay.body));
      assert.equal(replay.body.error.code, 'signature_replayed');

      // A recharge: accepted by g2, replayed on g1 (and again on g2): charged once.
      const before = await balance(g1, {
        ...headers,
        ...sign(secret, 'GET', '/api/wallet/balance', '', Date.now() / 1000 + 0.001),
      });
      const raw = JSON.stringify({ operator_id: 1, number: '9876500123', amount: 50 });
      const paid_headers = { ...headers, ...sign(secret, 'POST', '/api/recharge', raw) };
      const paid = await request(`${g2.url}/api/recharge`, { headers: paid_headers, raw });
      assert.equal(paid.status, 200, JSON.stringify(paid.body));
      for (const gateway of [g1, g2]) {
        const again = await request(`${gateway.url}/api/recharge`, { headers: paid_headers, raw });
        assert.equal(again.status, 401, JSON.stringify(again.body));
        assert.equal(again.body.error.code, 'signature_replayed');
      }
      const after = await balance(g1, {
        ...headers,
        ...sign(secret, 'GET', '/api/wallet/balance', '', Date.now() / 1000 + 0.002),
      });
      assert.equal(after, paid.body.data.balance, 'charged once: the balance the recharge left');
      assert.ok(after < before);

      // Claims live in aihub.seen until stale; one gateway deletes stale ones (wait on state).
      const count = async () => Number(await psql(database_url, 'SELECT count(*) FROM aihub.seen'));
      assert.ok((await count()) >= 4, `the accepted signatures are claimed: ${await count()}`);
      await psql(
        database_url,
        "INSERT INTO aihub.seen (k, until_at) SELECT 'sig:stale:' || i, now() - interval '2 minutes' FROM generate_series(1, 25000) i",
      );
      await waitFor(
        async () =>
          Number(
            await psql(database_url, "SELECT count(*) FROM aihub.seen WHERE k LIKE 'sig:stale:%'"),
          ) === 0,
        () => 'stale claims are pruned',
        30_000,
      );
      assert.ok((await count()) >= 4, 'claims still in their window stay');
    } finally {
      await stopAll(gateways);
    }
    assert.equal((await verifyDatabase(database_url)).code, 0);
  },
);

test(
  'item 6: a gateway started on the database with another encryption key refuses to start (exit 2, the fix named)',
  { skip, timeout: 120_000 },
  async () => {
    const database_url = await freshDatabase();
    const [g1] = (await startGateways(database_url, 1)) as [Gateway];
    const other_key = randomBytes(32).toString('hex');
    let stray: Gateway | null = null;
    try {
      const outcome = await startMember(database_url, 2, {
        env: { AIHUB_ENCRYPTION_KEY: other_key },
      }).then(
        (gateway) => gateway,
        (error: Error) => error,
      );
      if (!(outcome instanceof Error)) {
        stray = outcome;
        // What it used to do: run, then fail on the first secret sealed with the other key.
        const { account_id, headers } = await onboard(g1, 10);
        const secret = (await admin(g1).post(`/admin/accounts/${account_id}/signing-secret`, {}))
          .body.secret as string;
        const signed = await request(`${outcome.url}/api/wallet/balance`, {
          headers: { ...headers, ...sign(secret, 'GET', '/api/wallet/balance') },
        });
        assert.fail(`the gateway with another key started; a signed request got ${signed.status}`);
      }
      assert.match(outcome.message, /exited with 2/);
      assert.match(outcome.message, /cannot open the database's key check/);
      assert.match(outcome.message, /same AIHUB_ENCRYPTION_KEY/);
    } finally {
      if (stray) await stray.stop();
      await stopAll([g1]);
    }
  },
);
