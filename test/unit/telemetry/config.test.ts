// What the config file and the standard OTEL_* environment decide about OpenTelemetry
// (telemetry/config.ts): off unless asked, the environment winning over the file, the
// settings the gateway cannot honour refused with their name; and the GenAI names the
// spans and metrics are labelled with (telemetry/genai.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  planTelemetry,
  telemetryConfigSchema,
  TelemetryConfigError,
} from '../../../gateway/telemetry/config.js';
import { operationOf, prometheusName, providerOf } from '../../../gateway/telemetry/genai.js';

const file = (value: unknown = {}) => telemetryConfigSchema.parse(value);

test('off by default: no config, no OTEL endpoint', () => {
  assert.equal(planTelemetry(file(), {}), null);
  assert.equal(planTelemetry(file(), { OTEL_SERVICE_NAME: 'x' }), null);
});

test('on with the standard endpoint variable, protobuf unless told otherwise, the exporters reading the endpoint themselves', () => {
  const plan = planTelemetry(file(), { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })!;
  assert.deepEqual(plan.traces, { protocol: 'http/protobuf', url: undefined });
  assert.deepEqual(plan.metrics, {
    protocol: 'http/protobuf',
    url: undefined,
    interval_ms: 60_000,
  });
  assert.ok(planTelemetry(file(), { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/v1/traces' }));
});

test("on from the file: its endpoint gets the signals' paths, its sampler and protocol apply", () => {
  const plan = planTelemetry(
    file({
      enabled: true,
      endpoint: 'https://collector.example:4318/',
      protocol: 'http/json',
      sampler: 'traceidratio',
      sampler_arg: 0.25,
    }),
    {},
  )!;
  assert.deepEqual(plan.traces, {
    protocol: 'http/json',
    url: 'https://collector.example:4318/v1/traces',
  });
  assert.equal(plan.metrics!.url, 'https://collector.example:4318/v1/metrics');
  assert.deepEqual(plan.sampler, { name: 'traceidratio', arg: 0.25 });
});

test('the environment wins over the file: protocol per signal, sampler, endpoint, interval', () => {
  const plan = planTelemetry(file({ enabled: true, endpoint: 'http://file:4318' }), {
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_SAMPLER: 'always_off',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318',
    OTEL_METRIC_EXPORT_INTERVAL: '5000',
  })!;
  assert.equal(plan.traces!.protocol, 'http/json');
  assert.equal(plan.traces!.url, undefined, "the env's endpoint, read by the exporter");
  assert.equal(plan.metrics!.protocol, 'http/protobuf');
  assert.equal(plan.metrics!.interval_ms, 5_000);
  assert.equal(plan.sampler, null, 'OTEL_TRACES_SAMPLER is read by the SDK');
});

test('a signal turned off, the whole SDK disabled', () => {
  const on = file({ enabled: true });
  assert.equal(planTelemetry(on, { OTEL_METRICS_EXPORTER: 'none' })!.metrics, null);
  assert.equal(planTelemetry(on, { OTEL_TRACES_EXPORTER: 'none' })!.traces, null);
  assert.equal(
    planTelemetry(file({ enabled: true, metrics: { enabled: false } }), {})!.metrics,
    null,
  );
  assert.equal(planTelemetry(on, { OTEL_SDK_DISABLED: 'true' }), null);
});

test('what the gateway cannot honour is refused, named', () => {
  assert.throws(
    () => planTelemetry(file({ enabled: true }), { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    (error: unknown) => error instanceof TelemetryConfigError && /grpc/.test(error.message),
  );
  assert.throws(
    () => planTelemetry(file({ enabled: true }), { OTEL_TRACES_EXPORTER: 'zipkin' }),
    TelemetryConfigError,
  );
  assert.throws(() => file({ protocol: 'grpc' }));
  assert.throws(() => file({ sampler_arg: 2 }));
  assert.throws(() => file({ endpoint: 'ftp://x' }));
  assert.throws(() => file({ unknown: true }));
});

test('GenAI names: operations by protocol, providers by host, Prometheus spelling', () => {
  assert.deepEqual(
    ['chat', 'responses', 'messages', 'gemini', 'completions', 'embeddings'].map(operationOf),
    ['chat', 'chat', 'chat', 'generate_content', 'text_completion', 'embeddings'],
  );
  assert.equal(
    providerOf({ type: 'openai-compatible', base_url: 'https://api.openai.com/v1' }),
    'openai',
  );
  assert.equal(
    providerOf({ type: 'openai-compatible', base_url: 'https://x.openai.azure.com/openai' }),
    'azure.ai.openai',
  );
  assert.equal(
    providerOf({ type: 'openai-compatible', base_url: 'http://127.0.0.1:11434/v1' }),
    'openai-compatible',
  );
  assert.equal(providerOf({ type: 'builtin' }), 'aihub.builtin');
  assert.equal(prometheusName('gen_ai.client.token.usage'), 'gen_ai_client_token_usage');
});
