// Google's Gemini API through the official `@google/genai` SDK against the real gateway
// process: generateContent and its stream, a function-calling round trip, JSON output with a
// schema, countTokens, the model list and typed errors, billed on the same key and wallet as
// every other protocol. One tier answers from a scripted OpenAI-compatible upstream, so the
// translation to chat completions is seen from the upstream's side too.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError, FunctionCallingConfigMode, GoogleGenAI, Type } from '@google/genai';
import { parseSseData } from '../../gateway/chat/sse.ts';
import { ScriptedUpstream } from '../support/scripted-upstream.js';
import { createFundedAccount, request, startGatewayWithChat, type Gateway } from './helpers.js';

let gateway: Gateway;
let upstream: ScriptedUpstream;
let key: string;
let ai: GoogleGenAI;
const SCRIPTED_MODEL = 'service-ai-max';
/** A tier whose target speaks the Gemini API natively. */
const NATIVE_MODEL = 'service-ai-standard-6';

before(async () => {
  upstream = await ScriptedUpstream.start();
  gateway = await startGatewayWithChat({
    engines: {
      scripted: {
        type: 'openai-compatible',
        base_url: upstream.base_url,
        api_key_env: 'SCRIPTED_KEY',
        model: 'scripted-model',
      },
      google: {
        type: 'openai-compatible',
        base_url: `${upstream.base_url}/openai`,
        api_key_env: 'SCRIPTED_KEY',
        model: 'gemini-native',
        protocols: ['gemini'],
      },
    },
    models: {
      [SCRIPTED_MODEL]: { targets: ['scripted'] },
      [NATIVE_MODEL]: { targets: ['google'] },
    },
  });
  ({ key } = await createFundedAccount(gateway, 5000));
  ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway.url } });
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
  await upstream.close();
});

type Billed = { x_aihub?: { cost: number; balance: number; request_id: string; target: string } };

async function balance(): Promise<number> {
  const reply = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return reply.body.balance as number;
}

test('generateContent: text, usageMetadata, modelVersion, the bill in x_aihub and the headers', async () => {
  const before_balance = await balance();
  const response = await ai.models.generateContent({
    model: 'service-ai-lite',
    contents: 'Hello! What can you do?',
    config: { systemInstruction: 'Answer briefly.' },
  });
  assert.match(response.text ?? '', /offline engine/);
  assert.equal(response.candidates?.[0]?.finishReason, 'STOP');
  assert.equal(response.modelVersion, 'service-ai-lite');
  const usage = response.usageMetadata!;
  assert.ok(usage.promptTokenCount! > 0 && usage.candidatesTokenCount! > 0);
  assert.equal(usage.totalTokenCount, usage.promptTokenCount! + usage.candidatesTokenCount!);
  // The SDK keeps only the fields it knows: the bill reaches its users in the headers.
  const headers = response.sdkHttpResponse!.headers!;
  const cost = Number(headers['x-aihub-cost']);
  assert.equal(response.responseId, headers['x-aihub-request-id']);
  assert.ok(Math.round(cost * 1e6) > 0);
  assert.equal(
    Math.round((before_balance - cost) * 1e6),
    Math.round(Number(headers['x-aihub-balance']) * 1e6),
  );
  // ...and, for clients that read the JSON themselves, in x_aihub beside the response's fields.
  const raw = await fetch(`${gateway.url}/v1beta/models/service-ai-lite:generateContent`, {
    method: 'POST',
    headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ parts: [{ text: 'Hello' }] }] }),
  });
  const bill = ((await raw.json()) as Billed).x_aihub!;
  assert.equal(bill.target, 'builtin');
  assert.equal(String(bill.cost), raw.headers.get('x-aihub-cost'));
  assert.equal(String(bill.balance), raw.headers.get('x-aihub-balance'));
});

test('generateContentStream: the SDK reads the SSE chunks; the last carries finishReason, usage and the bill', async () => {
  const stream = await ai.models.generateContentStream({
    model: 'service-ai-lite',
    contents: [{ role: 'user', parts: [{ text: 'Hello there' }] }],
  });
  let text = '';
  const chunks = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    text += chunk.text ?? '';
  }
  assert.ok(chunks.length > 2, `${chunks.length} chunks`);
  assert.match(text, /offline engine/);
  const last = chunks.at(-1)!;
  assert.equal(last.candidates?.[0]?.finishReason, 'STOP');
  assert.ok(last.usageMetadata!.candidatesTokenCount! > 0);

  // The last event carries the bill (the SDK drops the field; a client reading SSE sees it).
  const raw = await fetch(
    `${gateway.url}/v1beta/models/service-ai-lite:streamGenerateContent?alt=sse`,
    {
      method: 'POST',
      headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'Hello' }] }] }),
    },
  );
  assert.match(raw.headers.get('content-type')!, /text\/event-stream/);
  const events = parseSseData(await raw.text()).map((data) => JSON.parse(data) as Billed);
  assert.ok(events.at(-1)!.x_aihub!.cost > 0);
  assert.ok(events.slice(0, -1).every((event) => event.x_aihub === undefined));
});

test('streamGenerateContent without alt=sse answers one JSON array of the same responses', async () => {
  const reply = await fetch(`${gateway.url}/v1beta/models/service-ai-lite:streamGenerateContent`, {
    method: 'POST',
    headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hi' }] }] }),
  });
  assert.equal(reply.status, 200);
  assert.match(reply.headers.get('content-type')!, /application\/json/);
  const responses = (await reply.json()) as Array<Record<string, any>>;
  assert.ok(Array.isArray(responses) && responses.length > 1);
  assert.equal(responses.at(-1)!.candidates[0].finishReason, 'STOP');
  assert.ok(responses.at(-1)!.x_aihub.cost > 0);
});

const weather = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: {
    type: Type.OBJECT,
    properties: { city: { type: Type.STRING, description: 'the city' } },
    required: ['city'],
  },
};

test('function calling: Gemini declarations become chat tools; the call and its response round-trip', async () => {
  upstream.script({
    kind: 'exact',
    completion: {
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'call_7',
                type: 'function',
                function: { name: 'get_weather', arguments: '{"city":"Pune"}' },
              },
            ],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 9 },
    },
  });
  const first = await ai.models.generateContent({
    model: SCRIPTED_MODEL,
    contents: 'Weather in Pune?',
    config: {
      tools: [{ functionDeclarations: [weather] }],
      toolConfig: {
        functionCallingConfig: {
          mode: FunctionCallingConfigMode.ANY,
          allowedFunctionNames: ['get_weather'],
        },
      },
    },
  });
  const sent = upstream.received.at(-1)!.body;
  assert.deepEqual(sent.tools, [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather in a city',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string', description: 'the city' } },
          required: ['city'],
        },
      },
    },
  ]);
  assert.deepEqual(sent.tool_choice, { type: 'function', function: { name: 'get_weather' } });
  assert.deepEqual(first.functionCalls, [
    { id: 'call_7', name: 'get_weather', args: { city: 'Pune' } },
  ]);
  assert.equal(first.usageMetadata?.promptTokenCount, 30);

  upstream.script({ kind: 'ok', content: 'It is sunny in Pune.' });
  const second = await ai.models.generateContent({
    model: SCRIPTED_MODEL,
    contents: [
      { role: 'user', parts: [{ text: 'Weather in Pune?' }] },
      { role: 'model', parts: [{ functionCall: first.functionCalls![0] }] },
      {
        role: 'user',
        parts: [
          {
            functionResponse: { id: 'call_7', name: 'get_weather', response: { output: 'sunny' } },
          },
        ],
      },
    ],
    config: { tools: [{ functionDeclarations: [weather] }] },
  });
  const messages = upstream.received.at(-1)!.body.messages as Array<Record<string, any>>;
  assert.deepEqual(
    messages.map((message) => message.role),
    ['user', 'assistant', 'tool'],
  );
  assert.equal(messages[1]!.tool_calls[0].id, 'call_7');
  assert.deepEqual(messages[2], { role: 'tool', tool_call_id: 'call_7', content: 'sunny' });
  assert.equal(second.text, 'It is sunny in Pune.');
});

test('function calling, streamed: the call arrives whole in one part, then the finish', async () => {
  upstream.script({
    kind: 'exact',
    chunks: [
      {
        choices: [
          {
            index: 0,
            delta: {
              role: 'assistant',
              tool_calls: [
                {
                  index: 0,
                  id: 'call_9',
                  type: 'function',
                  function: { name: 'get_weather', arguments: '{"ci' },
                },
              ],
            },
            finish_reason: null,
          },
        ],
      },
      {
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, function: { arguments: 'ty":"Goa"}' } }] },
            finish_reason: null,
          },
        ],
      },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { choices: [], usage: { prompt_tokens: 20, completion_tokens: 7 } },
    ],
  });
  const stream = await ai.models.generateContentStream({
    model: SCRIPTED_MODEL,
    contents: 'Weather in Goa?',
    config: { tools: [{ functionDeclarations: [weather] }] },
  });
  const calls = [];
  let last;
  for await (const chunk of stream) {
    calls.push(...(chunk.functionCalls ?? []));
    last = chunk;
  }
  assert.deepEqual(calls, [{ id: 'call_9', name: 'get_weather', args: { city: 'Goa' } }]);
  assert.equal(last!.usageMetadata?.promptTokenCount, 20);
  assert.equal(last!.usageMetadata?.candidatesTokenCount, 7);
});

test('JSON output with a schema: responseMimeType + responseSchema become a json_schema response format', async () => {
  const response = await ai.models.generateContent({
    model: 'service-ai-lite',
    contents: 'Give a city and its population.',
    config: {
      responseMimeType: 'application/json',
      responseSchema: {
        type: Type.OBJECT,
        properties: { city: { type: Type.STRING }, population: { type: Type.INTEGER } },
        required: ['city', 'population'],
      },
    },
  });
  const value = JSON.parse(response.text!) as { city: unknown; population: unknown };
  assert.equal(typeof value.city, 'string');
  assert.ok(Number.isInteger(value.population));

  upstream.script({ kind: 'ok', content: '{"ok":true}' });
  await ai.models.generateContent({
    model: SCRIPTED_MODEL,
    contents: 'ok?',
    config: {
      responseMimeType: 'application/json',
      responseJsonSchema: { type: 'object', properties: { ok: { type: 'boolean' } } },
    },
  });
  assert.deepEqual(upstream.received.at(-1)!.body.response_format, {
    type: 'json_schema',
    json_schema: {
      name: 'response',
      schema: { type: 'object', properties: { ok: { type: 'boolean' } } },
    },
  });
});

test('countTokens answers the estimate and costs nothing', async () => {
  const before_balance = await balance();
  const counted = await ai.models.countTokens({
    model: 'service-ai-pro-4',
    contents: 'How many tokens is this sentence?',
  });
  assert.ok(counted.totalTokens! > 3 && counted.totalTokens! < 30);
  assert.equal(await balance(), before_balance);
});

test('models.list and models.get: the five tiers with their token limits', async () => {
  const names = [];
  for await (const model of await ai.models.list()) names.push(model);
  assert.deepEqual(
    names.map((model) => model.name),
    [
      'service-ai-free',
      'service-ai-lite',
      'service-ai-standard-6',
      'service-ai-pro-4',
      'service-ai-max',
    ].map((id) => `models/${id}`),
  );
  const pro = await ai.models.get({ model: 'service-ai-pro-4' });
  assert.equal(pro.name, 'models/service-ai-pro-4');
  assert.ok(pro.inputTokenLimit! > pro.outputTokenLimit!);
  assert.ok(pro.supportedActions?.includes('generateContent'));
});

test("typed errors in Google's shape: unknown model 404, bad key 401, bad request 400, empty wallet 402", async () => {
  const failure = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (error) {
      assert.ok(error instanceof ApiError, String(error));
      return error;
    }
    assert.fail('no error');
  };
  const missing = await failure(() =>
    ai.models.generateContent({ model: 'gemini-9', contents: 'x' }),
  );
  assert.equal(missing.status, 404);
  assert.match(missing.message, /NOT_FOUND/);

  const stranger = new GoogleGenAI({ apiKey: 'sk-wrong', httpOptions: { baseUrl: gateway.url } });
  const unauthenticated = await failure(() =>
    stranger.models.generateContent({ model: 'service-ai-lite', contents: 'x' }),
  );
  assert.equal(unauthenticated.status, 401);
  assert.match(unauthenticated.message, /UNAUTHENTICATED/);

  const bad = await fetch(
    `${gateway.url}/v1beta/models/service-ai-lite:generateContent?key=${key}`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        contents: [{ role: 'user', parts: [{ text: 'x' }] }],
        generationConfig: { temperature: 9 },
      }),
    },
  );
  assert.equal(bad.status, 400);
  const body = (await bad.json()) as {
    error: { code: number; status: string; message: string; details: unknown[] };
  };
  assert.equal(body.error.code, 400);
  assert.equal(body.error.status, 'INVALID_ARGUMENT');
  assert.match(body.error.message, /temperature/);

  const poor = await createFundedAccount(gateway, 0);
  const broke = new GoogleGenAI({ apiKey: poor.key, httpOptions: { baseUrl: gateway.url } });
  const empty = await failure(() =>
    broke.models.generateContent({ model: 'service-ai-pro-4', contents: 'x' }),
  );
  assert.equal(empty.status, 402);
  assert.match(empty.message, /FAILED_PRECONDITION/);
  assert.match(empty.message, /\/wallet/);
});

test('the key as x-goog-api-key, ?key= and Bearer reach the same wallet; the usage is counted under gemini', async () => {
  const body = JSON.stringify({ contents: [{ parts: [{ text: 'one' }] }] });
  const url = `${gateway.url}/v1beta/models/service-ai-lite:generateContent`;
  for (const [target, headers] of [
    [url, { 'x-goog-api-key': key }],
    [`${url}?key=${encodeURIComponent(key)}`, {}],
    [url, { authorization: `Bearer ${key}` }],
    [`${gateway.url}/v1/models/service-ai-lite:generateContent`, { 'x-goog-api-key': key }],
  ] as const) {
    const reply = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    assert.equal(reply.status, 200, target);
  }
  const usage = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.ok(usage.body.usage.by_protocol?.gemini?.requests >= 4, JSON.stringify(usage.body.usage));
});

test('what a client sends is accepted and what was changed is said: a cap, topK, safety settings, a Google-run tool', async () => {
  const reply = await fetch(`${gateway.url}/v1beta/models/service-ai-lite:generateContent`, {
    method: 'POST',
    headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
      tools: [{ googleSearch: {} }],
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
      generationConfig: { maxOutputTokens: 1_000_000, topK: 64, temperature: 1 },
    }),
  });
  assert.equal(reply.status, 200);
  const warning = reply.headers.get('x-aihub-warning') ?? '';
  assert.match(warning, /maxOutputTokens/);
  assert.match(warning, /topK/);
  assert.match(warning, /safetySettings/);
  assert.match(warning, /googleSearch/);
  const body = (await reply.json()) as { x_aihub: { warnings: string[] } };
  assert.ok(body.x_aihub.warnings.some((text) => /googleSearch/.test(text)));
});

/** A Gemini answer as Google's API sends it (one candidate, its text, its usage). */
function googleAnswer(text: string, usage?: Record<string, number>) {
  return {
    candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0 }],
    modelVersion: 'gemini-native-001',
    responseId: 'upstream-id',
    ...(usage ? { usageMetadata: usage } : {}),
  };
}

test('a target that speaks Gemini natively: the request passes through (cap put in, the key as x-goog-api-key), billed on usageMetadata', async () => {
  const price = await fetch(`${gateway.url}/v1beta/models/${NATIVE_MODEL}`, {
    headers: { 'x-goog-api-key': key },
  });
  const { pricing } = (await price.json()) as {
    pricing: { input_per_million: number; output_per_million: number };
  };
  const usage = {
    promptTokenCount: 1000,
    candidatesTokenCount: 400,
    thoughtsTokenCount: 100,
    totalTokenCount: 1500,
  };
  upstream.script({
    kind: 'exact',
    completion: {
      ...googleAnswer('Native hello.', usage),
      candidates: [
        {
          content: { role: 'model', parts: [{ text: 'Native hello.' }] },
          finishReason: 'STOP',
          index: 0,
        },
      ],
    },
  });
  const request_body = {
    contents: [{ role: 'user', parts: [{ text: 'Hi' }] }],
    safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
    generationConfig: { temperature: 0.5, maxOutputTokens: 10_000_000 },
  };
  const reply = await fetch(`${gateway.url}/v1beta/models/${NATIVE_MODEL}:generateContent`, {
    method: 'POST',
    headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(request_body),
  });
  assert.equal(reply.status, 200);
  const received = upstream.received.at(-1)!;
  assert.equal(received.url, '/v1/models/gemini-native:generateContent');
  assert.equal(received.headers['x-goog-api-key'], 'sk-scripted');
  assert.equal(received.headers.authorization, undefined);
  const tier_cap = (
    (await (
      await fetch(`${gateway.url}/v1/models/${NATIVE_MODEL}`, {
        headers: { authorization: `Bearer ${key}` },
      })
    ).json()) as {
      max_output_tokens: number;
    }
  ).max_output_tokens;
  assert.deepEqual(received.body, {
    ...request_body,
    generationConfig: { temperature: 0.5, maxOutputTokens: tier_cap },
  });
  const body = (await reply.json()) as Record<string, any>;
  assert.equal(body.modelVersion, NATIVE_MODEL);
  assert.equal(body.candidates[0].content.parts[0].text, 'Native hello.');
  const expected_micros = Math.round(
    1000 * pricing.input_per_million + 500 * pricing.output_per_million,
  );
  assert.equal(Math.round(body.x_aihub.cost * 1e6), expected_micros);
  assert.equal(body.x_aihub.prompt_tokens, 1000);
  assert.equal(body.x_aihub.completion_tokens, 500);
  assert.equal(body.x_aihub.target, 'google');
});

test('a native Gemini stream, as SSE and as a JSON array: relayed as sent, the bill on the last response', async () => {
  for (const sse of [true, false]) {
    upstream.script({
      kind: 'exact',
      chunks: [
        googleAnswer('Native '),
        {
          ...googleAnswer('stream.', {
            promptTokenCount: 30,
            candidatesTokenCount: 4,
            totalTokenCount: 34,
          }),
          candidates: [
            {
              content: { role: 'model', parts: [{ text: 'stream.' }] },
              finishReason: 'STOP',
              index: 0,
            },
          ],
        },
      ],
    });
    const reply = await fetch(
      `${gateway.url}/v1beta/models/${NATIVE_MODEL}:streamGenerateContent${sse ? '?alt=sse' : ''}`,
      {
        method: 'POST',
        headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ parts: [{ text: 'Hi' }] }] }),
      },
    );
    assert.equal(reply.status, 200);
    assert.equal(
      upstream.received.at(-1)!.url,
      '/v1/models/gemini-native:streamGenerateContent?alt=sse',
    );
    const text = await reply.text();
    const responses = (
      sse ? parseSseData(text).map((data) => JSON.parse(data)) : JSON.parse(text)
    ) as Array<Record<string, any>>;
    assert.equal(responses.length, 2, text);
    assert.deepEqual(
      responses.map((response) => response.candidates[0].content.parts[0].text),
      ['Native ', 'stream.'],
    );
    assert.ok(responses.every((response) => response.modelVersion === NATIVE_MODEL));
    assert.equal(responses[0]!.x_aihub, undefined);
    assert.equal(responses[1]!.x_aihub.prompt_tokens, 30);
    assert.equal(responses[1]!.x_aihub.completion_tokens, 4);
  }
});
