// OpenTelemetry's semantic conventions for generative AI, as of semantic-conventions v1.41
// (the @opentelemetry/semantic-conventions 1.45 package's names): `gen_ai.provider.name`,
// which replaced `gen_ai.system` in v1.37, the usage attributes, and the two client
// histograms, exported over OTLP (sdk.ts) and at /metrics (prom-client, dots as
// underscores: Prometheus' spelling of the same names).
import type { Registry } from 'prom-client';
import { FastHistogram } from './histogram.js';

export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  request_model: 'gen_ai.request.model',
  response_model: 'gen_ai.response.model',
  max_tokens: 'gen_ai.request.max_tokens',
  input_tokens: 'gen_ai.usage.input_tokens',
  output_tokens: 'gen_ai.usage.output_tokens',
  cache_read_tokens: 'gen_ai.usage.cache_read.input_tokens',
  reasoning_tokens: 'gen_ai.usage.reasoning.output_tokens',
  finish_reasons: 'gen_ai.response.finish_reasons',
  input_messages: 'gen_ai.input.messages',
  output_messages: 'gen_ai.output.messages',
  token_type: 'gen_ai.token.type',
} as const;

export const TOKEN_USAGE = 'gen_ai.client.token.usage';
export const OPERATION_DURATION = 'gen_ai.client.operation.duration';
/** The conventions' advised buckets. */
export const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
export const DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/** The operation each /v1 protocol is (gen_ai.operation.name's well-known values). */
const OPERATIONS: Record<string, string> = {
  chat: 'chat',
  responses: 'chat',
  messages: 'chat',
  gemini: 'generate_content',
  completions: 'text_completion',
  embeddings: 'embeddings',
};
export function operationOf(protocol: string): string {
  return OPERATIONS[protocol] ?? protocol;
}

/** What the provider name is read from: a target's engine config. */
export interface EngineShape {
  type: string;
  base_url?: string;
}

/** Hosts of the providers the conventions name (gen_ai.provider.name's well-known values). */
const HOSTS: Array<[suffix: string, provider: string]> = [
  ['api.openai.com', 'openai'],
  ['openai.azure.com', 'azure.ai.openai'],
  ['api.anthropic.com', 'anthropic'],
  ['generativelanguage.googleapis.com', 'gcp.gemini'],
  ['aiplatform.googleapis.com', 'gcp.vertex_ai'],
  ['api.groq.com', 'groq'],
  ['api.mistral.ai', 'mistral_ai'],
  ['api.deepseek.com', 'deepseek'],
  ['api.x.ai', 'x_ai'],
  ['api.perplexity.ai', 'perplexity'],
  ['api.cohere.com', 'cohere'],
  ['api.cohere.ai', 'cohere'],
];

/** A target's gen_ai.provider.name: a well-known provider by its host, else the engine's kind. */
export function providerOf(engine: EngineShape): string {
  if (engine.type === 'builtin') return 'aihub.builtin';
  if (engine.base_url) {
    const host = new URL(engine.base_url).hostname;
    for (const [suffix, provider] of HOSTS)
      if (host === suffix || host.endsWith(`.${suffix}`)) return provider;
  }
  return engine.type; // openai-compatible: a self-hosted or unnamed server
}

type Observer = { observe(value: number): void };
/** The label names of the two GenAI histograms at /metrics. */
const GENAI_LABELS = [
  'gen_ai_operation_name',
  'gen_ai_provider_name',
  'gen_ai_request_model',
  'gen_ai_response_model',
] as const;
type TokenLabel = (typeof GENAI_LABELS)[number] | 'gen_ai_token_type';
type DurationLabel = (typeof GENAI_LABELS)[number] | 'error_type';

/** One settled call's labels. */
export interface GenAiCall {
  operation: string;
  tier: string;
  target: string | null;
  provider: string | null;
  failed: boolean;
}

/** Where the two histograms are recorded (OTLP's meter, or /metrics). */
export interface GenAiMeters {
  record(call: GenAiCall, input_tokens: number, output_tokens: number, seconds: number): void;
}

/** The same two histograms at /metrics, on the gateway's prom-client registry. */
export class PrometheusGenAi implements GenAiMeters {
  private readonly tokens: FastHistogram<TokenLabel>;
  private readonly duration: FastHistogram<DurationLabel>;
  /** A child per label set, made once (a label set is hashed only the first time). */
  private readonly cells = new Map<
    string,
    { input: Observer; output: Observer; seconds: Observer }
  >();

  constructor(registry: Registry) {
    this.tokens = new FastHistogram(
      prometheusName(TOKEN_USAGE),
      'Tokens of settled /v1 calls by operation, provider, tier (request model), target (response model) and type (input, output)',
      [...GENAI_LABELS, 'gen_ai_token_type'],
      TOKEN_BUCKETS,
      registry,
    );
    this.duration = new FastHistogram(
      prometheusName(OPERATION_DURATION),
      'Seconds from a /v1 call admitted to its bill settled, by operation, provider, tier, target and error type',
      [...GENAI_LABELS, 'error_type'],
      DURATION_BUCKETS,
      registry,
    );
  }

  record(call: GenAiCall, input_tokens: number, output_tokens: number, seconds: number): void {
    const key = `${call.operation}\u0000${call.tier}\u0000${call.target}\u0000${call.failed}`;
    let cell = this.cells.get(key);
    if (!cell) {
      const base = {
        gen_ai_operation_name: call.operation,
        gen_ai_provider_name: call.provider ?? '',
        gen_ai_request_model: call.tier,
        gen_ai_response_model: call.target ?? '',
      };
      cell = {
        input: this.tokens.series({ ...base, gen_ai_token_type: 'input' }),
        output: this.tokens.series({ ...base, gen_ai_token_type: 'output' }),
        seconds: this.duration.series({
          ...base,
          error_type: call.failed ? 'upstream_error' : '',
        }),
      };
      this.cells.set(key, cell);
    }
    if (!call.failed) {
      cell.input.observe(input_tokens);
      cell.output.observe(output_tokens);
    }
    cell.seconds.observe(seconds);
  }
}

/** An OpenTelemetry metric name as Prometheus spells it. */
export function prometheusName(name: string): string {
  return name.replace(/[^A-Za-z0-9_:]/g, '_');
}
