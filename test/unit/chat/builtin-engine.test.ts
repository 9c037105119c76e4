// The built-in engine as a stand-in for integration tests: structured outputs valid against
// their schema (a fast-check property over random schemas of the documented subset, checked
// by ajv), tool calls, n choices, logprobs, stop and seed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { BuiltinEngine } from '../../../gateway/llm/engines/builtin.js';
import { instanceOf } from '../../../gateway/llm/engines/builtin-schema.js';
import type { ChatMessage } from '../../../gateway/llm/messages.js';
import type { EngineRequest, UpstreamChunk } from '../../../gateway/llm/types.js';

const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
const engine = new BuiltinEngine({ type: 'builtin', token_interval_ms: 0 });

function request(
  params: Record<string, unknown>,
  messages: ChatMessage[],
  max_output_tokens = 2_000,
): EngineRequest {
  return {
    params,
    messages,
    max_output_tokens,
    prompt_tokens_estimate: 10,
    signal: new AbortController().signal,
  };
}

// Random schemas of the documented subset.
const FORMATS = ['date-time', 'date', 'time', 'email', 'uri', 'uuid', 'hostname', 'ipv4', 'ipv6'];
const leaf = fc.oneof(
  fc
    .record(
      {
        type: fc.constant('string'),
        minLength: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
      },
      { requiredKeys: ['type'] },
    )
    .map((s) => ({ ...s, ...(s.minLength !== undefined ? { maxLength: s.minLength + 10 } : {}) })),
  fc.record({ type: fc.constant('string'), format: fc.constantFrom(...FORMATS) }),
  fc
    .record({
      type: fc.constant('integer'),
      minimum: fc.integer({ min: -50, max: 50 }),
      multipleOf: fc.constantFrom(1, 2, 5),
    })
    .map((s) => ({ ...s, maximum: s.minimum + 30 })),
  fc
    .record({ type: fc.constant('number'), exclusiveMinimum: fc.integer({ min: -10, max: 10 }) })
    .map((s) => ({ ...s, maximum: s.exclusiveMinimum + 1 })),
  fc.constant({ type: 'boolean' }),
  fc.constant({ type: 'null' }),
  fc
    .array(fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { minLength: 1, maxLength: 5 })
    .map((values) => ({ enum: values })),
  fc
    .oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean())
    .map((value) => ({ const: value })),
  fc.constant({ type: ['string', 'null'] }),
);
const { schema: arbitrarySchema } = fc.letrec((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    tie('object'),
    tie('array'),
    tie('anyOf'),
  ),
  object: fc
    .dictionary(fc.stringMatching(/^[a-z_]{1,10}$/), tie('schema'), { maxKeys: 5 })
    .chain((properties) =>
      fc.record({
        type: fc.constant('object'),
        properties: fc.constant(properties),
        required: fc.subarray(Object.keys(properties)),
        additionalProperties: fc.constantFrom(false, true),
      }),
    ),
  array: fc
    .record({
      type: fc.constant('array'),
      items: tie('schema'),
      minItems: fc.integer({ min: 0, max: 3 }),
    })
    .map((s) => ({ ...s, maxItems: s.minItems + 3 })),
  anyOf: fc
    .array(tie('schema'), { minLength: 1, maxLength: 3 })
    .map((branches) => ({ anyOf: branches })),
}));

test('property: every schema of the documented subset gets a valid instance, for any prompt and seed', () => {
  fc.assert(
    fc.property(
      arbitrarySchema,
      fc.string({ maxLength: 60 }),
      fc.integer(),
      (schema, prompt, seed) => {
        const value = instanceOf(schema, prompt, String(seed));
        const valid = ajv.validate(schema as object, value);
        if (!valid)
          throw new Error(
            `${JSON.stringify(value)} is not valid against ${JSON.stringify(schema)}: ${ajv.errorsText()}`,
          );
      },
    ),
    { seed: 20_261_122, numRuns: 250 },
  );
});

test('$ref to $defs (zod and pydantic output), nested and recursive, is followed', () => {
  const schema = {
    type: 'object',
    properties: { root: { $ref: '#/$defs/node' } },
    required: ['root'],
    additionalProperties: false,
    $defs: {
      node: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          children: { type: 'array', items: { $ref: '#/$defs/node' } },
        },
        required: ['name', 'children'],
        additionalProperties: false,
      },
    },
  };
  const value = instanceOf(schema, 'a tree of teams', '1');
  assert.ok(ajv.validate(schema, value), ajv.errorsText());
});

test('json_schema answers are valid, derived from the prompt, reproducible with a seed and different for another seed', async () => {
  const schema = {
    type: 'object',
    properties: {
      topic: { type: 'string' },
      when: { type: 'string', format: 'date-time' },
      count: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    },
    required: ['topic', 'when', 'count'],
    additionalProperties: false,
  };
  const params = {
    response_format: { type: 'json_schema', json_schema: { name: 'plan', schema, strict: true } },
    seed: 7,
  };
  const messages: ChatMessage[] = [
    { role: 'user', content: 'Schedule the quarterly budget review' },
  ];
  const a = await engine.complete(request(params, messages));
  const b = await engine.complete(request(params, messages));
  const c = await engine.complete(request({ ...params, seed: 8 }, messages));
  const value = JSON.parse(a.choices[0]!.message.content!);
  assert.ok(ajv.validate(schema, value), ajv.errorsText());
  assert.match(value.topic, /quarterly|budget|review|schedule/);
  assert.equal(
    a.choices[0]!.message.content,
    b.choices[0]!.message.content,
    'the same seed, the same answer',
  );
  assert.notEqual(a.choices[0]!.message.content, c.choices[0]!.message.content);
  assert.equal(a.usage!.completion_tokens > 0, true);
});

test('json_object answers are a JSON object', async () => {
  const r = await engine.complete(
    request({ response_format: { type: 'json_object' } }, [
      { role: 'user', content: 'List three colours as JSON' },
    ]),
  );
  const value = JSON.parse(r.choices[0]!.message.content!);
  assert.equal(typeof value, 'object');
  assert.ok(!Array.isArray(value) && value !== null);
});

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};
const stocks = {
  type: 'function',
  function: {
    name: 'lookup_stock_price',
    description: 'Latest share price of a ticker',
    parameters: {
      type: 'object',
      properties: { ticker: { type: 'string', minLength: 1, maxLength: 5 } },
      required: ['ticker'],
    },
  },
};

test('tools: required and named choices call a tool with valid arguments; auto calls one only when the message names it', async () => {
  const ask = (content: string, tool_choice?: unknown) =>
    engine.complete(
      request({ tools: [weather, stocks], ...(tool_choice ? { tool_choice } : {}) }, [
        { role: 'user', content },
      ]),
    );
  const required = await ask('hello there', 'required');
  assert.equal(required.choices[0]!.finish_reason, 'tool_calls');
  const named = await ask('hello there', {
    type: 'function',
    function: { name: 'lookup_stock_price' },
  });
  const call = (
    named.choices[0]!.message as {
      tool_calls: Array<{ id: string; function: { name: string; arguments: string } }>;
    }
  ).tool_calls[0]!;
  assert.equal(call.function.name, 'lookup_stock_price');
  assert.ok(
    ajv.validate(stocks.function.parameters, JSON.parse(call.function.arguments)),
    ajv.errorsText(),
  );
  assert.match(call.id, /^call_[0-9a-f]{24}$/);
  // The tool's purpose alone does not make a call: an agent's user did not ask for one.
  const purpose = await ask('What is the weather in Pune today?');
  assert.equal(purpose.choices[0]!.finish_reason, 'stop');
  assert.match(purpose.choices[0]!.message.content!, /calls one only when `tool_choice` forces it/);
  const auto = await ask('Use get_weather: what is the weather in Pune today?');
  const auto_call = (
    auto.choices[0]!.message as {
      tool_calls?: Array<{ function: { name: string; arguments: string } }>;
    }
  ).tool_calls?.[0];
  assert.equal(auto_call?.function.name, 'get_weather');
  assert.ok(ajv.validate(weather.function.parameters, JSON.parse(auto_call!.function.arguments)));
  const prose = await ask('Tell me a joke');
  assert.equal(prose.choices[0]!.finish_reason, 'stop');
  assert.match(prose.choices[0]!.message.content!, /offline engine/);
  const none = await ask('What is the weather in Pune today?', 'none');
  assert.equal(none.choices[0]!.finish_reason, 'stop');
});

test('after tool results, the answer is text that uses them', async () => {
  const messages: ChatMessage[] = [
    { role: 'user', content: 'What is the weather in Pune?' },
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
    { role: 'tool', tool_call_id: 'call_1', content: '{"temperature_c":31,"sky":"clear"}' },
  ];
  const r = await engine.complete(request({ tools: [weather] }, messages));
  assert.equal(r.choices[0]!.finish_reason, 'stop');
  assert.match(r.choices[0]!.message.content!, /get_weather/);
  assert.match(r.choices[0]!.message.content!, /"temperature_c":31/);
  assert.match(r.choices[0]!.message.content!, /offline engine/);
});

test('n choices are distinct and all counted; logprobs are well formed; stop cuts the text', async () => {
  const r = await engine.complete(
    request({ n: 3, logprobs: true, top_logprobs: 3 }, [{ role: 'user', content: 'hello' }]),
  );
  assert.equal(r.choices.length, 3);
  assert.equal(new Set(r.choices.map((c) => c.message.content)).size, 3);
  const one = await engine.complete(request({}, [{ role: 'user', content: 'hello' }]));
  assert.ok(r.usage!.completion_tokens > 2 * one.usage!.completion_tokens);
  const logprobs = (
    r.choices[0] as unknown as {
      logprobs: {
        content: Array<{
          token: string;
          logprob: number;
          bytes: number[];
          top_logprobs: Array<{ logprob: number }>;
        }>;
      };
    }
  ).logprobs.content;
  assert.equal(logprobs.map((l) => l.token).join(''), r.choices[0]!.message.content);
  for (const entry of logprobs) {
    assert.ok(entry.logprob <= 0);
    assert.deepEqual(entry.bytes, [...Buffer.from(entry.token)]);
    assert.equal(entry.top_logprobs.length, 3);
    assert.ok(entry.top_logprobs.every((t, i, all) => i === 0 || t.logprob <= all[i - 1]!.logprob));
  }
  const stopped = await engine.complete(
    request({ stop: ['offline'] }, [{ role: 'user', content: 'hello' }]),
  );
  assert.ok(!stopped.choices[0]!.message.content!.includes('offline'));
});

test('a streamed tool call assembles to the same call as the JSON answer', async () => {
  const req = () =>
    request({ tools: [weather], tool_choice: 'required', seed: 3 }, [
      { role: 'user', content: 'Weather in Delhi' },
    ]);
  const plain = await engine.complete(req());
  let args = '';
  let name = '';
  let finish: string | null | undefined = null;
  for await (const chunk of engine.stream(req()) as AsyncIterable<UpstreamChunk>) {
    for (const choice of chunk.choices ?? []) {
      const calls =
        (
          choice.delta as
            { tool_calls?: Array<{ function?: { name?: string; arguments?: string } }> } | undefined
        )?.tool_calls ?? [];
      for (const call of calls) {
        name += call.function?.name ?? '';
        args += call.function?.arguments ?? '';
      }
      finish = choice.finish_reason ?? finish;
    }
  }
  const call = (
    plain.choices[0]!.message as {
      tool_calls: Array<{ function: { name: string; arguments: string } }>;
    }
  ).tool_calls[0]!;
  assert.equal(name, call.function.name);
  assert.equal(args, call.function.arguments);
  assert.equal(finish, 'tool_calls');
});

test('auto: a tool is named by its identifier anywhere, a plain-word name only as a tool; reminders are not the user', async () => {
  const fn = (name: string) => ({
    type: 'function',
    function: { name, description: 'runs a command', parameters: { type: 'object' } },
  });
  const tools = [fn('Bash'), fn('Write'), fn('TodoWrite'), fn('get_weather')];
  const called = async (content: string) => {
    const r = await engine.complete(request({ tools }, [{ role: 'user', content }]));
    const calls = (r.choices[0]!.message as { tool_calls?: { function: { name: string } }[] })
      .tool_calls;
    return calls?.[0]?.function.name ?? null;
  };
  assert.equal(await called('Say hello in one short sentence.'), null);
  assert.equal(await called('Write a poem about bash'), null);
  assert.equal(await called('run a command'), null, 'a description word is not a name');
  assert.equal(
    await called('<system-reminder>Use the TodoWrite tool.</system-reminder>Say hello'),
    null,
  );
  assert.equal(await called('List files with the Bash tool'), 'Bash');
  assert.equal(await called('use `Write` to save it'), 'Write');
  assert.equal(await called('tool Write, please'), 'Write');
  assert.equal(await called('update the TodoWrite list'), 'TodoWrite');
  assert.equal(
    await called('get_weather for Pune, then Bash(ls)'),
    'get_weather',
    'the first named',
  );
  assert.equal(await called('todowrite'), null, 'case counts');
});
