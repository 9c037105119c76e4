// Higher-level AI clients against the real gateway process on their defaults: the AI SDK's
// default OpenAI provider (which speaks the Responses API) and LangChain's ChatOpenAI with
// useResponsesApi. Every tier answers from the built-in engine except one, on a scripted
// upstream that asks for a tool call, so that tool calling is exercised end to end.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { ChatOpenAI } from '@langchain/openai';
import { ScriptedUpstream } from '../support/scripted-upstream.js';
import { createFundedAccount, startGatewayWithChat, type Gateway } from './helpers.js';

let gateway: Gateway;
let upstream: ScriptedUpstream;
let key: string;
const TOOLS_MODEL = 'service-ai-max';

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
    },
    models: { [TOOLS_MODEL]: { targets: ['scripted'] } },
  });
  ({ key } = await createFundedAccount(gateway, 5000));
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
  await upstream.close();
});

test('AI SDK default provider: generateText and streamText over /v1/responses', async () => {
  const aihub = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key });
  const result = await generateText({
    model: aihub('service-ai-lite'),
    prompt: 'Hello! What can you do?',
    maxRetries: 0,
  });
  assert.match(result.text, /offline engine/);
  assert.ok((result.usage.inputTokens ?? 0) > 0 && (result.usage.outputTokens ?? 0) > 0);
  const streamed = streamText({
    model: aihub('service-ai-lite'),
    prompt: 'Hello there',
    maxRetries: 0,
  });
  let text = '';
  for await (const delta of streamed.textStream) text += delta;
  assert.match(text, /offline engine/);
  assert.ok(((await streamed.usage).outputTokens ?? 0) > 0);
});

test('AI SDK default provider: a tool call comes back as a typed tool call', async () => {
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
  const aihub = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key });
  const result = await generateText({
    model: aihub(TOOLS_MODEL),
    prompt: 'Weather in Pune?',
    maxRetries: 0,
    tools: {
      get_weather: tool({
        description: 'Weather in a city',
        inputSchema: jsonSchema<{ city: string }>({
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
        }),
      }),
    },
  });
  assert.equal(result.toolCalls.length, 1);
  assert.equal(result.toolCalls[0]!.toolName, 'get_weather');
  assert.deepEqual(result.toolCalls[0]!.input, { city: 'Pune' });
  assert.equal(result.finishReason, 'tool-calls');
  assert.equal(upstream.received.at(-1)!.body.tools[0].function.name, 'get_weather');
});

test('LangChain ChatOpenAI with useResponsesApi: invoke and stream', async () => {
  const model = new ChatOpenAI({
    model: 'service-ai-lite',
    apiKey: key,
    configuration: { baseURL: `${gateway.url}/v1` },
    useResponsesApi: true,
    maxRetries: 0,
  });
  const reply = await model.invoke('Hello! What can you do?');
  assert.match(String(reply.text), /offline engine/);
  assert.ok((reply.usage_metadata?.output_tokens ?? 0) > 0);
  let text = '';
  for await (const chunk of await model.stream('Hello there')) text += chunk.text;
  assert.match(text, /offline engine/);
});
