// Add Model Provider against scripted providers on loopback (OpenAI-compatible, Anthropic-
// compatible, and an "Ollama" on the port aihub.modelProviders.ollamaPort names): the models
// listed, the tiers mapped, the local gateway restarted with the providers (same wallet), a
// chat message answered by the provider and billed at the catalogue's price converted at the
// exchange rate, the key in SecretStorage and in no file, failover, removal.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as vscode from 'vscode';
import { cataloguePrice } from '../../../gateway/catalogue/catalogue.js';
import { costMicros } from '../../../gateway/chat/pricing.js';
import type { AIHubApi } from '../../../extension/api.js';
import type { ChatEntry } from '../../../extension/chat/protocol.js';
import type { LocalGatewayInfo } from '../../../extension/commands/localGateway.js';
import {
  kindItems,
  localServers,
  type ProviderChange,
} from '../../../extension/commands/providers.js';
import { ProviderUpstream } from './providerUpstream.js';

type Assistant = Extract<ChatEntry, { role: 'assistant' }>;

export interface ProviderTestContext {
  api(): AIHubApi;
  workspace(): string;
  configure(values: Record<string, unknown>): Promise<void>;
  freePort(): Promise<number>;
  until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>): Promise<T>;
}

/** Collects the chat view's model-picker updates: whether it offers Add Model Provider. */
function pickerOffers(api: AIHubApi): { offers: boolean[]; dispose(): void } {
  const offers: boolean[] = [];
  const subscription = api.onDidPostToChat((message) => {
    if (message.type === 'models') offers.push(message.offerProviders === true);
  });
  return { offers, dispose: () => subscription.dispose() };
}

const RATE = 88;
const OPENAI_KEY = 'sk-scripted-openai-7f3a9c1e5b2d4086';
const ANTHROPIC_KEY = 'sk-ant-scripted-2b8e6d4f0a1c3e57';
const micros = (amount: number): number => Math.round(amount * 1_000_000);

async function balanceMicros(): Promise<number> {
  const balance = await vscode.commands.executeCommand<{ balance: number }>('aihub.showBalance');
  assert.ok(balance, 'the local gateway answers /v1/balance');
  return micros(balance.balance);
}

async function ask(text: string): Promise<Assistant> {
  const reply = await vscode.commands.executeCommand<Assistant>('aihub.ask', text);
  assert.equal(reply.status, 'done', JSON.stringify(reply.error));
  return reply;
}

/** What a catalogue-priced answer costs, in micro-units of the wallet's currency. */
function catalogueCost(
  kind: 'openai' | 'anthropic',
  model: string,
  usage: { prompt_tokens: number; completion_tokens: number },
): number {
  const price = cataloguePrice(kind, model, RATE);
  assert.ok(price, `${kind} ${model} is in the catalogue`);
  return costMicros(price, usage.prompt_tokens, usage.completion_tokens);
}

function readConfig(file: string): {
  chat: { engines: Record<string, { api_key_env?: string }>; models: Record<string, unknown> };
} {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Every file under these folders that holds `needle`, and how many files were read. */
function filesHolding(roots: string[], needle: string): { hits: string[]; read: string[] } {
  const hits: string[] = [];
  const read: string[] = [];
  const bytes = Buffer.from(needle, 'utf8');
  const walk = (path: string): void => {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      return;
    }
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
    else if (stat.isFile() && stat.size <= 256 * 1024 * 1024) {
      read.push(path);
      if (readFileSync(path).includes(bytes)) hits.push(path);
    }
  };
  for (const root of roots) walk(root);
  return { hits, read };
}

export function registerProviderTests(t: ProviderTestContext): void {
  const openaiUsage = { prompt_tokens: 1_200, completion_tokens: 345 };
  const anthropicUsage = { prompt_tokens: 2_100, completion_tokens: 77 };
  let openai: ProviderUpstream;
  let anthropic: ProviderUpstream;
  let ollama: ProviderUpstream;
  let port: number;
  let configFile: string;
  /** The tiers with OpenAI and Anthropic, before Ollama came first. */
  let twoProviderTiers: unknown;

  before(async function () {
    this.timeout(120_000);
    openai = await ProviderUpstream.start({
      auth: 'bearer',
      key: OPENAI_KEY,
      models: ['gpt-4o-mini', 'gpt-4o', 'text-embedding-3-small'],
      content: 'Answer from the OpenAI upstream.',
      usage: openaiUsage,
    });
    anthropic = await ProviderUpstream.start({
      auth: 'anthropic',
      key: ANTHROPIC_KEY,
      models: ['claude-haiku-4-5', 'claude-sonnet-4-5'],
      content: 'Answer from the Anthropic upstream.',
      usage: anthropicUsage,
    });
    ollama = await ProviderUpstream.start({
      auth: 'none',
      models: ['llama3.2:3b', 'qwen2.5-coder:32b'],
      content: 'Answer from Ollama on this machine.',
      usage: { prompt_tokens: 50, completion_tokens: 9 },
    });
    port = await t.freePort();
    await vscode.commands.executeCommand('aihub.clearApiKey');
    await t.configure({
      baseUrl: undefined,
      model: 'service-ai-pro-4',
      'localGateway.port': port,
      'modelProviders.ollamaPort': ollama.port,
      // Nothing listens there: LM Studio is "not found".
      'modelProviders.lmStudioPort': await t.freePort(),
      // A repository's settings cannot change the rate (read from user settings only).
      'modelProviders.exchangeRate': 0.5,
    });
    await vscode.workspace
      .getConfiguration('aihub')
      .update('modelProviders.exchangeRate', RATE, vscode.ConfigurationTarget.Global);
    const info = await vscode.commands.executeCommand<LocalGatewayInfo>('aihub.startLocalGateway');
    assert.ok(info, 'the local gateway started');
    configFile = t.api().localGateway().configFile;
  });

  after(async function () {
    this.timeout(60_000);
    for (const { id } of t.api().modelProviders().providers)
      await vscode.commands.executeCommand('aihub.removeModelProvider', id);
    await vscode.commands.executeCommand('aihub.stopLocalGateway');
    await t.configure({
      model: 'service-ai-lite',
      'localGateway.port': undefined,
      'modelProviders.ollamaPort': undefined,
      'modelProviders.lmStudioPort': undefined,
      'modelProviders.exchangeRate': undefined,
    });
    await vscode.workspace
      .getConfiguration('aihub')
      .update('modelProviders.exchangeRate', undefined, vscode.ConfigurationTarget.Global);
    await Promise.all([openai?.close(), anthropic?.close(), ollama?.close()]);
  });

  it('without a provider the offline engine answers and no config file is written', async function () {
    this.timeout(60_000);
    assert.deepEqual(t.api().modelProviders(), { providers: [], offlineFallback: false });
    assert.equal(existsSync(configFile), false);
    const reply = await ask('Write a haiku.');
    assert.ok(reply.text.includes('built-in offline engine'), reply.text);
  });

  it('Add Model Provider (OpenAI) lists its models, maps the tiers, restarts the local gateway with the same wallet, and the answer is billed at the catalogue price', async function () {
    this.timeout(120_000);
    const before = t.api().localGateway();
    const balanceBefore = await balanceMicros();
    const picker = pickerOffers(t.api());
    const change = await vscode.commands.executeCommand<ProviderChange>('aihub.addModelProvider', {
      kind: 'openai',
      baseUrl: openai.base_url,
      apiKey: OPENAI_KEY,
      offlineFallback: false,
    });
    assert.ok(change?.provider, 'the provider was added');
    assert.deepEqual(change.models, ['gpt-4o', 'gpt-4o-mini', 'text-embedding-3-small']);
    const listing = openai.received.find((r) => r.url === '/v1/models');
    assert.equal(listing?.headers.authorization, `Bearer ${OPENAI_KEY}`);
    assert.deepEqual(change.provider.tiers, {
      'service-ai-free': 'gpt-4o-mini',
      'service-ai-lite': 'gpt-4o-mini',
      'service-ai-standard-6': 'gpt-4o-mini',
      'service-ai-pro-4': 'gpt-4o',
      'service-ai-max': 'gpt-4o',
    });
    assert.equal(change.restarted, true);
    await t.until('the model picker updated', () => picker.offers.length > 0 || undefined);
    picker.dispose();
    assert.ok(!picker.offers.includes(true), 'the picker no longer offers Add Model Provider');
    const after = t.api().localGateway();
    assert.equal(after.state, 'running');
    assert.notEqual(after.pid, before.pid, 'a new gateway process');
    assert.equal(after.dataDir, before.dataDir);
    assert.equal(await balanceMicros(), balanceBefore, 'the wallet survived the restart');
    assert.equal(await t.api().hasProviderKey('openai'), true);

    const config = readConfig(configFile);
    const engine = Object.values(config.chat.engines).find(
      (e) => (e as { model?: string }).model === 'gpt-4o',
    );
    assert.equal(engine?.api_key_env, 'AIHUB_PROVIDER_OPENAI_KEY');
    assert.equal(
      (config.chat as unknown as { pricing: { exchange_rate: number } }).pricing.exchange_rate,
      RATE,
      "the user's rate, not the workspace's",
    );

    const reply = await ask('Hello?');
    assert.equal(reply.text, 'Answer from the OpenAI upstream.');
    const chat = openai.chatRequests();
    assert.equal(chat.length, 1);
    assert.equal(chat[0]!.headers.authorization, `Bearer ${OPENAI_KEY}`);
    assert.equal((chat[0]!.body as { model: string }).model, 'gpt-4o');
    const cost = catalogueCost('openai', 'gpt-4o', openaiUsage);
    assert.ok(cost > 0);
    assert.equal(micros(reply.meta!.cost), cost, 'billed at the catalogue price × the rate');
    assert.equal(await balanceMicros(), balanceBefore - cost, 'the wallet moved by exactly that');
  });

  it("the provider's key is in SecretStorage and in no file on disk", async () => {
    const local = t.api().localGateway();
    const storage = dirname(local.dataDir); // the extension's global storage
    const userDir = dirname(dirname(storage)); // VS Code's User folder: settings, state, storage
    const roots = [storage, userDir, t.workspace()];
    const { hits, read } = filesHolding(roots, OPENAI_KEY);
    assert.ok(read.includes(configFile), 'the search read the gateway config file');
    assert.ok(
      read.some((file) => file.startsWith(local.dataDir)),
      "the search read the gateway's data dir",
    );
    assert.ok(readFileSync(configFile, 'utf8').includes('AIHUB_PROVIDER_OPENAI_KEY'));
    assert.deepEqual(hits, [], `the key is in no file (${read.length} files read)`);
    assert.equal(await t.api().hasProviderKey('openai'), true);
  });

  it('a second provider (Anthropic) is the failover: with OpenAI failing it answers, at its own catalogue price', async function () {
    this.timeout(120_000);
    const change = await vscode.commands.executeCommand<ProviderChange>('aihub.addModelProvider', {
      kind: 'anthropic',
      baseUrl: anthropic.base_url,
      apiKey: ANTHROPIC_KEY,
    });
    assert.deepEqual(change?.models, ['claude-haiku-4-5', 'claude-sonnet-4-5']);
    const listing = anthropic.received.find((r) => r.url.startsWith('/v1/models'));
    assert.equal(listing?.headers['x-api-key'], ANTHROPIC_KEY);
    assert.equal(change?.provider?.tiers['service-ai-lite'], 'claude-haiku-4-5');
    assert.equal(change?.provider?.tiers['service-ai-pro-4'], 'claude-sonnet-4-5');
    assert.deepEqual(
      t
        .api()
        .modelProviders()
        .providers.map((p) => p.id),
      ['openai', 'anthropic'],
    );
    twoProviderTiers = readConfig(configFile).chat.models;

    const balanceBefore = await balanceMicros();
    const openaiCalls = openai.chatRequests().length;
    openai.failChat = true;
    try {
      const reply = await ask('Hello again?');
      assert.equal(reply.text, 'Answer from the Anthropic upstream.');
      assert.ok(openai.chatRequests().length > openaiCalls, 'OpenAI was tried first');
      const sent = anthropic.chatRequests().at(-1)!;
      assert.equal(sent.headers.authorization, `Bearer ${ANTHROPIC_KEY}`);
      assert.equal((sent.body as { model: string }).model, 'claude-sonnet-4-5');
      const cost = catalogueCost('anthropic', 'claude-sonnet-4-5', anthropicUsage);
      assert.equal(micros(reply.meta!.cost), cost);
      assert.equal(await balanceMicros(), balanceBefore - cost);
    } finally {
      openai.failChat = false;
    }
  });

  it('Ollama is found on its configured port and offered first; moved to the front, it answers for free', async function () {
    this.timeout(120_000);
    const found = await localServers();
    const byKind = new Map(found.map((f) => [f.kind.id, f]));
    assert.deepEqual(byKind.get('ollama')?.models, ['llama3.2:3b', 'qwen2.5-coder:32b']);
    assert.equal(
      byKind.get('lmstudio')?.models,
      undefined,
      'nothing answers on the LM Studio port',
    );
    const offered = kindItems(found).filter((i) => i.provider);
    assert.equal(offered[0]?.provider, 'ollama', 'a local server that answers comes first');

    const change = await vscode.commands.executeCommand<ProviderChange>('aihub.addModelProvider', {
      kind: 'ollama',
    });
    assert.equal(change?.provider?.baseUrl, `http://127.0.0.1:${ollama.port}/v1`);
    assert.equal(change?.provider?.hasKey, false);
    const moved = await vscode.commands.executeCommand<ProviderChange>('aihub.editModelProvider', {
      id: 'ollama',
      position: 0,
    });
    assert.deepEqual(
      moved?.providers.providers.map((p) => p.id),
      ['ollama', 'openai', 'anthropic'],
    );
    const balanceBefore = await balanceMicros();
    const reply = await ask('Anyone local?');
    assert.equal(reply.text, 'Answer from Ollama on this machine.');
    assert.equal(reply.meta!.cost, 0);
    assert.equal(await balanceMicros(), balanceBefore);
  });

  it('removing a provider returns to the previous chain; removing all, to the offline engine', async function () {
    this.timeout(120_000);
    await vscode.commands.executeCommand('aihub.removeModelProvider', 'ollama');
    assert.deepEqual(readConfig(configFile).chat.models, twoProviderTiers);
    assert.equal((await ask('Back to OpenAI?')).text, 'Answer from the OpenAI upstream.');

    await vscode.commands.executeCommand('aihub.removeModelProvider', 'anthropic');
    const picker = pickerOffers(t.api());
    await vscode.commands.executeCommand('aihub.removeModelProvider', 'openai');
    await t.until(
      'the picker offering Add Model Provider (only the offline engine)',
      () => picker.offers.includes(true) || undefined,
    );
    picker.dispose();
    assert.deepEqual(t.api().modelProviders().providers, []);
    assert.equal(await t.api().hasProviderKey('openai'), false, 'the key went with it');
    assert.equal(existsSync(configFile), false);
    const calls = openai.chatRequests().length + anthropic.chatRequests().length;
    const reply = await ask('And now?');
    assert.ok(reply.text.includes('built-in offline engine'), reply.text);
    assert.equal(openai.chatRequests().length + anthropic.chatRequests().length, calls);
  });

  it('a model the catalogue lacks is billed at the price the user gave, or served unpriced (free)', async function () {
    this.timeout(120_000);
    const change = await vscode.commands.executeCommand<ProviderChange>('aihub.addModelProvider', {
      kind: 'openai-compatible',
      baseUrl: openai.base_url,
      apiKey: OPENAI_KEY,
      prices: { 'gpt-4o': { input_per_million: 100, output_per_million: 400 } },
    });
    assert.equal(change?.provider?.tiers['service-ai-pro-4'], 'gpt-4o');
    assert.equal(change?.provider?.tiers['service-ai-lite'], 'gpt-4o-mini');
    try {
      const balanceBefore = await balanceMicros();
      const priced = await ask('Priced by hand?');
      assert.equal(priced.text, 'Answer from the OpenAI upstream.');
      const cost = costMicros(
        { input_micros_per_million: 100_000_000, output_micros_per_million: 400_000_000 },
        openaiUsage.prompt_tokens,
        openaiUsage.completion_tokens,
      );
      assert.equal(micros(priced.meta!.cost), cost);
      assert.equal(await balanceMicros(), balanceBefore - cost);
      await t.configure({ model: 'service-ai-lite' });
      const unpriced = await ask('Unpriced?');
      assert.equal(unpriced.text, 'Answer from the OpenAI upstream.');
      assert.equal(unpriced.meta!.cost, 0);
      assert.equal(unpriced.meta!.unpriced, true, 'the answer says it is unpriced');
      assert.equal(priced.meta!.unpriced, undefined);
      assert.equal(await balanceMicros(), balanceBefore - cost);
    } finally {
      await t.configure({ model: 'service-ai-pro-4' });
      await vscode.commands.executeCommand('aihub.removeModelProvider', change?.provider?.id);
    }
  });

  it('shows the lines for Claude Code, Codex CLI, opencode and Gemini CLI, and copies them', async () => {
    const lines = await vscode.commands.executeCommand<string>('aihub.showToolEnvironment', {
      tool: 'all',
      copy: true,
    });
    const root = `http://127.0.0.1:${port}`;
    for (const expected of [
      `export ANTHROPIC_BASE_URL=${root}`,
      `base_url = "${root}/v1"`,
      `"baseURL": "${root}/v1"`,
      `export GOOGLE_GEMINI_BASE_URL=${root}`,
    ])
      assert.ok(lines.includes(expected), `${expected} in:\n${lines}`);
    assert.equal(await vscode.env.clipboard.readText(), `${lines}\n`);
    const key = /ANTHROPIC_AUTH_TOKEN=(\S+)/.exec(lines)?.[1];
    const models = await fetch(`${root}/v1/models`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(models.status, 200, 'the key in the lines works on the local gateway');
  });
}
