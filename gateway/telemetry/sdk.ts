// The OpenTelemetry SDK, loaded (index.ts's dynamic import) only when telemetry is on: a
// tracer provider with a batch processor and the OTLP/HTTP exporter of the protocol chosen
// (protobuf or JSON), W3C trace context as the propagator, AsyncLocalStorage as the context
// manager; a meter provider exporting the GenAI histograms and every counter and gauge of
// the gateway's /metrics registry under the same names. The exporters read the standard
// OTEL_EXPORTER_OTLP_* variables themselves (endpoint, headers, timeout, compression, TLS
// files); the samplers OTEL_TRACES_SAMPLER(_ARG); the resource OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME. A collector that is down costs the requests nothing: spans wait in the
// batch queue (bounded; the oldest are dropped) and exports fail in the background.
import {
  context,
  diag,
  metrics,
  propagation,
  trace,
  DiagLogLevel,
  type Attributes,
  type Meter,
  type ObservableGauge,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-base';
import type { Registry } from 'prom-client';
import type { TelemetryPlan } from './config.js';
import {
  DURATION_BUCKETS,
  OPERATION_DURATION,
  TOKEN_BUCKETS,
  TOKEN_USAGE,
  GEN_AI,
  type GenAiMeters,
} from './genai.js';
import packageJson from '../../package.json' with { type: 'json' };

export function startSdk(
  plan: TelemetryPlan,
  registry: Registry,
  warn: (message: string) => void,
  instance_id: string,
) {
  // An exporter whose collector is down says so on every try: one line a minute is enough.
  let said_at = -Infinity;
  const say = (message: string) => {
    if (Date.now() - said_at < 60_000) return;
    said_at = Date.now();
    warn(`opentelemetry: ${message.slice(0, 500)}`);
  };
  diag.setLogger(
    {
      error: say,
      warn: say,
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    DiagLogLevel.WARN,
  );
  // Lowest precedence first: the SDK's own, the config file's, then OTEL_RESOURCE_ATTRIBUTES
  // and OTEL_SERVICE_NAME. (No process detector: a command line may hold a database URL.)
  const resource = defaultResource()
    .merge(
      resourceFromAttributes({
        'service.name': plan.service_name,
        'service.version': packageJson.version,
        'service.instance.id': instance_id,
        ...plan.resource_attributes,
      }),
    )
    .merge(detectResources({ detectors: [envDetector] }));

  // The active span's context follows the async calls only when spans are exported: the
  // context manager is an AsyncLocalStorage, which on Node 20 puts an init hook on every
  // promise of the process (docs/benchmarks.md, "The request scope without AsyncLocalStorage");
  // with metrics alone, spans are not recorded and nothing needs a context.
  if (plan.traces) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  }

  const tracer_provider = plan.traces ? tracerProvider(plan, plan.traces, resource) : null;
  let meter_provider: MeterProvider | null = null;
  let meters: GenAiMeters | null = null;
  if (plan.metrics) {
    meter_provider = meterProvider(plan.metrics, resource);
    const meter = meter_provider.getMeter('aihub-gateway', packageJson.version);
    meters = genAiMeters(meter);
    bridgeRegistry(meter, registry);
  }

  return {
    tracer: trace.getTracer('aihub-gateway', packageJson.version),
    meters,
    async shutdown() {
      await Promise.all([tracer_provider?.shutdown(), meter_provider?.shutdown()]);
    },
  };
}

type Resource = ReturnType<typeof defaultResource>;

/** The global tracer provider: a batch of spans to the OTLP exporter of the protocol chosen. */
function tracerProvider(
  plan: TelemetryPlan,
  traces: NonNullable<TelemetryPlan['traces']>,
  resource: Resource,
): BasicTracerProvider {
  const options = traces.url ? { url: traces.url } : {};
  const exporter =
    traces.protocol === 'http/json'
      ? new JsonTraceExporter(options)
      : new ProtoTraceExporter(options);
  const provider = new BasicTracerProvider({
    resource,
    ...(plan.sampler ? { sampler: sampler(plan.sampler.name, plan.sampler.arg) } : {}),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  trace.setGlobalTracerProvider(provider);
  return provider;
}

/** The global meter provider, read and exported every interval. */
function meterProvider(
  options: NonNullable<TelemetryPlan['metrics']>,
  resource: Resource,
): MeterProvider {
  const url = options.url ? { url: options.url } : {};
  const exporter =
    options.protocol === 'http/json' ? new JsonMetricExporter(url) : new ProtoMetricExporter(url);
  const provider = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter,
        exportIntervalMillis: options.interval_ms,
        exportTimeoutMillis: Math.min(30_000, options.interval_ms),
      }),
    ],
  });
  metrics.setGlobalMeterProvider(provider);
  return provider;
}

function sampler(name: NonNullable<TelemetryPlan['sampler']>['name'], arg: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(arg);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(arg) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** gen_ai.client.token.usage and gen_ai.client.operation.duration on the OTLP meter. */
function genAiMeters(meter: Meter): GenAiMeters {
  const tokens = meter.createHistogram(TOKEN_USAGE, {
    unit: '{token}',
    description: 'Tokens of settled /v1 calls (input and output)',
    advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
  });
  const duration = meter.createHistogram(OPERATION_DURATION, {
    unit: 's',
    description: 'Seconds from a /v1 call admitted to its bill settled',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  });
  return {
    record(call, input_tokens, output_tokens, seconds) {
      const attributes: Attributes = {
        [GEN_AI.operation]: call.operation,
        [GEN_AI.request_model]: call.tier,
        ...(call.provider ? { [GEN_AI.provider]: call.provider } : {}),
        ...(call.target ? { [GEN_AI.response_model]: call.target } : {}),
      };
      if (!call.failed) {
        tokens.record(input_tokens, { ...attributes, [GEN_AI.token_type]: 'input' });
        tokens.record(output_tokens, { ...attributes, [GEN_AI.token_type]: 'output' });
      }
      duration.record(
        seconds,
        call.failed ? { ...attributes, 'error.type': 'upstream_error' } : attributes,
      );
    },
  };
}

/**
 * Every counter and gauge of the /metrics registry as an observable of the same name, read
 * from the registry when the reader collects (the registry's own collect functions run, as
 * for a scrape). Histograms are not copied: OTLP has its own (the GenAI ones above).
 */
function bridgeRegistry(meter: Meter, registry: Registry): void {
  const instruments = new Map<string, ObservableGauge>();
  for (const metric of registry.getMetricsAsArray()) {
    const { name, help, type } = metric as unknown as { name: string; help: string; type: string };
    if (type === 'counter')
      instruments.set(name, meter.createObservableCounter(name, { description: help }));
    else if (type === 'gauge')
      instruments.set(name, meter.createObservableGauge(name, { description: help }));
  }
  meter.addBatchObservableCallback(
    async (result) => {
      for (const metric of await registry.getMetricsAsJSON()) {
        const instrument = instruments.get(metric.name);
        if (!instrument) continue;
        for (const value of metric.values)
          result.observe(instrument, value.value, value.labels as Attributes);
      }
    },
    [...instruments.values()],
  );
}
