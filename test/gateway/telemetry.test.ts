// OpenTelemetry through the real gateway process (issue #42): a local OTLP/HTTP receiver
// (protobuf and JSON) gets the server span of a billed request in the client's trace, with
// the GenAI attributes and the bill, the upstream attempts as client spans (failover as
// several), the payments provider attempt; the scripted upstream gets a traceparent of that
// trace; no exported attribute holds a key, a prompt, a completion or a PAN; a collector that
// is down costs the requests nothing; and with no telemetry configured nothing is sent.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../support/otlp-receiver.js';
import { refusedPort, ScriptedUpstream, type Behavior } from '../support/scripted-upstream.js';
import { onboard, paymentsConfig, startPaymentsGateway } from '../support/payments-helpers.js';
import { json, startUpstream as startAggregator } from '../support/payments-upstream.js';
import {
  createFundedAccount,
  request,
  startGateway,
  tempDir,
  waitForOutput,
  type Gateway,
} from './helpers.js';

const SERVER = 2;
const CLIENT = 3;
const PROMPT_CANARY = 'PROMPT-CANARY-7Q2';
const COMPLETION_CANARY = 'COMPLETION-CANARY-9Z4';

let upstream: ScriptedUpstream;
let broken: ScriptedUpstream;

/** A config file with a scripted target (`up`), a failing one (`down`), sandbox payments and `extra`. */
function configFile(extra: Record<string, unknown> = {}): string {
  const engine = (u: ScriptedUpstream) => ({
    type: 'openai-compatible',
    base_url: u.base_url,
    api_key_env: 'SCRIPTED_KEY',
    model: 'm',
    timeout_ms: 5_000,
  });
  const file = join(tempDir('aihub-otel-config-'), 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      mode: 'sandbox', // the sandbox payment providers beside a scripted LLM upstream
      ...paymentsConfig(),
      chat: {
        rate_limit: { requests_per_minute: 6000 },
        engines: {
          up: engine(upstream),
          down: engine(broken),
          native: {
            ...engine(upstream),
            protocols: ['responses', 'messages', 'gemini', 'completions'],
          },
        },
        breaker: { failure_threshold: 1_000 },
        models: {
          'service-ai-standard-6': { targets: ['up'] },
          'service-ai-max': { targets: ['down', 'up'] },
          'service-ai-lite': { targets: ['builtin'] },
          'service-ai-pro-4': { targets: ['native'] },
        },
      },
      ...extra,
    }),
  );
  return file;
}

/** Exports every 100 ms (spans) and every second (metrics), so that tests wait little. */
const FAST_EXPORT = { OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_METRIC_EXPORT_INTERVAL: '1000' };

function traceparent() {
  const trace_id = randomBytes(16).toString('hex');
  const span_id = randomBytes(8).toString('hex');
  return { trace_id, span_id, header: `00-${trace_id}-${span_id}-01` };
}

const inTrace = (spans: ReceivedSpan[], trace_id: string) =>
  spans.filter((span) => span.trace_id === trace_id);

/** The spans of a trace once its server span has arrived (the request's last to end). */
async function traced(receiver: OtlpReceiver, trace_id: string): Promise<ReceivedSpan[]> {
  await receiver.waitFor(
    (spans) => inTrace(spans, trace_id).some((s) => s.kind === SERVER),
    `the server span of trace ${trace_id}`,
  );
  return inTrace(receiver.spans, trace_id);
}

/** A recharge sent with a traceparent by a newly onboarded account, answered 200; its trace's spans. */
async function tracedRecharge(gateway: Gateway, receiver: OtlpReceiver) {
  const pay = await onboard(gateway, 1_000, { recharge: true });
  const parent = traceparent();
  const reply = await request(`${gateway.url}/api/recharge`, {
    headers: { ...pay.headers, traceparent: parent.header },
    body: { operator_id: 1, number: '9876543210', amount: 100 },
  });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return { parent, reply, spans: await traced(receiver, parent.trace_id) };
}

before(async () => {
  upstream = await ScriptedUpstream.start({ kind: 'ok', content: 'fine' });
  broken = await ScriptedUpstream.start({ kind: 'status', status: 500 });
});
after(async () => {
  await upstream.close();
  await broken.close();
});

describe('OTLP over http/protobuf, from the standard environment', () => {
  let receiver: OtlpReceiver;
  let gateway: Gateway;
  before(async () => {
    receiver = await startOtlpReceiver();
    gateway = await startGateway({
      args: ['--config', configFile()],
      env: {
        SCRIPTED_KEY: 'sk-scripted-upstream-secret',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        OTEL_SERVICE_NAME: 'aihub-under-test',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
        ...FAST_EXPORT,
      },
    });
  });
  after(async () => {
    await gateway.stop();
    await receiver.close();
  });

  test('a billed chat sent with a traceparent: the server span in that trace with the GenAI attributes and the bill, the upstream client span, the traceparent passed upstream', async () => {
    const { key } = await createFundedAccount(gateway, 100);
    const parent = traceparent();
    upstream.script({
      kind: 'ok',
      content: 'A gateway sits between.',
      usage: {
        prompt_tokens: 1_200,
        completion_tokens: 80,
        prompt_tokens_details: { cached_tokens: 1_000 },
        completion_tokens_details: { reasoning_tokens: 30 },
      },
    });
    const before_count = upstream.received.length;
    const reply = await request(`${gateway.url}/v1/chat/completions`, {
      headers: {
        authorization: `Bearer ${key}`,
        traceparent: parent.header,
        tracestate: 'vendor=opaque',
      },
      body: {
        model: 'service-ai-standard-6',
        max_tokens: 300,
        messages: [{ role: 'user', content: 'What is a gateway?' }],
      },
    });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const bill = reply.body.x_aihub;

    const spans = await traced(receiver, parent.trace_id);
    const server = spans.find((s) => s.kind === SERVER)!;
    assert.equal(server.parent_span_id, parent.span_id, 'a child of the client span');
    assert.equal(server.name, 'POST /v1/chat/completions');
    assert.equal(server.resource['service.name'], 'aihub-under-test');
    assert.equal(server.resource['deployment.environment.name'], 'test');
    assert.deepEqual(
      {
        route: server.attributes['http.route'],
        status: server.attributes['http.response.status_code'],
        operation: server.attributes['gen_ai.operation.name'],
        provider: server.attributes['gen_ai.provider.name'],
        request_model: server.attributes['gen_ai.request.model'],
        response_model: server.attributes['gen_ai.response.model'],
        max_tokens: server.attributes['gen_ai.request.max_tokens'],
        input: server.attributes['gen_ai.usage.input_tokens'],
        output: server.attributes['gen_ai.usage.output_tokens'],
        cached: server.attributes['gen_ai.usage.cache_read.input_tokens'],
        reasoning: server.attributes['gen_ai.usage.reasoning.output_tokens'],
        finish: server.attributes['gen_ai.response.finish_reasons'],
        cost: server.attributes['aihub.cost'],
        balance: server.attributes['aihub.balance_after'],
      },
      {
        route: '/v1/chat/completions',
        status: 200,
        operation: 'chat',
        provider: 'openai-compatible',
        request_model: 'service-ai-standard-6',
        response_model: 'up',
        max_tokens: 300,
        input: 1_200,
        output: 80,
        cached: 1_000,
        reasoning: 30,
        finish: ['stop'],
        cost: bill.cost,
        balance: bill.balance,
      },
    );
    // The steps that cost time, children of the server span.
    for (const name of ['aihub.authenticate', 'aihub.hold', 'aihub.settle'])
      assert.equal(
        spans.find((s) => s.name === name)?.parent_span_id,
        server.span_id,
        `${name} under the server span`,
      );
    const attempt = spans.find((s) => s.kind === CLIENT)!;
    assert.equal(attempt.name, 'chat service-ai-standard-6');
    assert.equal(attempt.parent_span_id, server.span_id);
    assert.equal(attempt.attributes['aihub.target'], 'up');
    assert.equal(attempt.attributes['gen_ai.response.model'], 'up');

    // The upstream was asked inside that client span, with the client's tracestate.
    const sent = upstream.received.slice(before_count).at(-1)!;
    assert.equal(sent.headers.traceparent, `00-${parent.trace_id}-${attempt.span_id}-01`);
    assert.equal(sent.headers.tracestate, 'vendor=opaque');

    // The request's log line carries its trace.
    const line = await waitForOutput(
      gateway,
      (l) => l.includes('"msg":"request"') && l.includes(bill.request_id),
      'of the chat request',
    );
    assert.equal(JSON.parse(line).trace_id, parent.trace_id);
    assert.equal(JSON.parse(line).span_id, server.span_id);
    assert.ok(receiver.content_types.has('application/x-protobuf'));
  });

  test('the probes (/healthz, /readyz, /metrics) get no server span; a request in the same trace after them does', async () => {
    const parent = traceparent();
    for (const path of ['/healthz', '/readyz', '/metrics', '/healthz?verbose=1']) {
      const reply = await fetch(`${gateway.url}${path}`, {
        headers: { traceparent: parent.header },
      });
      assert.equal(reply.status, 200, path);
      await reply.arrayBuffer();
    }
    // A request of the same trace after them: once its span is in, the probes' would be too
    // (the batch processor exports spans in the order they end).
    const reply = await request(`${gateway.url}/v1/models`, {
      headers: { traceparent: parent.header },
    });
    assert.equal(reply.status, 401);
    const spans = await traced(receiver, parent.trace_id);
    assert.deepEqual(
      spans.map((span) => span.name),
      ['GET /v1/models'],
      'only the request after the probes',
    );
  });

  test("a target's native answers give their finish reasons in the protocol's own words, JSON and streamed", async () => {
    const { key } = await createFundedAccount(gateway, 100);
    const cases: Array<{
      path: string;
      body: Record<string, unknown>;
      answer: Behavior;
      finish: string[];
    }> = [
      {
        path: '/v1/messages',
        body: { max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
        answer: {
          kind: 'exact',
          completion: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            content: [{ type: 'text', text: 'cut short' }],
            stop_reason: 'max_tokens',
            usage: { input_tokens: 5, output_tokens: 2 },
          },
        },
        finish: ['max_tokens'],
      },
      {
        path: '/v1/messages',
        body: { max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] },
        answer: {
          kind: 'exact',
          chunks: [
            {
              type: 'message_start',
              message: {
                id: 'msg_2',
                type: 'message',
                role: 'assistant',
                content: [],
                usage: { input_tokens: 5, output_tokens: 0 },
              },
            },
            { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
            { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'done' } },
            { type: 'content_block_stop', index: 0 },
            {
              type: 'message_delta',
              delta: { stop_reason: 'end_turn', stop_sequence: null },
              usage: { output_tokens: 1 },
            },
            { type: 'message_stop' },
          ],
        },
        finish: ['end_turn'],
      },
      {
        path: '/v1beta/models/service-ai-pro-4:generateContent',
        body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
        answer: {
          kind: 'exact',
          completion: {
            candidates: [
              { content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' },
            ],
            usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1 },
          },
        },
        finish: ['STOP'],
      },
      {
        path: '/v1/responses',
        body: { input: 'hi', max_output_tokens: 20 },
        answer: {
          kind: 'exact',
          completion: {
            id: 'resp_1',
            object: 'response',
            status: 'incomplete',
            incomplete_details: { reason: 'max_output_tokens' },
            output: [],
            usage: { input_tokens: 5, output_tokens: 20 },
          },
        },
        finish: ['max_output_tokens'],
      },
      {
        path: '/v1/completions',
        body: { prompt: 'def add(a, b):', max_tokens: 2, stream: true },
        answer: {
          kind: 'exact',
          chunks: [
            {
              object: 'text_completion',
              choices: [{ index: 0, text: ' return', finish_reason: null }],
            },
            {
              object: 'text_completion',
              choices: [{ index: 0, text: ' a', finish_reason: 'length' }],
              usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
            },
          ],
        },
        finish: ['length'],
      },
    ];
    for (const { path, body, answer, finish } of cases) {
      const parent = traceparent();
      upstream.script(answer);
      const reply = await fetch(`${gateway.url}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'x-api-key': key,
          'x-goog-api-key': key,
          'content-type': 'application/json',
          traceparent: parent.header,
        },
        body: JSON.stringify({ model: 'service-ai-pro-4', ...body }),
      });
      const text = await reply.text();
      assert.equal(reply.status, 200, `${path}: ${text}`);
      const spans = await traced(receiver, parent.trace_id);
      const server = spans.find((s) => s.kind === SERVER)!;
      assert.equal(server.attributes['gen_ai.response.model'], 'native', path);
      assert.deepEqual(server.attributes['gen_ai.response.finish_reasons'], finish, path);
    }
  });

  test('the GenAI histograms and the gateway counters go out over OTLP and stay at /metrics, under the same names', async () => {
    const { key } = await createFundedAccount(gateway, 10);
    const reply = await request(`${gateway.url}/v1/chat/completions`, {
      headers: { authorization: `Bearer ${key}` },
      body: { model: 'service-ai-standard-6', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(reply.status, 200);
    const names = [
      'gen_ai.client.token.usage',
      'gen_ai.client.operation.duration',
      'aihub_chat_requests_total',
      'aihub_http_requests_total',
    ];
    const deadline = Date.now() + 20_000;
    while (!names.every((name) => receiver.metrics.has(name)) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(
      names.filter((name) => !receiver.metrics.has(name)),
      [],
      'metrics missing over OTLP',
    );
    const usage = receiver.metrics.get('gen_ai.client.token.usage')!;
    assert.ok(
      usage.some(
        (point) =>
          point['gen_ai.request.model'] === 'service-ai-standard-6' &&
          point['gen_ai.response.model'] === 'up' &&
          point['gen_ai.token.type'] === 'output',
      ),
      JSON.stringify(usage),
    );
    const scraped = await (await fetch(`${gateway.url}/metrics`)).text();
    for (const name of [
      'gen_ai_client_token_usage_bucket',
      'gen_ai_client_operation_duration_bucket',
      'aihub_chat_requests_total',
    ])
      assert.ok(scraped.includes(name), `${name} at /metrics`);
    assert.match(
      scraped,
      /gen_ai_client_token_usage_count\{[^}]*gen_ai_request_model="service-ai-standard-6"[^}]*gen_ai_token_type="input"\} [1-9]/,
    );
  });

  test('a failover is two upstream attempts in the trace; a stream has its span', async () => {
    const { key } = await createFundedAccount(gateway, 1_000);
    const parent = traceparent();
    const reply = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        traceparent: parent.header,
      },
      body: JSON.stringify({
        model: 'service-ai-max',
        stream: true,
        messages: [{ role: 'user', content: 'hello' }],
      }),
    });
    assert.equal(reply.status, 200);
    assert.match(await reply.text(), /\[DONE\]/);
    const spans = await traced(receiver, parent.trace_id);
    const attempts = spans.filter((s) => s.kind === CLIENT);
    assert.deepEqual(
      attempts.map((s) => [s.attributes['aihub.target'], s.status_code === 2 ? 'error' : 'ok']),
      [
        ['down', 'error'],
        ['up', 'ok'],
      ],
    );
    assert.equal(attempts[0]!.attributes['error.type'], 'server');
    const server = spans.find((s) => s.kind === SERVER)!;
    assert.equal(spans.find((s) => s.name === 'aihub.stream')?.parent_span_id, server.span_id);
    assert.equal(server.attributes['gen_ai.response.model'], 'up');
  });

  test('no exported attribute holds a key, a prompt, a completion or a PAN, over every protocol and the payments API', async () => {
    const { key } = await createFundedAccount(gateway, 100);
    const auth = { authorization: `Bearer ${key}` };
    upstream.setDefault({ kind: 'ok', content: `Sure: ${COMPLETION_CANARY}` });
    const question = `Tell me the secret ${PROMPT_CANARY}`;
    const calls: Array<{ path: string; body: Record<string, unknown> }> = [];
    for (const stream of [false, true]) {
      const model = 'service-ai-standard-6';
      calls.push(
        {
          path: '/v1/chat/completions',
          body: { model, stream, messages: [{ role: 'user', content: question }] },
        },
        { path: '/v1/responses', body: { model, input: question, stream } },
        {
          path: '/v1/messages',
          body: { model, max_tokens: 64, messages: [{ role: 'user', content: question }], stream },
        },
        {
          path: `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
          body: { contents: [{ role: 'user', parts: [{ text: question }] }] },
        },
        {
          path: '/v1/completions',
          body: { model, prompt: question, suffix: PROMPT_CANARY, stream },
        },
      );
    }
    calls.push(
      { path: '/v1/embeddings', body: { model: 'service-ai-lite', input: question } },
      // Google's clients may put the key in the query string.
      {
        path: `/v1beta/models/service-ai-standard-6:generateContent?key=${key}`,
        body: { contents: [{ role: 'user', parts: [{ text: question }] }] },
      },
    );
    const traces: string[] = [];
    for (const call of calls) {
      const parent = traceparent();
      traces.push(parent.trace_id);
      const reply = await fetch(`${gateway.url}${call.path}`, {
        method: 'POST',
        headers: {
          ...(call.path.includes('?key=') ? {} : auth),
          'content-type': 'application/json',
          traceparent: parent.header,
        },
        body: JSON.stringify(call.body),
      });
      assert.equal(reply.status, 200, `${call.path}: ${await reply.clone().text()}`);
      await reply.text();
    }
    upstream.setDefault({ kind: 'ok', content: 'fine' });
    // The payments side: a PAN looked up and a recharge, with the key in x-api-key.
    const pay = await onboard(gateway, 1_000, { recharge: true, pan: true });
    const pan = 'ABCPE1234F';
    const number = '9876512345';
    for (const [path, body] of [
      ['/api/pan-find', { pan_number: pan }],
      ['/api/recharge', { operator_id: 1, number, amount: 100 }],
    ] as const) {
      const parent = traceparent();
      traces.push(parent.trace_id);
      const reply = await request(`${gateway.url}${path}`, {
        headers: { ...pay.headers, traceparent: parent.header },
        body,
      });
      assert.equal(reply.status, 200, `${path}: ${JSON.stringify(reply.body)}`);
    }
    // A path no route matched is never a span's name (it may hold anything).
    for (const path of [`/v1/x/${PROMPT_CANARY}`, `/api/x/${PROMPT_CANARY}`]) {
      const parent = traceparent();
      traces.push(parent.trace_id);
      const reply = await request(`${gateway.url}${path}`, {
        headers: { ...auth, traceparent: parent.header },
      });
      assert.equal(reply.status, 404);
    }
    await receiver.waitFor(
      (spans) =>
        traces.every((trace_id) => inTrace(spans, trace_id).some((s) => s.kind === SERVER)),
      'a server span for every request',
    );
    const exported = JSON.stringify(receiver.spans);
    for (const [what, secret] of [
      ['the AI key', key],
      ['the payments key', pay.key],
      ['the admin token', gateway.admin_token],
      ["the upstream's key", 'sk-scripted-upstream-secret'],
      ['the prompt', PROMPT_CANARY],
      ['the completion', COMPLETION_CANARY],
      ['the PAN', pan],
      ['the mobile number', number],
    ] as Array<[string, string]>)
      assert.ok(!exported.includes(secret), `${what} is in an exported span`);
    // Every protocol's server span has its GenAI operation.
    const operations = traces
      .slice(0, calls.length)
      .map(
        (trace_id) =>
          inTrace(receiver.spans, trace_id).find((s) => s.kind === SERVER)!.attributes[
            'gen_ai.operation.name'
          ],
      );
    assert.deepEqual(operations, [
      ...['chat', 'chat', 'chat', 'generate_content', 'text_completion'],
      ...['chat', 'chat', 'chat', 'generate_content', 'text_completion'],
      'embeddings',
      'generate_content',
    ]);
  });
});

describe('OTLP over http/json, from the config file', () => {
  let receiver: OtlpReceiver;
  let gateway: Gateway;
  before(async () => {
    receiver = await startOtlpReceiver();
    gateway = await startGateway({
      args: [
        '--config',
        configFile({
          telemetry: {
            enabled: true,
            endpoint: receiver.url,
            protocol: 'http/json',
            capture_content: true,
          },
        }),
      ],
      env: { SCRIPTED_KEY: 'sk-scripted-upstream-secret', ...FAST_EXPORT },
    });
  });
  after(async () => {
    await gateway.stop();
    await receiver.close();
  });

  test('a payments recharge: its server span, the provider attempt as a client span, the commit', async () => {
    const { parent, reply, spans } = await tracedRecharge(gateway, receiver);
    assert.equal(reply.body.data.status, 'success');
    const server = spans.find((s) => s.kind === SERVER)!;
    assert.equal(server.name, 'POST /api/recharge');
    assert.equal(server.parent_span_id, parent.span_id);
    const attempt = spans.find((s) => s.kind === CLIENT)!;
    assert.equal(attempt.name, 'provider sandbox-a');
    assert.equal(attempt.attributes['aihub.payments.service'], 'recharge');
    assert.equal(attempt.parent_span_id, server.span_id);
    for (const name of ['aihub.payments.hold', 'aihub.payments.commit'])
      assert.equal(spans.find((s) => s.name === name)?.parent_span_id, server.span_id, name);
    assert.ok(receiver.content_types.has('application/json'));
    // Content capture is for /v1 only: the payments spans carry no number, PAN or body.
    assert.ok(!JSON.stringify(spans).includes('9876543210'));
  });

  test('with content capture on, a /v1 span carries the prompt and the answer', async () => {
    /** A streamed request of the prompt canary, read whole; its server span. */
    const streamedSpan = async (
      path: string,
      auth: Record<string, string>,
      body: Record<string, unknown>,
    ) => {
      const parent = traceparent();
      const reply = await fetch(`${gateway.url}${path}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', traceparent: parent.header },
        body: JSON.stringify({
          ...body,
          stream: true,
          messages: [{ role: 'user', content: `Say ${PROMPT_CANARY}` }],
        }),
      });
      assert.equal(reply.status, 200, path);
      await reply.text();
      return (await traced(receiver, parent.trace_id)).find((s) => s.kind === SERVER)!;
    };
    const { key } = await createFundedAccount(gateway, 10);
    const parent = traceparent();
    upstream.script({ kind: 'ok', content: `Here: ${COMPLETION_CANARY}` });
    const reply = await request(`${gateway.url}/v1/chat/completions`, {
      headers: { authorization: `Bearer ${key}`, traceparent: parent.header },
      body: {
        model: 'service-ai-standard-6',
        messages: [{ role: 'user', content: `Say ${PROMPT_CANARY}` }],
      },
    });
    assert.equal(reply.status, 200);
    const server = (await traced(receiver, parent.trace_id)).find((s) => s.kind === SERVER)!;
    assert.match(String(server.attributes['gen_ai.input.messages']), new RegExp(PROMPT_CANARY));
    assert.match(
      String(server.attributes['gen_ai.output.messages']),
      new RegExp(COMPLETION_CANARY),
    );
    assert.ok(!JSON.stringify(server).includes(key), 'never the key, even with capture on');

    // Streamed: the answer as its deltas built it, the canary whole though split across chunks,
    // and a tool call's name and arguments.
    for (const [behavior, expected] of [
      [{ kind: 'ok', content: `Streamed: ${COMPLETION_CANARY}`, chunks: 9 }, COMPLETION_CANARY],
      [
        {
          kind: 'ok',
          tool_calls: [{ id: 'call_1', name: 'lookup_weather', arguments: '{"city":"Pune"}' }],
        },
        'lookup_weather',
      ],
    ] as const) {
      upstream.script(behavior as Behavior);
      const stream_server = await streamedSpan(
        '/v1/chat/completions',
        { authorization: `Bearer ${key}` },
        { model: 'service-ai-standard-6' },
      );
      const output = String(stream_server.attributes['gen_ai.output.messages']);
      assert.ok(output.includes(expected), output);
      if (expected === 'lookup_weather') assert.ok(output.includes('Pune'), output);
    }

    // A stream the target passes through in its own protocol (Anthropic Messages here).
    const half = COMPLETION_CANARY.length >> 1;
    upstream.script({
      kind: 'exact',
      chunks: [
        {
          type: 'message_start',
          message: {
            id: 'msg_c',
            type: 'message',
            role: 'assistant',
            content: [],
            usage: { input_tokens: 5, output_tokens: 0 },
          },
        },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        ...[COMPLETION_CANARY.slice(0, half), COMPLETION_CANARY.slice(half)].map((text) => ({
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'text_delta', text },
        })),
        { type: 'content_block_stop', index: 0 },
        {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 2 },
        },
        { type: 'message_stop' },
      ],
    });
    const native_server = await streamedSpan(
      '/v1/messages',
      { 'x-api-key': key },
      { model: 'service-ai-pro-4', max_tokens: 50 },
    );
    assert.equal(native_server.attributes['gen_ai.response.model'], 'native');
    assert.match(
      String(native_server.attributes['gen_ai.output.messages']),
      new RegExp(COMPLETION_CANARY),
    );
  });
});

test('with the collector down, requests are served and billed as without it, and the gateway stops cleanly', async () => {
  const gateway = await startGateway({
    args: ['--config', configFile()],
    env: {
      SCRIPTED_KEY: 'sk-scripted-upstream-secret',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await refusedPort()}`,
      ...FAST_EXPORT,
    },
  });
  try {
    const { key } = await createFundedAccount(gateway, 10);
    const auth = { authorization: `Bearer ${key}` };
    let spent = 0;
    for (let i = 0; i < 6; i++) {
      const reply = await request(`${gateway.url}/v1/chat/completions`, {
        headers: { ...auth, traceparent: traceparent().header },
        body: { model: 'service-ai-standard-6', messages: [{ role: 'user', content: `q${i}` }] },
      });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.ok(reply.body.x_aihub.cost > 0);
      spent += Math.round(reply.body.x_aihub.cost * 1e6);
    }
    const balance = await request(`${gateway.url}/v1/balance`, { headers: auth });
    assert.equal(Math.round(balance.body.balance * 1e6), 10_000_000 - spent);
  } finally {
    assert.equal(await gateway.stop(), 0);
  }
});

/** A chat sent with a traceparent by a new account, answered 200: no traceparent upstream, no trace id in its log line. */
async function chatUntraced(gateway: Gateway) {
  const { key } = await createFundedAccount(gateway, 10);
  const before_count = upstream.received.length;
  const reply = await request(`${gateway.url}/v1/chat/completions`, {
    headers: { authorization: `Bearer ${key}`, traceparent: traceparent().header },
    body: { model: 'service-ai-standard-6', messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(reply.status, 200);
  assert.equal(upstream.received.slice(before_count).at(-1)!.headers.traceparent, undefined);
  const line = await waitForOutput(
    gateway,
    (l) => l.includes('"msg":"request"') && l.includes(reply.body.x_aihub.request_id),
    'of the chat request',
  );
  assert.equal(JSON.parse(line).trace_id, undefined);
}

test('with no telemetry configured, nothing is traced: no traceparent upstream, no trace ids in the log', async () => {
  const gateway = await startGateway({
    args: ['--config', configFile()],
    env: { SCRIPTED_KEY: 'sk-scripted-upstream-secret' },
  });
  try {
    await chatUntraced(gateway);
  } finally {
    await gateway.stop();
  }
});

test('with metrics alone (OTEL_TRACES_EXPORTER=none), the GenAI metrics go out and no trace context is kept: no span, no traceparent upstream, no trace ids in the log', async () => {
  const receiver = await startOtlpReceiver();
  const gateway = await startGateway({
    args: ['--config', configFile()],
    env: {
      SCRIPTED_KEY: 'sk-scripted-upstream-secret',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_EXPORTER: 'none',
      ...FAST_EXPORT,
    },
  });
  try {
    // (A context manager and a propagator installed for metrics alone passed the client's
    // traceparent on and put its trace id in the log; the context manager is an
    // AsyncLocalStorage, which costs every promise of the process on Node 20. The GenAI
    // metrics are recorded from the settlement's figures, not from a span in the context.)
    await chatUntraced(gateway);
    const deadline = Date.now() + 20_000;
    while (!receiver.metrics.has('gen_ai.client.token.usage') && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const usage = receiver.metrics.get('gen_ai.client.token.usage');
    assert.ok(
      usage?.some(
        (point) =>
          point['gen_ai.operation.name'] === 'chat' &&
          point['gen_ai.request.model'] === 'service-ai-standard-6' &&
          point['gen_ai.response.model'] === 'up',
      ),
      `the GenAI metrics went out: ${JSON.stringify(usage)}`,
    );
    assert.equal(receiver.spans.length, 0);
  } finally {
    await gateway.stop();
    await receiver.close();
  }
});

test("a payment provider reached over HTTP gets a traceparent of the request's trace, from inside its attempt's span", async () => {
  const receiver = await startOtlpReceiver();
  const aggregator = await startAggregator((seen, res) =>
    seen.url === '/recharge/pay'
      ? json(res, 200, { status: 'SUCCESS', message: 'recharged', ref: 'OPR1' })
      : json(res, 200, { status: 'NOT_FOUND' }),
  );
  const gateway = await startPaymentsGateway(
    paymentsConfig({
      providers: {
        recharge: [
          {
            type: 'http',
            name: 'agg',
            timeout_ms: 5_000,
            submit: {
              url: `${aggregator.url}/recharge/pay`,
              fields: { ref: 'txn_id', number: 'subject', amount_paise: 'amount_paise' },
            },
            status: { url: `${aggregator.url}/recharge/status/{txn_id}`, method: 'GET' },
            response: { status_field: 'status', ref_field: 'ref', message_field: 'message' },
            status_map: {
              success: ['SUCCESS'],
              pending: ['PENDING'],
              failed: ['FAILED'],
              not_found: ['NOT_FOUND'],
            },
          },
        ],
      },
    }),
    { env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...FAST_EXPORT } },
  );
  try {
    const { parent, spans } = await tracedRecharge(gateway, receiver);
    const attempt = spans.find((s) => s.kind === CLIENT)!;
    assert.equal(attempt.name, 'provider agg');
    const sent = aggregator.seen.find((seen) => seen.url === '/recharge/pay')!;
    assert.equal(sent.headers.traceparent, `00-${parent.trace_id}-${attempt.span_id}-01`);
  } finally {
    await gateway.stop();
    await aggregator.close();
    await receiver.close();
  }
});
