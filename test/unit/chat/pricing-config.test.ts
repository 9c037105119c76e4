import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatConfigSchema, TIER_IDS } from '../../../gateway/chat/config.js';
import { costMicros } from '../../../gateway/chat/pricing.js';

test('cost is per token at the per-million price, rounded up once per request', () => {
  const price = { input_micros_per_million: 100_000_000, output_micros_per_million: 400_000_000 }; // 100 and 400 units per million
  assert.equal(costMicros(price, 1, 0), 100); // 100 units / 1e6 tokens = 100 micro-units per token
  assert.equal(costMicros(price, 0, 1), 400);
  assert.equal(costMicros(price, 1_000_000, 1_000_000), 500_000_000);
  const cheap = { input_micros_per_million: 15_000_000, output_micros_per_million: 60_000_000 };
  assert.equal(costMicros(cheap, 1, 0), 15);
  // 7 tokens at 0.000001 unit per million is 7e-12 units: rounded up to one micro-unit, not to zero.
  assert.equal(costMicros({ input_micros_per_million: 1, output_micros_per_million: 1 }, 7, 0), 1);
  // Input and output add up before the one rounding: 0.5 + 0.5 micro-units is 1, not 2.
  assert.equal(
    costMicros({ input_micros_per_million: 500_000, output_micros_per_million: 500_000 }, 1, 1),
    1,
  );
  assert.equal(costMicros(price, 0, 0), 0);
});

test('cost math is exact where floating point is not', () => {
  // 9,999,999 tokens at 999,999.999999 units per million: the product exceeds 2^53.
  const price = { input_micros_per_million: 999_999_999_999, output_micros_per_million: 0 };
  const exact = (9_999_999n * 999_999_999_999n + 999_999n) / 1_000_000n;
  assert.equal(costMicros(price, 9_999_999, 0), Number(exact));
  assert.ok(9_999_999 * 999_999_999_999 > Number.MAX_SAFE_INTEGER);
});

test('cost refuses token counts that are not non-negative integers', () => {
  const price = { input_micros_per_million: 1, output_micros_per_million: 1 };
  assert.throws(() => costMicros(price, -1, 0));
  assert.throws(() => costMicros(price, 1.5, 0));
  assert.throws(() => costMicros(price, Number.NaN, 0));
});

test('the embedded default: five tiers on builtin, prices rising by tier, a free daily allowance', () => {
  const config = chatConfigSchema.parse({});
  assert.deepEqual(Object.keys(config.models), [...TIER_IDS]);
  assert.deepEqual(Object.keys(config.engines), ['builtin']);
  const tiers = TIER_IDS.map((id) => config.models[id]);
  for (const tier of tiers) assert.deepEqual(tier.targets, ['builtin']);
  assert.equal(tiers[0]!.input_micros_per_million, 0);
  assert.equal(tiers[0]!.output_micros_per_million, 0);
  assert.ok(tiers[0]!.daily_token_allowance! > 0);
  for (let i = 1; i < tiers.length; i++) {
    assert.ok(
      tiers[i]!.input_micros_per_million > tiers[i - 1]!.input_micros_per_million,
      `${tiers[i]!.id} input`,
    );
    assert.ok(
      tiers[i]!.output_micros_per_million > tiers[i - 1]!.output_micros_per_million,
      `${tiers[i]!.id} output`,
    );
    assert.equal(tiers[i]!.daily_token_allowance, null);
    assert.ok(tiers[i]!.max_output_tokens < tiers[i]!.context_window);
  }
  assert.equal(config.models['service-ai-lite'].input_micros_per_million, 15_000_000);
});

test('config overrides one tier and keeps the others, and prices become exact micro-units', () => {
  const config = chatConfigSchema.parse({
    engines: {
      ollama: {
        type: 'openai-compatible',
        base_url: 'http://127.0.0.1:11434/v1',
        model: 'llama3.2',
      },
    },
    models: {
      'service-ai-pro-4': {
        targets: ['ollama', 'builtin'],
        input_per_million: 0.1,
        output_per_million: 2.000001,
      },
    },
  });
  assert.deepEqual(config.models['service-ai-pro-4'].targets, ['ollama', 'builtin']);
  assert.equal(config.models['service-ai-pro-4'].input_micros_per_million, 100_000);
  assert.equal(config.models['service-ai-pro-4'].output_micros_per_million, 2_000_001);
  assert.deepEqual(config.models['service-ai-max'].targets, ['builtin']);
  const ollama = config.engines.ollama;
  assert.equal(ollama?.type, 'openai-compatible');
  if (ollama?.type === 'openai-compatible') {
    assert.equal(ollama.timeout_ms, 60_000);
    assert.equal(ollama.max_tokens_field, 'max_tokens');
    assert.deepEqual(ollama.headers, {});
  }
  assert.ok(config.engines.builtin, 'builtin stays available');
});

test('config errors name the field: unknown engine, bad URL, too many decimals, unknown field', () => {
  const unknown = chatConfigSchema.safeParse({
    models: { 'service-ai-lite': { targets: ['nope'] } },
  });
  assert.equal(unknown.success, false);
  assert.deepEqual(unknown.error!.issues[0]!.path, ['models', 'service-ai-lite', 'targets', 0]);
  assert.match(unknown.error!.issues[0]!.message, /unknown engine "nope"/);

  const url = chatConfigSchema.safeParse({
    engines: { x: { type: 'openai-compatible', base_url: 'ftp://x', model: 'm' } },
  });
  assert.equal(url.success, false);
  assert.deepEqual(url.error!.issues[0]!.path.slice(0, 3), ['engines', 'x', 'base_url']);

  const decimals = chatConfigSchema.safeParse({
    models: { 'service-ai-lite': { input_per_million: 0.0000001 } },
  });
  assert.equal(decimals.success, false);

  const extra = chatConfigSchema.safeParse({ modles: {} });
  assert.equal(extra.success, false);
  assert.equal(extra.error!.issues[0]!.code, 'unrecognized_keys');

  const model = chatConfigSchema.safeParse({ models: { 'gpt-4': {} } });
  assert.equal(model.success, false);
});
