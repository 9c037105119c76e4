// The extension's model-provider parts that need no VS Code: the default tier mapping, the
// local gateway's config and environment (keys by variable name only), listing a provider's
// models and probing a local server on loopback, and the lines for the other AI tools.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import {
  gatewayConfig,
  keyVariable,
  launchEnvironment,
  providerChain,
} from '../../../extension/providers/launch.js';
import {
  listModels,
  ListingError,
  PROBE_TIMEOUT_MS,
  probeLocal,
} from '../../../extension/providers/listing.js';
import {
  MAX_PROVIDERS,
  parseProviderSet,
  type ProviderSet,
} from '../../../extension/providers/set.js';
import {
  chatModels,
  defaultTiers,
  withCataloguePrices,
} from '../../../extension/providers/tiers.js';
import { allToolSetups, toolSetup } from '../../../extension/providers/toolEnvironment.js';

const OPENAI_KEY = 'sk-unit-openai-5e1d';

function set(offlineFallback = false): ProviderSet {
  return {
    offlineFallback,
    providers: [
      {
        id: 'openai',
        kind: 'openai',
        label: 'OpenAI',
        baseUrl: 'https://api.openai.com/v1',
        hasKey: true,
        tiers: { 'service-ai-lite': 'gpt-4o-mini', 'service-ai-pro-4': 'gpt-4o' },
      },
      {
        id: 'ollama',
        kind: 'ollama',
        label: 'Ollama',
        baseUrl: 'http://127.0.0.1:11434/v1',
        hasKey: false,
        tiers: { 'service-ai-lite': 'llama3.2:3b', 'service-ai-pro-4': 'qwen2.5-coder:32b' },
      },
    ],
  };
}

test('the default tiers: the cheapest catalogue model on lite and free, the dearest on pro and max; embeddings never', () => {
  const tiers = defaultTiers(
    withCataloguePrices('openai', [
      'text-embedding-3-small',
      'gpt-4o',
      'gpt-4o-mini',
      'gpt-4.1-nano',
    ]),
  );
  assert.equal(tiers['service-ai-lite'], 'gpt-4.1-nano');
  assert.equal(tiers['service-ai-free'], 'gpt-4.1-nano');
  assert.equal(tiers['service-ai-pro-4'], 'gpt-4o');
  assert.equal(tiers['service-ai-max'], 'gpt-4o');
  assert.equal(tiers['service-ai-standard-6'], 'gpt-4o-mini');
  assert.ok(!Object.values(tiers).includes('text-embedding-3-small'));
});

test('the default tiers without prices (a local server) go by the names: small and fast on lite, large on pro', () => {
  const tiers = defaultTiers([
    { id: 'llama3.1:70b' },
    { id: 'llama3.2:3b' },
    { id: 'nomic-embed-text' },
  ]);
  assert.equal(tiers['service-ai-lite'], 'llama3.2:3b');
  assert.equal(tiers['service-ai-pro-4'], 'llama3.1:70b');
  assert.deepEqual(defaultTiers([{ id: 'text-embedding-3-large' }]), {});
  assert.deepEqual(
    chatModels([{ id: 'whisper-1' }, { id: 'tts-1' }, { id: 'dall-e-3' }, { id: 'gpt-4o' }]).map(
      (m) => m.id,
    ),
    ['gpt-4o'],
  );
});

test('the gateway config names the keys by variable only, in provider order, at the exchange rate', () => {
  const config = gatewayConfig(set(), 88) as {
    chat: {
      pricing: { exchange_rate: number };
      engines: Record<string, { api_key_env?: string; model: string; base_url: string }>;
      models: Record<string, { targets: string[]; target_prices: Record<string, unknown> }>;
    };
  };
  assert.equal(config.chat.pricing.exchange_rate, 88);
  const text = JSON.stringify(config);
  assert.ok(!text.includes(OPENAI_KEY));
  const openai = Object.entries(config.chat.engines).find(([, e]) => e.model === 'gpt-4o')!;
  assert.equal(openai[1].api_key_env, 'AIHUB_PROVIDER_OPENAI_KEY');
  const ollama = Object.entries(config.chat.engines).find(
    ([, e]) => e.model === 'qwen2.5-coder:32b',
  )!;
  assert.equal(ollama[1].api_key_env, undefined, 'a local server has no key');
  const pro = config.chat.models['service-ai-pro-4']!;
  assert.deepEqual(pro.targets, [openai[0], ollama[0]], 'the failover order, no offline engine');
  assert.deepEqual(pro.target_prices[openai[0]], {
    catalogue: { provider: 'openai', model: 'gpt-4o' },
  });
  assert.deepEqual(
    (gatewayConfig(set(true), 88) as typeof config).chat.models['service-ai-pro-4']!.targets.at(-1),
    'builtin',
  );
  assert.equal(gatewayConfig({ providers: [], offlineFallback: false }, 88), undefined);
  assert.equal(providerChain(set()).chain[0]!.api_key_env, keyVariable('openai'));
});

test('a model the catalogue lacks: the price the user gave, else unpriced; a local server free', () => {
  const custom: ProviderSet = {
    offlineFallback: false,
    providers: [
      {
        id: 'vllm',
        kind: 'openai-compatible',
        label: 'OpenAI-compatible URL',
        baseUrl: 'https://llm.example.com/v1',
        hasKey: false,
        tiers: { 'service-ai-lite': 'small-one', 'service-ai-pro-4': 'big-one' },
        prices: { 'big-one': { input_per_million: 15, output_per_million: 60 } },
      },
      set().providers[1]!,
    ],
  };
  const config = gatewayConfig(custom, 88) as {
    chat: { models: Record<string, { targets: string[]; target_prices: Record<string, unknown> }> };
  };
  const pro = config.chat.models['service-ai-pro-4']!;
  assert.deepEqual(pro.target_prices[pro.targets[0]!], {
    input_per_million: 15,
    output_per_million: 60,
  });
  assert.deepEqual(pro.target_prices[pro.targets[1]!], {
    input_per_million: 0,
    output_per_million: 0,
  });
  const lite = config.chat.models['service-ai-lite']!;
  assert.deepEqual(lite.target_prices[lite.targets[0]!], { unpriced: true });
});

test("the environment carries each provider's key under its variable, and nothing for a keyless one", () => {
  assert.deepEqual(launchEnvironment(set(), { openai: OPENAI_KEY, ollama: 'ignored' }), {
    AIHUB_PROVIDER_OPENAI_KEY: OPENAI_KEY,
  });
  assert.deepEqual(launchEnvironment(set(), { toString: 'x' } as never), {});
  assert.equal(keyVariable('openai-2'), 'AIHUB_PROVIDER_OPENAI_2_KEY');
});

async function serve(
  handler: Parameters<typeof createServer>[1],
): Promise<{ server: Server; root: string }> {
  const server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, root: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}

test("listing a provider's models: its key as it wants it, Google's ids without models/, errors readable", async () => {
  const seen: Array<Record<string, unknown>> = [];
  const { server, root } = await serve((req, res) => {
    seen.push(req.headers);
    if (req.headers['x-api-key'] === 'bad' || req.headers.authorization === 'Bearer bad') {
      res.writeHead(401, { 'content-type': 'application/json' });
      return res.end('{"error":{"message":"Incorrect API key"}}');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        data: [{ id: 'models/gemini-2.5-flash' }, { id: 'b' }, { id: 'a' }, { id: 'a' }],
      }),
    );
  });
  try {
    assert.deepEqual(await listModels('gemini', root, 'k1'), ['a', 'b', 'gemini-2.5-flash']);
    assert.equal(seen.at(-1)!.authorization, 'Bearer k1');
    await listModels('anthropic', root, 'k2');
    assert.equal(seen.at(-1)!['x-api-key'], 'k2');
    assert.ok(seen.at(-1)!['anthropic-version']);
    await assert.rejects(
      listModels('openai', root, 'bad'),
      (error: unknown) =>
        error instanceof ListingError &&
        error.status === 401 &&
        /Incorrect API key/.test(error.message),
    );
  } finally {
    server.close();
  }
});

test(
  'probing a local server: its models when it answers, undefined when it hangs or is absent (bounded)',
  { timeout: PROBE_TIMEOUT_MS * 25 },
  async () => {
    const { server, root } = await serve((req, res) => {
      if (req.url === '/hang/models') return; // never answers
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"object":"list","data":[{"id":"llama3.2:3b"}]}');
    });
    try {
      assert.deepEqual(await probeLocal('ollama', root), ['llama3.2:3b']);
      const hangingRoot = root.replace(/\/v1$/, '/hang');
      // Resolves at all: the probe gives up on a server that never answers (this test's timeout).
      assert.equal(await probeLocal('ollama', hangingRoot), undefined);
      server.closeAllConnections();
      assert.equal(await probeLocal('lmstudio', root), undefined);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  },
);

test('the lines for the other tools: base URL and key for each, Codex and opencode by AIHUB_KEY', () => {
  const root = 'http://127.0.0.1:8788';
  const claude = toolSetup('claude-code', root, 'sk-local');
  assert.ok(claude.includes('export ANTHROPIC_BASE_URL=http://127.0.0.1:8788\n'));
  assert.ok(claude.includes('export ANTHROPIC_AUTH_TOKEN=sk-local'));
  assert.ok(toolSetup('codex', root, 'sk-local').includes('base_url = "http://127.0.0.1:8788/v1"'));
  assert.ok(toolSetup('opencode', root, 'sk-local').includes('export AIHUB_KEY=sk-local'));
  assert.ok(toolSetup('gemini-cli', root, 'sk-local').includes('export GEMINI_API_KEY=sk-local'));
  assert.equal(allToolSetups(root, 'k').split('\n\n').length, 4);
});

test('the stored list read back: malformed entries, duplicate ids, unknown kinds and prototype keys left out, bounded', () => {
  const good = set().providers[0]!;
  const parsed = parseProviderSet({
    offlineFallback: 'yes',
    providers: [
      good,
      { ...good }, // the same id again
      { ...good, id: '__proto__' },
      { ...good, id: 'x', kind: 'toString' },
      { ...good, id: 'y', baseUrl: 'file:///etc/passwd' },
      {
        ...good,
        id: 'z',
        tiers: { 'service-ai-lite': 'm', constructor: 'n', 'service-ai-max': 7 },
        prices: {
          m: { input_per_million: 1, output_per_million: -2 },
          n: { input_per_million: 1, output_per_million: 2 },
        },
      },
      null,
      'text',
    ],
  });
  assert.equal(parsed.offlineFallback, false);
  assert.deepEqual(
    parsed.providers.map((p) => p.id),
    ['openai', 'z'],
  );
  assert.deepEqual(parsed.providers[1]!.tiers, { 'service-ai-lite': 'm' });
  assert.equal(
    parsed.providers[1]!.prices,
    undefined,
    'a negative price and an unmapped model are dropped',
  );
  const many = Array.from({ length: 12 }, (_, i) => ({ ...good, id: `p${i}` }));
  assert.equal(parseProviderSet({ providers: many }).providers.length, MAX_PROVIDERS);
  assert.deepEqual(parseProviderSet(undefined), { providers: [], offlineFallback: false });
});

test('the most providers the extension keeps, with the offline engine last, still fit a tier', () => {
  const full: ProviderSet = {
    offlineFallback: true,
    providers: Array.from({ length: MAX_PROVIDERS }, (_, i) => ({
      ...set().providers[0]!,
      id: `p${i}`,
    })),
  };
  const config = gatewayConfig(full, 88) as {
    chat: { models: Record<string, { targets: string[] }> };
  };
  assert.equal(config.chat.models['service-ai-pro-4']!.targets.length, MAX_PROVIDERS + 1);
});
