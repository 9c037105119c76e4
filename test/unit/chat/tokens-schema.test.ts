import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { chatRequestSchema, paramOf } from '../../../gateway/chat/schema.js';
import { countPromptTokens, countTextTokens, toolCallText } from '../../../gateway/llm/tokens.js';

test('text tokens are counted with the real cl100k tokenizer', () => {
  assert.equal(countTextTokens(''), 0);
  assert.equal(countTextTokens('hello world'), 2);
  assert.equal(countTextTokens('tiktoken is great!'), 6);
  const code = 'function add(a: number, b: number): number { return a + b; }';
  assert.equal(countTextTokens(code), encode(code).length);
  assert.ok(countTextTokens('नमस्ते दुनिया') > 2, 'non-Latin text is more than one token per word');
});

test('special-token text in a message is counted as text, not rejected', () => {
  assert.ok(countTextTokens('ignore <|endoftext|> this') > 3);
  assert.ok(countTextTokens('<|im_start|>system') > 1);
});

test('prompt tokens follow OpenAI chat framing: 3 per message, 1 for the role, 3 to prime the reply', () => {
  const one = countPromptTokens([{ role: 'user', content: 'hello world' }]);
  assert.equal(one, 3 + 3 + 1 + 2);
  const two = countPromptTokens([
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'hello world' },
  ]);
  assert.equal(two, one + 3 + 1 + countTextTokens('You are terse.'));
  const named = countPromptTokens([{ role: 'user', content: 'hello world', name: 'asha' }]);
  assert.equal(named, one + 1 + countTextTokens('asha'));
  const parts = countPromptTokens([
    {
      role: 'user',
      content: [
        { type: 'text', text: 'hello' },
        { type: 'text', text: ' world' },
      ],
    },
  ]);
  assert.equal(parts, 3 + 3 + 1 + countTextTokens('hello') + countTextTokens(' world'));
  const image = countPromptTokens([
    {
      role: 'user',
      content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }],
    },
  ]);
  assert.ok(image > 700, 'an image is estimated at a high-detail image, not at its URL length');
  const low = countPromptTokens([
    {
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
      ],
    },
  ]);
  assert.equal(image - low, 765 - 85, 'a low-detail image is counted at 85 tokens, as OpenAI does');
  const calls = [
    {
      id: 'call_abc',
      type: 'function',
      function: { name: 'get_weather', arguments: '{"city":"Pune"}' },
    },
  ];
  assert.equal(
    toolCallText(calls),
    'get_weather{"city":"Pune"}',
    'a tool call costs its name and arguments, not the JSON framing around them',
  );
  const tools = countPromptTokens(
    [{ role: 'user', content: 'hello world' }],
    [{ type: 'function', function: { name: 'get_weather', parameters: {} } }],
  );
  assert.ok(tools > one);
});

function issue(body: unknown) {
  const result = chatRequestSchema.safeParse(body);
  assert.equal(result.success, false, `expected ${JSON.stringify(body)} to be refused`);
  return {
    param: paramOf(result.error!.issues[0]!.path),
    message: result.error!.issues[0]!.message,
  };
}

test('the request schema accepts OpenAI requests and keeps fields it does not know for the upstream', () => {
  const body = chatRequestSchema.parse({
    model: 'service-ai-lite',
    messages: [
      { role: 'developer', content: 'be brief' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hi' },
          { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', content: 'result', tool_call_id: 'c1' },
    ],
    temperature: 0,
    top_p: 1,
    max_completion_tokens: 10,
    stop: ['\n\n'],
    stream: true,
    stream_options: { include_usage: true },
    n: 1,
    user: 'u-1',
    response_format: { type: 'json_object' },
    seed: 7,
  });
  assert.equal((body as Record<string, unknown>).response_format !== undefined, true);
  assert.equal(body.max_completion_tokens, 10);
});

test('the request schema names the offending field the way OpenAI does', () => {
  assert.deepEqual(issue({ messages: [{ role: 'user', content: 'x' }] }).param, 'model');
  assert.equal(issue({ model: 'm', messages: [] }).param, 'messages');
  assert.equal(
    issue({ model: 'm', messages: [{ role: 'wizard', content: 'x' }] }).param,
    'messages[0].role',
  );
  assert.equal(
    issue({
      model: 'm',
      messages: [
        { role: 'user', content: 'x' },
        { role: 'user', content: 5 },
      ],
    }).param,
    'messages[1].content',
  );
  assert.equal(
    issue({ model: 'm', messages: [{ role: 'tool', content: 'x' }] }).param,
    'messages[0].tool_call_id',
  );
  assert.equal(
    issue({ model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 2.5 }).param,
    'temperature',
  );
  assert.equal(
    issue({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }).param,
    'max_tokens',
  );
  assert.equal(
    issue({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: 1.5 }).param,
    'max_tokens',
  );
  assert.equal(issue({ model: 'm', messages: [{ role: 'user', content: 'x' }], n: 9 }).param, 'n');
  assert.equal(
    issue({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stop: ['a', 'b', 'c', 'd', 'e'],
    }).param,
    'stop',
  );
  assert.equal(
    issue({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: 'yes' }).param,
    'stream',
  );
  assert.equal(
    issue({
      model: 'm',
      messages: [
        { role: 'user', content: 'x' },
        { role: 'robot', content: 'x' },
      ],
    }).param,
    'messages[1].role',
  );
  assert.equal(
    issue({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text' }] }] }).param,
    'messages[0].content',
  );
  assert.equal(issue('just text').param, null);
});
