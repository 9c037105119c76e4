// Failures on every streaming protocol, through the official SDKs, against the real gateway
// process and a scripted upstream that dies mid-stream: each client sees its protocol's own
// error (chat and completions an error chunk, Responses `response.failed`, Messages
// `event: error`), what was delivered is billed exactly once, and the rest of the hold is
// released. With no upstream that can serve, Anthropic's clients get 529 overloaded_error.
// Also here: Messages `stop_sequence`, from the built-in engine and from an upstream, and the
// protocol, cached, reasoning and owed figures in /v1/balance and the ai-usage report.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { refusedPort, ScriptedUpstream } from '../support/scripted-upstream.js';
import { countTextTokens } from '../../gateway/llm/tokens.js';
import { createFundedAccount, request, startGatewayWithChat, type Gateway } from './helpers.js';

let gateway: Gateway;
let upstream: ScriptedUpstream;
let chat_section: Record<string, unknown>;
/** service-ai-max answers from the scripted upstream; service-ai-pro-4 has only a target that refuses connections. */
const MODEL = 'service-ai-max';
const DEAD_MODEL = 'service-ai-pro-4';
// service-ai-max: 1,250 and 5,000 units per million tokens, so 1,000 output tokens hold 5 units.
const MAX_TOKENS = 1_000;
const FUNDS = 8;

before(async () => {
  upstream = await ScriptedUpstream.start();
  chat_section = {
    engines: {
      scripted: {
        type: 'openai-compatible',
        base_url: upstream.base_url,
        api_key_env: 'SCRIPTED_KEY',
        model: 'scripted-model',
      },
      gone: {
        type: 'openai-compatible',
        base_url: `http://127.0.0.1:${await refusedPort()}/v1`,
        model: 'm',
      },
    },
    models: { [MODEL]: { targets: ['scripted'] }, [DEAD_MODEL]: { targets: ['gone'] } },
  };
  gateway = await startGatewayWithChat(chat_section);
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
  await upstream.close();
});

const micros = (units: number) => Math.round(units * 1e6);

async function balanceOf(key: string) {
  const reply = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(reply.status, 200);
  return reply.body;
}

async function aiUsage(key: string, query = '') {
  const reply = await request(`${gateway.url}/api/reports/ai-usage${query}`, {
    headers: { 'x-api-key': key },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body.data;
}

/**
 * The money checks every mid-stream failure must pass: one usage record (status
 * stream_error, the protocol, estimated), billed the tokens of what was delivered, the
 * wallet down by exactly that cost, and the reservation released: a second request that
 * needs most of the wallet again is served.
 */
async function assertBilledOnce(account: { key: string }, protocol: string, delivered: string) {
  assert.ok(delivered.length > 0, 'some text was delivered before the break');
  const balance = await balanceOf(account.key);
  assert.equal(balance.usage.requests, 1);
  assert.equal(balance.usage.by_protocol[protocol].requests, 1);
  const report = await aiUsage(account.key);
  assert.equal(report.total, 1);
  const row = report.rows[0];
  assert.equal(row.protocol, protocol);
  assert.equal(row.status, 'stream_error');
  assert.equal(row.usage, 'estimated');
  assert.equal(row.completion_tokens, countTextTokens(delivered), 'the delivered text, counted');
  assert.equal(
    micros(row.cost),
    Math.ceil(
      (row.prompt_tokens * 1_250_000_000 + row.completion_tokens * 5_000_000_000) / 1_000_000,
    ),
  );
  assert.equal(micros(balance.balance), micros(FUNDS) - micros(row.cost));
  assert.equal(micros(balance.usage.cost), micros(row.cost));
  // The hold of the broken request (5 units of 8) is released: another one of the same size fits.
  upstream.script({ kind: 'ok', content: 'fine' });
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: account.key, maxRetries: 0 });
  const next = await client.chat.completions.create({
    model: MODEL,
    max_tokens: MAX_TOKENS,
    messages: [{ role: 'user', content: 'again' }],
  });
  assert.equal(next.choices[0]!.message.content, 'fine');
}

test('chat completions: an upstream that dies mid-stream gives an error chunk; the delivered part is billed once, the rest released', async () => {
  const account = await createFundedAccount(gateway, FUNDS);
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: account.key, maxRetries: 0 });
  upstream.script({ kind: 'break_stream', chunks: 3 });
  const stream = await client.chat.completions.create({
    model: MODEL,
    max_tokens: MAX_TOKENS,
    stream: true,
    messages: [{ role: 'user', content: 'hello' }],
  });
  let delivered = '';
  await assert.rejects(
    (async () => {
      for await (const chunk of stream) delivered += chunk.choices[0]?.delta.content ?? '';
    })(),
    (error: unknown) =>
      error instanceof OpenAI.APIError &&
      (error.error as { code?: string }).code === 'upstream_error',
  );
  await assertBilledOnce(account, 'chat', delivered);
});

test('completions: a stream that dies mid-way gives an error chunk; billed once, the rest released', async () => {
  const account = await createFundedAccount(gateway, FUNDS);
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: account.key, maxRetries: 0 });
  upstream.script({ kind: 'break_stream', chunks: 3 });
  const stream = await client.completions.create({
    model: MODEL,
    max_tokens: MAX_TOKENS,
    stream: true,
    prompt: 'Once upon a time',
  });
  let delivered = '';
  await assert.rejects(
    (async () => {
      for await (const chunk of stream) delivered += chunk.choices[0]?.text ?? '';
    })(),
    OpenAI.APIError,
  );
  await assertBilledOnce(account, 'completions', delivered);
});

test('responses.stream(): a mid-stream failure ends in response.failed with the error and the bill; billed once, the rest released', async () => {
  const account = await createFundedAccount(gateway, FUNDS);
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: account.key, maxRetries: 0 });
  upstream.script({ kind: 'break_stream', chunks: 3 });
  const stream = client.responses.stream({
    model: MODEL,
    max_output_tokens: MAX_TOKENS,
    input: 'hello',
  });
  let delivered = '';
  const types: string[] = [];
  stream.on('response.output_text.delta', (event) => (delivered += event.delta));
  for await (const event of stream) types.push(event.type);
  const final = await stream.finalResponse();
  assert.equal(types.at(-1), 'response.failed');
  assert.ok(!types.includes('response.completed'));
  assert.equal(final.status, 'failed');
  assert.equal(final.error?.code, 'upstream_error');
  const bill = (final as unknown as { x_aihub: { cost: number; usage: string } }).x_aihub;
  assert.equal(bill.usage, 'estimated');
  await assertBilledOnce(account, 'responses', delivered);
  assert.equal(
    micros((await aiUsage(account.key, '?protocol=responses')).rows[0].cost),
    micros(bill.cost),
  );
});

test('messages.stream: a mid-stream failure is an `event: error` the SDK raises; billed once, the rest released', async () => {
  const account = await createFundedAccount(gateway, FUNDS);
  const client = new Anthropic({ baseURL: gateway.url, apiKey: account.key, maxRetries: 0 });
  upstream.script({ kind: 'break_stream', chunks: 3 });
  const stream = client.messages.stream({
    model: MODEL,
    max_tokens: MAX_TOKENS,
    messages: [{ role: 'user', content: 'hello' }],
  });
  let delivered = '';
  stream.on('text', (text) => (delivered += text));
  await assert.rejects(stream.finalMessage(), (error: unknown) => {
    assert.ok(error instanceof Anthropic.APIError, String(error));
    assert.equal((error.error as { error?: { type?: string } }).error?.type, 'api_error');
    return true;
  });
  await assertBilledOnce(account, 'messages', delivered);
});

test('messages: no upstream that can serve is 529 overloaded_error, JSON and streamed, and costs nothing', async () => {
  const account = await createFundedAccount(gateway, FUNDS);
  const client = new Anthropic({ baseURL: gateway.url, apiKey: account.key, maxRetries: 0 });
  // The only target is saturated (429): no upstream can serve the request.
  upstream.script(
    { kind: 'status', status: 429 },
    { kind: 'status', status: 429 },
    { kind: 'status', status: 429 },
  );
  await assert.rejects(
    client.messages.create({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    }),
    (error: unknown) => {
      assert.ok(error instanceof Anthropic.APIError, String(error));
      assert.equal(error.status, 529);
      assert.equal(error.type, 'overloaded_error');
      return true;
    },
  );
  await assert.rejects(
    client.messages
      .stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage(),
    (error: unknown) => error instanceof Anthropic.APIError && error.status === 529,
  );
  const raw = await request(`${gateway.url}/v1/messages`, {
    headers: { 'x-api-key': account.key },
    body: { model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(raw.status, 529);
  assert.deepEqual(Object.keys(raw.body).sort(), ['error', 'type']);
  assert.equal(raw.body.type, 'error');
  assert.equal(raw.body.error.type, 'overloaded_error');
  // An unreachable target is an upstream failure (502), in Anthropic's shape as api_error; the OpenAI protocols keep their own statuses.
  await assert.rejects(
    client.messages.create({
      model: DEAD_MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    }),
    (error: unknown) => error instanceof Anthropic.InternalServerError && error.status === 502,
  );
  upstream.script({ kind: 'status', status: 429 });
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: account.key, maxRetries: 0 });
  await assert.rejects(
    openai.responses.create({ model: MODEL, max_output_tokens: 100, input: 'hi' }),
    (error: unknown) => error instanceof OpenAI.APIError && error.status === 503,
  );
  const balance = await balanceOf(account.key);
  assert.equal(micros(balance.balance), micros(FUNDS));
  assert.equal(balance.usage.cost, 0);
});

test('messages: stop_sequence names the matched stop sequence (built-in engine), JSON and streamed', async () => {
  const account = await createFundedAccount(gateway, FUNDS);
  const client = new Anthropic({ baseURL: gateway.url, apiKey: account.key, maxRetries: 0 });
  const plain = await client.messages.create({
    model: 'service-ai-lite',
    max_tokens: 200,
    messages: [{ role: 'user', content: 'Hello! What can you do?' }],
  });
  const full = (plain.content[0] as Anthropic.TextBlock).text;
  assert.equal(plain.stop_reason, 'end_turn');
  assert.equal(plain.stop_sequence, null);
  assert.match(full, /offline engine/);
  const stops = ['never appears here', 'offline engine'];
  const stopped = await client.messages.create({
    model: 'service-ai-lite',
    max_tokens: 200,
    stop_sequences: stops,
    messages: [{ role: 'user', content: 'Hello! What can you do?' }],
  });
  assert.equal(stopped.stop_reason, 'stop_sequence');
  assert.equal(stopped.stop_sequence, 'offline engine');
  assert.equal(
    (stopped.content[0] as Anthropic.TextBlock).text,
    full.slice(0, full.indexOf('offline engine')),
  );
  const streamed = await client.messages
    .stream({
      model: 'service-ai-lite',
      max_tokens: 200,
      stop_sequences: stops,
      messages: [{ role: 'user', content: 'Hello! What can you do?' }],
    })
    .finalMessage();
  assert.equal(streamed.stop_reason, 'stop_sequence');
  assert.equal(streamed.stop_sequence, 'offline engine');
});

test("messages: an upstream's stop_reason (vLLM's field) becomes stop_sequence, JSON and streamed; a stop it did not name stays null", async () => {
  const account = await createFundedAccount(gateway, FUNDS);
  const client = new Anthropic({ baseURL: gateway.url, apiKey: account.key, maxRetries: 0 });
  const stop_sequences = ['\n\nHuman:', 'END'];
  upstream.script({
    kind: 'exact',
    completion: {
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Done' },
          finish_reason: 'stop',
          stop_reason: 'END',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 1 },
    },
  });
  const json = await client.messages.create({
    model: MODEL,
    max_tokens: 50,
    stop_sequences,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.deepEqual(upstream.received.at(-1)!.body.stop, stop_sequences);
  assert.equal(json.stop_reason, 'stop_sequence');
  assert.equal(json.stop_sequence, 'END');
  upstream.script({
    kind: 'exact',
    chunks: [
      {
        choices: [{ index: 0, delta: { role: 'assistant', content: 'Done' }, finish_reason: null }],
      },
      { choices: [{ index: 0, delta: {}, finish_reason: 'stop', stop_reason: '\n\nHuman:' }] },
      { choices: [], usage: { prompt_tokens: 10, completion_tokens: 1 } },
    ],
  });
  const streamed = await client.messages
    .stream({
      model: MODEL,
      max_tokens: 50,
      stop_sequences,
      messages: [{ role: 'user', content: 'hi' }],
    })
    .finalMessage();
  assert.equal(streamed.stop_reason, 'stop_sequence');
  assert.equal(streamed.stop_sequence, '\n\nHuman:');
  // A stop_reason that is not one of the request's sequences (a token id, an EOS string) is not a stop sequence.
  upstream.script({
    kind: 'exact',
    completion: {
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Done' },
          finish_reason: 'stop',
          stop_reason: 128001,
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 1 },
    },
  });
  const eos = await client.messages.create({
    model: MODEL,
    max_tokens: 50,
    stop_sequences,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(eos.stop_reason, 'end_turn');
  assert.equal(eos.stop_sequence, null);
});

test('/v1/balance and the ai-usage report show each request with its protocol, cached, reasoning and owed figures; CSV the same', async () => {
  const account = await createFundedAccount(gateway, 500);
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: account.key, maxRetries: 0 });
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: account.key, maxRetries: 0 });
  upstream.script({
    kind: 'ok',
    content: 'one two three',
    usage: {
      prompt_tokens: 40,
      completion_tokens: 3,
      prompt_tokens_details: { cached_tokens: 30 },
      completion_tokens_details: { reasoning_tokens: 2 },
    },
  });
  await openai.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
  });
  upstream.script({
    kind: 'ok',
    content: 'four five',
    usage: {
      prompt_tokens: 20,
      completion_tokens: 2,
      prompt_tokens_details: { cached_tokens: 10 },
    },
  });
  await openai.responses.create({ model: MODEL, max_output_tokens: 100, input: 'hi' });
  upstream.script({
    kind: 'ok',
    content: 'six',
    usage: { prompt_tokens: 12, completion_tokens: 1 },
  });
  await anthropic.messages.create({
    model: MODEL,
    max_tokens: 50,
    messages: [{ role: 'user', content: 'hi' }],
  });
  await openai.embeddings.create({
    model: 'service-ai-lite',
    input: 'hello world',
    encoding_format: 'float',
  });

  const balance = await balanceOf(account.key);
  assert.equal(balance.usage.requests, 4);
  assert.equal(balance.usage.cached_tokens, 40);
  assert.equal(balance.usage.reasoning_tokens, 2);
  const by = balance.usage.by_protocol;
  assert.deepEqual(Object.keys(by), [
    'chat',
    'responses',
    'messages',
    'gemini',
    'embeddings',
    'completions',
  ]);
  assert.deepEqual(
    [
      by.chat.requests,
      by.chat.prompt_tokens,
      by.chat.cached_tokens,
      by.chat.completion_tokens,
      by.chat.reasoning_tokens,
    ],
    [1, 40, 30, 3, 2],
  );
  assert.deepEqual([by.responses.requests, by.responses.cached_tokens], [1, 10]);
  assert.deepEqual(
    [by.messages.requests, by.messages.prompt_tokens, by.messages.completion_tokens],
    [1, 12, 1],
  );
  assert.equal(by.embeddings.requests, 1);
  assert.equal(by.completions.requests, 0);
  const sum = (Object.values(by) as Array<{ cost: number }>).reduce(
    (total, p) => total + micros(p.cost),
    0,
  );
  assert.equal(sum, micros(balance.usage.cost));

  const report = await aiUsage(account.key, '?order=asc');
  assert.equal(report.total, 4);
  assert.deepEqual(
    report.rows.map((row: { protocol: string }) => row.protocol),
    ['chat', 'responses', 'messages', 'embeddings'],
  );
  const chat = report.rows[0];
  assert.deepEqual(
    [
      chat.prompt_tokens,
      chat.cached_tokens,
      chat.completion_tokens,
      chat.reasoning_tokens,
      chat.usage,
      chat.status,
      chat.target,
      chat.owed,
    ],
    [40, 30, 3, 2, 'reported', 'ok', 'scripted', 0],
  );
  // Cached prompt tokens at a tenth of the input price: 10 × 1,250 + 30 × 125 + 3 × 5,000 units per million.
  assert.equal(
    micros(chat.cost),
    Math.ceil((10 * 1_250_000_000 + 30 * 125_000_000 + 3 * 5_000_000_000) / 1_000_000),
  );
  assert.equal(micros(report.totals.cost), micros(balance.usage.cost));
  const only = await aiUsage(account.key, '?protocol=messages');
  assert.equal(only.total, 1);
  assert.equal(only.rows[0].protocol, 'messages');

  const csv = await fetch(`${gateway.url}/api/reports/ai-usage?format=csv&order=asc`, {
    headers: { 'x-api-key': account.key },
  });
  assert.equal(csv.status, 200);
  const lines = (await csv.text()).trim().split('\r\n');
  const header = lines[0]!.split(',');
  assert.deepEqual(header, [
    'request_id',
    'ts',
    'key_id',
    'model',
    'tier',
    'protocol',
    'target',
    'status',
    'stream',
    'usage',
    'prompt_tokens',
    'cached_tokens',
    'completion_tokens',
    'reasoning_tokens',
    'cost',
    'owed',
    'latency_ms',
  ]);
  assert.equal(lines.length, 5);
  const first = Object.fromEntries(lines[1]!.split(',').map((cell, i) => [header[i], cell]));
  assert.deepEqual(
    [first.protocol, first.cached_tokens, first.reasoning_tokens, first.owed, first.cost],
    ['chat', '30', '2', '0', String(chat.cost)],
  );

  const wrong = await request(`${gateway.url}/api/reports/ai-usage?protocol=smoke`, {
    headers: { 'x-api-key': account.key },
  });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body.error.field, 'protocol');
  // Every protocol the chat room names is a filter, Gemini's too (none of its requests here).
  assert.equal((await aiUsage(account.key, '?protocol=gemini')).total, 0);
  const misplaced = await request(`${gateway.url}/api/reports/transactions?protocol=chat`, {
    headers: { 'x-api-key': account.key },
  });
  assert.equal(misplaced.status, 400);
  // The admin's report names the account on each row; it is kept per account, so one must be named.
  const admin = { authorization: `Bearer ${gateway.admin_token}` };
  const of_account = await request(
    `${gateway.url}/admin/reports/ai-usage?account_id=${account.account_id}&protocol=responses`,
    { headers: admin },
  );
  assert.equal(of_account.status, 200);
  assert.equal(of_account.body.total, 1);
  assert.equal(of_account.body.rows[0].account_id, account.account_id);
  assert.equal(of_account.body.rows[0].cached_tokens, 10);
  const everyone = await request(`${gateway.url}/admin/reports/ai-usage`, { headers: admin });
  assert.equal(everyone.status, 400);
  assert.equal(everyone.body.error.param, 'account_id');
});

test('an overrun beyond the wallet shows as owed in the ai-usage report', async () => {
  // 1 unit holds about 10 prompt and 100 output tokens of the max tier; the upstream reports
  // 100,000 prompt tokens (output beyond the hold is never billed, a prompt is billed in full).
  const account = await createFundedAccount(gateway, 1);
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: account.key, maxRetries: 0 });
  upstream.script({
    kind: 'ok',
    content: 'long',
    usage: { prompt_tokens: 100_000, completion_tokens: 10 },
  });
  const answer = (await openai.chat.completions.create({
    model: MODEL,
    max_tokens: 100,
    messages: [{ role: 'user', content: 'hi' }],
  })) as unknown as { x_aihub: { cost: number; receivable: number } };
  assert.ok(answer.x_aihub.receivable > 0, JSON.stringify(answer.x_aihub));
  const row = (await aiUsage(account.key)).rows[0];
  assert.equal(micros(row.owed), micros(answer.x_aihub.receivable));
  assert.equal(micros(row.cost), micros(answer.x_aihub.cost));
  const balance = await balanceOf(account.key);
  assert.equal(micros(balance.owed), micros(row.owed));
  assert.equal(balance.balance, 0);
});

test('the per-protocol totals survive a restart (checkpoint and journal replay)', async () => {
  const account = await createFundedAccount(gateway, FUNDS);
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: account.key, maxRetries: 0 });
  await anthropic.messages.create({
    model: 'service-ai-lite',
    max_tokens: 50,
    messages: [{ role: 'user', content: 'hi' }],
  });
  const before_restart = await balanceOf(account.key);
  assert.equal(before_restart.usage.by_protocol.messages.requests, 1);
  assert.equal(await gateway.stop(), 0);
  gateway = await startGatewayWithChat(chat_section, { data_dir: gateway.data_dir });
  const after_restart = await balanceOf(account.key);
  assert.deepEqual(after_restart.usage, before_restart.usage);
  assert.equal(after_restart.balance, before_restart.balance);
});
