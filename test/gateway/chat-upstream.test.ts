// Upstream faults through the real gateway: scripted OpenAI-compatible servers on loopback
// that refuse, time out, answer 429/500, omit usage, stream slowly or break mid-stream.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import OpenAI from 'openai';
import { refusedPort, ScriptedUpstream } from '../support/scripted-upstream.js';
import {
  createFundedAccount,
  request,
  runVerify,
  startGateway,
  tempDir,
  type Gateway,
  gatewayState,
} from './helpers.js';

let a: ScriptedUpstream;
let b: ScriptedUpstream;
let c: ScriptedUpstream;
let gateway: Gateway;
let client: OpenAI;
let key: string;
let account_id: string;
const CREDIT_MICROS = 500_000_000;
const hello: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello' }];

before(async () => {
  a = await ScriptedUpstream.start({ kind: 'ok', content: 'answer from A' });
  b = await ScriptedUpstream.start({ kind: 'ok', content: 'answer from B' });
  c = await ScriptedUpstream.start({ kind: 'ok', content: 'answer from C' });
  const engine = (upstream: ScriptedUpstream, extra: Record<string, unknown> = {}) => ({
    type: 'openai-compatible',
    base_url: upstream.base_url,
    model: 'upstream-model',
    api_key_env: 'SCRIPTED_KEY',
    timeout_ms: 400,
    ...extra,
  });
  const dir = tempDir('aihub-chat-upstream-');
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      chat: {
        engines: {
          gone: {
            type: 'openai-compatible',
            base_url: `http://127.0.0.1:${await refusedPort()}/v1`,
            model: 'm',
          },
          a_first: engine(a),
          b_second: engine(b),
          c_only: engine(c),
          a_metered: engine(a, { timeout_ms: 5_000 }),
        },
        models: {
          'service-ai-lite': { targets: ['gone', 'a_first'] },
          'service-ai-standard-6': { targets: ['a_first', 'b_second'] },
          'service-ai-pro-4': { targets: ['c_only'] },
          'service-ai-max': { targets: ['a_metered'] },
        },
        breaker: { failure_threshold: 3, cooldown_ms: 600_000 },
      },
    }),
  );
  gateway = await startGateway({
    args: ['--config', config],
    env: { SCRIPTED_KEY: 'sk-scripted' },
  });
  ({ key, account_id } = await createFundedAccount(gateway, CREDIT_MICROS / 1e6));
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
});

after(async () => {
  assert.equal(await gateway.stop(), 0);
  await Promise.all([a.close(), b.close(), c.close()]);
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  const state = await gatewayState(gateway);
  assert.equal(state.balances[`hold:${account_id}`] ?? 0, 0, 'nothing stays held');
});

const content = (r: OpenAI.ChatCompletion) => r.choices[0]!.message.content;

test('a refused connection fails over to the next target', async () => {
  const seen = a.received.length;
  const r = await client.chat.completions.create({ model: 'service-ai-lite', messages: hello });
  assert.equal(content(r), 'answer from A');
  assert.equal(a.received.length, seen + 1);
  assert.equal(
    a.received.at(-1)!.body.model,
    'upstream-model',
    'the target model replaces the tier id',
  );
  assert.equal(
    a.received.at(-1)!.headers.authorization,
    'Bearer sk-scripted',
    'the key comes from api_key_env',
  );
});

test('429, 500, a reset connection and a timeout before the first byte each fail over to the next target', async () => {
  for (const behavior of [
    { kind: 'status', status: 429 },
    { kind: 'status', status: 500 },
    { kind: 'reset' },
    { kind: 'hang' },
  ] as const) {
    a.script(behavior);
    const seen_b = b.received.length;
    const r = await client.chat.completions.create({
      model: 'service-ai-standard-6',
      messages: hello,
    });
    assert.equal(content(r), 'answer from B', behavior.kind);
    assert.equal(b.received.length, seen_b + 1);
    // A success on A in between keeps A's circuit closed for the next case.
    assert.equal(
      content(
        await client.chat.completions.create({ model: 'service-ai-standard-6', messages: hello }),
      ),
      'answer from A',
    );
  }
  a.script({ kind: 'status', status: 500 });
  const stream = await client.chat.completions.create({
    model: 'service-ai-standard-6',
    messages: hello,
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'answer from B', 'a stream fails over too, before its first byte');
});

test('an upstream that rejects the request (400) is not retried elsewhere; the client gets a 400', async () => {
  a.script({
    kind: 'status',
    status: 400,
    body: { error: { message: 'this model does not support that', type: 'invalid_request_error' } },
  });
  const seen_b = b.received.length;
  const error = await client.chat.completions
    .create({ model: 'service-ai-standard-6', messages: hello })
    .catch((e: unknown) => e);
  assert.ok(error instanceof OpenAI.BadRequestError);
  assert.match(error.message, /does not support that/);
  assert.equal(b.received.length, seen_b);
});

test('with no target left: timeout → 504, 500 → 502, 429 → 503; then the open circuit answers 503 without calling the upstream', async () => {
  const balance_before = (
    await request(`${gateway.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } })
  ).body.balance;
  c.script({ kind: 'hang' });
  const timeout = await client.chat.completions
    .create({ model: 'service-ai-pro-4', messages: hello })
    .catch((e: unknown) => e);
  assert.ok(timeout instanceof OpenAI.APIError);
  assert.equal(timeout.status, 504);
  assert.equal(timeout.code, 'upstream_timeout');
  c.script({ kind: 'status', status: 500 });
  const failed = await client.chat.completions
    .create({ model: 'service-ai-pro-4', messages: hello })
    .catch((e: unknown) => e);
  assert.ok(failed instanceof OpenAI.InternalServerError);
  assert.equal(failed.status, 502);
  assert.equal(failed.code, 'upstream_error');
  c.script({ kind: 'status', status: 429 });
  const busy = await client.chat.completions
    .create({ model: 'service-ai-pro-4', messages: hello })
    .catch((e: unknown) => e);
  assert.ok(busy instanceof OpenAI.APIError);
  assert.equal(busy.status, 503);
  assert.ok(Number(busy.headers?.get('retry-after')) >= 1);
  const seen = c.received.length;
  const open = await client.chat.completions
    .create({ model: 'service-ai-pro-4', messages: hello })
    .catch((e: unknown) => e);
  assert.ok(open instanceof OpenAI.APIError);
  assert.equal(open.status, 503);
  assert.equal(open.code, 'upstream_unavailable');
  assert.equal(
    Number(open.headers?.get('retry-after')),
    600,
    'the circuit stays open for the cooldown',
  );
  assert.equal(c.received.length, seen, 'the open circuit kept the request from the upstream');
  const balance_after = (
    await request(`${gateway.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } })
  ).body.balance;
  assert.equal(
    balance_after,
    balance_before,
    'failed requests cost nothing and leave nothing held',
  );
});

async function usageTotals() {
  return (
    await request(`${gateway.url}/v1/balance`, { headers: { authorization: `Bearer ${key}` } })
  ).body;
}

test("the upstream's usage is billed when it gives one, else the tokenizer counts (JSON and streams)", async () => {
  const text = 'Tokenizers split words like unbelievability into several pieces.';
  a.script({ kind: 'ok', content: text });
  const with_usage = (await client.chat.completions.create({
    model: 'service-ai-max',
    messages: hello,
  })) as OpenAI.ChatCompletion & { x_aihub: { completion_tokens: number } };
  assert.equal(
    with_usage.usage!.completion_tokens,
    text.split(' ').length,
    "the scripted upstream's own count (one per word)",
  );
  assert.equal(with_usage.x_aihub.completion_tokens, text.split(' ').length);
  a.script({ kind: 'ok', content: text, usage: false });
  const counted = (await client.chat.completions.create({
    model: 'service-ai-max',
    messages: hello,
  })) as OpenAI.ChatCompletion & { x_aihub: { completion_tokens: number } };
  assert.equal(counted.usage!.completion_tokens, encode(text).length, 'counted with cl100k');
  assert.notEqual(
    encode(text).length,
    text.split(' ').length,
    'the two counts differ, so the test tells them apart',
  );
  a.script({ kind: 'ok', content: text, usage: false, chunks: 5 });
  const stream = await client.chat.completions.create({
    model: 'service-ai-max',
    messages: hello,
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) usage = chunk.usage ?? usage;
  assert.equal(usage!.completion_tokens, encode(text).length);
});

test('a client that disconnects mid-stream aborts the upstream and pays for what was generated', async () => {
  const before_totals = await usageTotals();
  a.script({
    kind: 'ok',
    chunks: 60,
    chunk_delay_ms: 25,
    content: Array.from({ length: 60 }, (_, i) => `word${i}`).join(' '),
  });
  const seen = a.received.length;
  const stream = await client.chat.completions.create({
    model: 'service-ai-max',
    messages: hello,
    stream: true,
    stream_options: { include_usage: true },
  });
  let received = 0;
  // Leaving the loop is how an SDK user stops a reply: the SDK aborts the HTTP request.
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta?.content) received++;
    if (received === 5) break;
  }
  const entry = a.received[seen]!;
  for (let i = 0; i < 100 && !entry.aborted; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(entry.aborted, true, 'the upstream saw its request aborted');
  assert.ok(entry.chunks_sent < 60);
  let after_totals = await usageTotals();
  for (let i = 0; i < 50 && after_totals.usage.requests === before_totals.usage.requests; i++) {
    await new Promise((r) => setTimeout(r, 20));
    after_totals = await usageTotals();
  }
  assert.equal(after_totals.usage.requests, before_totals.usage.requests + 1);
  const completion = after_totals.usage.completion_tokens - before_totals.usage.completion_tokens;
  assert.ok(
    completion >= 5 * 2,
    `billed ${completion} completion tokens for at least 5 chunks received`,
  );
  assert.ok(
    completion < encode(Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ')).length,
    'not for the whole answer',
  );
  assert.ok(after_totals.usage.cost > before_totals.usage.cost);
  assert.equal(
    micros(after_totals.balance) + micros(after_totals.usage.cost),
    CREDIT_MICROS,
    'nothing is left on hold',
  );
});

test('a client that leaves a JSON chat while the upstream works aborts the upstream; nothing stays on hold', async () => {
  const before_totals = await usageTotals();
  a.script({ kind: 'hang' });
  const seen = a.received.length;
  const leaving = new AbortController();
  const pending = client.chat.completions
    .create({ model: 'service-ai-max', messages: hello }, { signal: leaving.signal })
    .then(
      () => null,
      (error: unknown) => error,
    );
  while (a.received.length === seen) await new Promise((r) => setTimeout(r, 10));
  leaving.abort();
  assert.ok(await pending, 'the client saw its own abort');
  const entry = a.received[seen]!;
  for (let i = 0; i < 100 && !entry.aborted; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(entry.aborted, true, 'the upstream saw its request aborted');
  let after_totals = await usageTotals();
  for (let i = 0; i < 50 && after_totals.usage.requests === before_totals.usage.requests; i++) {
    await new Promise((r) => setTimeout(r, 20));
    after_totals = await usageTotals();
  }
  assert.equal(
    after_totals.usage.requests,
    before_totals.usage.requests + 1,
    'the call is on record',
  );
  assert.equal(
    micros(after_totals.balance) + micros(after_totals.usage.cost),
    CREDIT_MICROS,
    'nothing is left on hold',
  );
});

test('an upstream that breaks mid-stream gives an error event; the generated part is billed', async () => {
  const before_totals = await usageTotals();
  a.script({ kind: 'break_stream', chunks: 3 });
  const stream = await client.chat.completions.create({
    model: 'service-ai-max',
    messages: hello,
    stream: true,
  });
  let text = '';
  const error = await (async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  })().catch((e: unknown) => e);
  assert.ok(
    error instanceof OpenAI.APIError,
    `expected the SDK to surface the error event, got ${String(error)}`,
  );
  assert.match(error.message, /upstream/);
  assert.ok(text.length > 0);
  const after_totals = await usageTotals();
  assert.equal(
    after_totals.usage.completion_tokens - before_totals.usage.completion_tokens,
    encode(text).length,
  );
  assert.equal(micros(after_totals.balance) + micros(after_totals.usage.cost), CREDIT_MICROS);
});

const micros = (units: number) => Math.round(units * 1_000_000);
