// The HTTP transport towards one upstream, the gateway's only upstream HTTP client: an
// undici connection pool with slots that bound the requests on the wire (UpstreamClient).
// The openai-compatible engine sends its JSON body on it directly (issue #40: the openai
// SDK's per-call path cost as much CPU as the pool itself); `pooledFetch` is a `fetch` on the
// same client for the openai SDK where it still serves (bench:upstream's comparison). The
// pool enforces the target's timeouts natively (time to response headers, silence between
// body chunks) and never resends a POST; this file adds the wait for a connection
// (`queue_timeout_ms`) and bounds on the bodies read: an answer read whole straight from the
// pool's dispatch (requestText), the error answer to a streamed request and the SDK's bodies
// through readBounded (a stream's events are bounded by llm/sse-reader.ts).
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import { injectTrace } from '../telemetry/index.js';
import type { CallSignal } from './call-signal.js';

/** At most this much of an answer the SDK reads itself (an error answer, to quote it) is read. */
export const SDK_BODY_LIMIT = 64 * 1024;

/** A request that waited `queue_timeout_ms` for a connection; classified as a timeout. */
export class QueueTimeoutError extends Error {
  readonly code = 'QUEUE_TIMEOUT';
  constructor(wait_ms: number) {
    super(`no connection to the upstream was free within ${wait_ms} ms`);
    this.name = 'QueueTimeoutError';
  }
}

/** Headers that belong to one connection; undici manages them and refuses them from callers. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'expect',
]);

export class PooledHeaders {
  constructor(private readonly raw: Record<string, string | string[] | undefined>) {}
  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
  has(name: string): boolean {
    return this.raw[name.toLowerCase()] !== undefined;
  }
  *entries(): IterableIterator<[string, string]> {
    for (const name of Object.keys(this.raw)) {
      const value = this.get(name);
      if (value !== null) yield [name, value];
    }
  }
  forEach(fn: (value: string, name: string) => void): void {
    for (const [name, value] of this.entries()) fn(value, name);
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

export type PoolResponse = Awaited<ReturnType<Pool['request']>>;

/** An answer's body as undici gives it (a Node Readable). */
export type ReadableBody = PoolResponse['body'];

class PooledResponse {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: PooledHeaders;
  readonly body: PoolResponse['body'];
  constructor(
    response: PoolResponse,
    readonly url: string,
  ) {
    this.status = response.statusCode;
    this.ok = response.statusCode >= 200 && response.statusCode < 300;
    this.headers = new PooledHeaders(response.headers);
    this.body = response.body;
  }
  /** The body as text, up to SDK_BODY_LIMIT bytes (the rest is dropped with the connection). */
  text(): Promise<string> {
    return readBounded(this.body, SDK_BODY_LIMIT, false);
  }
  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }
}

/** Thrown by readBounded when a body is larger than the limit and `strict` is set. */
export class BodyTooLargeError extends Error {
  readonly code = 'BODY_TOO_LARGE';
  constructor(limit: number) {
    super(`the answer is larger than ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/**
 * Reads at most `limit` bytes of a body as UTF-8. Past the limit the body is destroyed and,
 * if `strict`, BodyTooLargeError is thrown; otherwise what arrived is returned (to quote it).
 */
export function readBounded(body: ReadableBody, limit: number, strict: boolean): Promise<string> {
  // Events rather than `for await`: the async iterator costs a promise and a queue turn per
  // chunk, on every upstream answer (docs/chat-api.md#benchmark).
  return new Promise<string>((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    const done = (error: unknown, ended = false) => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      // Stopped early: the rest is dropped with the connection. (The error listener stays:
      // destroying undici's body emits an abort error.) An ended body closes by itself.
      if (!ended) body.destroy();
      if (error && strict) reject(error);
      else
        resolve(
          (parts.length === 1 ? parts[0]! : Buffer.concat(parts))
            .subarray(0, limit)
            .toString('utf8'),
        );
    };
    const onData = (part: Buffer) => {
      parts.push(part);
      size += part.length;
      if (size > limit) done(strict ? new BodyTooLargeError(limit) : null);
    };
    const onEnd = () => done(null, true);
    body.on('data', onData);
    body.once('end', onEnd);
    // What arrived before an error is enough to quote, unless `strict`.
    body.on('error', done);
    // Closed with neither an end nor an error: the answer was cut short.
    body.once('close', () => {
      if (!settled)
        done(Object.assign(new Error('the answer ended early'), { code: 'UND_ERR_SOCKET' }));
    });
  });
}

/**
 * At most `connections` requests on the wire; the others wait in line, each at most
 * `queue_timeout_ms`, then fail as a timeout without being sent (so the router fails over).
 * A slot is held until the answer's body is read or dropped.
 */
class Slots {
  private in_flight = 0;
  private readonly waiting: Array<{ grant: () => void }> = [];

  constructor(
    private readonly connections: number,
    private readonly queue_timeout_ms: number,
  ) {}

  acquire(signal: CallSignal | null | undefined): Promise<void> | null {
    if (this.in_flight < this.connections) {
      this.in_flight++;
      return null;
    }
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        grant: () => {
          settle();
          resolve();
        },
      };
      const onAbort = () => {
        settle();
        reject(signal?.reason ?? new Error('aborted'));
      };
      const timer = setTimeout(() => {
        settle();
        reject(new QueueTimeoutError(this.queue_timeout_ms));
      }, this.queue_timeout_ms);
      const settle = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const index = this.waiting.indexOf(waiter);
        if (index !== -1) this.waiting.splice(index, 1);
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  release(): void {
    const next = this.waiting[0];
    if (next)
      next.grant(); // the slot passes on: in_flight stays
    else this.in_flight--;
  }
}

export interface PoolOptions {
  connections: number;
  timeout_ms: number;
  /** How long a request waits for a free connection; by default min(timeout_ms, 10 s). */
  queue_timeout_ms?: number | undefined;
}

/** The connection pool towards `base_url`'s origin, with the target's timeouts. */
export function upstreamPool(base_url: string, options: PoolOptions): Pool {
  return new Pool(new URL(base_url).origin, {
    connections: options.connections,
    headersTimeout: options.timeout_ms,
    bodyTimeout: options.timeout_ms,
    keepAliveTimeout: 30_000,
    connectTimeout: Math.min(options.timeout_ms, 10_000),
  });
}

/** What a request to the upstream carries (the path on its origin, its headers, its body). */
export interface UpstreamRequest {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: string | null;
  signal: CallSignal | null | undefined;
}

/** Bounds on an answer read whole: a success's body, any other status's body. */
export interface TextLimits {
  ok: number;
  error: number;
}

/** An answer read whole: its status, headers and (bounded) body. */
export interface TextAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * A dispatch handler that gathers an answer's body (readBounded's rules: a success strictly
 * within `limits.ok`, any other status up to `limits.error` and what arrived before an error)
 * and calls `done` exactly once. Informational (1xx) heads are passed over.
 */
class TextReader implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private abort_reason: Error | null = null;
  private status = 0;
  private headers: TextAnswer['headers'] = {};
  private limit = 0;
  private readonly parts: Buffer[] = [];
  private size = 0;
  private settled = false;

  constructor(
    private readonly limits: TextLimits,
    private readonly done: (error: Error | null, answer: TextAnswer | null) => void,
  ) {}

  /** Stops the request (the client went away): now if it has started, else as soon as it does. */
  abort(reason: Error): void {
    if (this.controller) this.controller.abort(reason);
    else this.abort_reason = reason;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abort_reason) controller.abort(this.abort_reason);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: TextAnswer['headers'],
  ): void {
    if (statusCode < 200) return;
    this.status = statusCode;
    this.headers = headers;
    this.limit = this.strict() ? this.limits.ok : this.limits.error;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.parts.push(chunk);
    this.size += chunk.length;
    if (this.size <= this.limit) return;
    // Past the bound: the rest is dropped with the connection.
    const error = this.strict() ? new BodyTooLargeError(this.limit) : null;
    this.settle(error);
    controller.abort(error ?? new BodyTooLargeError(this.limit));
  }

  onResponseEnd(): void {
    this.settle(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.settle(error);
  }

  /** A success's body must be whole; any other status's is read only to quote it. */
  private strict(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  private settle(error: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    // An error before the answer's head, or inside a success's body, fails the request.
    if (error && (this.status === 0 || this.strict())) {
      this.done(error, null);
      return;
    }
    const body = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
    this.done(null, {
      statusCode: this.status,
      headers: this.headers,
      text: body.subarray(0, this.limit).toString('utf8'),
    });
  }
}

/**
 * The client of one upstream origin: its pool, and the slots that bound the requests on the
 * wire (a request waits at most `queue_timeout_ms` for one, then fails as a timeout, unsent).
 * A slot is held until the answer's body is read or dropped.
 */
export class UpstreamClient {
  readonly pool: Pool;
  readonly origin: string;
  private readonly slots: Slots;

  constructor(base_url: string, options: PoolOptions, pool?: Pool) {
    this.origin = new URL(base_url).origin;
    this.pool = pool ?? upstreamPool(base_url, options);
    this.slots = new Slots(
      options.connections,
      options.queue_timeout_ms ?? Math.min(options.timeout_ms, 10_000),
    );
  }

  /** Sends `request` (never resent); resolves with the answer's status and headers, its body to read. */
  async request(request: UpstreamRequest): Promise<PoolResponse> {
    await this.slots.acquire(request.signal);
    let response: PoolResponse;
    try {
      response = await this.pool.request({
        path: request.path,
        method: request.method,
        headers: request.headers,
        body: request.body,
        // undici listens to any object with addEventListener (a ClientGone, say)
        signal: (request.signal ?? undefined) as AbortSignal | undefined,
      });
    } catch (error) {
      this.slots.release();
      throw error;
    }
    response.body.once('close', () => this.slots.release());
    return response;
  }

  /**
   * Sends `request` (never resent) and reads its whole answer as text: a success's body up to
   * `limits.ok` bytes (past it BodyTooLargeError), any other status's up to `limits.error`
   * (the rest dropped with the connection; what arrived before an error is kept, to quote).
   * Read straight from the pool's dispatch: no response stream, promise or async resource per
   * answer (issue #40: undici's request() and its body stream cost a tenth of a billed chat's CPU).
   */
  requestText(request: UpstreamRequest, limits: TextLimits): Promise<TextAnswer> {
    const waiting = this.slots.acquire(request.signal);
    return waiting
      ? waiting.then(() => this.dispatchText(request, limits))
      : this.dispatchText(request, limits);
  }

  private dispatchText(request: UpstreamRequest, limits: TextLimits): Promise<TextAnswer> {
    return new Promise<TextAnswer>((resolve, reject) => {
      const signal = request.signal ?? null;
      const reader = new TextReader(limits, (error, answer) => {
        signal?.removeEventListener('abort', onAbort);
        this.slots.release();
        if (answer) resolve(answer);
        else reject(error);
      });
      const onAbort = () => {
        const reason = signal?.reason;
        reader.abort(reason instanceof Error ? reason : new undiciErrors.RequestAbortedError());
      };
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      this.pool.dispatch(
        {
          path: request.path,
          method: request.method,
          headers: request.headers,
          body: request.body,
        },
        reader,
      );
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** The path (with query) on the upstream's origin of `path` beside `base_url`, as the openai SDK joins them; an absolute URL must be on the same origin. */
export function upstreamPath(base_url: string, path: string): string {
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(path)
    ? new URL(path)
    : new URL(base_url + (base_url.endsWith('/') && path.startsWith('/') ? path.slice(1) : path));
  if (url.origin !== new URL(base_url).origin)
    throw new TypeError(`this transport only serves ${new URL(base_url).origin}`);
  return url.pathname + url.search;
}

/** `headers` without the ones that belong to one connection (undici refuses them from callers). */
export function withoutHopByHop(headers: Record<string, string>): Record<string, string> {
  for (const name of Object.keys(headers)) if (HOP_BY_HOP.has(name)) delete headers[name];
  return headers;
}

/** A fetch over `pool` for one upstream origin (for the openai SDK). Requests to any other origin are refused. */
export function pooledFetch(pool: Pool, base_url: string, options: PoolOptions): typeof fetch {
  const client = new UpstreamClient(base_url, options, pool);
  const origin = client.origin;
  const fetchFn = async (
    input: string | URL | Request,
    init: RequestInit = {},
  ): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (
      !url.startsWith(origin) ||
      (url.length > origin.length && url[origin.length] !== '/' && url[origin.length] !== '?')
    ) {
      throw new TypeError(`this transport only serves ${origin}`);
    }
    const headers: Record<string, string> = {};
    if (init.headers) {
      // The SDK hands a Headers object; forEach reads it without an iterator per entry.
      const source = init.headers instanceof Headers ? init.headers : new Headers(init.headers);
      source.forEach((value, name) => {
        if (!HOP_BY_HOP.has(name)) headers[name] = value;
      });
    }
    injectTrace(headers); // W3C traceparent: the upstream's spans join the client's trace
    const response = await client.request({
      path: url.slice(origin.length) || '/',
      method: (init.method ?? 'GET') as 'GET',
      headers,
      body: (init.body ?? null) as string | null,
      signal: init.signal,
    });
    return new PooledResponse(response, url) as unknown as Response;
  };
  return fetchFn as typeof fetch;
}
