// The embedded defaults, no network: the structured-output and tool helpers of the openai
// SDK, LangChain and the AI SDK succeed against the built-in engine through the gateway.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
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
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Plan the budget review with Asha and Ravi' }];
  const parsed = await client.chat.completions.parse({ model: MODEL, messages, response_format: zodResponseFormat(Meeting, 'meeting') });
  const meeting = parsed.choices[0]!.message.parsed!;
  assert.ok(Meeting.safeParse(meeting).success);
  assert.ok((parsed as unknown as { x_aihub: { cost: number } }).x_aihub.cost > 0, 'billed');
  const streamed = await client.chat.completions.stream({ model: MODEL, messages, response_format: zodResponseFormat(Meeting, 'meeting'), seed: 1 }).finalChatCompletion();
  assert.ok(Meeting.safeParse(streamed.choices[0]!.message.parsed).success);
});

test('openai SDK: runTools calls the tool and answers with its result', async () => {
  const calls: string[] = [];
  const runner = client.chat.completions.runTools({
    model: MODEL,
    messages: [{ role: 'user', content: 'What is the weather in Pune?' }],
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
    tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } }],
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
  const one = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
  const three = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], n: 3 });
  assert.equal(three.choices.length, 3);
  assert.equal(new Set(three.choices.map((c) => c.message.content)).size, 3);
  assert.ok(three.usage!.completion_tokens > 2 * one.usage!.completion_tokens, 'every choice is counted');
});

test('LangChain: withStructuredOutput (json schema and function calling)', async () => {
  const model = new ChatOpenAI({ model: MODEL, apiKey: key, configuration: { baseURL: `${gateway.url}/v1` }, maxRetries: 0 });
  // @langchain/core 0.3 turns a zod 4 schema into JSON Schema without string formats, int or
  // min/max (seen: `z.string().email()` arrives as `{type: "string"}`), so the engine cannot
  // know them; this schema keeps to what reaches it.
  const Task = z.object({ title: z.string(), steps: z.array(z.object({ owner: z.string(), done: z.boolean() })), priority: z.enum(['low', 'normal', 'high']), estimate_h: z.number().nullable() });
  for (const method of ['jsonSchema', 'functionCalling'] as const) {
    const structured = model.withStructuredOutput(Task, { name: 'task', method });
    const task = await structured.invoke('Plan the budget review with Asha');
    assert.ok(Task.safeParse(task).success, `${method}: ${JSON.stringify(task)}`);
  }
});

test('AI SDK: generateObject, and a generateText tool loop with stopWhen', async () => {
  const openai = createOpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key });
  const { object } = await generateObject({ model: openai.chat(MODEL), schema: Meeting, prompt: 'Plan the budget review', maxRetries: 0 });
  assert.ok(Meeting.safeParse(object).success);
  const seen: string[] = [];
  const result = await generateText({
    model: openai.chat(MODEL),
    prompt: 'What is the weather in Delhi?',
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
