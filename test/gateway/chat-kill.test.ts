// A billed chat request killed at each point of its path (issue #40; docs/ARCHITECTURE.md, "A
// billed request's one durable wait"): SIGKILL while the upstream call runs (its hold taken,
// nothing settled) and SIGKILL right after answers went out (each settled before it was sent).
// After a restart on the same store: no acknowledged bill lost, nothing billed that was not
// answered, no hold left over, and the books verify. On the JSON-file store, or on PostgreSQL in
// a run with AIHUB_TEST_DATABASE_URL (a short reservation lease, so that the dead gateway's
// hold lapses within the test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  admin,
  createFundedAccount,
  request,
  runVerify,
  startGatewayWithChat,
  tempDir,
  type Gateway,
} from './helpers.ts';

const LEASE_MS = 1_000;
const chat = {
  engines: {
    // Twenty tokens a second apart: a request is still streaming when the gateway is killed.
    slow: { type: 'builtin', token_interval_ms: 1_000 },
    fast: { type: 'builtin' },
  },
  models: {
    'service-ai-max': { targets: ['slow'] },
    'service-ai-lite': { targets: ['fast'] },
  },
};
const env = { AIHUB_RESERVATION_LEASE_MS: String(LEASE_MS) };
const micros = (units: number) => Math.round(units * 1e6);

function start(data_dir: string): Promise<Gateway> {
  return startGatewayWithChat(chat, { data_dir, env });
}

async function balanceOf(gateway: Gateway, key: string) {
  const reply = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body as { balance: number; usage: { requests: number; cost: number } };
}

async function waitUntil(check: () => Promise<boolean>, what: string, limit_ms = 30_000) {
  const until = Date.now() + limit_ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('SIGKILL while the upstream call runs: nothing is billed, the hold is gone after a restart, the books verify', async () => {
  const data_dir = tempDir();
  let gateway = await start(data_dir);
  try {
    const { key, account_id } = await createFundedAccount(gateway, 0);
    const body = {
      model: 'service-ai-max',
      messages: [{ role: 'user', content: 'Write a function that adds two numbers' }],
      max_tokens: 40,
    };
    const send = (stream: boolean) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...body, stream }),
      });
    // The wallet affords one worst case and a half: while one request holds its worst case, a
    // second is refused.
    const refused = await send(false);
    assert.equal(refused.status, 402);
    const worst = micros(
      Number(
        /may cost up to ([\d.]+) INR/.exec(
          ((await refused.json()) as { error: { message: string } }).error.message,
        )![1],
      ),
    );
    const credit = Math.ceil((worst * 3) / 2 / 10_000) * 10_000;
    assert.equal(
      (
        await admin(gateway).post(`/admin/accounts/${account_id}/credit`, {
          amount: credit / 1e6,
          reference: 'one-and-a-half',
        })
      ).status,
      200,
    );
    const held = await send(true);
    assert.equal(held.status, 200);
    const reader = held.body!.getReader();
    await reader.read(); // the first chunk: the hold is taken and the upstream call runs
    assert.equal((await send(false)).status, 402, 'the hold in flight is respected');
    await gateway.stop('SIGKILL');
    await reader.cancel().catch(() => {});

    gateway = await start(data_dir);
    // Nothing was answered in full, so nothing is billed; the hold did not outlive the process
    // (the JSON-file store: it was memory) or its lease (PostgreSQL: released by the restarted gateway).
    const after = await balanceOf(gateway, key);
    assert.equal(micros(after.balance), credit);
    assert.equal(after.usage.requests, 0);
    await waitUntil(async () => {
      const reply = await request(`${gateway.url}/v1/chat/completions`, {
        headers: { authorization: `Bearer ${key}` },
        body: { ...body, model: 'service-ai-lite', max_tokens: 8 },
      });
      return reply.status === 200;
    }, 'a request to be served on the whole credit');
    const served = await balanceOf(gateway, key);
    assert.equal(served.usage.requests, 1);
    assert.equal(micros(served.balance) + micros(served.usage.cost), credit);
  } finally {
    await gateway.stop();
  }
  const verify = await runVerify(data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});

test('SIGKILL right after answers went out: every answered request is billed exactly once after a restart', async () => {
  const data_dir = tempDir();
  let gateway = await start(data_dir);
  const CREDIT = 100;
  try {
    const { key } = await createFundedAccount(gateway, CREDIT);
    let charged = 0;
    const answered = 12;
    for (let i = 0; i < answered; i++) {
      const reply = await request(`${gateway.url}/v1/chat/completions`, {
        headers: { authorization: `Bearer ${key}` },
        body: {
          model: 'service-ai-lite',
          messages: [{ role: 'user', content: `question ${i}` }],
          max_tokens: 16,
        },
      });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      charged += micros(reply.body.x_aihub.cost);
      // Each answer carries the balance its own settlement left.
      assert.equal(micros(reply.body.x_aihub.balance), micros(CREDIT) - charged);
    }
    await gateway.stop('SIGKILL');

    gateway = await start(data_dir);
    const after = await balanceOf(gateway, key);
    assert.equal(after.usage.requests, answered);
    assert.equal(micros(after.usage.cost), charged);
    assert.equal(micros(after.balance), micros(CREDIT) - charged);
  } finally {
    await gateway.stop();
  }
  const verify = await runVerify(data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});
