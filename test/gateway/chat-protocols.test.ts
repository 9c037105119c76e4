// The Responses API and Anthropic's Messages API through their official SDKs against the
// real gateway process (every tier on the built-in engine, one tier on a scripted upstream
// that answers with tool calls), billed on the same key and wallet as chat completions.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { ScriptedUpstream } from '../support/scripted-upstream.js';
import { createFundedAccount, request, startGatewayWithChat, type Gateway } from './helpers.js';

let gateway: Gateway;
let upstream: ScriptedUpstream;
let key: string;
let openai: OpenAI;
let anthropic: Anthropic;
const TOOLS_MODEL = 'service-ai-max';
/** A tier whose target speaks the Responses and Messages protocols natively. */
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
      native: {
        type: 'openai-compatible',
        base_url: upstream.base_url,
        api_key_env: 'SCRIPTED_KEY',
        model: 'native-model',
        protocols: ['responses', 'messages'],
      },
    },
    models: { [TOOLS_MODEL]: { targets: ['scripted'] }, [NATIVE_MODEL]: { targets: ['native'] } },
  });
  ({ key } = await createFundedAccount(gateway, 5000));
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
  await upstream.close();
});

type WithBill = {
  x_aihub?: { cost: number; balance: number; request_id: string; target: string | null };
};

const weatherTool = {
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** A chat completion carrying one call of get_weather, as JSON and as chunks. */
function scriptToolCall(): void {
  const call = {
    id: 'call_1',
    type: 'function',
    function: { name: 'get_weather', arguments: '{"city":"Pune"}' },
  };
  upstream.script({
    kind: 'exact',
    completion: {
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, tool_calls: [call] },
          finish_reason: 'tool_calls',
        },
      ],
      usage: {
        prompt_tokens: 40,
        completion_tokens: 12,
        prompt_tokens_details: { cached_tokens: 8 },
        completion_tokens_details: { reasoning_tokens: 3 },
      },
    },
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
                  id: 'call_1',
                  type: 'function',
                  function: { name: 'get_weather', arguments: '' },
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
            delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
            finish_reason: null,
          },
        ],
      },
      {
        choices: [
          {
            index: 0,
            delta: { tool_calls: [{ index: 0, function: { arguments: '"Pune"}' } }] },
            finish_reason: null,
          },
        ],
      },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { choices: [], usage: { prompt_tokens: 40, completion_tokens: 12 } },
    ],
  });
}

test('responses.create: text input, instructions, usage details, x_aihub and the x-aihub-* headers', async () => {
  const { data, response } = await openai.responses
    .create({
      model: 'service-ai-lite',
      input: 'Hello! What can you do?',
      instructions: 'Answer briefly.',
    })
    .withResponse();
  assert.equal(data.object, 'response');
  assert.equal(data.status, 'completed');
  assert.equal(data.model, 'service-ai-lite');
  assert.match(data.output_text, /offline engine/);
  assert.ok(data.usage!.input_tokens > 0 && data.usage!.output_tokens > 0);
  assert.equal(data.usage!.input_tokens_details.cached_tokens, 0);
  assert.equal(data.usage!.output_tokens_details.reasoning_tokens, 0);
  const x = (data as unknown as WithBill).x_aihub!;
  assert.equal(x.request_id, response.headers.get('x-request-id'));
  assert.equal(x.target, 'builtin');
  assert.equal(response.headers.get('x-aihub-request-id'), x.request_id);
  assert.equal(Number(response.headers.get('x-aihub-cost')), x.cost);
  assert.equal(Number(response.headers.get('x-aihub-balance')), x.balance);
  assert.ok(Math.round(x.cost * 1e6) > 0);
});

test('responses.stream(): the SDK accumulates the events into the final response', async () => {
  const stream = openai.responses.stream({
    model: 'service-ai-lite',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello there' }] }],
  });
  const types: string[] = [];
  let text = '';
  stream.on('response.output_text.delta', (event) => (text += event.delta));
  for await (const event of stream) types.push(event.type);
  const final = await stream.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.equal(types[1], 'response.in_progress');
  assert.deepEqual(types.slice(2, 4), [
    'response.output_item.added',
    'response.content_part.added',
  ]);
  assert.deepEqual(types.slice(-4), [
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.completed',
  ]);
  assert.equal(final.status, 'completed');
  assert.equal(final.output_text, text);
  assert.match(text, /offline engine/);
  assert.ok(final.usage!.output_tokens > 0);
  assert.ok((final as unknown as WithBill).x_aihub!.cost > 0);
});

test('responses: a function tool round trip, JSON and streamed, translated to chat tools both ways', async () => {
  scriptToolCall();
  const first = await openai.responses.create({
    model: TOOLS_MODEL,
    input: 'Weather in Pune?',
    tools: [{ type: 'function', strict: false, ...weatherTool }],
    tool_choice: 'auto',
  });
  const sent = upstream.received.at(-1)!.body;
  assert.deepEqual(sent.tools, [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'Weather in a city',
        parameters: weatherTool.parameters,
        strict: false,
      },
    },
  ]);
  assert.equal(sent.tool_choice, 'auto');
  const call = first.output.find((item) => item.type === 'function_call')!;
  assert.ok(call && call.type === 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.equal(call.call_id, 'call_1');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Pune' });
  assert.equal(first.usage!.input_tokens_details.cached_tokens, 8);
  assert.equal(first.usage!.output_tokens_details.reasoning_tokens, 3);

  const second = await openai.responses.create({
    model: TOOLS_MODEL,
    input: [
      { role: 'user', content: 'Weather in Pune?' },
      call,
      { type: 'function_call_output', call_id: 'call_1', output: '31 °C, sunny' },
    ],
    tools: [{ type: 'function', strict: false, ...weatherTool }],
  });
  const messages = upstream.received.at(-1)!.body.messages;
  assert.deepEqual(messages.slice(1), [
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Pune"}' },
        },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '31 °C, sunny' },
  ]);
  assert.ok(second.output_text.length > 0);

  scriptToolCall();
  const stream = openai.responses.stream({
    model: TOOLS_MODEL,
    input: 'Weather in Pune?',
    tools: [{ type: 'function', strict: false, ...weatherTool }],
  });
  const deltas: string[] = [];
  stream.on('response.function_call_arguments.delta', (event) => deltas.push(event.delta));
  const final = await stream.finalResponse();
  assert.deepEqual(deltas, ['{"city":', '"Pune"}']);
  const streamed = final.output.find((item) => item.type === 'function_call');
  assert.ok(streamed && streamed.type === 'function_call');
  assert.equal(streamed.arguments, '{"city":"Pune"}');
  assert.equal(streamed.call_id, 'call_1');
});

test('responses: text.format json_schema becomes response_format; images become image_url parts', async () => {
  upstream.script({
    kind: 'exact',
    completion: {
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: '{"answer":"yes"}' },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 5 },
    },
  });
  const schema = {
    type: 'object',
    properties: { answer: { type: 'string' } },
    required: ['answer'],
    additionalProperties: false,
  };
  const data = await openai.responses.create({
    model: TOOLS_MODEL,
    input: [
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'Is this a cat?' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' },
        ],
      },
    ],
    text: { format: { type: 'json_schema', name: 'verdict', schema, strict: true } },
    max_output_tokens: 50,
  });
  const sent = upstream.received.at(-1)!.body;
  assert.deepEqual(sent.response_format, {
    type: 'json_schema',
    json_schema: { name: 'verdict', schema, strict: true },
  });
  assert.deepEqual(sent.messages[0].content[1], {
    type: 'image_url',
    image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' },
  });
  assert.equal(sent.max_tokens, 50);
  assert.deepEqual(JSON.parse(data.output_text), { answer: 'yes' });
});

test('responses: previous_response_id and unknown models answer clear 4xx errors', async () => {
  await assert.rejects(
    openai.responses.create({
      model: 'service-ai-lite',
      input: 'hi',
      previous_response_id: 'resp_1',
    }),
    (error: unknown) =>
      error instanceof OpenAI.BadRequestError && /previous_response_id/.test(error.message),
  );
  await assert.rejects(
    openai.responses.create({ model: 'gpt-nope', input: 'hi' }),
    OpenAI.NotFoundError,
  );
});

test('messages.create: system blocks, text answer, Anthropic usage and the x-aihub-* headers', async () => {
  const { data, response } = await anthropic.messages
    .create({
      model: 'service-ai-lite',
      max_tokens: 200,
      system: [{ type: 'text', text: 'You are terse.' }],
      messages: [{ role: 'user', content: 'Hello! What can you do?' }],
    })
    .withResponse();
  assert.equal(data.type, 'message');
  assert.equal(data.role, 'assistant');
  assert.equal(data.model, 'service-ai-lite');
  assert.equal(data.content[0]!.type, 'text');
  assert.match((data.content[0] as Anthropic.TextBlock).text, /offline engine/);
  assert.ok(['end_turn', 'max_tokens'].includes(data.stop_reason!));
  assert.ok(data.usage.input_tokens > 0 && data.usage.output_tokens > 0);
  assert.ok(Number(response.headers.get('x-aihub-cost')) > 0);
  assert.match(response.headers.get('x-aihub-request-id') ?? '', /^req_/);
});

test('messages.create: max_tokens cuts the answer with stop_reason max_tokens', async () => {
  const data = await anthropic.messages.create({
    model: 'service-ai-lite',
    max_tokens: 3,
    messages: [{ role: 'user', content: 'Hello! What can you do?' }],
  });
  assert.equal(data.stop_reason, 'max_tokens');
  assert.equal(data.usage.output_tokens, 3);
});

test('messages.stream: the SDK accumulates text and usage; the final event carries x_aihub', async () => {
  const stream = anthropic.messages.stream({
    model: 'service-ai-lite',
    max_tokens: 300,
    messages: [{ role: 'user', content: 'Hello there' }],
  });
  let text = '';
  const types: string[] = [];
  let bill: WithBill['x_aihub'];
  stream.on('text', (delta) => (text += delta));
  stream.on('streamEvent', (event) => {
    types.push(event.type);
    if (event.type === 'message_delta') bill = (event as unknown as WithBill).x_aihub;
  });
  const final = await stream.finalMessage();
  assert.deepEqual(types.slice(0, 2), ['message_start', 'content_block_start']);
  assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  assert.match(text, /offline engine/);
  assert.equal((final.content[0] as Anthropic.TextBlock).text, text);
  assert.ok(final.usage.output_tokens > 0);
  assert.ok(bill && bill.cost > 0 && bill.target === 'builtin');
});

test('messages: a Claude-Code-like tool_use → tool_result round trip, JSON and streamed', async () => {
  const tools: Anthropic.Tool[] = [
    {
      name: 'get_weather',
      description: 'Weather in a city',
      input_schema: {
        type: 'object',
        properties: { city: { type: 'string' } },
        required: ['city'],
      },
    },
    {
      name: 'read_file',
      description: 'Read a file',
      input_schema: { type: 'object', properties: { path: { type: 'string' } } },
    },
  ];
  scriptToolCall();
  const first = await anthropic.messages.create({
    model: TOOLS_MODEL,
    max_tokens: 500,
    system: [{ type: 'text', text: 'You are a coding agent.' }],
    tools,
    tool_choice: { type: 'any' },
    messages: [{ role: 'user', content: 'Weather in Pune?' }],
  });
  const sent = upstream.received.at(-1)!.body;
  assert.equal(sent.tool_choice, 'required');
  assert.equal(sent.tools.length, 2);
  assert.deepEqual(sent.tools[0], {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: tools[0]!.input_schema,
    },
  });
  assert.deepEqual(sent.messages[0], { role: 'system', content: 'You are a coding agent.' });
  assert.equal(first.stop_reason, 'tool_use');
  const use = first.content.find((block) => block.type === 'tool_use') as Anthropic.ToolUseBlock;
  assert.deepEqual(
    { id: use.id, name: use.name, input: use.input },
    { id: 'call_1', name: 'get_weather', input: { city: 'Pune' } },
  );
  assert.equal(first.usage.cache_read_input_tokens, 8);
  assert.equal(first.usage.input_tokens, 32);

  const second = await anthropic.messages.create({
    model: TOOLS_MODEL,
    max_tokens: 500,
    tools,
    messages: [
      { role: 'user', content: 'Weather in Pune?' },
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: use.id, content: '31 °C, sunny' },
          { type: 'text', text: 'And tomorrow?' },
        ],
      },
    ],
  });
  const messages = upstream.received.at(-1)!.body.messages;
  assert.deepEqual(messages.slice(1), [
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'call_1',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Pune"}' },
        },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '31 °C, sunny' },
    { role: 'user', content: [{ type: 'text', text: 'And tomorrow?' }] },
  ]);
  assert.equal(second.stop_reason, 'end_turn');

  scriptToolCall();
  const stream = anthropic.messages.stream({
    model: TOOLS_MODEL,
    max_tokens: 500,
    tools,
    messages: [{ role: 'user', content: 'Weather in Pune?' }],
  });
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, 'tool_use');
  const streamed = final.content.find(
    (block) => block.type === 'tool_use',
  ) as Anthropic.ToolUseBlock;
  assert.deepEqual(streamed.input, { city: 'Pune' });
  assert.equal(streamed.id, 'call_1');
});

test('messages: images and stop_sequences reach the upstream in chat form', async () => {
  upstream.script({
    kind: 'exact',
    completion: {
      choices: [
        { index: 0, message: { role: 'assistant', content: 'A cat.' }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 20, completion_tokens: 3 },
    },
  });
  await anthropic.messages.create({
    model: TOOLS_MODEL,
    max_tokens: 100,
    stop_sequences: ['\n\nHuman:'],
    messages: [
      {
        role: 'user',
        content: [
          {
            type: 'image',
            source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' },
          },
          { type: 'text', text: 'What is this?' },
        ],
      },
    ],
  });
  const sent = upstream.received.at(-1)!.body;
  assert.deepEqual(sent.stop, ['\n\nHuman:']);
  assert.deepEqual(sent.messages[0].content, [
    { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
    { type: 'text', text: 'What is this?' },
  ]);
});

test('messages.countTokens counts the prompt the way the hold does', async () => {
  const counted = await anthropic.messages.countTokens({
    model: 'service-ai-lite',
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
  });
  assert.ok(counted.input_tokens > 5 && counted.input_tokens < 40);
});

test('messages: typed errors from the Anthropic SDK (401, 402, 404, 400) in Anthropic shape', async () => {
  const stranger = new Anthropic({
    baseURL: gateway.url,
    apiKey: 'sk-aihub-not-a-key',
    maxRetries: 0,
  });
  await assert.rejects(
    stranger.messages.create({
      model: 'service-ai-lite',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    }),
    Anthropic.AuthenticationError,
  );
  await assert.rejects(
    anthropic.messages.create({
      model: 'claude-nope',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }],
    }),
    Anthropic.NotFoundError,
  );
  const broke = await createFundedAccount(gateway, 0);
  const poor = new Anthropic({ baseURL: gateway.url, apiKey: broke.key, maxRetries: 0 });
  await assert.rejects(
    poor.messages.create({
      model: 'service-ai-pro-4',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    }),
    (error: unknown) => {
      assert.ok(error instanceof Anthropic.APIError);
      assert.equal(error.status, 402);
      assert.match(error.message, /top up at http/);
      return true;
    },
  );
  const raw = await request(`${gateway.url}/v1/messages`, {
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: { model: 'service-ai-lite', messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(raw.status, 400);
  assert.equal(raw.body.type, 'error');
  assert.equal(raw.body.error.type, 'invalid_request_error');
  assert.match(raw.body.error.message, /max_tokens/);
});

test('GET /v1/models serves the OpenAI and the Anthropic SDK', async () => {
  const openaiIds: string[] = [];
  for await (const model of openai.models.list()) openaiIds.push(model.id);
  const anthropicModels: Anthropic.ModelInfo[] = [];
  for await (const model of anthropic.models.list()) anthropicModels.push(model);
  assert.deepEqual(
    anthropicModels.map((m) => m.id),
    openaiIds,
  );
  assert.ok(
    anthropicModels.every(
      (m) => m.type === 'model' && m.display_name && !Number.isNaN(Date.parse(m.created_at)),
    ),
  );
});

test('every request is recorded with its protocol', async () => {
  const metrics = await request(`${gateway.url}/metrics`, {
    headers: { authorization: `Bearer ${gateway.admin_token}` },
  });
  const text = String(metrics.body);
  assert.match(text, /aihub_chat_protocol_requests_total\{protocol="responses"\} [1-9]/);
  assert.match(text, /aihub_chat_protocol_requests_total\{protocol="messages"\} [1-9]/);
});

const cosine = (a: number[], b: number[]) => a.reduce((sum, value, i) => sum + value * b[i]!, 0);

test('embeddings.create: deterministic unit vectors, similar texts closer, dimensions, float and base64', async () => {
  const texts = [
    'How do I reset my password?',
    'How can I reset my password',
    'The train to Mumbai leaves at noon',
  ];
  // The openai SDK asks for base64 by default and decodes it.
  const { data, response } = await openai.embeddings
    .create({ model: 'service-ai-lite', input: texts })
    .withResponse();
  assert.equal(data.data.length, 3);
  const [a, b, c] = data.data.map((item) => item.embedding) as [number[], number[], number[]];
  assert.equal(a.length, 256);
  for (const vector of [a, b, c]) assert.ok(Math.abs(cosine(vector, vector) - 1) < 1e-5);
  assert.ok(cosine(a, b) > 0.7, `similar: ${cosine(a, b)}`);
  assert.ok(cosine(a, b) > cosine(a, c) + 0.3, `unrelated: ${cosine(a, c)}`);
  assert.ok(data.usage.prompt_tokens > 10);
  assert.ok(Number(response.headers.get('x-aihub-cost')) > 0);
  const floats = await openai.embeddings.create({
    model: 'service-ai-lite',
    input: texts[0]!,
    dimensions: 64,
    encoding_format: 'float',
  });
  assert.equal(floats.data[0]!.embedding.length, 64);
  const again = await openai.embeddings.create({
    model: 'service-ai-lite',
    input: [texts[0]!],
    dimensions: 64,
    encoding_format: 'float',
  });
  assert.deepEqual(again.data[0]!.embedding, floats.data[0]!.embedding);
  const tokens = await openai.embeddings.create({
    model: 'service-ai-lite',
    input: [9906, 1917],
    encoding_format: 'float',
  });
  assert.equal(tokens.usage.prompt_tokens, 2);
});

test('completions.create with suffix: the built-in engine fills the middle of code', async () => {
  const data = await openai.completions.create({
    model: 'service-ai-lite',
    prompt: 'function add(a, b) {\n  return a + b;',
    suffix: '\n\nconsole.log(add(1, 2));',
    max_tokens: 20,
  });
  assert.equal(data.object, 'text_completion');
  assert.equal(data.choices[0]!.text, '\n}');
  assert.equal(data.choices[0]!.finish_reason, 'stop');
  const line = await openai.completions.create({
    model: 'service-ai-lite',
    prompt: 'const a = 1;\nconsole.log(add(1, 2',
    suffix: '\n',
    max_tokens: 20,
  });
  assert.equal(line.choices[0]!.text, '));');
  const stream = await openai.completions.create({
    model: 'service-ai-lite',
    prompt: 'if (ready) {',
    suffix: '',
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, '\n  \n}');
});

test('completions: an upstream without suffix gets a FIM prompt', async () => {
  upstream.script({
    kind: 'exact',
    completion: {
      choices: [
        { index: 0, message: { role: 'assistant', content: ' + b' }, finish_reason: 'stop' },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 2 },
    },
  });
  const data = await openai.completions.create({
    model: TOOLS_MODEL,
    prompt: 'return a',
    suffix: ';\n}',
    max_tokens: 10,
    stop: ['\n\n'],
  });
  const sent = upstream.received.at(-1)!.body;
  assert.equal(
    sent.messages.at(-1).content,
    '<|fim_prefix|>return a<|fim_suffix|>;\n}<|fim_middle|>',
  );
  assert.deepEqual(sent.stop, ['\n\n']);
  assert.equal(data.choices[0]!.text, ' + b');
});

test('exact billing across all four protocols and chat: the wallet moves by the sum of the reported costs', async () => {
  const account = await createFundedAccount(gateway, 50);
  const c = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: account.key, maxRetries: 0 });
  const a = new Anthropic({ baseURL: gateway.url, apiKey: account.key, maxRetries: 0 });
  const micros = (units: number) => Math.round(units * 1e6);
  const costs: number[] = [];
  const header = (response: Response) => micros(Number(response.headers.get('x-aihub-cost')));
  costs.push(
    header(
      (
        await c.chat.completions
          .create({ model: 'service-ai-pro-4', messages: [{ role: 'user', content: 'Hello' }] })
          .withResponse()
      ).response,
    ),
  );
  costs.push(
    header(
      (await c.responses.create({ model: 'service-ai-pro-4', input: 'Hello' }).withResponse())
        .response,
    ),
  );
  costs.push(
    header(
      (
        await a.messages
          .create({
            model: 'service-ai-pro-4',
            max_tokens: 64,
            messages: [{ role: 'user', content: 'Hello' }],
          })
          .withResponse()
      ).response,
    ),
  );
  costs.push(
    header(
      (
        await c.embeddings
          .create({ model: 'service-ai-pro-4', input: ['Hello world', 'Goodbye'] })
          .withResponse()
      ).response,
    ),
  );
  costs.push(
    header(
      (
        await c.completions
          .create({ model: 'service-ai-pro-4', prompt: 'let x = [1, 2', suffix: '' })
          .withResponse()
      ).response,
    ),
  );
  const stream = c.responses.stream({ model: 'service-ai-pro-4', input: 'Hello' });
  costs.push(micros(((await stream.finalResponse()) as unknown as WithBill).x_aihub!.cost));
  const messages = a.messages.stream({
    model: 'service-ai-pro-4',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  let bill: WithBill['x_aihub'];
  messages.on('streamEvent', (event) => {
    if (event.type === 'message_delta') bill = (event as unknown as WithBill).x_aihub;
  });
  await messages.finalMessage();
  costs.push(micros(bill!.cost));
  assert.ok(
    costs.every((cost) => cost > 0),
    String(costs),
  );
  const balance = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${account.key}` },
  });
  assert.equal(
    micros(balance.body.balance),
    50_000_000 - costs.reduce((sum, cost) => sum + cost, 0),
  );
  assert.equal(
    micros(balance.body.usage.cost),
    costs.reduce((sum, cost) => sum + cost, 0),
  );
  assert.equal(balance.body.usage.requests, 7);
});

test('native pass-through: a target that speaks Responses and Messages gets the request as it came, model and cap replaced', async () => {
  upstream.script({
    kind: 'exact',
    completion: {
      id: 'resp_up',
      object: 'response',
      created_at: 1,
      status: 'completed',
      model: 'native-model',
      output: [
        {
          type: 'message',
          id: 'msg_up',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'native hello', annotations: [] }],
        },
      ],
      usage: {
        input_tokens: 11,
        output_tokens: 4,
        total_tokens: 15,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    },
  });
  const { data, response } = await openai.responses
    .create({ model: NATIVE_MODEL, input: 'hi', store: false, reasoning: { effort: 'low' } })
    .withResponse();
  const received = upstream.received.at(-1)!;
  assert.equal(received.url, '/v1/responses');
  assert.equal(received.body.model, 'native-model');
  assert.equal(received.body.input, 'hi');
  assert.deepEqual(received.body.reasoning, { effort: 'low' });
  assert.equal(typeof received.body.max_output_tokens, 'number');
  assert.equal(data.output_text, 'native hello');
  assert.equal(data.model, NATIVE_MODEL);
  // standard: 100 and 400 INR per million tokens.
  assert.equal(
    Math.round(Number(response.headers.get('x-aihub-cost')) * 1e6),
    Math.ceil((11 * 100_000_000 + 4 * 400_000_000) / 1_000_000),
  );

  upstream.script({
    kind: 'exact',
    chunks: [
      {
        type: 'message_start',
        message: {
          id: 'msg_up',
          type: 'message',
          role: 'assistant',
          model: 'native-model',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 9, output_tokens: 1 },
        },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'native ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'stream' } },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 2 },
      },
      { type: 'message_stop' },
    ],
  });
  const stream = anthropic.messages.stream({
    model: NATIVE_MODEL,
    max_tokens: 100,
    messages: [{ role: 'user', content: 'hi' }],
  });
  let bill: WithBill['x_aihub'];
  stream.on('streamEvent', (event) => {
    if (event.type === 'message_delta') bill = (event as unknown as WithBill).x_aihub;
  });
  const final = await stream.finalMessage();
  const sent = upstream.received.at(-1)!;
  assert.equal(sent.url, '/v1/messages');
  assert.equal(sent.headers['x-api-key'], 'sk-scripted');
  assert.equal(sent.body.model, 'native-model');
  assert.equal(sent.body.max_tokens, 100);
  assert.equal((final.content[0] as Anthropic.TextBlock).text, 'native stream');
  assert.equal(final.model, NATIVE_MODEL);
  assert.equal(final.usage.output_tokens, 2);
  assert.equal(
    Math.round(bill!.cost * 1e6),
    Math.ceil((9 * 100_000_000 + 2 * 400_000_000) / 1_000_000),
  );
  assert.equal(bill!.target, 'native');
});
