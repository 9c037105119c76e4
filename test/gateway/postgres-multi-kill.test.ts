// SIGKILL one of three gateways on one PostgreSQL database under mixed load (issue #18): the
// others keep serving; the dead gateway's chat reservations are released once their lease
// lapses (and not billed); its pending payment is reconciled by another gateway; a live
// gateway's stream that outlasts the lease is billed once, exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { admin, createFundedAccount, request, type Gateway } from './helpers.ts';
import { onboard, paymentsConfig, waitFor } from '../support/payments-helpers.ts';
import {
  freshDatabase,
  micros,
  postgresStoreMissing,
  startGateways,
  stopAll,
  verifyDatabase,
} from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();
const LEASE_MS = 2_000;
const sandbox = (pending_ms: number) => [
  { type: 'sandbox', name: 'sandbox-a', timeout_ms: 1_000, pending_ms },
];

async function walletOn(gateway: Gateway, key: string): Promise<number> {
  const reply = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  if (reply.status !== 200)
    throw new Error(`balance on ${gateway.url}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return micros(reply.body.balance);
}

test(
  'SIGKILL one gateway of three under load: the others serve, its holds lapse, its pending payment is reconciled',
  { skip, timeout: 240_000 },
  async () => {
    const database_url = await freshDatabase();
    const base = paymentsConfig();
    const config = {
      ...base,
      // A pending recharge settles at the provider 4 s after it was sent: after the kill.
      payments: {
        ...(base.payments as object),
        providers: {
          recharge: sandbox(4_000),
          dmt: sandbox(300),
          pan: sandbox(300),
          bills: sandbox(300),
        },
      },
      // Slow streams: the dead gateway's are in flight when it dies; the live one outlasts the lease.
      // The per-key limit is shared out among live gateways (a third each here); this test is
      // about a gateway dying, not about rate limits, so the key's limit is far above its load.
      chat: {
        engines: { builtin: { type: 'builtin', token_interval_ms: 1_000 } },
        rate_limit: { requests_per_minute: 1_000_000 },
      },
    };
    const gateways = await startGateways(database_url, 3, {
      config,
      env: { AIHUB_RESERVATION_LEASE_MS: String(LEASE_MS) },
    });
    const [g1, g2, g3] = gateways as [Gateway, Gateway, Gateway];
    const load_errors: string[] = [];
    let stop_load = false;
    try {
      const victim = await createFundedAccount(g1, 0); // its streams run on g1, which dies
      const survivor = await createFundedAccount(g2, 100); // a long stream on g2, which lives
      const steady = await createFundedAccount(g3, 100); // load on g2 and g3 all along
      const payer = await onboard(g1, 1_000);
      const body = {
        model: 'service-ai-max',
        messages: [{ role: 'user' as const, content: 'Write a function that adds two numbers' }],
        max_tokens: 60,
      };
      // The victim's wallet affords 4.5 worst cases: while g1's four streams hold theirs, a
      // fifth request anywhere is refused; once their holds are released it is served.
      const probe = () =>
        request(`${g2.url}/v1/chat/completions`, {
          headers: { authorization: `Bearer ${victim.key}` },
          body,
        });
      const refused = await probe();
      assert.equal(refused.status, 402);
      const worst = micros(
        Number(/may cost up to ([\d.]+) INR/.exec(refused.body.error.message)![1]),
      );
      const credit = Math.floor((worst * 4 + Math.floor(worst / 2)) / 10_000) * 10_000;
      assert.ok(
        credit >= worst * 4 && credit < worst * 5,
        `credit ${credit} for worst case ${worst}`,
      );
      assert.equal(
        (
          await admin(g1).post(`/admin/accounts/${victim.account_id}/credit`, {
            amount: credit / 1e6,
            reference: 'four-and-a-half',
          })
        ).status,
        200,
      );

      // Streams on g1: they hold their worst case on the shared wallet, then g1 dies under them.
      const g1_client = new OpenAI({ baseURL: `${g1.url}/v1`, apiKey: victim.key, maxRetries: 0 });
      let streaming = 0;
      const doomed = Array.from({ length: 4 }, async () => {
        try {
          let first = true;
          for await (const _chunk of await g1_client.chat.completions.create({
            ...body,
            stream: true,
          })) {
            if (first) streaming++; // the first chunk: its hold is committed
            first = false;
          }
          throw new Error('a stream on g1 finished before g1 was killed: make the streams slower');
        } catch (error) {
          if ((error as Error).message.startsWith('a stream on g1 finished')) throw error;
          // the gateway was killed mid-stream: expected
        }
      });
      // A stream on g2 that lasts longer than the lease: g2 must keep its reservation alive.
      const g2_client = new OpenAI({
        baseURL: `${g2.url}/v1`,
        apiKey: survivor.key,
        maxRetries: 0,
      });
      const long_stream = (async () => {
        let x: { cost: number; balance: number } | undefined;
        for await (const chunk of await g2_client.chat.completions.create({
          ...body,
          max_tokens: 6,
          stream: true,
        }))
          x = (chunk as any).x_aihub ?? x;
        return x;
      })();
      // A recharge that the provider keeps pending for 4 s, acknowledged by g1.
      const pending = await request(`${g1.url}/api/recharge`, {
        headers: payer.headers,
        body: { operator_id: 1, number: '9876540002', amount: 100 },
      });
      assert.equal(pending.status, 200, JSON.stringify(pending.body));
      assert.equal(pending.body.data.status, 'pending');

      // Load on the gateways that live, before, during and after the kill.
      let killed_at = Number.POSITIVE_INFINITY;
      let served_after_kill = 0;
      const steady_clients = [g2, g3].map(
        (gateway) =>
          new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: steady.key, maxRetries: 0 }),
      );
      const load = Array.from({ length: 4 }, async (_, worker) => {
        for (let n = 0; !stop_load; n++) {
          const gateway = worker % 2 === 0 ? g2 : g3;
          try {
            if (n % 3 === 2) {
              const reply = await request(`${gateway.url}/api/wallet/balance`, {
                headers: payer.headers,
              });
              if (reply.status !== 200)
                load_errors.push(`balance ${reply.status} ${JSON.stringify(reply.body)}`);
            } else {
              await steady_clients[worker % 2]!.chat.completions.create({
                model: 'service-ai-lite',
                messages: [{ role: 'user', content: `load ${worker}-${n}` }],
                max_tokens: 8,
              });
            }
            if (Date.now() > killed_at) served_after_kill++;
          } catch (error) {
            load_errors.push(`${gateway.url}: ${(error as Error).message}`);
          }
        }
      });

      // g2 sees g1's holds on the shared wallet; the recharge is still pending.
      await waitFor(
        () => streaming === 4,
        () => `${streaming} of g1's 4 streams started`,
      );
      const while_held = await probe();
      assert.equal(
        while_held.status,
        402,
        `g2 must see the four holds g1 took: ${JSON.stringify(while_held.body)}`,
      );
      const before = await request(`${g2.url}/api/transactions/${pending.body.txn_id}`, {
        headers: payer.headers,
      });
      assert.equal(before.body.data.status, 'pending', 'still pending when g1 dies');

      killed_at = Date.now();
      await g1.stop('SIGKILL');
      await Promise.all(doomed);

      // After the lease, the dead gateway's holds go back to the wallet: the probe is served.
      let served: Awaited<ReturnType<typeof probe>> | undefined;
      await waitFor(
        async () => (served = await probe()).status === 200,
        () => `the dead gateway's holds were never released: ${JSON.stringify(served?.body)}`,
        LEASE_MS + 30_000,
      );
      const probe_cost = micros(served!.body.x_aihub.cost);
      for (const gateway of [g2, g3]) {
        await waitFor(
          async () => (await walletOn(gateway, victim.key)) === credit - probe_cost,
          async () =>
            `${gateway.url}: the victim's wallet is ${await walletOn(gateway, victim.key)}, not the credit ${credit} less the probe's ${probe_cost}: the dead gateway's streams were billed`,
        );
      }
      // The pending recharge is settled by a gateway that lives.
      await waitFor(
        async () =>
          (
            await request(`${g3.url}/api/transactions/${pending.body.txn_id}`, {
              headers: payer.headers,
            })
          ).body.data.status === 'success',
        () => 'the pending recharge of the dead gateway was never reconciled',
        30_000,
      );
      await waitFor(
        () => served_after_kill >= 10,
        () => `only ${served_after_kill} requests served after the kill`,
        30_000,
      );
      stop_load = true;
      await Promise.all(load);
      assert.deepEqual(load_errors, [], 'the gateways that live served every request');

      // The stream that outlasted the lease on g2 is billed exactly once.
      const x = await long_stream;
      assert.ok(x && x.cost > 0, 'the long stream finished and was billed');
      assert.equal(
        await walletOn(g3, survivor.key),
        micros(100) - micros(x.cost),
        'billed once, at its cost',
      );
      assert.equal(micros(x.balance), micros(100) - micros(x.cost));
      const victim_account = await admin(g3).get(`/admin/accounts/${victim.account_id}`);
      assert.equal(micros(victim_account.body.balance), credit - probe_cost);
    } finally {
      stop_load = true;
      await stopAll(gateways, 'SIGTERM');
    }
    const verify = await verifyDatabase(database_url);
    assert.equal(verify.code, 0, verify.output);
    assert.equal(verify.report.open_holds, 0, 'no hold is left open');
  },
);
