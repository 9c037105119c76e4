// The language model provider's pure part: VS Code's message parts in the gateway's chat
// completions shape, tools and tool mode, the tiers as model information, the token estimate and
// which LanguageModelError a gateway failure is. Parts are built as VS Code's classes look (their
// own fields, a class name for thinking), since the conversion reads shapes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { APIError } from 'openai';
import { advise, toFailure } from '../../../extension/errors.js';
import {
  ROLE,
  TOOL_MODE,
  classify,
  estimateTokens,
  requestChars,
  toChatMessages,
  toChatTools,
  toModelInformation,
} from '../../../extension/lm/convert.js';
import { languageModelErrorCode } from '../../../extension/lm/errors.js';

class LanguageModelTextPart {
  constructor(readonly value: string) {}
}
class LanguageModelThinkingPart {
  constructor(
    readonly value: string | string[],
    readonly id?: string,
  ) {}
}
class LanguageModelToolCallPart {
  constructor(
    readonly callId: string,
    readonly name: string,
    readonly input: object,
  ) {}
}
class LanguageModelToolResultPart {
  constructor(
    readonly callId: string,
    readonly content: unknown[],
  ) {}
}
class LanguageModelDataPart {
  constructor(
    readonly data: Uint8Array,
    readonly mimeType: string,
  ) {}
}
class LanguageModelPromptTsxPart {
  constructor(readonly value: unknown) {}
}

const text = (value: string) => new LanguageModelTextPart(value);
const bytes = (s: string) => new TextEncoder().encode(s);
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
const pngUrl = `data:image/png;base64,${Buffer.from(PNG).toString('base64')}`;

test('a conversation with a tool call and its result becomes assistant tool_calls and a tool message', () => {
  const { messages, dropped } = toChatMessages([
    { role: ROLE.system, content: [text('Be brief.')], name: undefined },
    { role: ROLE.user, content: [text('What is the weather in '), text('Pune?')], name: 'asha' },
    {
      role: ROLE.assistant,
      content: [
        text('Looking it up.'),
        new LanguageModelToolCallPart('call_1', 'get_weather', { city: 'Pune' }),
        new LanguageModelToolCallPart('call_2', 'get_time', {}),
      ],
      name: undefined,
    },
    {
      role: ROLE.user,
      content: [
        new LanguageModelToolResultPart('call_1', [text('31 °C, '), text('clear')]),
        new LanguageModelToolResultPart('call_2', [
          new LanguageModelDataPart(bytes('{"time":"14:05"}'), 'application/json'),
        ]),
        text('And tomorrow?'),
      ],
      name: undefined,
    },
  ]);
  assert.equal(dropped, 0);
  assert.deepEqual(messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'What is the weather in Pune?', name: 'asha' },
    {
      role: 'assistant',
      content: 'Looking it up.',
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Pune"}' },
        },
        { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '31 °C, clear' },
    { role: 'tool', tool_call_id: 'call_2', content: '{"time":"14:05"}' },
    { role: 'user', content: 'And tomorrow?' },
  ]);
});

test('images: in a user message as image_url parts; from a tool, in a user message after the tool messages', () => {
  const { messages } = toChatMessages([
    {
      role: ROLE.user,
      content: [text('What is in it?'), new LanguageModelDataPart(PNG, 'image/png')],
      name: undefined,
    },
    {
      role: ROLE.assistant,
      content: [new LanguageModelToolCallPart('c9', 'screenshot', {})],
      name: undefined,
    },
    {
      role: ROLE.user,
      content: [
        new LanguageModelToolResultPart('c9', [
          text('the screen'),
          new LanguageModelDataPart(PNG, 'image/png'),
        ]),
      ],
      name: undefined,
    },
  ]);
  assert.deepEqual(messages[0], {
    role: 'user',
    content: [
      { type: 'text', text: 'What is in it?' },
      { type: 'image_url', image_url: { url: pngUrl } },
    ],
  });
  assert.deepEqual(messages.slice(2), [
    { role: 'tool', tool_call_id: 'c9', content: 'the screen' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'The image returned by tool call c9:' },
        { type: 'image_url', image_url: { url: pngUrl } },
      ],
    },
  ]);
});

test('thinking goes back as reasoning_content; markers and binary data are left out and counted', () => {
  const isThinking = (part: unknown) => part instanceof LanguageModelThinkingPart;
  const { messages, dropped } = toChatMessages(
    [
      { role: ROLE.user, content: [text('hi')], name: undefined },
      {
        role: ROLE.assistant,
        content: [
          new LanguageModelThinkingPart(['The user ', 'greets.'], 'r1'),
          text('Hello.'),
          new LanguageModelDataPart(bytes('{"type":"ephemeral"}'), 'cache_control'),
        ],
        name: undefined,
      },
      {
        role: ROLE.user,
        content: [new LanguageModelDataPart(new Uint8Array([0, 1]), 'application/octet-stream')],
        name: undefined,
      },
    ],
    isThinking,
  );
  assert.deepEqual(messages, [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'Hello.', reasoning_content: 'The user greets.' },
  ]);
  assert.equal(dropped, 2);
  assert.deepEqual(classify(new LanguageModelThinkingPart('x'), isThinking), {
    kind: 'thinking',
    text: 'x',
  });
  // Without the predicate (a VS Code without thinking parts) it is text, as its shape says.
  assert.deepEqual(classify(new LanguageModelThinkingPart('x')), { kind: 'text', text: 'x' });
});

test('a prompt-tsx tool result is sent as its text nodes', () => {
  const tsx = new LanguageModelPromptTsxPart({
    node: {
      type: 1,
      children: [
        { type: 2, text: 'line one\n' },
        { type: 2, text: 'line two' },
      ],
    },
  });
  const { messages } = toChatMessages([
    { role: ROLE.user, content: [new LanguageModelToolResultPart('c1', [tsx])], name: undefined },
  ]);
  assert.deepEqual(messages, [{ role: 'tool', tool_call_id: 'c1', content: 'line one\nline two' }]);
});

test('tools as chat functions; Required mode is tool_choice "required"; no tools, no fields', () => {
  const tools = [
    {
      name: 'get_weather',
      description: 'Weather of a city',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    },
    { name: 'ping', description: 'Ping' },
  ];
  assert.deepEqual(toChatTools(tools, TOOL_MODE.auto), {
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather of a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
      {
        type: 'function',
        function: {
          name: 'ping',
          description: 'Ping',
          parameters: { type: 'object', properties: {} },
        },
      },
    ],
    tool_choice: 'auto',
  });
  assert.equal(toChatTools(tools, TOOL_MODE.required).tool_choice, 'required');
  assert.deepEqual(toChatTools([], TOOL_MODE.required), {});
  assert.deepEqual(toChatTools(undefined, TOOL_MODE.auto), {});
});

test('a tier as model information: input budget = context − output cap, tools, images from input_modalities', () => {
  const info = toModelInformation({
    id: 'service-ai-lite',
    tier: 'lite',
    context_window: 32_768,
    max_output_tokens: 4_096,
    pricing: { input_per_million: 15, output_per_million: 60, currency: 'INR' },
  });
  assert.deepEqual(
    { ...info, tooltip: undefined },
    {
      id: 'service-ai-lite',
      name: 'AIHub Lite',
      family: 'lite',
      version: 'service-ai-lite',
      detail: '15/60 INR per 1M tokens in/out',
      tooltip: undefined,
      maxInputTokens: 28_672,
      maxOutputTokens: 4_096,
      capabilities: { toolCalling: true, imageInput: false },
    },
  );
  assert.match(info.tooltip, /32,768 tokens of context/);
  const vision = toModelInformation({
    id: 'service-ai-pro-4',
    tier: 'pro',
    context_window: 1_000,
    max_output_tokens: 5_000,
    input_modalities: ['text', 'image'],
  });
  assert.equal(vision.capabilities.imageInput, true);
  assert.equal(vision.maxOutputTokens, 999, 'an output cap never exceeds the context window');
  assert.equal(vision.maxInputTokens, 1);
  assert.equal(vision.detail, 'price not listed');
  const old = toModelInformation({ id: 'x' });
  assert.equal(old.maxInputTokens + old.maxOutputTokens, 8_192, 'an older gateway: defaults');
});

test('the token estimate: four characters a token, message framing, images at the gateway figure', () => {
  assert.equal(estimateTokens('abcdefgh'), 2);
  assert.equal(estimateTokens(''), 0);
  const message = {
    role: ROLE.user,
    content: [
      text('x'.repeat(40)),
      new LanguageModelDataPart(PNG, 'image/png'),
      new LanguageModelToolResultPart('c', [text('y'.repeat(8))]),
    ],
    name: undefined,
  };
  assert.equal(estimateTokens(message), 4 + Math.ceil(48 / 4) + 765);
  const call = {
    role: ROLE.assistant,
    content: [new LanguageModelToolCallPart('c', 'abcd', { a: 1 })],
    name: undefined,
  };
  assert.equal(estimateTokens(call), 4 + Math.ceil((4 + '{"a":1}'.length) / 4));
});

test('the request size for the spending cap counts text, tool calls, tools and images', () => {
  const tools = [{ type: 'function', function: { name: 'f' } }];
  const chars = requestChars(
    [
      { role: 'user', content: 'abcd' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:' } }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
    ],
    tools,
  );
  const callChars = JSON.stringify([
    { id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } },
  ]).length;
  assert.equal(chars, JSON.stringify(tools).length + 4 + 765 * 4 + callChars);
});

function httpFailure(status: number, code: string) {
  return toFailure(
    APIError.generate(
      status,
      { error: { message: 'm', type: 'x', param: null, code } },
      undefined,
      new Headers(),
    ),
  );
}

test('gateway failures as LanguageModelError codes, with the extension actions for the key codes', () => {
  const local = { apiBase: 'http://127.0.0.1:8788/v1', isLocal: true };
  assert.equal(languageModelErrorCode(httpFailure(401, 'invalid_api_key')), 'NoPermissions');
  assert.equal(languageModelErrorCode(httpFailure(401, 'key_expired')), 'NoPermissions');
  assert.equal(languageModelErrorCode(httpFailure(403, 'model_not_allowed')), 'NoPermissions');
  assert.equal(languageModelErrorCode(httpFailure(402, 'insufficient_balance')), 'Blocked');
  assert.equal(languageModelErrorCode(httpFailure(402, 'key_limit_exceeded')), 'Blocked');
  assert.equal(languageModelErrorCode(httpFailure(429, 'rate_limit_exceeded')), 'Blocked');
  assert.equal(languageModelErrorCode(httpFailure(404, 'model_not_found')), 'NotFound');
  assert.equal(languageModelErrorCode(httpFailure(404, 'not_found')), undefined);
  assert.equal(languageModelErrorCode(httpFailure(502, 'upstream_error')), undefined);
  assert.equal(languageModelErrorCode({ kind: 'missingKey' }), 'NoPermissions');
  assert.equal(languageModelErrorCode({ kind: 'unreachable', message: 'x' }), undefined);

  assert.deepEqual(advise(httpFailure(402, 'insufficient_balance'), local)!.actions, ['topUp']);
  const limit = advise(httpFailure(402, 'key_limit_exceeded'), local)!;
  assert.deepEqual(limit.actions, ['setApiKey'], 'a top-up does not lift a key limit');
  assert.match(limit.message, /spending limit/);
  const expired = advise(httpFailure(401, 'key_expired'), local)!;
  assert.deepEqual(expired.actions, ['setApiKey']);
  assert.match(expired.message, /expired/);
  const tier = advise(httpFailure(403, 'model_not_allowed'), local)!;
  assert.deepEqual(tier.actions, ['selectModel', 'setApiKey']);
});

test('manifest: vendor aihub is contributed, and the setting that hides it exists', () => {
  const manifest = JSON.parse(
    readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
  ) as {
    contributes: {
      languageModelChatProviders: Array<{ vendor: string; displayName: string; when?: string }>;
      configuration: { properties: Record<string, { default?: unknown }> };
    };
  };
  assert.deepEqual(manifest.contributes.languageModelChatProviders, [
    { vendor: 'aihub', displayName: 'AIHub', when: 'config.aihub.languageModelProvider.enabled' },
  ]);
  assert.equal(
    manifest.contributes.configuration.properties['aihub.languageModelProvider.enabled']?.default,
    true,
  );
});
