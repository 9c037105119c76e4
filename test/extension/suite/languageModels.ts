// AIHub's tiers as VS Code's own chat models (the Language Model Chat Provider, vendor `aihub`),
// reached the way VS Code's chat and every other extension reach them: vscode.lm.selectChatModels
// and LanguageModelChat.sendRequest, in the real extension host against the real gateway. The tool
// round trip runs on the gateway's built-in engine (it calls a tool the message names and then
// quotes the results); cancellation on the scripted upstream, which tells whether the caller hung up.
import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { LanguageModelOutcome } from '../../../extension/lm/provider.js';
import { SCRIPTED_MODEL, type TestGateway } from './gateway.js';
import { report, type RealWorkContext } from './realWork.js';

export interface LanguageModelTestContext extends RealWorkContext {
  gateway(): TestGateway;
}

interface Listed {
  id: string;
  context_window: number;
  max_output_tokens: number;
}

interface Balance {
  balance: number;
  usage: { requests: number; cost: number };
}

const micros = (amount: number): number => Math.round(amount * 1_000_000);
const BLOCKED = vscode.LanguageModelError.Blocked.name;

const WEATHER_TOOL: vscode.LanguageModelChatTool = {
  name: 'get_weather',
  description: 'The current weather of a city',
  inputSchema: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
  },
};

async function gatewayGet<T>(gateway: TestGateway, path: string, key: string): Promise<T> {
  const response = await fetch(`${gateway.apiBase}${path}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(response.status, 200, `GET ${path}`);
  return (await response.json()) as T;
}

async function aihubModels(): Promise<vscode.LanguageModelChat[]> {
  return vscode.lm.selectChatModels({ vendor: 'aihub' });
}

/** Sends a request and reads its whole stream: the text, the tool calls, and the outcome the provider reported. */
async function send(
  api: () => { onDidAnswerLanguageModel: vscode.Event<LanguageModelOutcome> },
  model: vscode.LanguageModelChat,
  messages: vscode.LanguageModelChatMessage[],
  options: vscode.LanguageModelChatRequestOptions = {},
  token?: vscode.CancellationToken,
): Promise<{
  text: string;
  calls: vscode.LanguageModelToolCallPart[];
  outcome: LanguageModelOutcome;
}> {
  let resolveOutcome: (o: LanguageModelOutcome) => void = () => undefined;
  const outcome = new Promise<LanguageModelOutcome>((r) => (resolveOutcome = r));
  const listener = api().onDidAnswerLanguageModel(resolveOutcome);
  try {
    const response = await model.sendRequest(messages, options, token);
    let text = '';
    const calls: vscode.LanguageModelToolCallPart[] = [];
    for await (const part of response.stream) {
      if (part instanceof vscode.LanguageModelTextPart) text += part.value;
      else if (part instanceof vscode.LanguageModelToolCallPart) calls.push(part);
    }
    return { text, calls, outcome: await outcome };
  } finally {
    listener.dispose();
  }
}

/** A tier's chat model, once VS Code lists it (it asks the provider again after a key change). */
function tier(t: LanguageModelTestContext, id: string): Promise<vscode.LanguageModelChat> {
  return t.until(`the chat model ${id}`, async () => {
    const [model] = await vscode.lm.selectChatModels({ vendor: 'aihub', id });
    return model;
  });
}

/** Sends "hello" to a tier and expects a LanguageModelError of this code and message; the provider's outcome. */
async function refused(
  t: LanguageModelTestContext,
  model: vscode.LanguageModelChat,
  code: string,
  message: RegExp,
): Promise<LanguageModelOutcome | undefined> {
  let outcome: LanguageModelOutcome | undefined;
  const listener = t.api().onDidAnswerLanguageModel((o) => (outcome = o));
  try {
    await assert.rejects(
      send(t.api, model, [vscode.LanguageModelChatMessage.User('hello')]),
      (error: unknown) => {
        assert.ok(error instanceof vscode.LanguageModelError, String(error));
        assert.equal(error.code, code);
        assert.match(error.message, message);
        return true;
      },
    );
  } finally {
    listener.dispose();
  }
  return outcome;
}

export function registerLanguageModelTests(t: LanguageModelTestContext): void {
  let key: string;
  let listed: Listed[];

  before(async function () {
    this.timeout(60_000);
    key = (await t.gateway().account(50)).key;
    assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', key), true);
    listed = (await gatewayGet<{ data: Listed[] }>(t.gateway(), '/models', key)).data;
  });

  after(async () => {
    await t.configure({
      'languageModelProvider.enabled': undefined,
      'spendingCap.perDay': undefined,
    });
  });

  it('every tier the gateway lists is a chat model of vendor aihub, with its context window and output cap', async () => {
    const models = await t.until('the aihub models', async () => {
      const found = await aihubModels();
      return found.length === listed.length ? found : undefined;
    });
    assert.deepEqual(models.map((m) => m.id).sort(), listed.map((m) => m.id).sort());
    for (const tier of listed) {
      const model = models.find((m) => m.id === tier.id)!;
      assert.equal(model.vendor, 'aihub');
      assert.equal(model.maxInputTokens, tier.context_window - tier.max_output_tokens, tier.id);
      assert.match(model.name, /^AIHub /);
    }
    report(`language models: ${models.map((m) => `${m.id} (${m.maxInputTokens} in)`).join(', ')}`);
  });

  it('the models go with Clear API Key, come back with Set API Key, and the setting hides them', async () => {
    await vscode.commands.executeCommand('aihub.clearApiKey');
    await t.until('no aihub models without a key', async () =>
      (await aihubModels()).length === 0 ? true : undefined,
    );
    assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', key), true);
    await t.until('the models after Set API Key', async () =>
      (await aihubModels()).length === listed.length ? true : undefined,
    );
    await t.configure({ 'languageModelProvider.enabled': false });
    await t.until('the models hidden by the setting', async () =>
      (await aihubModels()).length === 0 ? true : undefined,
    );
    await t.configure({ 'languageModelProvider.enabled': undefined });
    await t.until('the models back', async () =>
      (await aihubModels()).length === listed.length ? true : undefined,
    );
  });

  it('sendRequest with a tool: the tool call, its result sent back, the final text; the wallet moves by exactly the billed cost', async function () {
    this.timeout(120_000);
    const api = t.api();
    const [model] = await vscode.lm.selectChatModels({ vendor: 'aihub', id: 'service-ai-lite' });
    assert.ok(model, 'service-ai-lite is a chat model');
    const before = await gatewayGet<Balance>(t.gateway(), '/balance', key);
    const sessionBefore = api.spend().session;

    const question = vscode.LanguageModelChatMessage.User(
      'What is the weather in Pune? Use get_weather.',
    );
    const first = await send(t.api, model, [question], { tools: [WEATHER_TOOL] });
    assert.equal(first.calls.length, 1, `one tool call (text: ${first.text})`);
    const call = first.calls[0]!;
    assert.equal(call.name, 'get_weather');
    assert.equal(
      typeof (call.input as { city?: unknown }).city,
      'string',
      JSON.stringify(call.input),
    );
    assert.ok(call.callId);
    assert.equal(first.outcome.status, 'done');
    assert.equal(first.outcome.toolCalls, 1);

    const result = 'Pune: 31 degrees, clear sky';
    const second = await send(
      t.api,
      model,
      [
        question,
        vscode.LanguageModelChatMessage.Assistant([call]),
        vscode.LanguageModelChatMessage.User([
          new vscode.LanguageModelToolResultPart(call.callId, [
            new vscode.LanguageModelTextPart(result),
          ]),
        ]),
      ],
      { tools: [WEATHER_TOOL] },
    );
    assert.equal(second.calls.length, 0);
    assert.ok(
      second.text.includes(result),
      `the final text quotes the tool's result: ${second.text}`,
    );

    const after = await gatewayGet<Balance>(t.gateway(), '/balance', key);
    const billed = [first.outcome.meta!, second.outcome.meta!];
    assert.ok(
      billed.every((m) => m && m.cost > 0),
      'both answers were billed',
    );
    const cost = billed.reduce((sum, m) => sum + micros(m.cost), 0);
    assert.equal(
      micros(before.balance) - micros(after.balance),
      cost,
      'wallet moved by the billed cost',
    );
    assert.equal(
      micros(after.usage.cost) - micros(before.usage.cost),
      cost,
      'the usage records agree',
    );
    assert.equal(after.usage.requests - before.usage.requests, 2);
    assert.equal(
      micros(api.spend().session) - micros(sessionBefore),
      cost,
      "counted in the session's spend",
    );
    assert.equal(micros(billed[1]!.balance), micros(after.balance));
    await t.until(
      'the status bar shows the balance after the answer',
      () => api.statusBarText().includes(after.balance.toFixed(2)) || undefined,
    );
    report(`language model tool round trip: 2 requests, ${cost} micro-units billed`);
  });

  it('countTokens is the local estimate (about four characters a token)', async () => {
    const [model] = await vscode.lm.selectChatModels({ vendor: 'aihub', id: 'service-ai-lite' });
    assert.equal(await model!.countTokens('x'.repeat(400)), 100);
  });

  it('cancelling the token aborts the request at the gateway and upstream', async function () {
    this.timeout(120_000);
    const upstream = t.upstream();
    const first = upstream.received.length;
    upstream.script({
      kind: 'ok',
      content: 'slow words '.repeat(60),
      chunks: 60,
      chunk_delay_ms: 200,
    });
    const [model] = await vscode.lm.selectChatModels({ vendor: 'aihub', id: SCRIPTED_MODEL });
    assert.ok(model);
    const source = new vscode.CancellationTokenSource();
    let outcome: LanguageModelOutcome | undefined;
    const listener = t.api().onDidAnswerLanguageModel((o) => (outcome = o));
    let text = '';
    try {
      const response = await model.sendRequest(
        [vscode.LanguageModelChatMessage.User('Say many words.')],
        {},
        source.token,
      );
      try {
        for await (const part of response.stream) {
          if (part instanceof vscode.LanguageModelTextPart) text += part.value;
          if (text) source.cancel();
        }
      } catch (error) {
        // VS Code may end a cancelled stream with a CancellationError; that is the cancellation.
        assert.ok(
          error instanceof vscode.CancellationError || /cancel/i.test(String(error)),
          String(error),
        );
      }
      await t.until('the upstream request aborted', () =>
        upstream.received[first]?.aborted ? true : undefined,
      );
      await t.until('the provider saw the cancellation', () => outcome);
    } finally {
      listener.dispose();
      source.dispose();
    }
    assert.equal(outcome!.status, 'cancelled');
    assert.ok(upstream.received[first]!.chunks_sent < 60, 'the answer did not run to its end');
  });

  it('thinking: streamed reasoning arrives as thinking parts; thinking sent back reaches the model as reasoning_content', async function () {
    const Thinking = (
      vscode as unknown as { LanguageModelThinkingPart?: new (v: string) => object }
    ).LanguageModelThinkingPart;
    assert.ok(Thinking, 'this VS Code build has LanguageModelThinkingPart');
    const upstream = t.upstream();
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
      id: 'chatcmpl-thinking',
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: 'scripted-model',
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    upstream.script({
      kind: 'exact',
      chunks: [
        chunk({ role: 'assistant', reasoning_content: 'Weighing the words. ' }),
        chunk({ reasoning_content: 'Done weighing.' }),
        chunk({ content: 'Answer.' }),
        chunk({}, 'stop'),
        {
          ...chunk({}),
          choices: [],
          usage: { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26 },
        },
      ],
    });
    const [model] = await vscode.lm.selectChatModels({ vendor: 'aihub', id: SCRIPTED_MODEL });
    assert.ok(model);
    const response = await model.sendRequest([
      vscode.LanguageModelChatMessage.User('First question.'),
      new vscode.LanguageModelChatMessage(vscode.LanguageModelChatMessageRole.Assistant, [
        new Thinking('Earlier thoughts.') as vscode.LanguageModelTextPart,
        new vscode.LanguageModelTextPart('Earlier answer.'),
      ]),
      vscode.LanguageModelChatMessage.User('Second question.'),
    ]);
    let text = '';
    let thinking = '';
    for await (const part of response.stream) {
      if (part instanceof vscode.LanguageModelTextPart) text += part.value;
      else if (part instanceof Thinking) {
        const value = (part as { value: string | string[] }).value;
        thinking += Array.isArray(value) ? value.join('') : value;
      }
    }
    assert.equal(text, 'Answer.');
    assert.equal(thinking, 'Weighing the words. Done weighing.');
    const sent = upstream.received.at(-1)!.body as {
      messages: Array<{ role: string; content: unknown; reasoning_content?: string }>;
    };
    const assistant = sent.messages.find((m) => m.role === 'assistant');
    assert.equal(assistant?.content, 'Earlier answer.');
    assert.equal(assistant?.reasoning_content, 'Earlier thoughts.');
  });

  it("images reach a tier that reads them: a user message's image and a tool's image, as data URLs", async () => {
    const upstream = t.upstream();
    upstream.script({ kind: 'ok', content: 'A red dot.' });
    // A real 1×1 PNG: VS Code's workbench decodes (and may shrink) the images it passes on.
    const png = new Uint8Array(
      Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
        'base64',
      ),
    );
    const call = new vscode.LanguageModelToolCallPart('call_shot', 'screenshot', {});
    const reply = await send(t.api, await tier(t, SCRIPTED_MODEL), [
      vscode.LanguageModelChatMessage.User([
        new vscode.LanguageModelTextPart('What is in this picture?'),
        vscode.LanguageModelDataPart.image(png, 'image/png'),
      ] as vscode.LanguageModelTextPart[]),
      vscode.LanguageModelChatMessage.Assistant([call]),
      vscode.LanguageModelChatMessage.User([
        new vscode.LanguageModelToolResultPart('call_shot', [
          new vscode.LanguageModelTextPart('the screen'),
          vscode.LanguageModelDataPart.image(png, 'image/png'),
        ]),
      ]),
    ]);
    assert.equal(reply.text, 'A red dot.');
    const sent = upstream.received.at(-1)!.body as { messages: Array<Record<string, unknown>> };
    // Each image arrives as a PNG data URL (its bytes as the workbench passed them on).
    const images = JSON.stringify(sent.messages).match(/data:image\/png;base64,[A-Za-z0-9+/=]+/g);
    assert.equal(images?.length, 2, JSON.stringify(sent.messages).slice(0, 2000));
    for (const image of images!)
      assert.deepEqual(
        [...Buffer.from(image.split(',')[1]!, 'base64').subarray(0, 4)],
        [0x89, 0x50, 0x4e, 0x47],
      );
    const url = images![0]!;
    assert.equal(images![1], url);
    assert.deepEqual(sent.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image_url', image_url: { url } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_shot', type: 'function', function: { name: 'screenshot', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_shot', content: 'the screen' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'The image returned by tool call call_shot:' },
          { type: 'image_url', image_url: { url } },
        ],
      },
    ]);
  });

  it('402 (an empty wallet) is LanguageModelError Blocked, with Top Up offered', async function () {
    const broke = await t.gateway().account(0);
    assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', broke.key), true);
    try {
      const outcome = await refused(
        t,
        await tier(t, 'service-ai-lite'),
        BLOCKED,
        /balance is too low/,
      );
      assert.equal(outcome?.status, 'error');
      assert.deepEqual(outcome?.advice?.actions, ['topUp']);
    } finally {
      assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', key), true);
    }
  });

  it('401 (a revoked key) is LanguageModelError NoPermissions, with Set API Key offered', async function () {
    const revoked = await t.gateway().account(5);
    assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', revoked.key), true);
    try {
      // The model as VS Code listed it on this key; then the key is revoked on the gateway.
      const model = await tier(t, 'service-ai-lite');
      await t.gateway().revokeKey(revoked.keyId);
      const outcome = await refused(
        t,
        model,
        vscode.LanguageModelError.NoPermissions.name,
        /key was rejected/,
      );
      assert.equal(outcome?.status, 'error');
      assert.deepEqual(outcome?.advice?.actions, ['setApiKey']);
    } finally {
      assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', key), true);
    }
  });

  it('a request the daily spending cap could pass is refused with a message and never sent', async function () {
    const before = await gatewayGet<Balance>(t.gateway(), '/balance', key);
    // The cap sits just above today's spend: max's output cap alone costs far more.
    await t.configure({ 'spendingCap.perDay': t.api().spend().today + 0.01 });
    let outcome: LanguageModelOutcome | undefined;
    try {
      outcome = await refused(t, await tier(t, 'service-ai-max'), BLOCKED, /daily spending cap/);
    } finally {
      await t.configure({ 'spendingCap.perDay': undefined });
    }
    assert.equal(outcome?.status, 'refused');
    const after = await gatewayGet<Balance>(t.gateway(), '/balance', key);
    assert.equal(after.usage.requests, before.usage.requests, 'nothing reached the gateway');
    assert.equal(after.balance, before.balance);
  });
}
