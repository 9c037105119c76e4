// The model catalogue and the provider chain (gateway/catalogue/): exact price conversion,
// the chain made into engines and tiers, and the chat config reading catalogue prices.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  catalogueModel,
  cataloguePrice,
  chainOf,
  convertedMicrosPerMillion,
  LOCAL_PROVIDER_KINDS,
  modelIds,
  modelsRequest,
  perMillion,
  PROVIDER_KINDS,
  withExchangeRate,
  withProviderChain,
} from '../../gateway/catalogue/index.js';
import { chatConfigSchema, targetPrice } from '../../gateway/chat/config.js';
import { costMicros, worstCostMicros } from '../../gateway/chat/pricing.js';

test('per-token prices become per-million decimal text exactly, whatever the float looks like', () => {
  assert.equal(perMillion(3e-6), '3');
  assert.equal(perMillion(0.00000375), '3.75');
  assert.equal(perMillion(5.9e-7), '0.59');
  assert.equal(perMillion(2.8e-8), '0.028');
  assert.equal(perMillion(0.000015), '15');
  assert.equal(perMillion(0), '0');
  assert.equal(perMillion(5.46875e-7), '0.546875');
  // No float product enters: 2.1e-8 × 1e6 is 0.020999999999999998 in floating point.
  assert.notEqual(2.1e-8 * 1e6, 0.021);
  assert.equal(perMillion(2.1e-8), '0.021');
});

test('conversion at an exchange rate is exact, rounded up once to a micro-unit per million tokens', () => {
  assert.equal(convertedMicrosPerMillion('3', 84.5), 253_500_000);
  assert.equal(convertedMicrosPerMillion('0.15', 84.5), 12_675_000);
  assert.equal(convertedMicrosPerMillion('0.028', '83.123456'), 2_327_457); // 2.327456768 → up
  assert.equal(convertedMicrosPerMillion('15', 1), 15_000_000);
  assert.equal(convertedMicrosPerMillion('0', 84.5), 0);
  assert.throws(() => convertedMicrosPerMillion('-1', 1), RangeError);
  assert.throws(() => convertedMicrosPerMillion('1e400', 1), RangeError);
});

test('the catalogue prices a known model and knows nothing of prototype names', () => {
  const sonnet = catalogueModel('anthropic', 'claude-sonnet-4-5');
  assert.ok(sonnet && sonnet.context_window && sonnet.max_output_tokens);
  assert.deepEqual(cataloguePrice('anthropic', 'claude-sonnet-4-5', 1), {
    input_micros_per_million: convertedMicrosPerMillion(sonnet.input, 1),
    cached_input_micros_per_million: convertedMicrosPerMillion(sonnet.cached_input!, 1),
    output_micros_per_million: convertedMicrosPerMillion(sonnet.output, 1),
    cache_write_micros_per_million: convertedMicrosPerMillion(sonnet.cache_write!, 1),
  });
  assert.equal(cataloguePrice('anthropic', 'constructor', 1), null);
  assert.equal(cataloguePrice('anthropic', '__proto__', 1), null);
  assert.equal(cataloguePrice('ollama', 'llama3', 1), null);
});

test('the catalogue file carries its source, dates and the MIT notice, and covers every priced kind', () => {
  const file = JSON.parse(
    readFileSync(new URL('../../gateway/catalogue/litellm-prices.json', import.meta.url), 'utf8'),
  );
  assert.match(file.source, /LiteLLM/);
  assert.match(file.licence, /^MIT License\n\nCopyright \(c\) 2023 Berri AI/);
  assert.match(file.licence, /The above copyright notice and this permission notice/);
  assert.equal(file.currency, 'USD');
  for (const kind of PROVIDER_KINDS.filter((k) => k.catalogue))
    assert.ok(Object.keys(file.models[kind.id] ?? {}).length > 0, kind.id);
});

test('local servers are offered on their default ports; model lists are read by id', () => {
  assert.deepEqual(
    LOCAL_PROVIDER_KINDS.map((k) => [k.id, k.local_port]),
    [
      ['ollama', 11434],
      ['lmstudio', 1234],
    ],
  );
  assert.deepEqual(modelsRequest('anthropic', 'https://api.anthropic.com/v1/', 'k').headers, {
    accept: 'application/json',
    'x-api-key': 'k',
    'anthropic-version': '2023-06-01',
  });
  assert.equal(
    modelsRequest('ollama', 'http://127.0.0.1:11434/v1', null).headers.authorization,
    undefined,
  );
  assert.deepEqual(
    modelIds({ data: [{ id: 'models/gemini-2.5-pro' }, { id: 7 }, { id: 'gpt-4o' }] }),
    ['gemini-2.5-pro', 'gpt-4o'],
  );
  assert.deepEqual(modelIds({ nope: true }), []);
});

const CHAIN = {
  chain: [
    {
      kind: 'anthropic',
      name: 'claude',
      api_key_env: 'MY_ANTHROPIC_KEY',
      models: { 'service-ai-pro-4': 'claude-sonnet-4-5', 'service-ai-lite': 'claude-haiku-4-5' },
    },
    { kind: 'ollama', name: 'local', models: { 'service-ai-lite': 'qwen2.5-coder:7b' } },
    {
      kind: 'openai-compatible',
      name: 'lab',
      base_url: 'http://127.0.0.1:9999/v1',
      models: { 'service-ai-max': 'lab/big', 'service-ai-standard-6': 'lab/priced' },
      prices: { 'lab/priced': { input_per_million: 2, output_per_million: 8 } },
    },
  ],
  offline_last_resort: true,
};

test('a provider chain becomes engines and tiers: failover in order, offline last, keys by name', () => {
  const config = withProviderChain({ currency: 'INR' }, CHAIN) as any;
  assert.deepEqual(config.chat.models['service-ai-lite'].targets, [
    'claude-claude-haiku-4-5',
    'local-qwen2.5-coder-7b',
    'builtin',
  ]);
  assert.deepEqual(config.chat.models['service-ai-free'].targets, ['builtin']);
  assert.deepEqual(config.chat.engines['claude-claude-sonnet-4-5'], {
    type: 'openai-compatible',
    base_url: 'https://api.anthropic.com/v1',
    api_key_env: 'MY_ANTHROPIC_KEY',
    model: 'claude-sonnet-4-5',
    protocols: ['messages'],
    max_tokens_field: 'max_tokens',
  });
  assert.equal(config.chat.engines['local-qwen2.5-coder-7b'].api_key_env, undefined);
  const lite = config.chat.models['service-ai-lite'];
  assert.deepEqual(lite.target_prices['local-qwen2.5-coder-7b'], {
    input_per_million: 0,
    output_per_million: 0,
  });
  // The tier's window and cap are the smallest its catalogue models allow.
  assert.equal(
    lite.context_window,
    catalogueModel('anthropic', 'claude-haiku-4-5')!.context_window,
  );
  assert.deepEqual(config.chat.models['service-ai-max'].target_prices, {
    'lab-lab-big': { unpriced: true },
  });
  // Without the offline engine, a tier no provider maps still has something to answer it.
  const strict = withProviderChain({}, { ...CHAIN, offline_last_resort: false }) as any;
  assert.deepEqual(strict.chat.models['service-ai-lite'].targets.at(-1), 'local-qwen2.5-coder-7b');
  assert.deepEqual(strict.chat.models['service-ai-free'].targets, ['builtin']);
});

test('the chat config loads a chain: catalogue prices converted at the exchange rate, unpriced marked', () => {
  const file = withProviderChain({}, CHAIN) as any;
  const missing = chatConfigSchema.safeParse(file.chat);
  assert.equal(missing.success, false);
  assert.match(JSON.stringify(missing.error!.issues), /chat\.pricing\.exchange_rate/);
  const chat = chatConfigSchema.parse({ ...file.chat, pricing: { exchange_rate: 84.5 } });
  const pro = chat.models['service-ai-pro-4'];
  assert.deepEqual(
    targetPrice(pro, 'claude-claude-sonnet-4-5'),
    cataloguePrice('anthropic', 'claude-sonnet-4-5', 84.5),
  );
  assert.equal(targetPrice(chat.models['service-ai-max'], 'lab-lab-big').unpriced, true);
  assert.equal(
    targetPrice(chat.models['service-ai-max'], 'lab-lab-big').output_micros_per_million,
    0,
  );
  assert.equal(
    targetPrice(chat.models['service-ai-standard-6'], 'lab-lab-priced').input_micros_per_million,
    2_000_000,
  );
  assert.deepEqual(
    chainOf({ chat: chat as any }).chain.map((p) => p.name),
    ['claude', 'local', 'lab'],
  );
  // A model the catalogue does not have, named as a catalogue price, is a clear config error.
  const gone = structuredClone(file.chat);
  gone.pricing = { exchange_rate: 84.5 };
  gone.models['service-ai-pro-4'].target_prices['claude-claude-sonnet-4-5'] = {
    catalogue: { provider: 'anthropic', model: 'claude-none' },
  };
  assert.match(
    JSON.stringify(chatConfigSchema.safeParse(gone).error!.issues),
    /not in this gateway's model catalogue/,
  );
  assert.equal(
    chatConfigSchema.safeParse({ pricing: { exchange_rate: 84.1234567 } }).success,
    false,
  );
});

test('removing every provider gives the tiers back; engines a person defined by hand stay', () => {
  const hand = {
    chat: {
      engines: {
        mine: { type: 'openai-compatible', base_url: 'http://127.0.0.1:1/v1', model: 'm' },
      },
      models: { 'service-ai-max': { targets: ['mine'], daily_token_allowance: 5 } },
    },
  };
  const added = withProviderChain(hand, CHAIN) as any;
  assert.deepEqual(added.chat.models['service-ai-max'].targets, ['lab-lab-big', 'mine', 'builtin']);
  assert.equal(added.chat.models['service-ai-max'].daily_token_allowance, 5);
  const removed = withProviderChain(added, { chain: [] }) as any;
  assert.deepEqual(Object.keys(removed.chat.engines), ['mine']);
  assert.deepEqual(removed.chat.models['service-ai-max'].targets, ['mine']);
  assert.deepEqual(removed.chat.models['service-ai-lite'].targets, ['builtin']);
  assert.equal(removed.chat.models['service-ai-lite'].context_window, undefined);
  assert.throws(
    () => withProviderChain({}, { chain: [CHAIN.chain[0], CHAIN.chain[0]] }),
    /named twice/,
  );
});

test('a reasoning price bills reasoning tokens apart, and the hold covers the dearer of the two', () => {
  const price = {
    input_micros_per_million: 1_000_000,
    output_micros_per_million: 2_000_000,
    reasoning_micros_per_million: 5_000_000,
  };
  // A million output tokens of which 600,000 reasoning: 400,000 at 2 and 600,000 at 5 per million.
  assert.equal(costMicros(price, 0, 1_000_000, 0, 600_000), 400_000 * 2 + 600_000 * 5);
  assert.equal(costMicros(price, 0, 1_000_000), 2_000_000);
  assert.equal(worstCostMicros(price, 0, 1_000_000), 5_000_000);
  const chat = chatConfigSchema.parse({
    engines: { r: { type: 'openai-compatible', base_url: 'http://127.0.0.1:1/v1', model: 'm' } },
    models: {
      'service-ai-max': {
        targets: ['r'],
        target_prices: {
          r: { input_per_million: 1, output_per_million: 2, reasoning_per_million: 5 },
        },
      },
    },
  });
  assert.equal(
    targetPrice(chat.models['service-ai-max'], 'r').reasoning_micros_per_million,
    5_000_000,
  );
});

test('the exchange rate: set when given, 1 by itself for a US-dollar wallet, else left alone', () => {
  assert.deepEqual(withExchangeRate({}, 84.5), { chat: { pricing: { exchange_rate: 84.5 } } });
  assert.deepEqual(withExchangeRate({ currency: 'USD' }, null), {
    currency: 'USD',
    chat: { pricing: { exchange_rate: 1 } },
  });
  assert.deepEqual(withExchangeRate({ currency: 'INR' }, null), { currency: 'INR' });
  const kept = { chat: { pricing: { exchange_rate: 90 } }, currency: 'USD' };
  assert.equal(withExchangeRate(kept, null), kept);
});

test('cache writes are billed at their own price, within the prompt; the hold covers the dearer input', () => {
  const price = {
    input_micros_per_million: 3_000_000,
    cached_input_micros_per_million: 300_000,
    output_micros_per_million: 15_000_000,
    cache_write_micros_per_million: 3_750_000,
  };
  // 1,000,000 prompt tokens: 200,000 read from the cache, 300,000 written to it, 500,000 plain.
  assert.equal(
    costMicros(price, 1_000_000, 0, 200_000, 0, 300_000),
    500_000 * 3 + 200_000 * 0.3 + 300_000 * 3.75,
  );
  // Writes never count twice with reads, nor beyond the prompt.
  assert.equal(
    costMicros(price, 1_000_000, 0, 900_000, 0, 900_000),
    900_000 * 0.3 + 100_000 * 3.75,
  );
  assert.equal(worstCostMicros(price, 1_000_000, 0), 3_750_000);
  const catalogued = cataloguePrice('anthropic', 'claude-sonnet-4-5', 1)!;
  assert.equal(
    catalogued.cache_write_micros_per_million,
    convertedMicrosPerMillion(catalogueModel('anthropic', 'claude-sonnet-4-5')!.cache_write!, 1),
  );
});
