// The chat metrics (aihub_chat_*) at GET /metrics, through the real gateway: a failover, a
// success, a stream and an opened circuit, then exact counter values from one scrape.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { ScriptedUpstream } from '../support/scripted-upstream.js';
import { createFundedAccount, request, startGateway, tempDir, type Gateway } from './helpers.js';

let a: ScriptedUpstream;
let b: ScriptedUpstream;
let c: ScriptedUpstream;
let gateway: Gateway;
let client: OpenAI;
const hello: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello' }];

interface XAihub {
  cost: number;
  prompt_tokens: number;
  completion_tokens: number;
}

before(async () => {
  a = await ScriptedUpstream.start({ kind: 'ok', content: 'answer from A' });
  b = await ScriptedUpstream.start({ kind: 'ok', content: 'answer from B, a little longer' });
  c = await ScriptedUpstream.start({ kind: 'status', status: 500 });
  const engine = (upstream: ScriptedUpstream) => ({
    type: 'openai-compatible',
    base_url: upstream.base_url,
    model: 'upstream-model',
    api_key_env: 'SCRIPTED_KEY',
    timeout_ms: 2_000,
  });
  const dir = tempDir('aihub-chat-metrics-');
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      chat: {
        engines: { a_first: engine(a), b_second: engine(b), c_only: engine(c) },
        models: {
          'service-ai-standard-6': { targets: ['a_first', 'b_second'] },
          'service-ai-pro-4': { targets: ['c_only'] },
        },
        breaker: { failure_threshold: 2, cooldown_ms: 600_000 },
      },
    }),
  );
  gateway = await startGateway({
    args: ['--config', config],
    env: { SCRIPTED_KEY: 'sk-scripted' },
  });
  const { key } = await createFundedAccount(gateway, 500);
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
});

after(async () => {
  assert.equal(await gateway.stop(), 0);
  await Promise.all([a.close(), b.close(), c.close()]);
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the Prometheus text format (enough of it for prom-client's output). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of match[2]?.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g) ?? [])
      labels[name!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

function series(samples: Sample[], name: string): Sample[] {
  return samples.filter((s) => s.name === name);
}

/** The value of the one series with exactly these labels. */
function value(samples: Sample[], name: string, labels: Record<string, string>): number {
  const found = series(samples, name).filter(
    (s) =>
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  assert.equal(found.length, 1, `${name}${JSON.stringify(labels)}: ${found.length} series`);
  return found[0]!.value;
}

const sum = (samples: Sample[]) => samples.reduce((total, s) => total + s.value, 0);
const micros = (units: number) => Math.round(units * 1_000_000);

test('chat metrics count attempts, settled requests, tokens and cost exactly; the breaker gauge reads the open circuit', async () => {
  const billed: XAihub[] = [];

  // 1. A 500 from the first target fails over to the second.
  a.script({ kind: 'status', status: 500 });
  const failover = (await client.chat.completions.create({
    model: 'service-ai-standard-6',
    messages: hello,
  })) as OpenAI.ChatCompletion & { x_aihub: XAihub };
  assert.equal(failover.choices[0]!.message.content, 'answer from B, a little longer');
  billed.push(failover.x_aihub);

  // 2. A success on the first target.
  const plain = (await client.chat.completions.create({
    model: 'service-ai-standard-6',
    messages: hello,
  })) as OpenAI.ChatCompletion & { x_aihub: XAihub };
  assert.equal(plain.choices[0]!.message.content, 'answer from A');
  billed.push(plain.x_aihub);

  // 3. A stream on the first target; x_aihub rides on the usage chunk.
  const stream = await client.chat.completions.create({
    model: 'service-ai-standard-6',
    messages: hello,
    stream: true,
    stream_options: { include_usage: true },
  });
  let streamed: XAihub | undefined;
  for await (const chunk of stream) streamed = (chunk as { x_aihub?: XAihub }).x_aihub ?? streamed;
  assert.ok(streamed, 'the stream carried x_aihub');
  billed.push(streamed);

  // 4. Two 500s open c_only's circuit (threshold 2); the third request does not reach it.
  for (const expected of [502, 502, 503]) {
    const error = await client.chat.completions
      .create({ model: 'service-ai-pro-4', messages: hello })
      .catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, expected);
  }
  assert.equal(c.received.length, 2, 'the open circuit kept the third request from the upstream');

  const scrape = await request<string>(`${gateway.url}/metrics`);
  assert.equal(scrape.status, 200);
  assert.match(scrape.headers.get('content-type') ?? '', /^text\/plain/);
  const samples = parse(scrape.body);

  const attempts = 'aihub_chat_upstream_attempts_total';
  assert.equal(value(samples, attempts, { target: 'a_first', outcome: 'server' }), 1);
  assert.equal(value(samples, attempts, { target: 'a_first', outcome: 'ok' }), 2);
  assert.equal(value(samples, attempts, { target: 'b_second', outcome: 'ok' }), 1);
  assert.equal(value(samples, attempts, { target: 'c_only', outcome: 'server' }), 2);
  assert.equal(value(samples, attempts, { target: 'c_only', outcome: 'circuit_open' }), 1);
  assert.equal(
    value(samples, attempts, { target: 'a_first', outcome: 'timeout' }),
    0,
    'known series exist from the start, at 0',
  );
  assert.equal(sum(series(samples, attempts)), 7, 'no other attempts');

  const requests = 'aihub_chat_requests_total';
  assert.equal(
    value(samples, requests, { model: 'service-ai-standard-6', status: 'ok', stream: 'false' }),
    2,
  );
  assert.equal(
    value(samples, requests, { model: 'service-ai-standard-6', status: 'ok', stream: 'true' }),
    1,
  );
  assert.equal(
    value(samples, requests, {
      model: 'service-ai-pro-4',
      status: 'upstream_error',
      stream: 'false',
    }),
    3,
  );
  assert.equal(sum(series(samples, requests)), 6, 'no other requests');

  const tokens = 'aihub_chat_tokens_total';
  const prompt = billed.reduce((total, x) => total + x.prompt_tokens, 0);
  const completion = billed.reduce((total, x) => total + x.completion_tokens, 0);
  assert.ok(prompt > 0 && completion > 0);
  assert.equal(value(samples, tokens, { model: 'service-ai-standard-6', kind: 'prompt' }), prompt);
  assert.equal(
    value(samples, tokens, { model: 'service-ai-standard-6', kind: 'completion' }),
    completion,
  );
  assert.equal(sum(series(samples, tokens)), prompt + completion, 'failed requests used no tokens');

  const cost = 'aihub_chat_cost_micros_total';
  const cost_micros = billed.reduce((total, x) => total + micros(x.cost), 0);
  assert.ok(cost_micros > 0);
  assert.equal(value(samples, cost, { model: 'service-ai-standard-6' }), cost_micros);
  assert.equal(sum(series(samples, cost)), cost_micros, 'failed requests cost nothing');

  const latency = 'aihub_chat_upstream_latency_seconds';
  assert.equal(
    value(samples, `${latency}_count`, { target: 'a_first' }),
    2,
    'successful calls only',
  );
  assert.equal(value(samples, `${latency}_count`, { target: 'b_second' }), 1);
  assert.equal(value(samples, `${latency}_count`, { target: 'c_only' }), 0);
  assert.ok(value(samples, `${latency}_sum`, { target: 'a_first' }) > 0);
  assert.equal(value(samples, `${latency}_bucket`, { target: 'a_first', le: '+Inf' }), 2);
  assert.equal(
    value(samples, `${latency}_bucket`, { target: 'a_first', le: '60' }),
    2,
    'the top bucket is 60 s',
  );

  const breaker = 'aihub_chat_breaker_state';
  assert.equal(value(samples, breaker, { target: 'c_only' }), 2, 'open');
  assert.equal(value(samples, breaker, { target: 'a_first' }), 0, 'closed');
  assert.equal(value(samples, breaker, { target: 'b_second' }), 0);

  // Counters keep counting across scrapes (each scrape hands over only what is new).
  await client.chat.completions.create({ model: 'service-ai-standard-6', messages: hello });
  const again = parse((await request<string>(`${gateway.url}/metrics`)).body);
  assert.equal(value(again, attempts, { target: 'a_first', outcome: 'ok' }), 3);
  assert.equal(
    value(again, requests, { model: 'service-ai-standard-6', status: 'ok', stream: 'false' }),
    3,
  );
  assert.equal(value(again, attempts, { target: 'c_only', outcome: 'server' }), 2);
});
