// /healthz is liveness, /readyz readiness (issue #36): 503 with the reason while every
// upstream's breaker is open, or while the PostgreSQL store's database cannot be reached,
// and 200 again once it can; /healthz stays 200 throughout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createFundedAccount, request, startGateway, startGatewayWithChat } from './helpers.js';
import { refusedPort } from '../support/scripted-upstream.js';
import { startPostgres } from '../support/postgres.js';
import { TIER_IDS } from '../../gateway/chat/config.js';

async function waitForStatus(url: string, status: number): Promise<{ status: number; body: any }> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const reply = await request(url);
    if (reply.status === status) return reply;
    if (Date.now() > deadline) throw new Error(`${url} never answered ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('/readyz is 503 while every upstream breaker is open; /healthz stays 200', async () => {
  const gateway = await startGatewayWithChat(
    {
      engines: {
        gone: {
          type: 'openai-compatible',
          base_url: `http://127.0.0.1:${await refusedPort()}/v1`,
          model: 'm',
        },
      },
      models: Object.fromEntries(TIER_IDS.map((tier) => [tier, { targets: ['gone'] }])),
      breaker: { failure_threshold: 1, cooldown_ms: 600_000 },
    },
    { database_url: false },
  );
  try {
    const ready = await request(`${gateway.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ready' });
    const { key } = await createFundedAccount(gateway, 10);
    const chat = await request(`${gateway.url}/v1/chat/completions`, {
      headers: { authorization: `Bearer ${key}` },
      body: { model: 'service-ai-lite', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.ok(chat.status >= 500, `the chat failed upstream (${chat.status})`);
    const open = await request(`${gateway.url}/readyz`);
    assert.equal(open.status, 503);
    assert.equal(open.body.status, 'not_ready');
    assert.match(open.body.reasons.join(' '), /circuit breaker is open \(gone\)/);
    assert.equal((await request(`${gateway.url}/healthz`)).status, 200);
  } finally {
    await gateway.stop();
  }
});

test('/readyz on PostgreSQL: 503 naming the database while it is down, 200 once it is back', async () => {
  const cluster = await startPostgres();
  try {
    const gateway = await startGateway({ database_url: await cluster.createDatabase() });
    try {
      assert.equal((await request(`${gateway.url}/readyz`)).status, 200);
      await cluster.stop('fast');
      const down = await waitForStatus(`${gateway.url}/readyz`, 503);
      assert.match(down.body.reasons.join(' '), /database cannot be reached/);
      assert.equal((await request(`${gateway.url}/healthz`)).status, 200);
      await cluster.start();
      await waitForStatus(`${gateway.url}/readyz`, 200);
    } finally {
      await gateway.stop();
    }
  } finally {
    await cluster.teardown();
  }
});
