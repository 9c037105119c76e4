// The embedded defaults, no network: the structured-output and tool helpers of the openai
// SDK, LangChain and the AI SDK succeed against the built-in engine through the gateway.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { ChatOpenAI } from '@langchain/openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { createFundedAccount, runVerify, startGateway, type Gateway } from './helpers.js';

let gateway: Gateway;
let client: OpenAI;
let key: string;
const MODEL = 'service-ai-lite';

before(async () => {
  gateway = await startGateway();
  ({ key } = await createFundedAccount(gateway, 100));
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
});

after(async () => {
  assert.equal(await gateway.stop(), 0);
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});

const Meeting = z.object({
  title: z.string(),
  starts_at: z.string().datetime(),
  attendees: z.array(z.object({ name: z.string(), email: z.string().email() })),
  priority: z.enum(['low', 'normal', 'high']),
  room: z.number().int().nullable(),
});

test('openai SDK: chat.completions.parse with a zod schema, JSON and streamed', async () => {
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'user', content: 'Plan the budget review with Asha and Ravi' },
  ];
  const parsed = await client.chat.completions.parse({
    model: MODEL,
    messages,
    response_format: zodResponseFormat(Meeting, 'meeting'),
  });
  const meeting = parsed.choices[0]!.message.parsed!;
  assert.ok(Meeting.safeParse(meeting).success);
  assert.ok((parsed as unknown as { x_aihub: { cost: number } }).x_aihub.cost > 0, 'billed');
  const streamed = await client.chat.completions
    .stream({
      model: MODEL,
      messages,
      response_format: zodResponseFormat(Meeting, 'meeting'),
      seed: 1,
    })
    .finalChatCompletion();
  assert.ok(Meeting.safeParse(streamed.choices[0]!.message.parsed).success);
});

test('openai SDK: runTools calls the tool and answers with its result', async () => {
  const calls: string[] = [];
  const runner = client.chat.completions.runTools({
    model: MODEL,
    messages: [{ role: 'user', content: 'Use get_weather: what is the weather in Pune?' }],
    tools: [
      zodFunction({
        name: 'get_weather',
        description: 'Current weather of a city',
        parameters: z.object({ city: z.string() }),
        function: (args: { city: string }) => {
          calls.push(args.city);
          return { city: args.city, temperature_c: 31 };
        },
      }),
    ],
  });
  const text = await runner.finalContent();
  assert.equal(calls.length, 1);
  assert.match(text ?? '', /temperature_c/);
});

test('openai SDK: tool_choice required streams a tool call; n choices are billed', async () => {
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    tools: [
      {
        type: 'function',
        function: {
          name: 'lookup',
          parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
        },
      },
    ],
    tool_choice: 'required',
    stream: true,
  });
  let args = '';
  let finish: string | null = null;
  for await (const chunk of stream) {
    args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(typeof JSON.parse(args).q, 'string');
  assert.equal(finish, 'tool_calls');
  const one = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
  });
  const three = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'hi' }],
    n: 3,
  });
  assert.equal(three.choices.length, 3);
  assert.equal(new Set(three.choices.map((c) => c.message.content)).size, 3);
  assert.ok(
    three.usage!.completion_tokens > 2 * one.usage!.completion_tokens,
    'every choice is counted',
  );
});

test('LangChain: withStructuredOutput (json schema and function calling)', async () => {
  const model = new ChatOpenAI({
    model: MODEL,
    apiKey: key,
    configuration: { baseURL: `${gateway.url}/v1` },
    maxRetries: 0,
  });
  // @langchain/core 0.3 turns a zod 4 schema into JSON Schema without string formats, int or
  // min/max (seen: `z.string().email()` arrives as `{type: "string"}`), so the engine cannot
  // know them; this schema keeps to what reaches it.
  const Task = z.object({
    title: z.string(),
    steps: z.array(z.object({ owner: z.string(), done: z.boolean() })),
    priority: z.enum(['low', 'normal', 'high']),
    estimate_h: z.number().nullable(),
  });
  for (const method of ['jsonSchema', 'functionCalling'] as const) {
    const structured = model.withStructuredOutput(Task, { name: 'task', method });
    const task = await structured.invoke('Plan the budget review with Asha');
    assert.ok(Task.safeParse(task).success, `${method}: ${JSON.stringify(task)}`);
  }
});

test('AI SDK: generateObject, and a generateText tool loop with stopWhen', async () => {
  const openai = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key });
  const { object } = await generateObject({
    model: openai.chat(MODEL),
    schema: Meeting,
    prompt: 'Plan the budget review',
    maxRetries: 0,
  });
  assert.ok(Meeting.safeParse(object).success);
  const seen: string[] = [];
  const result = await generateText({
    model: openai.chat(MODEL),
    prompt: 'What is the weather in Delhi? Ask get_weather.',
    tools: {
      get_weather: tool({
        description: 'Current weather of a city',
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => {
          seen.push(city);
          return { city, sky: 'hazy' };
        },
      }),
    },
    stopWhen: stepCountIs(4),
    maxRetries: 0,
  });
  assert.equal(seen.length, 1);
  assert.equal(result.steps.length, 2);
  assert.match(result.text, /hazy/);
});

// The same contracts on the other protocols (issue #16: "the same on every protocol").
test('openai SDK: responses.parse with text.format, and a required function call, over /v1/responses', async () => {
  const input = 'Plan the budget review with Asha and Ravi';
  const parsed = await client.responses.parse({
    model: MODEL,
    input,
    text: { format: zodTextFormat(Meeting, 'meeting') },
  });
  assert.ok(Meeting.safeParse(parsed.output_parsed).success, JSON.stringify(parsed.output_parsed));
  const streamed = await client.responses
    .stream({ model: MODEL, input, text: { format: zodTextFormat(Meeting, 'meeting') } })
    .finalResponse();
  assert.ok(Meeting.safeParse(streamed.output_parsed).success);
  const weather = {
    type: 'function' as const,
    name: 'get_weather',
    description: 'Weather in a city',
    strict: true,
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  };
  const called = await client.responses.create({
    model: MODEL,
    input: 'Hello',
    tools: [weather],
    tool_choice: 'required',
  });
  const call = called.output.find((item) => item.type === 'function_call');
  assert.ok(call && call.type === 'function_call', JSON.stringify(called.output));
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof JSON.parse(call.arguments).city, 'string');
  const answered = await client.responses.create({
    model: MODEL,
    input: [
      { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
      { type: 'function_call_output', call_id: call.call_id, output: '{"temp_c":31}' },
    ],
    tools: [weather],
  });
  assert.match(answered.output_text, /31/);
});

test('Anthropic SDK: tool_choice any gives a tool_use block valid against input_schema; its result gets a text answer', async () => {
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
  const tools: Anthropic.Tool[] = [
    {
      name: 'get_weather',
      description: 'Weather in a city',
      input_schema: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 } },
        required: ['city', 'days'],
      },
    },
  ];
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Hello' }];
  const first = await anthropic.messages.create({
    model: MODEL,
    max_tokens: 300,
    tools,
    tool_choice: { type: 'any' },
    messages,
  });
  assert.equal(first.stop_reason, 'tool_use');
  const use = first.content.find((block) => block.type === 'tool_use') as Anthropic.ToolUseBlock;
  const input = use.input as { city: unknown; days: unknown };
  assert.equal(typeof input.city, 'string');
  assert.ok(
    Number.isInteger(input.days) && (input.days as number) >= 1 && (input.days as number) <= 7,
    JSON.stringify(input),
  );
  const streamed = await anthropic.messages
    .stream({
      model: MODEL,
      max_tokens: 300,
      tools,
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages,
    })
    .finalMessage();
  assert.equal(streamed.stop_reason, 'tool_use');
  const second = await anthropic.messages.create({
    model: MODEL,
    max_tokens: 300,
    tools,
    messages: [
      ...messages,
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temp_c":31}' }],
      },
    ],
  });
  assert.equal(second.stop_reason, 'end_turn');
  assert.match((second.content[0] as Anthropic.TextBlock).text, /31/);
});

test('under an agent, the engine calls no tool unless forced or named: it says it is the offline engine and what to do', async () => {
  const anthropic = new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
  const schema = { type: 'object' as const, properties: { command: { type: 'string' } } };
  // Claude Code's kind of tools: plain-word names, descriptions full of common words.
  const claude_tools: Anthropic.Tool[] = ['Bash', 'Write', 'Read', 'TodoWrite'].map((name) => ({
    name,
    description: `${name}: executes a given command, writes a short sentence or a file, says hello`,
    input_schema: schema,
  }));
  const hello = 'Say hello in one short sentence.';
  const said = await anthropic.messages.create({
    model: MODEL,
    max_tokens: 400,
    tools: claude_tools,
    messages: [
      {
        role: 'user',
        content: [
          {
            type: 'text',
            text: '<system-reminder>Use the TodoWrite tool often.</system-reminder>',
          },
          { type: 'text', text: hello },
        ],
      },
    ],
  });
  assert.equal(said.stop_reason, 'end_turn');
  assert.ok(!said.content.some((block) => block.type === 'tool_use'));
  const text = (said.content[0] as Anthropic.TextBlock).text;
  assert.match(text, /offline engine/);
  assert.match(text, /point this tier at a real model/);
  const streamed = await anthropic.messages
    .stream({
      model: MODEL,
      max_tokens: 400,
      tools: claude_tools,
      messages: [{ role: 'user', content: 'Write a poem' }],
    })
    .finalMessage();
  assert.ok(!streamed.content.some((block) => block.type === 'tool_use'));

  // Codex's and opencode's protocols, the same.
  const codex = await client.responses.create({
    model: MODEL,
    input: hello,
    tools: [{ type: 'function', name: 'shell', strict: false, parameters: schema }],
  });
  assert.ok(!codex.output.some((item) => item.type === 'function_call'));
  const opencode = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: hello }],
    tools: [{ type: 'function', function: { name: 'todowrite', parameters: schema } }],
  });
  assert.equal(opencode.choices[0]!.finish_reason, 'stop');

  // Named, it is called.
  const named = await anthropic.messages.create({
    model: MODEL,
    max_tokens: 400,
    tools: claude_tools,
    messages: [{ role: 'user', content: 'List the files with the Bash tool.' }],
  });
  const use = named.content.find((block) => block.type === 'tool_use') as Anthropic.ToolUseBlock;
  assert.equal(use?.name, 'Bash');
});
