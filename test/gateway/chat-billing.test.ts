// Exact billing through the real gateway: sums to the micro-unit, and concurrent requests
// against a small wallet never take it below zero (the ledger verify passes afterwards).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import {
  admin,
  createFundedAccount,
  request,
  runVerify,
  startGateway,
  tempDir,
  gatewayState,
} from './helpers.js';

type Billed = {
  x_aihub: { cost: number; balance: number; prompt_tokens: number; completion_tokens: number };
};
const micros = (units: number) => Math.round(units * 1_000_000);

async function gatewayWith(chat: unknown) {
  const dir = tempDir('aihub-chat-billing-');
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ chat }));
  return startGateway({ args: ['--config', config] });
}

test('after N requests, JSON and streamed, on several tiers, the balance is the credit minus the sum of x_aihub.cost, to the micro-unit', async () => {
  const gateway = await gatewayWith({});
  try {
    const { key, account_id } = await createFundedAccount(gateway, 3.33);
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    let charged_micros = 0;
    let last_balance = Number.NaN;
    const tiers = [
      'service-ai-lite',
      'service-ai-standard-6',
      'service-ai-pro-4',
      'service-ai-max',
    ];
    for (let i = 0; i < 24; i++) {
      const model = tiers[i % tiers.length]!;
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: 'user', content: `Question ${i}: explain \`const x${i} = () => ${i};\` please` },
      ];
      if (i % 2 === 0) {
        const r = (await client.chat.completions.create({
          model,
          messages,
          max_tokens: 10 + i,
        })) as unknown as Billed;
        charged_micros += micros(r.x_aihub.cost);
        last_balance = r.x_aihub.balance;
      } else {
        const stream = await client.chat.completions.create({
          model,
          messages,
          max_tokens: 10 + i,
          stream: true,
          stream_options: { include_usage: i % 4 === 1 },
        });
        let x: Billed['x_aihub'] | undefined;
        for await (const chunk of stream) x = (chunk as unknown as Partial<Billed>).x_aihub ?? x;
        assert.ok(x, 'the stream carried x_aihub');
        charged_micros += micros(x.cost);
        last_balance = x.balance;
      }
    }
    assert.ok(charged_micros > 0);
    assert.equal(
      micros(last_balance),
      3_330_000 - charged_micros,
      'x_aihub.balance after the last request',
    );
    const balance = await request(`${gateway.url}/v1/balance`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(micros(balance.body.balance), 3_330_000 - charged_micros);
    assert.equal(micros(balance.body.usage.cost), charged_micros);
    assert.equal(balance.body.usage.requests, 24);
    const account = await admin(gateway).get(`/admin/accounts/${account_id}`);
    assert.equal(micros(account.body.balance), 3_330_000 - charged_micros);
  } finally {
    assert.equal(await gateway.stop(), 0);
  }
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});

test('200 concurrent requests against a wallet that affords 20 worst cases never overdraw it', async () => {
  // Slow streaming keeps many requests in flight at once, holding their worst case.
  const gateway = await gatewayWith({
    engines: { builtin: { type: 'builtin', token_interval_ms: 2 } },
  });
  let account_id = '';
  try {
    const probe = await createFundedAccount(gateway, 0);
    account_id = probe.account_id;
    const body = {
      model: 'service-ai-max',
      messages: [{ role: 'user', content: 'Write a function that adds two numbers' }],
      max_tokens: 40,
    };
    // The 402 names the worst case the gateway holds for this request.
    const refused = await request(`${gateway.url}/v1/chat/completions`, {
      headers: { authorization: `Bearer ${probe.key}` },
      body,
    });
    assert.equal(refused.status, 402);
    const worst_units = Number(/may cost up to ([\d.]+) INR/.exec(refused.body.error.message)![1]);
    const worst_micros = micros(worst_units);
    assert.ok(worst_micros > 0);
    // Credits have at most 2 decimals: between 20 and 20.5 worst cases.
    const credit_micros =
      Math.floor((worst_micros * 20 + Math.floor(worst_micros / 2)) / 10_000) * 10_000;
    assert.ok(credit_micros >= worst_micros * 20 && credit_micros < worst_micros * 21);
    const credited = await admin(gateway).post(`/admin/accounts/${account_id}/credit`, {
      amount: credit_micros / 1e6,
      reference: 'twenty-worst-cases',
    });
    assert.equal(credited.status, 200);

    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        request(`${gateway.url}/v1/chat/completions`, {
          headers: { authorization: `Bearer ${probe.key}` },
          body: { ...body, stream: i % 2 === 1 },
        }),
      ),
    );
    const ok = replies.filter((r) => r.status === 200);
    const poor = replies.filter((r) => r.status === 402);
    assert.equal(
      ok.length + poor.length,
      200,
      `statuses: ${[...new Set(replies.map((r) => r.status))].join(',')}`,
    );
    assert.ok(ok.length >= 20, `${ok.length} answered`);
    assert.ok(poor.length > 0, 'some were refused: the wallet could not hold them all at once');
    let charged_micros = 0;
    for (const reply of ok) {
      if (typeof reply.body === 'string') {
        const events = reply.body.split('\n\n').filter((e) => e.startsWith('data: {'));
        const last = JSON.parse(events.at(-1)!.slice(6)) as Billed;
        charged_micros += micros(last.x_aihub.cost);
        assert.ok(last.x_aihub.balance >= 0);
      } else {
        charged_micros += micros((reply.body as Billed).x_aihub.cost);
        assert.ok((reply.body as Billed).x_aihub.balance >= 0);
      }
    }
    const balance = await request(`${gateway.url}/v1/balance`, {
      headers: { authorization: `Bearer ${probe.key}` },
    });
    assert.ok(balance.body.balance >= 0);
    assert.equal(micros(balance.body.balance), credit_micros - charged_micros);
  } finally {
    assert.equal(await gateway.stop(), 0);
  }
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  const state = await gatewayState(gateway);
  assert.equal(state.balances[`hold:${account_id}`] ?? 0, 0, 'nothing stays held');
  assert.ok((state.balances[`wallet:${account_id}`] ?? 0) >= 0);
});
