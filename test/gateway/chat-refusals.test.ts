// Every refusal is visible to the operator (issue #24): the request's log line carries the
// 4xx's code and param (never the body, never the key), and /metrics counts refusals by the
// route's protocol and code. A real gateway process on the embedded defaults, the SDKs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import {
  createFundedAccount,
  request,
  startGateway,
  waitForOutput,
  type Gateway,
} from './helpers.js';

let gateway: Gateway;
let key: string;
/** In every refused body: it must never reach the log. */
const CANARY = 'canary-body-text-7f3a';

before(async () => {
  gateway = await startGateway();
  ({ key } = await createFundedAccount(gateway, 10));
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
});

/** The JSON log line of the request with this id. */
async function logLine(request_id: string): Promise<Record<string, unknown>> {
  const line = await waitForOutput(
    gateway,
    (l) => l.includes(`"request_id":"${request_id}"`) && l.includes('"msg":"request"'),
    `for ${request_id}`,
  );
  return JSON.parse(line) as Record<string, unknown>;
}

async function refused(
  path: string,
  init: { headers?: Record<string, string>; body?: unknown; method?: string },
  status: number,
) {
  const reply = await request(`${gateway.url}${path}`, init);
  assert.equal(reply.status, status, JSON.stringify(reply.body));
  const line = await logLine(reply.headers.get('x-request-id')!);
  assert.ok(!JSON.stringify(line).includes(CANARY), 'no body in the log line');
  assert.ok(!JSON.stringify(line).includes(key), 'no key in the log line');
  return line;
}

test('a refusal on every protocol logs its code and param; /metrics counts them by protocol and code', async () => {
  const auth = { authorization: `Bearer ${key}` };
  const say = [{ role: 'user', content: CANARY }];
  const lines = [
    await refused(
      '/v1/chat/completions',
      { body: { model: 'service-ai-lite', messages: say } },
      401,
    ),
    await refused(
      '/v1/chat/completions',
      { headers: auth, body: { model: 'service-ai-lite', messages: say, temperature: 3 } },
      400,
    ),
    await refused('/v1/responses', { headers: auth, body: { model: 'gpt-x', input: CANARY } }, 404),
    await refused(
      '/v1/messages',
      { headers: { 'x-api-key': key }, body: { model: 'service-ai-lite', messages: say } },
      400,
    ),
    await refused(
      '/v1/embeddings',
      { headers: auth, body: { model: 'service-ai-lite', input: [] } },
      400,
    ),
    await refused('/v1/models', {}, 401),
    await refused('/v1/nowhere', { headers: auth, body: { x: CANARY } }, 404),
  ];
  assert.deepEqual(
    lines.map((line) => [line.route, line.status, line.error_code, line.error_param]),
    [
      ['/v1/chat/completions', 401, 'invalid_api_key', undefined],
      ['/v1/chat/completions', 400, 'invalid_value', 'temperature'],
      ['/v1/responses', 404, 'model_not_found', 'model'],
      ['/v1/messages', 400, 'invalid_value', 'max_tokens'],
      ['/v1/embeddings', 400, 'invalid_value', 'input'],
      ['/v1/models', 401, 'invalid_api_key', undefined],
      ['/v1/nowhere', 404, 'not_found', undefined],
    ],
  );

  // Through the SDKs too: a 402 from Anthropic's and a 429-free 400 from OpenAI's.
  const broke = await createFundedAccount(gateway, 0);
  const poor = new Anthropic({ baseURL: gateway.url, apiKey: broke.key, maxRetries: 0 });
  await assert.rejects(
    poor.messages.create({
      model: 'service-ai-pro-4',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    }),
    (error: unknown) => error instanceof Anthropic.APIError && error.status === 402,
  );
  const openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  await assert.rejects(
    openai.completions.create({ model: 'service-ai-lite', prompt: 'x', n: 3 } as never),
    OpenAI.BadRequestError,
  );
  // An answered request is no refusal.
  await openai.chat.completions.create({
    model: 'service-ai-lite',
    messages: [{ role: 'user', content: 'hi' }],
  });

  const metrics = (await request<string>(`${gateway.url}/metrics`)).body;
  const count = (protocol: string, code: string) => {
    const match = new RegExp(
      `^aihub_chat_refusals_total\\{protocol="${protocol}",code="${code}"\\} (\\d+)$`,
      'm',
    ).exec(metrics);
    return match ? Number(match[1]) : 0;
  };
  assert.deepEqual(
    {
      chat_key: count('chat', 'invalid_api_key'),
      chat_value: count('chat', 'invalid_value'),
      responses_model: count('responses', 'model_not_found'),
      messages_value: count('messages', 'invalid_value'),
      messages_balance: count('messages', 'insufficient_balance'),
      embeddings_value: count('embeddings', 'invalid_value'),
      completions_value: count('completions', 'invalid_value'),
      other_key: count('other', 'invalid_api_key'),
      other_route: count('other', 'not_found'),
    },
    {
      chat_key: 1,
      chat_value: 1,
      responses_model: 1,
      messages_value: 1,
      messages_balance: 1,
      embeddings_value: 1,
      completions_value: 1,
      other_key: 1,
      other_route: 1,
    },
  );
  const total = [...metrics.matchAll(/^aihub_chat_refusals_total\{[^}]*\} (\d+)$/gm)].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
  assert.equal(total, 9, 'the answered request is not counted');
});

test('a refusal on the other surfaces logs its code and param too', async () => {
  const line = await refused(
    '/admin/accounts',
    { headers: { authorization: 'Bearer wrong' }, body: { email: CANARY } },
    401,
  );
  assert.equal(typeof line.error_code, 'string');
  const bad = await refused(
    '/admin/accounts',
    {
      headers: { authorization: `Bearer ${gateway.admin_token}` },
      body: { email: 'not-an-email', name: CANARY },
    },
    400,
  );
  assert.equal(bad.error_param, 'email');
});
