// OpenTelemetry for the gateway: one server span per request, children for the steps that
// cost time, GenAI attributes on /v1 requests, W3C trace context from the client and onward
// to upstreams, trace ids in the log lines. The rooms call the small functions below, one
// line each; while telemetry is off (the default) each is a null check and nothing else, and
// the SDK (sdk.ts) is never loaded. Only @opentelemetry/api, a small package of interfaces,
// is imported here.
import {
  context,
  createContextKey,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { TelemetryPlan } from './config.js';
import { GEN_AI, operationOf, providerOf, type EngineShape, type GenAiMeters } from './genai.js';

interface Running {
  tracer: Tracer;
  capture_content: boolean;
  meters: GenAiMeters | null;
  providers: ReadonlyMap<string, string>;
  shutdown(): Promise<void>;
}

/** Set once telemetry has started; null (the default) keeps every hook below a no-op. */
let running: Running | null = null;

/** What one request's trace knows: its server span and, on /v1, its GenAI call. */
interface RequestTrace {
  span: Span;
  method: string;
  genai: { operation: string; tier: string } | null;
  finish_reasons: string[];
}

const REQUEST = createContextKey('aihub.request_trace');
const servers = new WeakMap<ServerResponse, RequestTrace>();

/** Content is capped on a span: a long conversation is cut, never a span dropped. */
const CONTENT_CHARS = 32 * 1024;

/**
 * Starts exporting what `plan` (config.ts's planTelemetry: the config file and the OTEL_*
 * environment) says; nothing is loaded without a plan.
 */
export async function startTelemetry(
  plan: TelemetryPlan | null,
  options: {
    engines: Record<string, EngineShape>;
    registry: Registry;
    warn: (message: string) => void;
    instance_id: string;
  },
): Promise<boolean> {
  if (!plan) return false;
  const sdk = await import('./sdk.js');
  const started = sdk.startSdk(plan, options.registry, options.warn, options.instance_id);
  const providers = new Map(
    Object.entries(options.engines).map(([name, engine]) => [name, providerOf(engine)]),
  );
  running = { ...started, capture_content: plan.capture_content, providers };
  return true;
}

/** Flushes what is queued (bounded: a collector that is down does not hold the exit). */
export async function stopTelemetry(timeout_ms = 3_000): Promise<void> {
  const now = running;
  if (!now) return;
  running = null;
  await Promise.race([
    now.shutdown().catch(() => undefined),
    new Promise((resolve) => setTimeout(resolve, timeout_ms).unref()),
  ]);
}

/** True while spans are recorded (for a log line's trace ids, pino's mixin). */
export function tracingOn(): boolean {
  return running !== null;
}

// ---- the server span ---------------------------------------------------------------------

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The probes an orchestrator or a scraper calls every few seconds: a span each would bury the
 * traces of requests under thousands that say nothing (the OpenTelemetry HTTP
 * instrumentations leave them to an ignore hook; here they are left out by default).
 */
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

function isProbe(url: string | undefined): boolean {
  if (url === undefined) return false;
  const query = url.indexOf('?');
  return PROBE_PATHS.has(query === -1 ? url : url.slice(0, query));
}

/** Runs a request's handling inside its server span, a child of the client's `traceparent` (none for a probe). */
export function inServerSpan<T>(req: IncomingMessage, res: ServerResponse, fn: () => T): T {
  if (!running || isProbe(req.url)) return fn();
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const method = METHODS.has(req.method ?? '') ? req.method! : '_OTHER';
  const socket = req.socket;
  const span = running.tracer.startSpan(
    method,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': method,
        'url.scheme': 'encrypted' in socket && socket.encrypted ? 'https' : 'http',
        'network.protocol.version': req.httpVersion,
        'server.port': socket.localPort ?? 0,
        ...(typeof req.headers['user-agent'] === 'string'
          ? { 'user_agent.original': req.headers['user-agent'].slice(0, 256) }
          : {}),
      },
    },
    parent,
  );
  const request: RequestTrace = { span, method, genai: null, finish_reasons: [] };
  servers.set(res, request);
  return context.with(trace.setSpan(parent, span).setValue(REQUEST, request), fn);
}

/**
 * Ends the server span when the answer is done: named by the route pattern (never the path,
 * which may carry an id or a number), with the status. Called by the request's log line.
 */
export function endServerSpan(res: ServerResponse, route: string | null): void {
  if (!running) return;
  const request = servers.get(res);
  if (!request) return;
  servers.delete(res);
  const { span, method } = request;
  const status = res.statusCode;
  if (route && status !== 404) {
    span.setAttribute('http.route', route);
    span.updateName(`${method} ${route}`);
  }
  span.setAttribute('http.response.status_code', status);
  if (!res.writableFinished) span.setAttribute('aihub.client_closed', true);
  if (status >= 500) {
    span.setAttribute('error.type', String(status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

type TraceIds = { trace_id?: string; span_id?: string };
const NO_IDS: TraceIds = Object.freeze({});

/** A request log line's `trace_id` and `span_id` (its server span), when it has one. */
export function traceFields(res: ServerResponse): TraceIds {
  if (!running) return NO_IDS;
  const request = servers.get(res);
  return request ? ids(request.span) : NO_IDS;
}

/** pino's mixin: the trace of the span active where the line is logged (a fresh object: pino adds the line's fields to it). */
export function activeTraceFields(): TraceIds {
  const span = running ? trace.getSpan(context.active()) : undefined;
  return span ? { ...ids(span) } : {};
}

function ids(span: Span): TraceIds {
  const span_context = span.spanContext();
  // (With traces turned off and metrics on, spans are the API's no-ops, with no ids.)
  if (!isSpanContextValid(span_context)) return NO_IDS;
  return { trace_id: span_context.traceId, span_id: span_context.spanId };
}

// ---- children -----------------------------------------------------------------------------

/** Runs `fn` in a child span of the active one (an error ends it as failed). */
export function withSpan<T>(
  name: string,
  fn: () => Promise<T>,
  attributes?: Attributes,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  if (!running) return fn();
  const span = running.tracer.startSpan(name, { kind, ...(attributes ? { attributes } : {}) });
  return context.with(trace.setSpan(context.active(), span), async () => {
    try {
      return await fn();
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** withSpan for a synchronous step. */
export function withSpanSync<T>(name: string, fn: () => T): T {
  if (!running) return fn();
  const span = running.tracer.startSpan(name);
  try {
    return context.with(trace.setSpan(context.active(), span), fn);
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** A span that ends when told (a relayed stream), beside the steps that follow it. */
export function startSpan(name: string): { end(error?: unknown): void } {
  if (!running) return NO_SPAN;
  const span = running.tracer.startSpan(name);
  return {
    end(error?: unknown) {
      if (error) failed(span, error);
      span.end();
    },
  };
}
const NO_SPAN = { end() {} };

/** An error as a span's status: its kind (an upstream's, a provider's) or its class, never its text's secrets. */
function failed(span: Span, error: unknown): void {
  const kind = (error as { kind?: unknown } | null)?.kind;
  span.setAttribute(
    'error.type',
    typeof kind === 'string' ? kind : ((error as Error | null)?.name ?? 'Error'),
  );
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** Runs an outgoing call (a payment provider's attempt) in a client span. */
export function withClientSpan<T>(
  name: string,
  attributes: Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  return withSpan(name, fn, attributes, SpanKind.CLIENT);
}

/** Adds the active context's `traceparent` (and `tracestate`) to an upstream request's headers. */
export function injectTrace(headers: Record<string, string>): void {
  if (!running) return;
  propagation.inject(context.active(), headers);
}

// ---- GenAI (/v1) ---------------------------------------------------------------------------

function requestTrace(): RequestTrace | undefined {
  return context.active().getValue(REQUEST) as RequestTrace | undefined;
}

/**
 * What a /v1 request asks: the protocol's operation, the tier, the output limit. `content`
 * (the messages) is read only when the operator turned content capture on.
 */
export function genAiRequest(
  protocol: string,
  tier: string,
  max_tokens: number,
  content?: () => unknown,
): void {
  if (!running) return;
  const request = requestTrace();
  if (!request) return;
  const operation = operationOf(protocol);
  request.genai = { operation, tier };
  request.span.setAttributes({
    [GEN_AI.operation]: operation,
    [GEN_AI.request_model]: tier,
    ...(max_tokens > 0 ? { [GEN_AI.max_tokens]: max_tokens } : {}),
    'aihub.protocol': protocol,
  });
  if (running.capture_content && content)
    request.span.setAttribute(GEN_AI.input_messages, capped(content));
}

/** The finish reasons of an answer's (or a stream chunk's) choices; `content` read only with capture on. */
export function genAiFinish(
  choices: ReadonlyArray<{ finish_reason?: string | null | undefined }> | undefined,
  content?: () => unknown,
): void {
  if (!running || !choices) return;
  genAiFinishReasons(() => choices.map((choice) => choice.finish_reason ?? ''), content);
}

/**
 * The finish reasons a native answer (or stream event) gives in its protocol's own words
 * (read only with tracing on); `content` read only with capture on.
 */
export function genAiFinishReasons(
  reasons: () => readonly string[],
  content?: () => unknown,
): void {
  if (!running) return;
  const request = requestTrace();
  if (!request) return;
  for (const reason of reasons())
    if (reason && request.finish_reasons.length < 16) request.finish_reasons.push(reason);
  if (running.capture_content && content)
    request.span.setAttribute(GEN_AI.output_messages, capped(content));
}

/** A streamed choice's delta as far as the output capture reads it (text and tool calls). */
interface StreamDelta {
  index?: number | undefined;
  delta?: { content?: string | null | undefined; tool_calls?: unknown } | undefined;
}

/**
 * What a streamed answer said, kept for its span's `gen_ai.output.messages` (content capture
 * on): each choice's text and tool calls as the deltas build them, at most CONTENT_CHARS in
 * all (past it nothing more is kept). `streamOutput` gives none without capture or a span.
 */
export class StreamOutput {
  private readonly choices: Array<{
    content: string;
    tool_calls: Array<{ id?: string; name: string; arguments: string }>;
  }> = [];
  private chars = 0;

  /** The deltas of one chunk's choices. */
  add(choices: readonly StreamDelta[] | undefined): void {
    if (!choices) return;
    for (const choice of choices) {
      const index = choice.index ?? 0;
      if (index < 0 || index >= 16 || this.chars >= CONTENT_CHARS) continue;
      const kept = (this.choices[index] ??= { content: '', tool_calls: [] });
      const text = choice.delta?.content;
      if (typeof text === 'string') kept.content += this.take(text);
      const calls = choice.delta?.tool_calls;
      if (!Array.isArray(calls)) continue;
      for (const raw of calls.slice(0, 16)) {
        const call = (raw ?? {}) as {
          index?: unknown;
          id?: unknown;
          function?: { name?: unknown; arguments?: unknown } | null;
        };
        const at =
          Number.isInteger(call.index) && (call.index as number) >= 0 && (call.index as number) < 16
            ? (call.index as number)
            : 0;
        const tool = (kept.tool_calls[at] ??= { name: '', arguments: '' });
        if (typeof call?.id === 'string' && !tool.id) tool.id = this.take(call.id);
        if (typeof call?.function?.name === 'string') tool.name += this.take(call.function.name);
        if (typeof call?.function?.arguments === 'string')
          tool.arguments += this.take(call.function.arguments);
      }
    }
  }

  /** Puts what was kept on the request's span. */
  end(): void {
    const request = requestTrace();
    if (!request) return;
    const messages = this.choices.map((choice) => ({
      role: 'assistant',
      content: choice.content,
      ...(choice.tool_calls.length > 0
        ? { tool_calls: choice.tool_calls.filter((call) => call !== undefined) }
        : {}),
    }));
    request.span.setAttribute(
      GEN_AI.output_messages,
      capped(() => messages),
    );
  }

  private take(text: string): string {
    const piece = text.slice(0, CONTENT_CHARS - this.chars);
    this.chars += piece.length;
    return piece;
  }
}

/**
 * A stream a target passed through in its own protocol: what it generated (its text and
 * tool-call arguments, read by the dialect) as the span's output, one assistant message; `text`
 * read only with capture on.
 */
export function genAiStreamedText(text: () => string): void {
  if (!running?.capture_content) return;
  const request = requestTrace();
  if (!request) return;
  request.span.setAttribute(
    GEN_AI.output_messages,
    capped(() => [{ role: 'assistant', content: text() }]),
  );
}

/** A stream's output capture, or null when content is not captured (or the request has no span). */
export function streamOutput(): StreamOutput | null {
  if (!running?.capture_content || !requestTrace()) return null;
  return new StreamOutput();
}

function capped(content: () => unknown): string {
  const text = JSON.stringify(content()) ?? '';
  return text.length > CONTENT_CHARS ? `${text.slice(0, CONTENT_CHARS)}…` : text;
}

/** Runs one upstream attempt in a client span (GenAI's `{operation} {model}`). */
export function withUpstreamAttempt<T>(target: string, fn: () => Promise<T>): Promise<T> {
  if (!running) return fn();
  const genai = requestTrace()?.genai;
  const provider = running.providers.get(target) ?? target;
  const attributes: Attributes = {
    [GEN_AI.provider]: provider,
    'aihub.target': target,
    ...(genai ? { [GEN_AI.operation]: genai.operation, [GEN_AI.request_model]: genai.tier } : {}),
  };
  return withSpan(
    genai ? `${genai.operation} ${genai.tier}` : `upstream ${target}`,
    async () => {
      const value = await fn();
      trace.getActiveSpan()?.setAttribute(GEN_AI.response_model, target);
      return value;
    },
    attributes,
    SpanKind.CLIENT,
  );
}

/**
 * What a settled /v1 request was billed: usage, cost and balance on its span (with tracing
 * on), and the GenAI metrics (from the arguments: with metrics alone there is no span, and no
 * context to find one in).
 */
export function genAiResult(result: {
  /** The wire protocol the client spoke, and the tier it asked for. */
  protocol: string;
  tier: string;
  target: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  /** Currency units. */
  cost: number;
  balance_after: number;
  seconds: number;
  status: string;
}): void {
  if (!running) return;
  const provider = result.target
    ? (running.providers.get(result.target) ?? result.target)
    : undefined;
  running.meters?.record(
    {
      operation: operationOf(result.protocol),
      tier: result.tier,
      target: result.target,
      provider: provider ?? null,
      failed: result.status === 'upstream_error' || result.status === 'stream_error',
    },
    result.input_tokens,
    result.output_tokens,
    result.seconds,
  );
  const request = requestTrace();
  if (!request) return;
  request.span.setAttributes({
    ...(result.target ? { [GEN_AI.response_model]: result.target } : {}),
    ...(provider ? { [GEN_AI.provider]: provider } : {}),
    [GEN_AI.input_tokens]: result.input_tokens,
    [GEN_AI.output_tokens]: result.output_tokens,
    [GEN_AI.cache_read_tokens]: result.cached_tokens,
    [GEN_AI.reasoning_tokens]: result.reasoning_tokens,
    ...(request.finish_reasons.length
      ? { [GEN_AI.finish_reasons]: [...request.finish_reasons] }
      : {}),
    'aihub.cost': result.cost,
    'aihub.balance_after': result.balance_after,
    'aihub.usage_status': result.status,
  });
}
