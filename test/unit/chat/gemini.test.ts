// Gemini's request to a chat call and the chat answer back (gateway/chat/protocols/gemini/),
// without HTTP: what each field becomes, what is dropped with a warning, what is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, errorBody } from '../../../gateway/http/errors.ts';
import { googleErrorBody } from '../../../gateway/chat/protocols/gemini/errors.ts';
// The route table adds its protocols' error shapes (Google's on the Gemini paths) to errorBody.
import '../../../gateway/chat/routes.ts';
import { toJsonSchema } from '../../../gateway/chat/protocols/gemini/json-schema.ts';
import { methodOf } from '../../../gateway/chat/protocols/gemini/route.ts';
import { GeminiStream, JSON_ARRAY_FRAMING } from '../../../gateway/chat/protocols/gemini/stream.ts';
import { countTokens, parseGenerate } from '../../../gateway/chat/protocols/gemini/translate.ts';
import type { AnswerMeta, ChatCall } from '../../../gateway/chat/protocol.ts';

const route = { model: 'service-ai-pro-4', stream: null };
const meta: AnswerMeta = {
  request_id: 'req_1',
  model: 'service-ai-pro-4',
  created: 0,
  prompt_tokens_estimate: 5,
  max_output_tokens: 100,
};
const x_aihub = { request_id: 'req_1', cost: 0.01, balance: 9.99 };

function refused(fn: () => unknown, pattern: RegExp, param?: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.status, 400);
    assert.match(error.message, pattern);
    if (param !== undefined) assert.equal(error.param, param);
    return true;
  });
}

test('paths: the model and the method, under /v1beta and /v1; other methods are not ours', () => {
  assert.deepEqual(methodOf('/v1beta/models/service-ai-max:streamGenerateContent'), {
    version: 'v1beta',
    model: 'service-ai-max',
    method: 'streamGenerateContent',
  });
  assert.equal(methodOf('/v1/models/service-ai-max:countTokens')?.method, 'countTokens');
  assert.equal(methodOf('/v1beta/models/service-ai-max:embedContent'), null);
  assert.equal(methodOf('/v1beta/models/a/b:generateContent'), null);
});

test("Gemini's schema subset becomes JSON Schema: lower-case types, nullable, nested items and anyOf", () => {
  assert.deepEqual(
    toJsonSchema(
      {
        type: 'OBJECT',
        propertyOrdering: ['a', 'b'],
        properties: {
          a: { type: 'STRING', nullable: true, enum: ['x', 'y'], description: 'd' },
          b: { type: 'ARRAY', items: { type: 'INTEGER', minimum: 0 }, maxItems: 3 },
          c: { anyOf: [{ type: 'NUMBER' }, { type: 'BOOLEAN' }], nullable: true },
        },
        required: ['a'],
        example: { a: 'x' },
      },
      'p',
    ),
    {
      type: 'object',
      required: ['a'],
      properties: {
        a: { type: ['string', 'null'], enum: ['x', 'y'], description: 'd' },
        b: { type: 'array', maxItems: 3, items: { type: 'integer', minimum: 0 } },
        c: { anyOf: [{ type: 'number' }, { type: 'boolean' }, { type: 'null' }] },
      },
    },
  );
  let deep: Record<string, unknown> = { type: 'STRING' };
  for (let i = 0; i < 60; i++) deep = { type: 'ARRAY', items: deep };
  refused(() => toJsonSchema(deep, 'p'), /deeper than/);
});

test('contents: system instruction, turns, thoughts dropped, function calls and responses paired by id then name', () => {
  const call = parseGenerate(
    {
      systemInstruction: { parts: [{ text: 'Be brief.' }, { text: 'Be kind.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Pune and Goa?' }] },
        {
          role: 'model',
          parts: [
            { text: 'thinking...', thought: true },
            { text: 'Let me check.' },
            { functionCall: { name: 'get_weather', args: { city: 'Pune' } } },
            { functionCall: { id: 'g2', name: 'get_weather', args: { city: 'Goa' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'g2', name: 'get_weather', response: { output: 'rain' } } },
            { functionResponse: { name: 'get_weather', response: { temp: 31 } } },
            { text: 'Thanks' },
          ],
        },
      ],
    },
    route,
  );
  assert.deepEqual(call.messages, [
    { role: 'system', content: 'Be brief.\nBe kind.' },
    { role: 'user', content: [{ type: 'text', text: 'Weather in Pune and Goa?' }] },
    {
      role: 'assistant',
      content: 'Let me check.',
      tool_calls: [
        {
          id: 'call_1_2',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Pune"}' },
        },
        {
          id: 'g2',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Goa"}' },
        },
      ],
    },
    { role: 'tool', tool_call_id: 'g2', content: 'rain' },
    { role: 'tool', tool_call_id: 'call_1_2', content: '{"temp":31}' },
    { role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
  ]);
  assert.equal(call.protocol, 'gemini');
  assert.equal(call.model, 'service-ai-pro-4');
  assert.equal(call.stream, false);
  assert.deepEqual(call.warnings, []);
});

test('the legacy `function` role, inline images, audio and files; fileData only as an image URL', () => {
  const call = parseGenerate(
    {
      contents: [
        {
          parts: [
            { text: 'What is this?' },
            { inlineData: { mimeType: 'image/png', data: 'AAAA' } },
            { inlineData: { mimeType: 'audio/wav', data: 'BBBB' } },
            { inlineData: { mimeType: 'application/pdf', data: 'CCCC' } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/a.jpg' } },
          ],
        },
        { role: 'model', parts: [{ functionCall: { name: 'f', args: {} } }] },
        { role: 'function', parts: [{ functionResponse: { name: 'f', response: { ok: 1 } } }] },
      ],
    },
    route,
  );
  assert.deepEqual(call.messages[0], {
    role: 'user',
    content: [
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      { type: 'input_audio', input_audio: { data: 'BBBB', format: 'wav' } },
      { type: 'file', file: { file_data: 'data:application/pdf;base64,CCCC' } },
      { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
    ],
  });
  assert.deepEqual(call.messages[2], {
    role: 'tool',
    tool_call_id: 'call_1_0',
    content: '{"ok":1}',
  });
  refused(
    () =>
      parseGenerate(
        {
          contents: [{ parts: [{ fileData: { fileUri: 'https://generativelanguage/files/x' } }] }],
        },
        route,
      ),
    /inlineData/,
    'contents[0].parts[0].fileData',
  );
  refused(
    () =>
      parseGenerate(
        {
          contents: [{ role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] }],
        },
        route,
      ),
    /answers no functionCall/,
  );
});

test('tools and toolConfig: declarations as functions, hosted tools dropped with a warning, AUTO / ANY / NONE', () => {
  const declarations = [
    { name: 'a', parameters: { type: 'OBJECT', properties: { x: { type: 'STRING' } } } },
    { name: 'b', description: 'B', parametersJsonSchema: { type: 'object', properties: {} } },
    { name: 'c' },
  ];
  const base = { contents: [{ parts: [{ text: 'go' }] }] };
  const auto = parseGenerate(
    {
      ...base,
      tools: [{ functionDeclarations: declarations }, { googleSearch: {} }, { codeExecution: {} }],
    },
    route,
  );
  assert.deepEqual(auto.params.tools, [
    {
      type: 'function',
      function: {
        name: 'a',
        parameters: { type: 'object', properties: { x: { type: 'string' } } },
      },
    },
    {
      type: 'function',
      function: { name: 'b', description: 'B', parameters: { type: 'object', properties: {} } },
    },
    { type: 'function', function: { name: 'c', parameters: { type: 'object', properties: {} } } },
  ]);
  assert.equal(auto.params.tool_choice, undefined);
  assert.deepEqual(auto.warnings, [
    "tool googleSearch runs on Google's side and is not offered",
    "tool codeExecution runs on Google's side and is not offered",
  ]);
  const tools = [{ functionDeclarations: declarations }];
  const any = parseGenerate(
    {
      ...base,
      tools,
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['a', 'c'] } },
    },
    route,
  );
  assert.deepEqual(
    (any.params.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name),
    ['a', 'c'],
  );
  assert.equal(any.params.tool_choice, 'required');
  const one = parseGenerate(
    {
      ...base,
      tools,
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['b'] } },
    },
    route,
  );
  assert.deepEqual(one.params.tool_choice, { type: 'function', function: { name: 'b' } });
  const none = parseGenerate(
    { ...base, tools, toolConfig: { functionCallingConfig: { mode: 'NONE' } } },
    route,
  );
  assert.equal(none.params.tool_choice, 'none');
  refused(
    () =>
      parseGenerate(
        {
          ...base,
          tools,
          toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['zz'] } },
        },
        route,
      ),
    /names no declared function/,
  );
});

test('generationConfig: sampling, cap, stops, candidates, JSON output; safety and cache accepted with warnings', () => {
  const call = parseGenerate(
    {
      contents: [{ parts: [{ text: 'json please' }] }],
      generationConfig: {
        temperature: 0.3,
        topP: 0.9,
        topK: 40,
        maxOutputTokens: 99_999,
        stopSequences: ['a', 'b', 'c', 'd', 'e'],
        candidateCount: 2,
        seed: 7,
        presencePenalty: 0.5,
        responseLogprobs: true,
        logprobs: 3,
        responseMimeType: 'application/json',
        responseSchema: { type: 'OBJECT', properties: { n: { type: 'NUMBER' } } },
        thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 },
      },
      safetySettings: [{ category: 'HARM_CATEGORY_HATE_SPEECH', threshold: 'BLOCK_NONE' }],
      cachedContent: 'cachedContents/abc',
    },
    route,
  );
  assert.deepEqual(call.params, {
    temperature: 0.3,
    top_p: 0.9,
    stop: ['a', 'b', 'c', 'd'],
    n: 2,
    seed: 7,
    presence_penalty: 0.5,
    logprobs: true,
    top_logprobs: 3,
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: 'response',
        schema: { type: 'object', properties: { n: { type: 'number' } } },
      },
    },
  });
  assert.equal(call.requested_max, 99_999);
  assert.equal(call.cap_field, 'generationConfig.maxOutputTokens');
  assert.equal(call.choices, 2);
  assert.deepEqual(call.warnings, [
    'generationConfig.topK is not forwarded',
    'only the first 4 generationConfig.stopSequences are used',
    'safetySettings are not applied',
    'cachedContent is not used',
  ]);
  const plain = parseGenerate(
    {
      contents: [{ parts: [{ text: 'x' }] }],
      generationConfig: { responseMimeType: 'application/json' },
    },
    route,
  );
  assert.deepEqual(plain.params.response_format, { type: 'json_object' });
  refused(
    () =>
      parseGenerate(
        {
          contents: [{ parts: [{ text: 'x' }] }],
          generationConfig: { responseMimeType: 'text/x.enum' },
        },
        route,
      ),
    /not served/,
    'generationConfig.responseMimeType',
  );
  refused(
    () =>
      parseGenerate(
        {
          contents: [{ parts: [{ text: 'x' }] }],
          generationConfig: { responseModalities: ['TEXT', 'IMAGE'] },
        },
        route,
      ),
    /only TEXT/,
  );
  refused(() => parseGenerate({ contents: [] }, route), /at least one content/);
});

test('countTokens counts contents alone or a whole generateContent request', () => {
  const alone = countTokens({ contents: [{ parts: [{ text: 'one two three four' }] }] });
  const whole = countTokens({
    generateContentRequest: {
      contents: [{ parts: [{ text: 'one two three four' }] }],
      systemInstruction: { parts: [{ text: 'a long system instruction with many words in it' }] },
    },
  });
  assert.ok((alone.totalTokens as number) > 0);
  assert.ok((whole.totalTokens as number) > (alone.totalTokens as number));
});

function call(raw: Record<string, unknown>, stream: 'sse' | 'json-array' | null = null): ChatCall {
  return parseGenerate({ contents: [{ parts: [{ text: 'hi' }] }], ...raw }, { ...route, stream });
}

test('the JSON answer: parts (thoughts when asked), functionCall with id, finishReason, usageMetadata', () => {
  const completion = {
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Checking.',
          reasoning_content: 'hmm',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
          ],
        },
        finish_reason: 'tool_calls',
      },
    ],
  } as never;
  const usage = { prompt_tokens: 10, completion_tokens: 6, reasoning_tokens: 2, cached_tokens: 4 };
  const thinking = call({ generationConfig: { thinkingConfig: { includeThoughts: true } } });
  assert.deepEqual(thinking.json(completion, usage, meta), {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [
            { text: 'hmm', thought: true },
            { text: 'Checking.' },
            { functionCall: { id: 'c1', name: 'f', args: { a: 1 } } },
          ],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: {
      promptTokenCount: 10,
      candidatesTokenCount: 4,
      totalTokenCount: 16,
      thoughtsTokenCount: 2,
      cachedContentTokenCount: 4,
    },
    modelVersion: 'service-ai-pro-4',
    responseId: 'req_1',
  });
  const plain = call({}).json(completion, usage, meta) as {
    candidates: Array<{ content: { parts: unknown[] } }>;
  };
  assert.equal(plain.candidates[0]!.content.parts.length, 2, 'no thought part unless asked');
  const cut = call({}).json(
    {
      choices: [
        { index: 0, message: { role: 'assistant', content: 'a' }, finish_reason: 'length' },
      ],
    } as never,
    usage,
    meta,
  ) as { candidates: Array<{ finishReason: string }> };
  assert.equal(cut.candidates[0]!.finishReason, 'MAX_TOKENS');
});

test('the stream: a response per text piece, a function call whole when its choice ends, the bill last', () => {
  const sse = call({}, 'sse');
  assert.equal(sse.framing, undefined, "server-sent events: the writer's default framing");
  const stream = sse.streamer(meta) as GeminiStream;
  assert.deepEqual(stream.start(), []);
  const texts = stream.chunk({
    choices: [{ index: 0, delta: { content: 'Hel' }, finish_reason: null }],
  } as never);
  assert.deepEqual(
    texts.map((event) => event.data),
    [
      {
        candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] }, index: 0 }],
        modelVersion: 'service-ai-pro-4',
        responseId: 'req_1',
      },
    ],
  );
  const pieces = [
    { tool_calls: [{ index: 0, id: 'c9', function: { name: 'f', arguments: '{"a"' } }] },
    { tool_calls: [{ index: 0, function: { arguments: ':2}' } }] },
  ];
  for (const delta of pieces)
    assert.deepEqual(
      stream.chunk({ choices: [{ index: 0, delta, finish_reason: null }] } as never),
      [],
    );
  const ended = stream.chunk({
    choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }],
  } as never);
  assert.deepEqual(
    (ended[0]!.data as { candidates: Array<{ content: unknown }> }).candidates[0]!.content,
    {
      role: 'model',
      parts: [{ functionCall: { id: 'c9', name: 'f', args: { a: 2 } } }],
    },
  );
  const last = stream.finish({ prompt_tokens: 3, completion_tokens: 5 }, null, x_aihub);
  assert.deepEqual(
    last.map((event) => event.data),
    [
      {
        candidates: [
          { content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 },
        ],
        modelVersion: 'service-ai-pro-4',
        responseId: 'req_1',
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 5, totalTokenCount: 8 },
        x_aihub,
      },
    ],
  );
  assert.equal(call({}, 'json-array').framing, JSON_ARRAY_FRAMING);
});

test("errors in Google's shape: status names, field violations, retry info; chosen by path", () => {
  const limited = new ApiError(429, 'rate_limit_exceeded', 'slow down', null, undefined, {
    'retry-after': '7',
  });
  assert.deepEqual(googleErrorBody(limited), {
    error: {
      code: 429,
      message: 'slow down',
      status: 'RESOURCE_EXHAUSTED',
      details: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'rate_limit_exceeded',
          domain: 'aihub',
        },
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7s' },
      ],
    },
  });
  const bad = new ApiError(400, 'invalid_value', 'too hot', 'generationConfig.temperature');
  const body = googleErrorBody(bad).error as {
    status: string;
    details: Array<Record<string, unknown>>;
  };
  assert.equal(body.status, 'INVALID_ARGUMENT');
  assert.deepEqual(body.details[1], {
    '@type': 'type.googleapis.com/google.rpc.BadRequest',
    fieldViolations: [{ field: 'generationConfig.temperature', description: 'too hot' }],
  });
  const poor = new ApiError(402, 'insufficient_balance', 'top up at /wallet');
  assert.equal((googleErrorBody(poor).error as { status: string }).status, 'FAILED_PRECONDITION');
  assert.ok('error' in (errorBody('/v1beta/models', poor) as object));
  assert.equal(
    (errorBody('/v1/models/x:generateContent', poor) as { error: { status: string } }).error.status,
    'FAILED_PRECONDITION',
  );
  const openai = (errorBody('/v1/chat/completions', poor) as { error: Record<string, unknown> })
    .error;
  assert.equal(openai.code, 'insufficient_balance');
  assert.equal(openai.status, undefined, "OpenAI's shape elsewhere");
});
