// Exact billing through the real gateway: cached prompt tokens at the cached price to the
// micro-unit, an answer billed at the price of the target that gave it (a free builtin
// fallback, a priced one), x_aihub naming the target, and estimated usage marked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { ScriptedUpstream } from '../support/scripted-upstream.js';
import {
  createFundedAccount,
  request,
  runVerify,
  startGateway,
  tempDir,
  type Gateway,
} from './helpers.js';

let upstream: ScriptedUpstream;
let broken: ScriptedUpstream;
let gateway: Gateway;
let client: OpenAI;
let key: string;

type XAihub = {
  cost: number;
  balance: number;
  target: string;
  cached_tokens: number;
  reasoning_tokens: number;
  usage: string;
  prompt_tokens: number;
  completion_tokens: number;
};
const xOf = (r: unknown) => (r as { x_aihub: XAihub }).x_aihub;

before(async () => {
  upstream = await ScriptedUpstream.start({ kind: 'ok', content: 'fine' });
  broken = await ScriptedUpstream.start({ kind: 'status', status: 500 });
  const dir = tempDir('aihub-chat-exact-');
  const config = join(dir, 'config.json');
  const engine = (u: ScriptedUpstream) => ({
    type: 'openai-compatible',
    base_url: u.base_url,
    model: 'm',
    timeout_ms: 5_000,
  });
  writeFileSync(
    config,
    JSON.stringify({
      chat: {
        engines: { up: engine(upstream), down: engine(broken) },
        breaker: { failure_threshold: 1_000 },
        models: {
          // input 100, cached default 10, output 400 per million
          'service-ai-standard-6': { targets: ['up'] },
          'service-ai-lite': {
            targets: ['up'],
            input_per_million: 15,
            cached_input_per_million: 3.5,
            output_per_million: 60,
          },
          'service-ai-pro-4': { targets: ['down', 'builtin'] },
          'service-ai-max': {
            targets: ['down', 'up'],
            target_prices: { up: { input_per_million: 2, output_per_million: 8 } },
          },
        },
      },
    }),
  );
  gateway = await startGateway({ args: ['--config', config] });
  ({ key } = await createFundedAccount(gateway, 1_000));
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
});

after(async () => {
  assert.equal(await gateway.stop(), 0);
  await Promise.all([upstream.close(), broken.close()]);
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});

const ask = (model: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
  client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], ...extra });

test('cached prompt tokens are billed at the cached price, to the micro-unit, and shown', async () => {
  const usage = {
    prompt_tokens: 12_345,
    completion_tokens: 678,
    prompt_tokens_details: { cached_tokens: 10_000 },
    completion_tokens_details: { reasoning_tokens: 500 },
  };
  upstream.script({ kind: 'ok', usage }, { kind: 'ok', usage });
  const standard = xOf(await ask('service-ai-standard-6'));
  // (2,345 × 100 + 10,000 × 10 + 678 × 400) / 1e6 units = 0.234500 + 0.100000 + 0.271200
  assert.equal(standard.cost, 0.6057);
  assert.equal(standard.cached_tokens, 10_000);
  assert.equal(standard.reasoning_tokens, 500);
  assert.equal(standard.usage, 'reported');
  assert.equal(standard.target, 'up');
  const lite = xOf(await ask('service-ai-lite'));
  // 2,345 × 15 + 10,000 × 3.5 + 678 × 60 = 35,175 + 35,000 + 40,680 micro-units
  assert.equal(lite.cost, 0.110855);
  const models = (await client.models.list()).data as unknown as Array<{
    id: string;
    pricing: { cached_input_per_million: number };
  }>;
  assert.equal(
    models.find((m) => m.id === 'service-ai-standard-6')!.pricing.cached_input_per_million,
    10,
  );
  assert.equal(
    models.find((m) => m.id === 'service-ai-lite')!.pricing.cached_input_per_million,
    3.5,
  );
  const balance = (
    await request(`${gateway.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } })
  ).body;
  assert.equal(balance.usage.cached_tokens, 20_000);
  assert.equal(balance.usage.reasoning_tokens, 1_000);
});

test('a fallback answer is billed at the answering target price: builtin free, a priced target at its price', async () => {
  const fallback = await ask('service-ai-pro-4');
  assert.equal(xOf(fallback).target, 'builtin');
  assert.equal(xOf(fallback).cost, 0, 'builtin behind another target is free unless priced');
  assert.match(fallback.choices[0]!.message.content!, /offline engine/);
  upstream.script({ kind: 'ok', usage: { prompt_tokens: 1_000_000, completion_tokens: 10 } });
  const priced = xOf(await ask('service-ai-max', { max_tokens: 10 }));
  assert.equal(priced.target, 'up');
  assert.equal(priced.cost, 2.00008, '1M × 2 + 10 × 8 per million, not the max tier price');
});

test('without upstream usage the counts are estimated and marked so, tool calls included', async () => {
  upstream.script({
    kind: 'ok',
    usage: false,
    tool_calls: [
      { id: 'c1', name: 'lookup', arguments: '{"query":"a fairly long argument string to count"}' },
    ],
  });
  const r = await ask('service-ai-standard-6', {
    tools: [
      {
        type: 'function',
        function: {
          name: 'lookup',
          parameters: { type: 'object', properties: { query: { type: 'string' } } },
        },
      },
    ],
  });
  const x = xOf(r);
  assert.equal(x.usage, 'estimated');
  assert.ok(x.completion_tokens >= 10, `tool-call arguments are counted: ${x.completion_tokens}`);
  assert.ok(x.prompt_tokens > 20, `tool definitions are counted: ${x.prompt_tokens}`);
});

test('an upstream overrun beyond the reservation is billed in full: the wallet pays what it has, the rest is owed and paid from the next credit', async () => {
  const small = await createFundedAccount(gateway, 0.01);
  const poor = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: small.key, maxRetries: 0 });
  // A prompt the upstream counts far above the hold (output beyond the hold is never billed).
  upstream.script({ kind: 'ok', usage: { prompt_tokens: 100_000, completion_tokens: 5 } });
  const r = await poor.chat.completions.create({
    model: 'service-ai-standard-6',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 5,
  });
  assert.equal(
    upstream.received.at(-1)!.body.max_tokens,
    5,
    'the upstream is sent the limit the hold covers',
  );
  const x = xOf(r) as XAihub & { receivable: number };
  assert.equal(x.cost, 10.002, 'tokens × price: 100,000 × 100 + 5 × 400 per million');
  assert.equal(x.receivable, 9.992);
  assert.equal(x.balance, 0);
  const auth = { authorization: `Bearer ${small.key}` };
  assert.equal((await request(`${gateway.url}/v1/balance`, { headers: auth })).body.owed, 9.992);
  const credit = await request(`${gateway.url}/admin/accounts/${small.account_id}/credit`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gateway.admin_token}` },
    body: { amount: 20, reference: 'after-overrun' },
  });
  assert.equal(credit.status, 200);
  const after_credit = (await request(`${gateway.url}/v1/balance`, { headers: auth })).body;
  assert.equal(after_credit.owed, 0);
  assert.equal(after_credit.balance, 10.008);
});

test('the wallet page and the AI usage report show cached and reasoning tokens, the protocol and what is owed', async () => {
  const email = `owed-${Date.now()}@example.com`;
  const password = 'a long enough password';
  const registered = await request(`${gateway.url}/api/register`, {
    body: { email, password, name: 'Owed User' },
  });
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const api_key = registered.body.data?.api_key ?? registered.body.api_key;
  const user = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: api_key, maxRetries: 0 });
  await request(
    `${gateway.url}/admin/accounts/${registered.body.data?.account_id ?? registered.body.account_id}/credit`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.admin_token}` },
      body: { amount: 0.01, reference: `owed-${email}` },
    },
  );
  upstream.script({
    kind: 'ok',
    usage: {
      prompt_tokens: 100_000,
      completion_tokens: 5,
      prompt_tokens_details: { cached_tokens: 1_234 },
      completion_tokens_details: { reasoning_tokens: 4 },
    },
  });
  await user.chat.completions.create({
    model: 'service-ai-standard-6',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 5,
  });

  // Log in as a browser would: the login form's CSRF token and cookie, then the session cookie.
  const form = await fetch(`${gateway.url}/login`);
  const anon_cookie = form.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
  const login = await fetch(`${gateway.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: anon_cookie,
      origin: gateway.url,
    },
    body: new URLSearchParams({ email, password, _csrf: csrf }),
  });
  assert.equal(login.status, 303, await login.text());
  const session_cookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const page = await (
    await fetch(`${gateway.url}/wallet`, {
      headers: { cookie: `${anon_cookie}; ${session_cookie}` },
    })
  ).text();
  assert.match(page, /id="ai-usage"/);
  assert.match(page, /1,234 cached/);
  assert.match(page, /4 reasoning/);
  assert.match(
    page,
    /id="owed"[^>]*>₹9\.88094 is owed/,
    '(98,766 × 100 + 1,234 × 10 + 5 × 400) / 1e6 = 9.89094, less the 0.01 the wallet had',
  );
  // Per protocol on the wallet page; per request, with cached, reasoning and owed, in the AI usage report and its CSV.
  assert.match(
    page,
    /<table id="ai-usage-by-protocol">.*<td>chat<\/td><td class="num">1<\/td><td class="num">1,00,000 \(1,234\)<\/td><td class="num">5 \(4\)<\/td>/s,
  );
  const cookie = `${anon_cookie}; ${session_cookie}`;
  const report = await (
    await fetch(`${gateway.url}/reports?report=ai-usage`, { headers: { cookie } })
  ).text();
  assert.match(report, /<td>chat<\/td>/);
  assert.match(
    report,
    /<td class="num">100000 \(1234\)<\/td><td class="num">5 \(4\)<\/td><td class="num">₹9\.89094<\/td><td class="num">₹9\.88094<\/td>/,
  );
  const csv = (
    await (
      await fetch(`${gateway.url}/reports?report=ai-usage&format=csv`, { headers: { cookie } })
    ).text()
  )
    .trim()
    .split('\r\n');
  const header = csv[0]!.split(',');
  const row = Object.fromEntries(csv[1]!.split(',').map((cell, i) => [header[i], cell]));
  assert.deepEqual(
    [
      row.protocol,
      row.prompt_tokens,
      row.cached_tokens,
      row.completion_tokens,
      row.reasoning_tokens,
      row.cost,
      row.owed,
    ],
    ['chat', '100000', '1234', '5', '4', '9.89094', '9.88094'],
  );
});

test('a mix of every protocol on one wallet, JSON and streamed: each bill is its tokens at the tier price, the wallet moves by their sum', async () => {
  // service-ai-standard-6: 100 per million input, 400 per million output, on the scripted upstream.
  const { key: mixed } = await createFundedAccount(gateway, 100);
  const headers = { authorization: `Bearer ${mixed}`, 'content-type': 'application/json' };
  const model = 'service-ai-standard-6';
  const question = 'What is a gateway?';
  const calls: Array<{
    name: string;
    path: string;
    body: Record<string, unknown>;
    stream: boolean;
  }> = [];
  for (const stream of [false, true]) {
    calls.push(
      {
        name: 'chat',
        path: '/v1/chat/completions',
        body: {
          model,
          messages: [{ role: 'user', content: question }],
          ...(stream ? { stream, stream_options: { include_usage: true } } : {}),
        },
        stream,
      },
      {
        name: 'responses',
        path: '/v1/responses',
        body: { model, input: question, stream },
        stream,
      },
      {
        name: 'messages',
        path: '/v1/messages',
        body: { model, max_tokens: 256, messages: [{ role: 'user', content: question }], stream },
        stream,
      },
      {
        name: 'gemini',
        path: `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
        body: { contents: [{ role: 'user', parts: [{ text: question }] }] },
        stream,
      },
      {
        name: 'completions',
        path: '/v1/completions',
        body: { model, prompt: question, stream },
        stream,
      },
    );
  }
  const balance = async () =>
    Math.round(
      (
        await request(`${gateway.url}/v1/balance`, {
          headers: { authorization: `Bearer ${mixed}` },
        })
      ).body.balance * 1e6,
    );
  const before_micros = await balance();
  let reported_micros = 0;
  for (const [i, call] of calls.entries()) {
    const usage = { prompt_tokens: 1_000 + 37 * i, completion_tokens: 50 + 11 * i };
    upstream.script({ kind: 'ok', content: 'A gateway sits between.', usage });
    const reply = await fetch(`${gateway.url}${call.path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(call.body),
    });
    const text = await reply.text();
    assert.equal(reply.status, 200, `${call.name}: ${text.slice(0, 300)}`);
    let cost: number;
    if (call.stream) {
      const bills = text
        .split('\n')
        .filter((line) => line.startsWith('data: {'))
        .map((line) => JSON.stringify(JSON.parse(line.slice(6))))
        .map((data) => /"x_aihub":(\{[^}]*\})/.exec(data)?.[1])
        .filter((bill): bill is string => bill !== undefined);
      assert.equal(bills.length, 1, `${call.name} stream: one event carries the bill`);
      cost = (JSON.parse(bills[0]!) as { cost: number }).cost;
    } else cost = Number(reply.headers.get('x-aihub-cost'));
    const expected_micros = usage.prompt_tokens * 100 + usage.completion_tokens * 400;
    assert.equal(
      Math.round(cost * 1e6),
      expected_micros,
      `${call.name}${call.stream ? ' stream' : ''}: billed ${cost}`,
    );
    reported_micros += expected_micros;
  }
  assert.equal(before_micros - (await balance()), reported_micros);
  const usage = (
    await request(`${gateway.url}/v1/balance`, { headers: { authorization: `Bearer ${mixed}` } })
  ).body.usage as { requests: number; by_protocol: Record<string, { requests: number }> };
  assert.equal(usage.requests, calls.length);
  for (const name of ['chat', 'responses', 'messages', 'gemini', 'completions'])
    assert.equal(usage.by_protocol[name]!.requests, 2, name);
});
