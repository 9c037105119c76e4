// Output limits as clients meet them. A Responses stream cut by max_output_tokens ends with
// response.incomplete and its cut item incomplete too, which the openai SDK's stream helper
// accumulates without throwing (issue #24). An upstream that ignores max_tokens and streams on
// (issue #25 item 12) is stopped once the limit is passed by a small margin, its call is
// cancelled, and the request is billed at most the limit, on chat, Responses and Messages
// streams and on a JSON answer. Real gateway process, official SDKs, a scripted upstream.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { countTextTokens } from '../../gateway/llm/tokens.js';
import { ScriptedUpstream, type Received } from '../support/scripted-upstream.js';
import {
  createFundedAccount,
  request,
  runVerify,
  startGatewayWithChat,
  type Gateway,
} from './helpers.js';

let gateway: Gateway;
let upstream: ScriptedUpstream;
let key: string;
let openai: OpenAI;
let anthropic: Anthropic;
/** On the built-in engine (the default target). */
const BUILTIN = 'service-ai-lite';
/** On the scripted upstream. */
const SCRIPTED = 'service-ai-standard-6';
const LIMIT = 50;

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
    models: { [SCRIPTED]: { targets: ['scripted'] } },
  });
  ({ key } = await createFundedAccount(gateway, 1000));
  openai = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
  await upstream.close();
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});

test('responses.stream cut by max_output_tokens: response.incomplete, the cut item incomplete, finalResponse() does not throw', async () => {
  const stream = openai.responses.stream({
    model: BUILTIN,
    input: 'Tell me about the offline engine',
    max_output_tokens: 5,
  });
  const done: unknown[] = [];
  stream.on('response.output_item.done', (event) => done.push(event.item));
  const final = await stream.finalResponse();
  assert.equal(final.status, 'incomplete');
  assert.equal(final.incomplete_details?.reason, 'max_output_tokens');
  assert.equal(final.usage!.output_tokens, 5);
  const message = final.output.find((item) => item.type === 'message')!;
  assert.equal(message.status, 'incomplete', 'the Response says the message was cut');
  assert.deepEqual(
    done.map((item) => (item as { status: string }).status),
    ['incomplete'],
  );

  // With a text format the SDK parses only complete responses: a cut JSON answer is no error.
  const Plan = z.object({ title: z.string(), steps: z.array(z.string()) });
  const parsed = await openai.responses
    .stream({
      model: BUILTIN,
      input: 'Plan the budget review',
      max_output_tokens: 5,
      text: { format: zodTextFormat(Plan, 'plan') },
    })
    .finalResponse();
  assert.equal(parsed.status, 'incomplete');
  assert.equal(parsed.output_parsed, null);

  const json = await openai.responses.create({
    model: BUILTIN,
    input: 'Tell me about the offline engine',
    max_output_tokens: 5,
  });
  assert.equal(json.status, 'incomplete');
  assert.equal(json.output.find((item) => item.type === 'message')!.status, 'incomplete');
  const whole = await openai.responses.create({ model: BUILTIN, input: 'hi' });
  assert.equal(whole.output.find((item) => item.type === 'message')!.status, 'completed');
});

/** Waits (bounded) until the upstream saw its caller hang up. */
async function cancelled(entry: Received): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!entry.aborted) {
    if (Date.now() > deadline) throw new Error('the upstream call was not cancelled');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function balance(): Promise<number> {
  const reply = await request(`${gateway.url}/v1/balance`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return Math.round(reply.body.balance * 1e6);
}

type Bill = { cost: number; completion_tokens: number; warnings?: string[] };

/** What the limit lets through, as the test counts it: the limit, its margin, the piece that passed it (and the runaway's trailing space, a token of its own). */
const MOST_RELAYED = LIMIT + Math.max(16, Math.ceil(LIMIT / 10)) + 2;

test('an upstream that ignores max_tokens: a chat stream stops past the margin, the call is cancelled, at most the limit is billed', async () => {
  upstream.script({ kind: 'runaway' });
  const before_micros = await balance();
  const stream = await openai.chat.completions.create({
    model: SCRIPTED,
    messages: [{ role: 'user', content: 'count' }],
    max_tokens: LIMIT,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let finish: string | null = null;
  let bill: Bill | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    bill = (chunk as unknown as { x_aihub?: Bill }).x_aihub ?? bill;
  }
  const entry = upstream.received.at(-1)!;
  await cancelled(entry);
  assert.ok(entry.chunks_sent < 50_000, 'the upstream was stopped before its end');
  assert.equal(finish, 'length');
  const relayed = countTextTokens(text);
  assert.ok(relayed > LIMIT && relayed <= MOST_RELAYED, `relayed ${relayed} tokens`);
  assert.equal(bill!.completion_tokens, LIMIT, 'billed the limit, not what was relayed past it');
  assert.match(bill!.warnings!.join('\n'), /generated past the output limit of 50 tokens/);
  assert.equal(before_micros - (await balance()), Math.round(bill!.cost * 1e6));
});

test('an upstream that ignores max_tokens: Responses and Messages streams end as cut by the limit', async () => {
  upstream.script({ kind: 'runaway' });
  const responses = await openai.responses
    .stream({ model: SCRIPTED, input: 'count', max_output_tokens: LIMIT })
    .finalResponse();
  await cancelled(upstream.received.at(-1)!);
  assert.equal(responses.status, 'incomplete');
  assert.equal(responses.incomplete_details?.reason, 'max_output_tokens');
  assert.equal(
    responses.output[0]!.type === 'message' && responses.output[0]!.status,
    'incomplete',
  );
  assert.equal(responses.usage!.output_tokens, LIMIT);
  assert.ok(countTextTokens(responses.output_text) <= MOST_RELAYED);

  upstream.script({ kind: 'runaway' });
  const message = await anthropic.messages
    .stream({ model: SCRIPTED, max_tokens: LIMIT, messages: [{ role: 'user', content: 'count' }] })
    .finalMessage();
  await cancelled(upstream.received.at(-1)!);
  assert.equal(message.stop_reason, 'max_tokens');
  assert.equal(message.usage.output_tokens, LIMIT);
  const text = (message.content[0] as Anthropic.TextBlock).text;
  assert.ok(countTextTokens(text) <= MOST_RELAYED);
});

test('an upstream that ignores max_tokens in a JSON answer: the answer is cut to the limit and billed on it', async () => {
  upstream.script({ kind: 'runaway' });
  const before_micros = await balance();
  const { data, response } = await openai.chat.completions
    .create({ model: SCRIPTED, messages: [{ role: 'user', content: 'count' }], max_tokens: LIMIT })
    .withResponse();
  const choice = data.choices[0]!;
  assert.equal(choice.finish_reason, 'length');
  assert.ok(countTextTokens(choice.message.content!) <= LIMIT);
  assert.equal(data.usage!.completion_tokens, countTextTokens(choice.message.content!));
  const bill = (data as unknown as { x_aihub: Bill }).x_aihub;
  assert.ok(bill.completion_tokens <= LIMIT, 'not the 17,409 the upstream claimed');
  assert.match(response.headers.get('x-aihub-warning') ?? '', /generated past the output limit/);
  assert.equal(before_micros - (await balance()), Math.round(bill.cost * 1e6));
});

test('an honest upstream that stays within the limit is relayed whole, whatever its pieces', async () => {
  // Many small pieces, few tokens: not cut.
  upstream.script({ kind: 'ok', content: 'a b c d e f g h i j k l m n o p q r s t', chunks: 40 });
  const stream = await openai.chat.completions.create({
    model: SCRIPTED,
    messages: [{ role: 'user', content: 'letters' }],
    max_tokens: 25,
    stream: true,
  });
  let text = '';
  let finish: string | null = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, 'a b c d e f g h i j k l m n o p q r s t');
  assert.equal(finish, 'stop');
});
