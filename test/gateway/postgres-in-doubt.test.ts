// A commit whose answer the connection lost (issue #36), at the level an operator meets it: a
// real gateway process on a real PostgreSQL through a fault-injection proxy
// (test/support/fault-proxy.ts) that cuts the gateway's connection right after it forwarded
// a commit statement and before the answer comes back. The statement reaches the server and
// commits there; the gateway looks its commit id up and answers the real outcome (200, the
// wallet moved once). With the lookup made impossible too (the proxy refusing every
// connection for longer than AIHUB_STORE_OUTCOME_WAIT_MS), the answer is 503
// store_outcome_unknown, never "nothing was changed", and a retry with the same key does not
// move money twice. A statement lost before reaching the server is proved not applied by the
// lookup, and its transaction runs again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admin, chatWith, createFundedAccount, request, type Gateway } from './helpers.ts';
import { waitFor } from '../support/payments-helpers.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import {
  freshDatabase,
  metric,
  micros,
  postgresStoreMissing,
  startMember,
  verifyDatabase,
} from '../support/multi-gateway.ts';

const skip = await postgresStoreMissing();
const OUTCOME_WAIT_MS = 1_500;
/** The commit statement's name on the wire (Parse and Bind messages carry it). */
const COMMIT = 'aihub_commit';
/** A chat's settlement: its batch holds the usage record. */
const USAGE_RECORD = '"kind":"usage"';

async function balanceOf(gateway: Gateway, key: string) {
  const reply = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return {
    balance: micros(reply.body.balance),
    requests: reply.body.usage.requests as number,
    cost: micros(reply.body.usage.cost),
  };
}

const chat = (gateway: Gateway, key: string, n: number) => chatWith(gateway, key, `in doubt ${n}`);

const inDoubtLines = (gateway: Gateway, outcome: string) =>
  gateway.output.filter(
    (line) =>
      line.includes('"event":"store_commit_in_doubt"') && line.includes(`"outcome":"${outcome}"`),
  ).length;

test(
  'a commit whose answer was lost: the gateway looks its id up and answers the real outcome, or store_outcome_unknown',
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    const target_port = Number(new URL(database_url).port);
    const proxy: FaultProxy = await startFaultProxy(target_port);
    const gateway = await startMember(proxy.url(database_url), 1, {
      env: { AIHUB_STORE_OUTCOME_WAIT_MS: String(OUTCOME_WAIT_MS) },
    });
    try {
      const api = admin(gateway);
      const target = await createFundedAccount(gateway, 0);
      const chatter = await createFundedAccount(gateway, 100);
      const credit = (reference: string, amount: number) =>
        api.post(`/admin/accounts/${target.account_id}/credit`, { amount, reference });

      // 1. An admin credit: cut after its commit statement; the lookup finds it committed.
      const cut1 = proxy.cutAfter([COMMIT, 'admin-credit:in-doubt-1']);
      const first = await credit('in-doubt-1', 7);
      await cut1;
      assert.equal(proxy.cuts, 1, 'the proxy cut the commit');
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.duplicate ?? false, false);
      assert.equal(micros(first.body.balance), 7_000_000);
      assert.equal((await balanceOf(gateway, target.key)).balance, 7_000_000);
      assert.equal(inDoubtLines(gateway, 'committed') >= 1, true, 'the lookup was logged');

      // 2. A billed chat: cut after its settlement; the client gets the answer it paid for.
      const before = await balanceOf(gateway, chatter.key);
      const cut2 = proxy.cutAfter([COMMIT, USAGE_RECORD]);
      const answered = await chat(gateway, chatter.key, 2);
      await cut2;
      assert.equal(proxy.cuts, 2);
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      const cost = micros(answered.body.x_aihub.cost);
      assert.ok(cost > 0, 'the chat was billed');
      const after = await balanceOf(gateway, chatter.key);
      assert.equal(after.requests, before.requests + 1, 'billed once');
      assert.equal(after.balance, before.balance - cost, 'the wallet moved once, by the bill');

      // 3. The same cuts with every connection refused for longer than the lookup may take:
      // 503 store_outcome_unknown (never "nothing was changed"); the commit did happen.
      const cut3 = proxy.cutAfter([COMMIT, 'admin-credit:in-doubt-3'], {
        refuse_ms: OUTCOME_WAIT_MS + 2_000,
      });
      const unknown = await credit('in-doubt-3', 5);
      await cut3;
      assert.equal(unknown.status, 503, JSON.stringify(unknown.body));
      assert.equal(unknown.body.error.code, 'store_outcome_unknown');
      assert.match(unknown.body.error.message, /outcome is unknown/);
      assert.match(unknown.body.error.message, /same idempotency key/);
      assert.doesNotMatch(unknown.body.error.message, /nothing was changed/);
      assert.ok(unknown.headers.get('retry-after'));
      // Once the database is reachable again, the retry with the same reference moves nothing.
      let again: Awaited<ReturnType<typeof credit>> | null = null;
      await waitFor(
        async () => {
          again = await credit('in-doubt-3', 5);
          return again.status === 200;
        },
        () => `the retry was not answered: ${JSON.stringify(again?.body)}`,
        30_000,
      );
      assert.equal(again!.body.duplicate, true, 'the first credit had committed');
      assert.equal((await balanceOf(gateway, target.key)).balance, 12_000_000);

      // 4. A chat's settlement the same way: 503 store_outcome_unknown, billed exactly once.
      const before4 = await balanceOf(gateway, chatter.key);
      const cut4 = proxy.cutAfter([COMMIT, USAGE_RECORD], { refuse_ms: OUTCOME_WAIT_MS + 2_000 });
      const unknown_chat = await chat(gateway, chatter.key, 4);
      await cut4;
      assert.equal(unknown_chat.status, 503, JSON.stringify(unknown_chat.body));
      assert.equal(unknown_chat.body.error.code, 'store_outcome_unknown');
      let after4 = before4;
      await waitFor(
        async () => {
          const reply = await request(`${gateway.url}/v1/balance`, {
            headers: { authorization: `Bearer ${chatter.key}` },
          });
          if (reply.status !== 200) return false;
          after4 = await balanceOf(gateway, chatter.key);
          return true;
        },
        () => 'the gateway did not serve again',
        30_000,
      );
      assert.equal(after4.requests, before4.requests + 1, 'the settlement committed once');
      assert.ok(after4.balance < before4.balance, 'it was billed');
      assert.equal(inDoubtLines(gateway, 'unknown'), 2);

      // 5. A commit statement lost on its way (dropped, never reaching the server): the lookup
      // proves its id absent (and fences it), the transaction runs again: 200, moved once.
      const cut5 = proxy.cutAfter([COMMIT, 'admin-credit:in-doubt-5'], { forward: false });
      const rerun = await credit('in-doubt-5', 2);
      await cut5;
      assert.equal(rerun.status, 200, JSON.stringify(rerun.body));
      assert.equal(rerun.body.duplicate ?? false, false);
      assert.equal((await balanceOf(gateway, target.key)).balance, 14_000_000);
      assert.equal(inDoubtLines(gateway, 'not_applied'), 1);
      const in_doubt = (outcome: string) =>
        metric(gateway, `aihub_store_commits_in_doubt_total{outcome="${outcome}"}`);
      assert.deepEqual(
        [await in_doubt('committed'), await in_doubt('not_applied'), await in_doubt('unknown')],
        [2, 1, 2],
      );
    } catch (error) {
      const lines = gateway.output.filter((line) => !line.includes('"msg":"request"'));
      throw new Error(
        `${(error as Error).message}\nthe gateway logged:\n${lines.slice(-15).join('\n')}`,
        {
          cause: error,
        },
      );
    } finally {
      await gateway.stop();
      await proxy.close();
    }
    const verify = await verifyDatabase(database_url);
    assert.equal(verify.code, 0, verify.output);
  },
);
