// Payments across gateways on one PostgreSQL database (issue #18): the same Idempotency-Key
// sent at once to different gateways is one transaction and moves money once; the duplicate
// window seen by one gateway holds on the others; a dashboard session made on one gateway is
// valid on another.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type Gateway } from './helpers.ts';
import { balance, onboard, paymentsConfig, waitFor } from '../support/payments-helpers.ts';
import {
  dashboardLogin,
  dashboardPage,
  freshDatabase,
  postgresStoreMissing,
  startGateways,
  stopAll,
  verifyDatabase,
} from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();
const cents = (units: number) => Math.round(units * 100);

test(
  'concurrent recharges with one Idempotency-Key sent to three gateways: one transaction, money moved once',
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 3, { config: paymentsConfig() });
    try {
      const { headers } = await onboard(gateways[0]!, 1_000);
      const recharge = (
        gateway: Gateway,
        body: Record<string, unknown>,
        extra: Record<string, string> = {},
      ) => request(`${gateway.url}/api/recharge`, { headers: { ...headers, ...extra }, body });
      let expected_cents = cents(1_000);
      for (let round = 0; round < 5; round++) {
        // Vodafone Idea (3.5 % commission); distinct numbers so that the duplicate window stays out of it.
        const body = { operator_id: 3, number: `90000001${round}0`, amount: 20 };
        const key = { 'Idempotency-Key': `order-${round}-${process.pid}` };
        const replies = await Promise.all(
          Array.from({ length: 12 }, (_, i) => recharge(gateways[i % 3]!, body, key)),
        );
        for (const reply of replies)
          assert.equal(
            reply.status,
            200,
            `round ${round}: ${reply.status} ${JSON.stringify(reply.body)}`,
          );
        const txn_ids = new Set(replies.map((reply) => reply.body.txn_id));
        assert.equal(
          txn_ids.size,
          1,
          `round ${round}: one transaction, not ${[...txn_ids].join(', ')}`,
        );
        // The commission, 0.70, is credited net of 2 % TDS (0.014, 0.01 to the paisa).
        expected_cents += cents(-20 + 0.69);
        // Every gateway sees the transaction as success and the wallet charged once.
        for (const gateway of gateways) {
          await waitFor(
            async () =>
              (await request(`${gateway.url}/api/transactions/${[...txn_ids][0]}`, { headers }))
                .body?.data?.status === 'success',
            () => `round ${round}: ${gateway.url} does not show the transaction as success`,
          );
          assert.equal(
            cents(await balance(gateway, headers)),
            expected_cents,
            `round ${round}: the balance on ${gateway.url}`,
          );
        }
      }
      const listed = await request(`${gateways[2]!.url}/api/transactions?service=recharge`, {
        headers,
      });
      assert.equal(listed.body.data.total, 5, 'five transactions in all');
    } finally {
      await stopAll(gateways);
    }
    const verify = await verifyDatabase(database_url);
    assert.equal(verify.code, 0, verify.output);
    assert.equal(verify.report.open_holds, 0);
  },
);

test(
  'the duplicate window holds across gateways: the same recharge without a key, on another gateway, is refused',
  { skip, timeout: 120_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, { config: paymentsConfig() });
    try {
      const { headers } = await onboard(gateways[0]!, 1_000);
      const body = { operator_id: 1, number: '9876543210', amount: 10 };
      const first = await request(`${gateways[0]!.url}/api/recharge`, { headers, body });
      assert.equal(first.body.data.status, 'success');
      const again = await request(`${gateways[1]!.url}/api/recharge`, { headers, body });
      assert.equal(
        again.status,
        409,
        `the second gateway took it again: ${JSON.stringify(again.body)}`,
      );
      assert.equal(again.body.error.code, 'duplicate_transaction');
      assert.equal(
        await balance(gateways[1]!, headers),
        1_000 - 10 + 0.24, // the commission, 0.25, net of 2 % TDS (0.005, 0.01 to the paisa)
        'one recharge paid for',
      );
    } finally {
      await stopAll(gateways);
    }
  },
);

test(
  'a dashboard session made on one gateway is valid on the others',
  { skip, timeout: 120_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2);
    try {
      const email = `web-${process.pid}@example.com`;
      const password = 'correct horse battery';
      const registered = await request(`${gateways[0]!.url}/api/register`, {
        body: { email, password, name: 'Web User' },
      });
      assert.equal(registered.status, 201, JSON.stringify(registered.body));
      const cookie = await dashboardLogin(gateways[0]!, email, password);
      for (const gateway of gateways) {
        const page = await dashboardPage(gateway, '/wallet', cookie);
        assert.equal(
          page.status,
          200,
          `${gateway.url}/wallet with the session of ${gateways[0]!.url}`,
        );
      }
      assert.equal(
        (await dashboardPage(gateways[1]!, '/wallet', 'aihub_session=not-a-session')).status,
        303,
        'no session: sent to log in',
      );
    } finally {
      await stopAll(gateways);
    }
  },
);
