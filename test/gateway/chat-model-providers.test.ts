// Model providers added with the real `aihub-gateway providers add` (the CLI writes the
// config file), then served by the real gateway process: chat completions to an OpenAI
// target, Anthropic's Messages and Google's Gemini API passed through to native targets
// (scripted OpenAI-, Anthropic- and Gemini-compatible upstreams on loopback), each answer
// billed at the model catalogue's price converted at the configured exchange rate, the wallet
// moving by exactly that; a model the catalogue lacks answers unpriced.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { ScriptedUpstream } from '../support/scripted-upstream.js';
import {
  createFundedAccount,
  request,
  runCli,
  startGateway,
  tempDir,
  type Gateway,
} from './helpers.js';

/** Read straight from the data file, so that the test follows a catalogue refresh. */
const CATALOGUE = JSON.parse(
  readFileSync(new URL('../../gateway/catalogue/litellm-prices.json', import.meta.url), 'utf8'),
) as { models: Record<string, Record<string, Record<string, string>>> };
const RATE = '84.5';

/**
 * The expected cost in micro-units, worked out here independently of the gateway's code: US
 * dollars per million tokens (decimal text) × 84.5 is (digits × 845) / 10^(decimals + 1) rupees
 * per million tokens; tokens × that / 10^6, in micro-units, rounded up once at the end.
 */
function expectedMicros(provider: string, model: string, tokens: Record<string, number>): number {
  const prices = CATALOGUE.models[provider]![model]!;
  let numerator = 0n; // rupees × 10^6 (micro-units) × 10^6 (per million) × 10^SCALE
  const SCALE = 12;
  for (const [field, count] of Object.entries(tokens)) {
    const [whole, fraction = ''] = prices[field]!.split('.');
    const per_million = BigInt(whole! + fraction) * 10n ** BigInt(SCALE - fraction.length);
    numerator += BigInt(count) * per_million * 845n * 1_000_000n;
  }
  const denominator = 10n ** BigInt(SCALE + 1) * 1_000_000n;
  return Number((numerator + denominator - 1n) / denominator);
}

let openaiUp: ScriptedUpstream;
let anthropicUp: ScriptedUpstream;
let geminiUp: ScriptedUpstream;
let customUp: ScriptedUpstream;
let gateway: Gateway;
let key: string;
let config_file: string;
const KEYS = {
  OPENAI_TEST_KEY: 'sk-openai-test',
  ANTHROPIC_TEST_KEY: 'sk-ant-test',
  GEMINI_TEST_KEY: 'gemini-test-key',
};

async function cli(...args: string[]) {
  return runCli(['providers', ...args, '--config', config_file]);
}

async function balanceMicros(): Promise<number> {
  const reply = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(reply.status, 200);
  return Math.round((reply.body.balance as number) * 1_000_000);
}

before(async () => {
  [openaiUp, anthropicUp, geminiUp, customUp] = await Promise.all([
    ScriptedUpstream.start(),
    ScriptedUpstream.start(),
    ScriptedUpstream.start(),
    ScriptedUpstream.start(),
  ]);
  config_file = join(tempDir('aihub-providers-'), 'config.json');
  const adds = [
    ['openai', '--base-url', openaiUp.base_url, '--key-env', 'OPENAI_TEST_KEY'],
    ['--model', 'lite=gpt-4o-mini', '--exchange-rate', RATE],
    ['anthropic', '--base-url', anthropicUp.base_url, '--key-env', 'ANTHROPIC_TEST_KEY'],
    ['--model', 'pro=claude-sonnet-4-5'],
    ['gemini', '--base-url', `http://127.0.0.1:${geminiUp.port}/v1beta/openai`],
    ['--key-env', 'GEMINI_TEST_KEY', '--model', 'standard=gemini-2.5-flash'],
    ['openai-compatible', '--name', 'house', '--base-url', customUp.base_url],
    ['--model', 'max=house-model-7b'],
  ];
  for (let i = 0; i < adds.length; i += 2) {
    const added = await cli('add', ...adds[i]!, ...adds[i + 1]!);
    assert.equal(added.code, 0, added.stderr);
  }
  gateway = await startGateway({ args: ['--config', config_file], env: KEYS });
  ({ key } = await createFundedAccount(gateway, 5000));
});
after(async () => {
  if (gateway) assert.equal(await gateway.stop(), 0);
  await Promise.all([openaiUp, anthropicUp, geminiUp, customUp].map((up) => up?.close()));
});

test('the config file names each key by its environment variable and holds no key', () => {
  const text = readFileSync(config_file, 'utf8');
  for (const value of Object.values(KEYS)) assert.ok(!text.includes(value));
  const config = JSON.parse(text);
  assert.equal(config.chat.pricing.exchange_rate, 84.5);
  assert.deepEqual(
    config.chat.providers.chain.map((p: any) => p.name),
    ['openai', 'anthropic', 'gemini', 'house'],
  );
  const engines = config.chat.engines;
  assert.equal(engines['anthropic-claude-sonnet-4-5'].api_key_env, 'ANTHROPIC_TEST_KEY');
  assert.deepEqual(engines['anthropic-claude-sonnet-4-5'].protocols, ['messages']);
  assert.deepEqual(engines['gemini-gemini-2.5-flash'].protocols, ['gemini']);
  assert.deepEqual(config.chat.models['service-ai-pro-4'].targets, ['anthropic-claude-sonnet-4-5']);
  assert.deepEqual(config.chat.models['service-ai-pro-4'].target_prices, {
    'anthropic-claude-sonnet-4-5': {
      catalogue: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
    },
  });
});

test('chat completions to the OpenAI target: billed at the catalogue price in rupees, exactly', async () => {
  openaiUp.script({
    kind: 'exact',
    completion: {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-4o-mini',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'Hi.' }, finish_reason: 'stop' },
      ],
      usage: {
        prompt_tokens: 12_000,
        completion_tokens: 3_000,
        total_tokens: 15_000,
        prompt_tokens_details: { cached_tokens: 4_000 },
      },
    },
  });
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  const before_micros = await balanceMicros();
  const answer = (await openai.chat.completions.create({
    model: 'service-ai-lite',
    messages: [{ role: 'user', content: 'Hello' }],
  })) as OpenAI.ChatCompletion & { x_aihub: { cost: number; target: string } };
  const sent = openaiUp.received.at(-1)!;
  assert.equal(sent.url, '/v1/chat/completions');
  assert.equal(sent.body.model, 'gpt-4o-mini');
  assert.equal(sent.headers.authorization, `Bearer ${KEYS.OPENAI_TEST_KEY}`);
  const cost = expectedMicros('openai', 'gpt-4o-mini', {
    input: 8_000,
    cached_input: 4_000,
    output: 3_000,
  });
  assert.equal(answer.x_aihub.target, 'openai-gpt-4o-mini');
  assert.equal(Math.round(answer.x_aihub.cost * 1_000_000), cost);
  assert.equal(before_micros - (await balanceMicros()), cost);
});

test('Messages pass through to the Anthropic target as sent (cache_control kept), billed at its catalogue price, cache writes and reads apart', async () => {
  anthropicUp.script({
    kind: 'exact',
    completion: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'Hello from Claude.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: 2_000,
        cache_read_input_tokens: 10_000,
        cache_creation_input_tokens: 3_000,
        output_tokens: 700,
      },
    },
  });
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
  const before_micros = await balanceMicros();
  const { data: answer, response } = await anthropic.messages
    .create({
      model: 'service-ai-pro-4',
      max_tokens: 1_000,
      system: [
        { type: 'text', text: 'A long system prompt.', cache_control: { type: 'ephemeral' } },
      ],
      messages: [{ role: 'user', content: 'Hello' }],
    })
    .withResponse();
  const sent = anthropicUp.received.at(-1)!;
  assert.equal(sent.url, '/v1/messages');
  assert.equal(sent.headers['x-api-key'], KEYS.ANTHROPIC_TEST_KEY);
  assert.equal(sent.headers['anthropic-version'], '2023-06-01');
  assert.equal(sent.body.model, 'claude-sonnet-4-5');
  assert.deepEqual(sent.body.system[0].cache_control, { type: 'ephemeral' });
  assert.equal(answer.model, 'service-ai-pro-4');
  assert.deepEqual(answer.content, [{ type: 'text', text: 'Hello from Claude.' }]);
  // Cache writes at Anthropic's cache-write price (1.25 times input), reads at the cached price.
  const cost = expectedMicros('anthropic', 'claude-sonnet-4-5', {
    input: 2_000,
    cached_input: 10_000,
    cache_write: 3_000,
    output: 700,
  });
  assert.equal(Math.round(Number(response.headers.get('x-aihub-cost')) * 1_000_000), cost);
  assert.equal(before_micros - (await balanceMicros()), cost);
});

test('a streamed Messages request (as Claude Code sends) passes through too; the last delta carries the catalogue-priced bill', async () => {
  const usage_start = {
    input_tokens: 1_500,
    cache_read_input_tokens: 20_000,
    cache_creation_input_tokens: 800,
    output_tokens: 1,
  };
  anthropicUp.script({
    kind: 'exact',
    chunks: [
      {
        type: 'message_start',
        message: {
          id: 'msg_2',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: usage_start,
        },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Streamed ' } },
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: 'from Claude.' },
      },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 450 },
      },
      { type: 'message_stop' },
    ],
  });
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
  const before_micros = await balanceMicros();
  const stream = anthropic.messages.stream({
    model: 'service-ai-pro-4',
    max_tokens: 1_000,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  let bill: { cost: number; target: string } | undefined;
  stream.on('streamEvent', (event) => {
    if (event.type === 'message_delta') bill = (event as any).x_aihub;
  });
  const final = await stream.finalMessage();
  assert.equal(anthropicUp.received.at(-1)!.body.stream, true);
  assert.equal((final.content[0] as Anthropic.TextBlock).text, 'Streamed from Claude.');
  const cost = expectedMicros('anthropic', 'claude-sonnet-4-5', {
    input: 1_500,
    cached_input: 20_000,
    cache_write: 800,
    output: 450,
  });
  assert.equal(bill?.target, 'anthropic-claude-sonnet-4-5');
  assert.equal(Math.round(bill!.cost * 1_000_000), cost);
  assert.equal(before_micros - (await balanceMicros()), cost);
});

test('the Gemini API passes through to the Gemini target (thinking tokens billed), at its catalogue price', async () => {
  geminiUp.script({
    kind: 'exact',
    completion: {
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'Hello from Gemini.' }] },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      usageMetadata: {
        promptTokenCount: 5_000,
        candidatesTokenCount: 400,
        thoughtsTokenCount: 900,
        totalTokenCount: 6_300,
      },
      modelVersion: 'gemini-2.5-flash',
    },
  });
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway.url } });
  const before_micros = await balanceMicros();
  const answer = (await ai.models.generateContent({
    model: 'service-ai-standard-6',
    contents: 'Hello',
    config: { thinkingConfig: { thinkingBudget: 1024 } },
  })) as unknown as { text: string; modelVersion: string };
  const sent = geminiUp.received.at(-1)!;
  assert.equal(sent.url, '/v1beta/models/gemini-2.5-flash:generateContent');
  assert.equal(sent.headers['x-goog-api-key'], KEYS.GEMINI_TEST_KEY);
  assert.equal(sent.headers.authorization, undefined);
  assert.deepEqual(sent.body.generationConfig.thinkingConfig, { thinkingBudget: 1024 });
  assert.equal(answer.text, 'Hello from Gemini.');
  assert.equal(answer.modelVersion, 'service-ai-standard-6');
  const cost = expectedMicros('gemini', 'gemini-2.5-flash', {
    input: 5_000,
    output: 400,
    reasoning: 900,
  });
  assert.equal(before_micros - (await balanceMicros()), cost);
});

test('a model missing from the catalogue answers with x_aihub.unpriced and costs nothing', async () => {
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  const before_micros = await balanceMicros();
  const { data, response } = await openai.chat.completions
    .create({ model: 'service-ai-max', messages: [{ role: 'user', content: 'Hello' }] })
    .withResponse();
  const answer = data as OpenAI.ChatCompletion & { x_aihub: { cost: number; unpriced?: boolean } };
  assert.equal(response.headers.get('x-aihub-unpriced'), 'true');
  assert.equal(customUp.received.at(-1)!.body.model, 'house-model-7b');
  assert.equal(answer.x_aihub.unpriced, true);
  assert.equal(answer.x_aihub.cost, 0);
  assert.equal(await balanceMicros(), before_micros);
  // A priced tier says nothing of it.
  openaiUp.script({ kind: 'ok' });
  const priced = (await openai.chat.completions.create({
    model: 'service-ai-lite',
    messages: [{ role: 'user', content: 'Hello' }],
  })) as OpenAI.ChatCompletion & { x_aihub: Record<string, unknown> };
  assert.equal('unpriced' in priced.x_aihub, false);
});

test('providers list shows the chain, where each key comes from, and the converted prices', async () => {
  const listed = await runCli(['providers', 'list', '--config', config_file], {
    ANTHROPIC_TEST_KEY: 'x',
  });
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(
    listed.stdout,
    /^2\. anthropic: Anthropic at .*, key in \$ANTHROPIC_TEST_KEY \(set\)$/m,
  );
  assert.match(listed.stdout, /^1\. openai: .*key in \$OPENAI_TEST_KEY \(NOT SET\)$/m);
  assert.match(
    listed.stdout,
    /service-ai-pro-4: anthropic-claude-sonnet-4-5 \(253\.5\/1267\.5 INR/,
  );
  assert.match(listed.stdout, /service-ai-max: house-house-model-7b \(UNPRICED/);
  assert.ok(!listed.stdout.includes('x\n'));
});

test('providers remove takes a provider out of every tier; removing the last returns to the offline engine', async () => {
  const file = join(tempDir('aihub-providers-remove-'), 'config.json');
  const run = (...args: string[]) => runCli(['providers', ...args, '--config', file]);
  const rate = ['--exchange-rate', RATE];
  assert.equal((await run('add', 'anthropic', '--model', 'claude-haiku-4-5', ...rate)).code, 0);
  const second = await run('add', 'groq', '--model', 'lite=llama-3.3-70b-versatile');
  assert.equal(second.code, 0, second.stderr);
  let config = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(config.chat.models['service-ai-lite'].targets, [
    'anthropic-claude-haiku-4-5',
    'groq-llama-3.3-70b-versatile',
  ]);
  const removed = await run('remove', 'anthropic');
  assert.equal(removed.code, 0, removed.stderr);
  config = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(config.chat.models['service-ai-lite'].targets, ['groq-llama-3.3-70b-versatile']);
  assert.deepEqual(config.chat.models['service-ai-pro-4'].targets, ['builtin']);
  assert.equal(config.chat.engines['anthropic-claude-haiku-4-5'], undefined);
  assert.equal((await run('remove', 'groq')).code, 0);
  config = JSON.parse(readFileSync(file, 'utf8'));
  assert.deepEqual(Object.keys(config.chat.engines), []);
  for (const tier of Object.values(config.chat.models) as any[])
    assert.deepEqual(tier.targets, ['builtin']);
  const missing = await run('remove', 'groq');
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /no provider named "groq"/);
});

test('providers add refuses bad input with a clear message and leaves the file as it was', async () => {
  const file = join(tempDir('aihub-providers-bad-'), 'config.json');
  const run = (...args: string[]) => runCli(['providers', ...args, '--config', file]);
  const cases: [string[], RegExp][] = [
    [['add', 'acme', '--model', 'x'], /unknown KIND "acme"/],
    [['add', 'openai', '--model', 'gpt-4o'], /needs chat\.pricing\.exchange_rate/],
    [['add', 'openai-compatible', '--model', 'x'], /needs its URL/],
    [['add', 'openai', '--model', 'huge=gpt-4o', '--exchange-rate', '84'], /"huge" is not a tier/],
    [['add', 'openai', '--model', 'gpt-4o', '--exchange-rate', 'lots'], /--exchange-rate lots/],
    [
      ['add', 'openai', '--model', 'gpt-4o', '--key-env', 'NOT-A VAR', '--exchange-rate', '84'],
      /environment variable name/,
    ],
    [
      ['add', 'openai', '--model', 'x', '--price', 'x=cheap', '--exchange-rate', '84'],
      /--price x=cheap/,
    ],
    [['add', 'openai'], /at least one --model/],
    [['add', 'openai', '--name', '__proto__', '--model', 'x', '--exchange-rate', '84'], /name/],
  ];
  for (const [args, message] of cases) {
    const result = await run(...args);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stdout}`);
    assert.match(result.stderr, message, args.join(' '));
    assert.ok(!result.stderr.includes('    at '), `no stack trace: ${result.stderr}`);
  }
  assert.throws(() => readFileSync(file), /ENOENT/);
});

test('GET /v1/models lists each tier at its first target price: the catalogue converted, or unpriced', async () => {
  const reply = await request(`${gateway.url}/v1/models`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(reply.status, 200);
  const byId = new Map((reply.body.data as any[]).map((m) => [m.id, m]));
  const pro = byId.get('service-ai-pro-4');
  assert.equal(
    Math.round(pro.pricing.input_per_million * 1_000_000),
    expectedMicros('anthropic', 'claude-sonnet-4-5', { input: 1_000_000 }),
  );
  assert.equal(
    Math.round(pro.pricing.output_per_million * 1_000_000),
    expectedMicros('anthropic', 'claude-sonnet-4-5', { output: 1_000_000 }),
  );
  assert.equal(
    pro.context_window,
    CATALOGUE.models.anthropic!['claude-sonnet-4-5']!.context_window,
  );
  assert.equal(byId.get('service-ai-max').pricing.unpriced, true);
  assert.equal('unpriced' in pro.pricing, false);
});
