// A local OTLP/HTTP receiver, as a collector is to the gateway: POST /v1/traces and
// /v1/metrics, in protobuf (decoded by protobufjs with the OTLP messages the
// @opentelemetry/otlp-transformer package generated from opentelemetry-proto, installed as
// otlp-transformer-protobufjs) or JSON. Spans and metric names are kept, flattened, for the
// tests to look at; `down()` makes it refuse (503) to stand for a collector in trouble.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';

const require = createRequire(import.meta.url);
const root = require('otlp-transformer-protobufjs/build/src/generated/root.js') as any;
const proto = root.opentelemetry.proto.collector;

export interface ReceivedSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  /** The resource's attributes (service.name, ...). */
  resource: Record<string, unknown>;
  status_code: number;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  /** Names of the metrics received, with their data points' attributes. */
  metrics: Map<string, Array<Record<string, unknown>>>;
  /** Content types of the requests received (application/x-protobuf, application/json). */
  content_types: Set<string>;
  /** Waits (bounded) until `match` holds for the spans received. */
  waitFor(
    match: (spans: ReceivedSpan[]) => boolean,
    what: string,
    timeout_ms?: number,
  ): Promise<void>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics = new Map<string, Array<Record<string, unknown>>>();
  const content_types = new Set<string>();
  const server: Server = createServer((req, res) => {
    void read(req).then(
      (body) => {
        const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
        content_types.add(type);
        const json = type === 'application/json';
        if (req.url === '/v1/traces') {
          const message = json
            ? JSON.parse(body.toString('utf8'))
            : proto.trace.v1.ExportTraceServiceRequest.toObject(
                proto.trace.v1.ExportTraceServiceRequest.decode(body),
                { longs: Number, oneofs: true },
              );
          spans.push(...flattenSpans(message));
        } else if (req.url === '/v1/metrics') {
          const message = json
            ? JSON.parse(body.toString('utf8'))
            : proto.metrics.v1.ExportMetricsServiceRequest.toObject(
                proto.metrics.v1.ExportMetricsServiceRequest.decode(body),
                { longs: Number, oneofs: true },
              );
          collectMetrics(message, metrics);
        }
        res.writeHead(200, { 'content-type': type || 'application/json' });
        res.end(json ? '{}' : '');
      },
      () => {
        res.writeHead(400);
        res.end();
      },
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    metrics,
    content_types,
    async waitFor(match, what, timeout_ms = 20_000) {
      const deadline = Date.now() + timeout_ms;
      while (!match(spans)) {
        if (Date.now() > deadline)
          throw new Error(
            `no ${what} in ${timeout_ms} ms; received: ${spans.map((s) => s.name).join(', ')}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function read(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

/** Ids as hex: JSON carries hex strings, protobuf bytes. */
function hex(id: unknown): string {
  if (typeof id === 'string') return id;
  if (id instanceof Uint8Array) return Buffer.from(id).toString('hex');
  return '';
}

/** An OTLP AnyValue as a plain value (one of its fields is set). */
function plain(value: Record<string, unknown> | undefined): unknown {
  if (!value) return undefined;
  const array = value.arrayValue as { values?: Array<Record<string, unknown>> } | undefined;
  if (array) return (array.values ?? []).map(plain);
  if (value.intValue !== undefined) return Number(value.intValue);
  for (const field of ['stringValue', 'doubleValue', 'boolValue'])
    if (value[field] !== undefined) return value[field];
  return null;
}

function attributes(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of (list as Array<{ key: string; value: Record<string, unknown> }>) ??
    [])
    out[key] = plain(value);
  return out;
}

function flattenSpans(message: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resource_spans of message.resourceSpans ?? []) {
    const resource = attributes(resource_spans.resource?.attributes);
    for (const scope of resource_spans.scopeSpans ?? [])
      for (const span of scope.spans ?? [])
        out.push({
          trace_id: hex(span.traceId),
          span_id: hex(span.spanId),
          parent_span_id: hex(span.parentSpanId),
          name: span.name,
          kind: span.kind,
          attributes: attributes(span.attributes),
          resource,
          status_code: span.status?.code ?? 0,
        });
  }
  return out;
}

function collectMetrics(message: any, into: Map<string, Array<Record<string, unknown>>>): void {
  for (const resource_metrics of message.resourceMetrics ?? [])
    for (const scope of resource_metrics.scopeMetrics ?? [])
      for (const metric of scope.metrics ?? []) {
        const data = metric.histogram ?? metric.sum ?? metric.gauge;
        const points = (data?.dataPoints ?? []) as Array<{ attributes?: unknown }>;
        const list = into.get(metric.name) ?? [];
        for (const point of points) list.push(attributes(point.attributes));
        into.set(metric.name, list);
      }
}
