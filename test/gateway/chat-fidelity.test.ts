// Chat fidelity through the real gateway in front of a scripted upstream: a tool loop as the
// openai SDK, LangChain and the AI SDK run it (each appends the previous answer's message as
// it came), streamed and not, with every message field reaching the upstream unchanged;
// usage details kept in streams; the upstream's own error code and param relayed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { ChatOpenAI } from '@langchain/openai';
import {
  HumanMessage,
  ToolMessage,
  type AIMessageChunk,
  type BaseMessage,
} from '@langchain/core/messages';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { ScriptedUpstream, type Behavior } from '../support/scripted-upstream.js';
import { createFundedAccount, runVerify, startGateway, tempDir, type Gateway } from './helpers.js';

let upstream: ScriptedUpstream;
let gateway: Gateway;
let client: OpenAI;
let key: string;
const MODEL = 'service-ai-standard-6';

before(async () => {
  upstream = await ScriptedUpstream.start({ kind: 'ok', content: 'fine' });
  const dir = tempDir('aihub-chat-fidelity-');
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      chat: {
        engines: {
          up: {
            type: 'openai-compatible',
            base_url: upstream.base_url,
            model: 'upstream-model',
            timeout_ms: 5_000,
          },
        },
        models: { [MODEL]: { targets: ['up'] } },
      },
    }),
  );
  gateway = await startGateway({ args: ['--config', config] });
  ({ key } = await createFundedAccount(gateway, 1_000));
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
});

after(async () => {
  assert.equal(await gateway.stop(), 0);
  await upstream.close();
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});

const weatherTool: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

/** Three turns: a tool call, another tool call, then text; the message of each carries the fields real upstreams add. */
function scriptLoop(): void {
  const extra = {
    annotations: [],
    reasoning_content: 'thinking about the weather',
    refusal: null,
    function_call: null,
  };
  upstream.script(
    {
      kind: 'ok',
      tool_calls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Pune"}' }],
      message_extra: extra,
    },
    {
      kind: 'ok',
      tool_calls: [{ id: 'call_2', name: 'get_weather', arguments: '{"city":"Delhi"}' }],
      message_extra: extra,
    },
    {
      kind: 'ok',
      content: 'Pune is sunny and Delhi is hazy.',
      message_extra: extra,
    } satisfies Behavior,
  );
}

/** A LangChain stream's chunks, concatenated into the one message invoke() would give. */
async function collect(stream: AsyncIterable<AIMessageChunk>): Promise<AIMessageChunk> {
  let all: AIMessageChunk | undefined;
  for await (const chunk of stream) all = all ? all.concat(chunk) : chunk;
  assert.ok(all, 'the stream gave at least one chunk');
  return all;
}

/** What the upstream received in its last `count` requests must equal what the client sent (JSON round trip). */
function lastReceived(count: number): Array<Record<string, unknown>> {
  return upstream.received.slice(-count).map((r) => r.body as Record<string, unknown>);
}

for (const streamed of [false, true]) {
  test(`openai SDK: a three-turn tool loop appending each answer's message, ${streamed ? 'streamed' : 'not streamed'}, reaches the upstream unchanged`, async () => {
    scriptLoop();
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      {
        role: 'system',
        content: [
          {
            type: 'text',
            text: 'You are terse.',
            cache_control: { type: 'ephemeral' },
          } as OpenAI.ChatCompletionContentPartText,
        ],
      },
      { role: 'user', content: 'Weather in Pune and Delhi?' },
    ];
    const sent: unknown[] = [];
    for (let turn = 0; turn < 3; turn++) {
      sent.push(structuredClone(messages));
      let message: OpenAI.ChatCompletionMessage;
      if (streamed) {
        const final = await client.chat.completions
          .stream({
            model: MODEL,
            messages,
            tools: [weatherTool],
            stream_options: { include_usage: true },
          })
          .finalChatCompletion();
        message = final.choices[0]!.message; // carries `parsed: null`, as real apps append it
      } else {
        message = (
          await client.chat.completions.create({ model: MODEL, messages, tools: [weatherTool] })
        ).choices[0]!.message;
      }
      messages.push(message as OpenAI.ChatCompletionMessageParam);
      if (turn === 2) {
        assert.equal(message.content, 'Pune is sunny and Delhi is hazy.');
        break;
      }
      const call = message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
      assert.equal(call.function.name, 'get_weather');
      messages.push({
        role: 'tool',
        tool_call_id: call.id,
        content: `{"sky":"clear"}`,
        name: 'get_weather',
      } as OpenAI.ChatCompletionToolMessageParam);
    }
    const received = lastReceived(3);
    received.forEach((body, turn) =>
      assert.deepEqual(body.messages, JSON.parse(JSON.stringify(sent[turn])), `turn ${turn + 1}`),
    );
    const last = received[2]!.messages as Array<Record<string, unknown>>;
    if (streamed)
      assert.ok('parsed' in last[2]!, 'the stream helper adds `parsed`, which passes through');
    else {
      assert.equal(
        last[2]!.reasoning_content,
        'thinking about the weather',
        'reasoning_content passes through',
      );
      assert.deepEqual(last[2]!.annotations, []);
      assert.equal(last[2]!.function_call, null);
    }
  });
}

test('assistant prefix, cache_control on parts and name on tool messages pass through', async () => {
  const messages = [
    {
      role: 'user',
      content: [{ type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } }],
    },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      function_call: null,
    },
    { role: 'tool', tool_call_id: 'c1', name: 'f', content: 'done' },
    { role: 'assistant', content: '```python\n', prefix: true },
  ];
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  assert.deepEqual(lastReceived(1)[0]!.messages, messages);
});

test('roles and content types are still validated', async () => {
  for (const messages of [
    [{ role: 'wizard', content: 'x' }],
    [{ role: 'user', content: [{ type: 'video', url: 'x' }] }],
    [{ role: 'tool', content: 'x' }],
  ]) {
    const error = await client.chat.completions
      .create({ model: MODEL, messages: messages as never })
      .catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.BadRequestError, JSON.stringify(messages));
    assert.match(String(error.param), /^messages\[0\]/);
  }
});

test('LangChain: a three-turn tool loop with bindTools, streamed and not', async () => {
  for (const streaming of [false, true]) {
    scriptLoop();
    const model = new ChatOpenAI({
      model: MODEL,
      apiKey: key,
      configuration: { baseURL: `${gateway.url}/v1` },
      maxRetries: 0,
      streaming,
      streamUsage: true,
    });
    const bound = model.bindTools([weatherTool]);
    const history: BaseMessage[] = [new HumanMessage('Weather in Pune and Delhi?')];
    for (let turn = 0; turn < 3; turn++) {
      // Streamed through .stream(): LangChain 1's invoke() with streaming: true also estimates the
      // tokens with an encoding it downloads from tiktoken.pages.dev, retrying for minutes offline.
      const answer = streaming
        ? await collect(await bound.stream(history))
        : await bound.invoke(history);
      history.push(answer);
      if (turn === 2) {
        assert.equal(answer.content, 'Pune is sunny and Delhi is hazy.');
        break;
      }
      const call = answer.tool_calls![0]!;
      assert.equal(call.name, 'get_weather');
      history.push(new ToolMessage({ tool_call_id: call.id!, content: '{"sky":"clear"}' }));
    }
    const received = lastReceived(3);
    assert.equal(
      (received[2]!.messages as unknown[]).length,
      5,
      `streaming=${streaming}: user, call, result, call, result`,
    );
    const calls = (
      received[2]!.messages as Array<{ tool_calls?: Array<{ function: { arguments: string } }> }>
    ).flatMap((m) => m.tool_calls ?? []);
    assert.deepEqual(
      calls.map((c) => JSON.parse(c.function.arguments)),
      [{ city: 'Pune' }, { city: 'Delhi' }],
    );
  }
});

test('AI SDK: generateText and streamText run a three-turn tool loop with stopWhen', async () => {
  const openai = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key });
  const tools = {
    get_weather: tool({
      description: 'Weather of a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => ({ city, sky: 'clear' }),
    }),
  };
  scriptLoop();
  const result = await generateText({
    model: openai.chat(MODEL),
    prompt: 'Weather in Pune and Delhi?',
    tools,
    stopWhen: stepCountIs(5),
    maxRetries: 0,
  });
  assert.equal(result.text, 'Pune is sunny and Delhi is hazy.');
  assert.equal(result.steps.length, 3);
  const tool_results = (
    lastReceived(1)[0]!.messages as Array<{ role: string; content: string }>
  ).filter((m) => m.role === 'tool');
  assert.deepEqual(
    tool_results.map((m) => JSON.parse(m.content)),
    [
      { city: 'Pune', sky: 'clear' },
      { city: 'Delhi', sky: 'clear' },
    ],
  );

  scriptLoop();
  const streamed = streamText({
    model: openai.chat(MODEL),
    prompt: 'Weather in Pune and Delhi?',
    tools,
    stopWhen: stepCountIs(5),
    maxRetries: 0,
  });
  assert.equal(await streamed.text, 'Pune is sunny and Delhi is hazy.');
  assert.equal((await streamed.steps).length, 3);
});

test('a stream keeps prompt_tokens_details and completion_tokens_details in its usage chunk', async () => {
  const usage = {
    prompt_tokens: 1_000,
    completion_tokens: 50,
    prompt_tokens_details: { cached_tokens: 800, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 30 },
  };
  upstream.script(
    { kind: 'ok', content: 'streamed', usage },
    { kind: 'ok', content: 'plain', usage },
  );
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let last: OpenAI.ChatCompletionChunk | null = null;
  for await (const chunk of stream) if (chunk.usage) last = chunk;
  assert.equal(last!.usage!.prompt_tokens_details!.cached_tokens, 800);
  assert.equal(last!.usage!.completion_tokens_details!.reasoning_tokens, 30);
  const plain = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.deepEqual(
    plain.usage!.prompt_tokens_details,
    last!.usage!.prompt_tokens_details,
    'the same in a JSON answer',
  );

  // The AI SDK reads them from the stream too.
  upstream.script({ kind: 'ok', content: 'streamed', usage });
  const openai = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key });
  const result = streamText({ model: openai.chat(MODEL), prompt: 'hi', maxRetries: 0 });
  const total = await result.totalUsage;
  assert.equal(total.cachedInputTokens, 800);
  assert.equal(total.reasoningTokens, 30);
});

test("an upstream's 4xx reaches the client with its status, code, param and message", async () => {
  const body = {
    error: {
      message: "This model's maximum context length is 8192 tokens.",
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  };
  upstream.script(
    { kind: 'status', status: 400, body },
    {
      kind: 'status',
      status: 422,
      body: {
        error: {
          message: 'tools[0].function.parameters is invalid',
          type: 'invalid_request_error',
          param: 'tools[0].function.parameters',
          code: 'invalid_function_parameters',
        },
      },
    },
  );
  const error = await client.chat.completions
    .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
    .catch((e: unknown) => e);
  assert.ok(error instanceof OpenAI.BadRequestError);
  assert.equal(error.code, 'context_length_exceeded');
  assert.equal(error.param, 'messages');
  assert.equal(error.type, 'invalid_request_error');
  assert.match(error.message, /maximum context length is 8192 tokens/);
  const streamed = await client.chat.completions
    .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true })
    .catch((e: unknown) => e);
  assert.ok(
    streamed instanceof OpenAI.UnprocessableEntityError,
    'a stream that fails before its first byte gets the same',
  );
  assert.equal(streamed.code, 'invalid_function_parameters');
  assert.equal(streamed.param, 'tools[0].function.parameters');
});
