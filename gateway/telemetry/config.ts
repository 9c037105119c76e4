// OpenTelemetry's part of the config file (`telemetry`) and what the standard OTEL_*
// environment decides on top of it (the environment wins, as everywhere in config.ts).
// Off unless the file turns it on or the environment names an OTLP endpoint: a gateway
// without either loads none of the SDK (index.ts imports sdk.ts only when this says so).
import { z } from 'zod';

/** The samplers of the OpenTelemetry SDK's OTEL_TRACES_SAMPLER. */
export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof PROTOCOLS)[number];

export const telemetryConfigSchema = z.strictObject({
  /** Export traces (and metrics) over OTLP/HTTP. Also on when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  enabled: z.boolean().default(false),
  /** The collector's OTLP/HTTP base URL (`/v1/traces`, `/v1/metrics` are added); default http://localhost:4318. */
  endpoint: z
    .url({ protocol: /^https?$/ })
    .max(2_048)
    .optional(),
  protocol: z.enum(PROTOCOLS).default('http/protobuf'),
  /** service.name of the resource (OTEL_SERVICE_NAME wins). */
  service_name: z.string().min(1).max(256).default('aihub-gateway'),
  sampler: z.enum(SAMPLERS).default('parentbased_always_on'),
  /** The ratio of the traceidratio samplers, 0..1. */
  sampler_arg: z.number().min(0).max(1).default(1),
  /** More resource attributes (deployment.environment.name, ...); OTEL_RESOURCE_ATTRIBUTES wins. */
  resource_attributes: z
    .record(z.string().regex(/^[A-Za-z][A-Za-z0-9_.-]{0,127}$/), z.string().max(1_024))
    .refine((record) => Object.keys(record).length <= 64, 'at most 64 resource attributes')
    .default({}),
  metrics: z
    .strictObject({
      /** Export the gateway's metrics over OTLP too (beside /metrics), when telemetry is on. */
      enabled: z.boolean().default(true),
      interval_ms: z.int().min(1_000).max(3_600_000).default(60_000),
    })
    .prefault({}),
  /**
   * Record prompts and completions on /v1 spans (gen_ai.input.messages,
   * gen_ai.output.messages). Off: no span carries a prompt, a completion, a key or a PAN.
   */
  capture_content: z.boolean().default(false),
});
export type TelemetryConfig = z.output<typeof telemetryConfigSchema>;

/** What the gateway exports, decided once at start. */
export interface TelemetryPlan {
  traces: { protocol: OtlpProtocol; url: string | undefined } | null;
  metrics: { protocol: OtlpProtocol; url: string | undefined; interval_ms: number } | null;
  /** Built from the config; null when OTEL_TRACES_SAMPLER is set (the SDK reads it). */
  sampler: { name: SamplerName; arg: number } | null;
  service_name: string;
  resource_attributes: Record<string, string>;
  capture_content: boolean;
}

/** A setting the gateway cannot honour (exit 2 at start, naming it). */
export class TelemetryConfigError extends Error {
  override name = 'TelemetryConfigError';
}

const ENDPOINT_VARS = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
];

/** What to export, or null for nothing (the default). */
export function planTelemetry(
  config: TelemetryConfig,
  env: NodeJS.ProcessEnv = process.env,
): TelemetryPlan | null {
  const set = (name: string) => {
    const value = env[name]?.trim();
    return value ? value : undefined;
  };
  if (set('OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  if (!config.enabled && !ENDPOINT_VARS.some((name) => set(name))) return null;
  const exporter = (signal: 'TRACES' | 'METRICS') => {
    const chosen = set(`OTEL_${signal}_EXPORTER`)?.toLowerCase() ?? 'otlp';
    if (chosen === 'none') return false;
    if (chosen !== 'otlp')
      throw new TelemetryConfigError(
        `OTEL_${signal}_EXPORTER=${chosen} is not supported: the gateway exports otlp (or none)`,
      );
    return true;
  };
  const protocol = (signal: 'TRACES' | 'METRICS'): OtlpProtocol => {
    const chosen =
      set(`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`) ??
      set('OTEL_EXPORTER_OTLP_PROTOCOL') ??
      config.protocol;
    if (!(PROTOCOLS as readonly string[]).includes(chosen))
      throw new TelemetryConfigError(
        `OTLP protocol ${chosen} is not supported: use http/protobuf or http/json (OTEL_EXPORTER_OTLP_PROTOCOL, telemetry.protocol)`,
      );
    return chosen as OtlpProtocol;
  };
  // The exporters read the environment's endpoints themselves; the file's applies without them.
  const url = (signal: 'TRACES' | 'METRICS', path: string) =>
    set('OTEL_EXPORTER_OTLP_ENDPOINT') || set(`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`)
      ? undefined
      : config.endpoint && `${config.endpoint.replace(/\/+$/, '')}/${path}`;
  return {
    traces: exporter('TRACES')
      ? { protocol: protocol('TRACES'), url: url('TRACES', 'v1/traces') }
      : null,
    metrics:
      config.metrics.enabled && exporter('METRICS')
        ? {
            protocol: protocol('METRICS'),
            url: url('METRICS', 'v1/metrics'),
            interval_ms: Number(set('OTEL_METRIC_EXPORT_INTERVAL')) || config.metrics.interval_ms,
          }
        : null,
    sampler: set('OTEL_TRACES_SAMPLER') ? null : { name: config.sampler, arg: config.sampler_arg },
    service_name: config.service_name,
    resource_attributes: config.resource_attributes,
    capture_content: config.capture_content,
  };
}
