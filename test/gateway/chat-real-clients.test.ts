// What the real coding agents send, accepted and said (issue #24): an output limit above the
// tier's is capped on every protocol (held and billed on the cap, a warning header says so);
// Anthropic `system`/`developer` entries among the messages become system text in place;
// Codex CLI's `namespace` tools are flattened and their calls come back by name and
// namespace; hosted and Anthropic server tools are dropped with a warning; `developer` goes
// upstream as the engine says; refusals are worded as each protocol's API words them. Real
// gateway process, official SDKs, a scripted OpenAI-compatible upstream.
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
/** On the scripted upstream, developer text sent as `system` (the default). */
const LITE = 'service-ai-lite';
/** On the scripted upstream, developer text sent as `developer`. */
const STANDARD = 'service-ai-standard-6';

before(async () => {
  upstream = await ScriptedUpstream.start();
  const engine = {
    type: 'openai-compatible',
    base_url: upstream.base_url,
    api_key_env: 'SCRIPTED_KEY',
    model: 'scripted-model',
  };
  gateway = await startGatewayWithChat({
    engines: { scripted: engine, 'scripted-dev': { ...engine, developer_role: 'developer' } },
    models: { [LITE]: { targets: ['scripted'] }, [STANDARD]: { targets: ['scripted-dev'] } },
  });
  ({ key } = await createFundedAccount(gateway, 5000));
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
  await upstream.close();
});

const lastSent = () => upstream.received.at(-1)!.body;

test('an output limit above the tier is capped on every protocol, held on the cap and said in a warning', async () => {
  // 0.3 covers the lite tier's 4,096 output tokens (0.25), not the 32,000 asked for (1.92).
  const { key: small } = await createFundedAccount(gateway, 0.3);
  const poor = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: small, maxRetries: 0 });
  const poor_anthropic = new Anthropic({ baseURL: gateway.url, apiKey: small, maxRetries: 0 });
  const said = /max_tokens 32000 capped to 4096: service-ai-lite's output limit/;

  const chat = await poor.chat.completions
    .create({ model: LITE, messages: [{ role: 'user', content: 'hi' }], max_tokens: 32_000 })
    .withResponse();
  assert.equal(lastSent().max_tokens, 4096);
  assert.match(chat.response.headers.get('x-aihub-warning') ?? '', said);
  const bill = (chat.data as unknown as { x_aihub: { warnings: string[] } }).x_aihub;
  assert.match(bill.warnings.join('\n'), said);

  const streamed = await poor.chat.completions
    .create({
      model: LITE,
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 32_000,
      stream: true,
    })
    .withResponse();
  for await (const _ of streamed.data);
  assert.equal(lastSent().max_tokens, 4096);
  assert.match(
    streamed.response.headers.get('x-aihub-warning') ?? '',
    /max_completion_tokens 32000 capped to 4096/,
  );

  const responses = await poor.responses
    .create({ model: LITE, input: 'hi', max_output_tokens: 32_000 })
    .withResponse();
  assert.equal(lastSent().max_tokens, 4096);
  assert.equal(responses.data.max_output_tokens, 4096, 'the Response says the limit it ran under');
  assert.match(
    responses.response.headers.get('x-aihub-warning') ?? '',
    /max_output_tokens 32000 capped to 4096/,
  );

  // (The Anthropic SDK wants a stream past about 21,000 tokens.)
  const messages = await poor_anthropic.messages
    .create({ model: LITE, max_tokens: 20_000, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  assert.equal(lastSent().max_tokens, 4096);
  assert.match(
    messages.response.headers.get('x-aihub-warning') ?? '',
    /max_tokens 20000 capped to 4096/,
  );
  const stream = poor_anthropic.messages.stream({
    model: LITE,
    max_tokens: 32_000,
    messages: [{ role: 'user', content: 'hi' }],
  });
  const final = await stream.finalMessage();
  assert.equal(final.type, 'message');
  assert.equal(lastSent().max_tokens, 4096);

  const completions = await poor.completions
    .create({ model: LITE, prompt: 'def add(a, b):', max_tokens: 32_000 })
    .withResponse();
  assert.equal(lastSent().max_tokens, 4096);
  assert.match(completions.response.headers.get('x-aihub-warning') ?? '', said);
});

test('messages: system and developer entries among the messages become system text in place', async () => {
  const reply = await anthropic.messages.create({
    model: LITE,
    max_tokens: 100,
    system: 'You are Claude Code.',
    messages: [
      { role: 'user', content: 'list the files' },
      // As Claude Code sends its skill and agent lists to models not named claude-*.
      { role: 'system', content: 'Available skills: none.' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } }],
      },
      { role: 'developer', content: [{ type: 'text', text: 'Reminder: be brief.' }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.txt' },
          { type: 'text', text: 'and now?' },
        ],
      },
    ] as unknown as Anthropic.MessageParam[],
  });
  assert.equal(reply.type, 'message');
  assert.deepEqual(
    lastSent().messages.map((m: { role: string; content: unknown }) => [m.role, m.content]),
    [
      ['system', 'You are Claude Code.'],
      ['user', 'list the files'],
      ['system', 'Available skills: none.'],
      ['assistant', null],
      // The call's result first, as chat requires; the system text that came before it, then.
      ['tool', 'a.txt'],
      ['system', 'Reminder: be brief.'],
      ['user', [{ type: 'text', text: 'and now?' }]],
    ],
  );
  const counted = await anthropic.messages.countTokens({
    model: LITE,
    messages: [
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'Available skills: none.' },
    ] as unknown as Anthropic.MessageParam[],
  });
  assert.ok(counted.input_tokens > 5);
});

const spawnAgent = {
  type: 'function' as const,
  name: 'spawn_agent',
  description: 'Start a sub-agent',
  strict: false,
  parameters: { type: 'object', properties: { message: { type: 'string' } } },
};

/** Codex CLI's tools: functions, its multi-agent namespace, and the hosted web_search. */
const codexTools = [
  {
    type: 'function',
    name: 'shell',
    strict: false,
    parameters: { type: 'object', properties: { command: { type: 'string' } } },
  },
  {
    type: 'namespace',
    name: 'multi_agent_v1',
    description: 'Sub-agents',
    tools: [spawnAgent, { ...spawnAgent, name: 'wait_agent' }],
  },
  { type: 'web_search', external_web_access: false },
] as unknown as OpenAI.Responses.Tool[];

function scriptCall(name: string, args: string): void {
  const call = { id: 'call_ns', type: 'function', function: { name, arguments: args } };
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
      usage: { prompt_tokens: 50, completion_tokens: 9 },
    },
    chunks: [
      {
        choices: [
          {
            index: 0,
            delta: { role: 'assistant', tool_calls: [{ index: 0, ...call }] },
            finish_reason: null,
          },
        ],
      },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
      { choices: [], usage: { prompt_tokens: 50, completion_tokens: 9 } },
    ],
  });
}

test('responses: namespace tools are flattened, called back by name and namespace; web_search is dropped with a warning', async () => {
  scriptCall('multi_agent_v1__spawn_agent', '{"message":"go"}');
  const first = await openai.responses
    .create({ model: LITE, input: 'start a helper', tools: codexTools })
    .withResponse();
  assert.deepEqual(
    lastSent().tools.map((tool: { function: { name: string } }) => tool.function.name),
    ['shell', 'multi_agent_v1__spawn_agent', 'multi_agent_v1__wait_agent'],
  );
  assert.match(
    first.response.headers.get('x-aihub-warning') ?? '',
    /tools\[2\] \(type web_search\) dropped/,
  );
  const call = first.data.output.find((item) => item.type === 'function_call')!;
  assert.deepEqual(
    { name: call.name, namespace: (call as unknown as { namespace: string }).namespace },
    { name: 'spawn_agent', namespace: 'multi_agent_v1' },
  );

  // The next turn carries the call back as Codex stores it: name and namespace apart.
  await openai.responses.create({
    model: LITE,
    input: [
      { role: 'user', content: 'start a helper' },
      call,
      { type: 'function_call_output', call_id: 'call_ns', output: 'started' },
    ],
    tools: codexTools,
  });
  const history = lastSent().messages;
  assert.equal(history[1].tool_calls[0].function.name, 'multi_agent_v1__spawn_agent');
  assert.deepEqual(history[2], { role: 'tool', tool_call_id: 'call_ns', content: 'started' });

  scriptCall('multi_agent_v1__wait_agent', '{}');
  const stream = openai.responses.stream({ model: LITE, input: 'wait', tools: codexTools });
  const done: unknown[] = [];
  stream.on('response.output_item.done', (event) => done.push(event.item));
  const final = await stream.finalResponse();
  const streamed = final.output.find((item) => item.type === 'function_call') as unknown as {
    name: string;
    namespace: string;
  };
  assert.deepEqual([streamed.name, streamed.namespace], ['wait_agent', 'multi_agent_v1']);
  assert.equal((done[0] as { namespace: string }).namespace, 'multi_agent_v1');
});

test('messages: bash and the text editor become functions of their own input; server tools are dropped with a warning', async () => {
  const reply = await anthropic.messages
    .create({
      model: LITE,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'fix the bug' }],
      tools: [
        { type: 'bash_20250124', name: 'bash' },
        { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
        { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
        { name: 'Read', input_schema: { type: 'object', properties: {} } },
      ] as unknown as Anthropic.Messages.ToolUnion[],
    })
    .withResponse();
  const tools = lastSent().tools as {
    function: { name: string; parameters: { properties: Record<string, unknown> } };
  }[];
  assert.deepEqual(
    tools.map((tool) => tool.function.name),
    ['bash', 'str_replace_based_edit_tool', 'Read'],
  );
  assert.ok('command' in tools[0]!.function.parameters.properties);
  assert.ok('old_str' in tools[1]!.function.parameters.properties);
  assert.match(
    reply.response.headers.get('x-aihub-warning') ?? '',
    /tools\[2\] \(type web_search_20250305\) dropped/,
  );
});

test('developer text goes upstream as system, or as developer where the engine takes it', async () => {
  const input = [
    { role: 'developer' as const, content: 'Use tabs.' },
    { role: 'user' as const, content: 'hi' },
  ];
  await openai.responses.create({ model: LITE, input });
  assert.deepEqual(lastSent().messages[0], { role: 'system', content: 'Use tabs.' });
  await openai.responses.create({ model: STANDARD, input });
  assert.deepEqual(lastSent().messages[0], { role: 'developer', content: 'Use tabs.' });
  await openai.chat.completions.create({ model: LITE, messages: input });
  assert.deepEqual(lastSent().messages[0], { role: 'system', content: 'Use tabs.' });
});

test("refusals are worded as each protocol's API words them", async () => {
  // The free tier's context window is 8,192 tokens.
  const long = 'lorem ipsum '.repeat(9_000);
  const anthropic_long = await anthropic.messages
    .create({
      model: 'service-ai-free',
      max_tokens: 10,
      messages: [{ role: 'user', content: long }],
    })
    .catch((e: unknown) => e);
  assert.ok(anthropic_long instanceof Anthropic.BadRequestError);
  assert.match(anthropic_long.message, /prompt is too long: \d+ tokens > 8191 maximum/);
  const chat_long = await openai.chat.completions
    .create({ model: 'service-ai-free', messages: [{ role: 'user', content: long }] })
    .catch((e: unknown) => e);
  assert.ok(chat_long instanceof OpenAI.BadRequestError);
  assert.equal(chat_long.code, 'context_length_exceeded');
  assert.match(chat_long.message, /maximum context length is 8192 tokens/);

  const missing = await anthropic.messages
    .create({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
    .catch((e: unknown) => e);
  assert.ok(missing instanceof Anthropic.NotFoundError);
  assert.match(missing.message, /"model: claude-x/);

  const raw = await request(`${gateway.url}/v1/messages`, {
    headers: { 'x-api-key': key },
    body: { model: LITE, messages: [{ role: 'narrator', content: 'hi' }], max_tokens: 5 },
  });
  assert.equal(raw.status, 400);
  assert.equal(
    raw.body.error.message,
    "messages.0.role: Input should be 'user', 'assistant', 'system' or 'developer'",
  );
  const no_max = await request(`${gateway.url}/v1/messages`, {
    headers: { 'x-api-key': key },
    body: { model: LITE, messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(no_max.body.error.message, 'max_tokens: Field required');

  // An upstream's own context-length refusal reaches an Anthropic client in Anthropic's words.
  upstream.script({
    kind: 'status',
    status: 400,
    body: {
      error: {
        message:
          "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    },
  });
  const upstream_long = await anthropic.messages
    .create({ model: LITE, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
    .catch((e: unknown) => e);
  assert.ok(upstream_long instanceof Anthropic.BadRequestError);
  assert.match(upstream_long.message, /prompt is too long: 9000 tokens > 8192 maximum/);
});
