// The HTTP transport towards one upstream: an undici connection pool, and a `fetch` on it
// for the openai SDK. Node's global fetch wraps every response in WHATWG streams and costs
// several times more CPU per request than the pool itself; the SDK only needs status,
// headers, `text()`, `json()` and an async-iterable body, which a pooled undici response
// gives directly. The pool enforces the target's timeouts natively: time to response
// headers, and silence between body chunks.
import { Pool } from 'undici';

/** Headers that belong to one connection; undici manages them and refuses them from callers. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect']);

class PooledHeaders {
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

type PoolResponse = Awaited<ReturnType<Pool['request']>>;

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
  text(): Promise<string> {
    return this.body.text();
  }
  json(): Promise<unknown> {
    return this.body.json();
  }
}

/** The connection pool towards `base_url`'s origin, with the target's timeouts. */
export function upstreamPool(base_url: string, options: { connections: number; timeout_ms: number }): Pool {
  return new Pool(new URL(base_url).origin, {
    connections: options.connections,
    headersTimeout: options.timeout_ms,
    bodyTimeout: options.timeout_ms,
    keepAliveTimeout: 30_000,
    connectTimeout: Math.min(options.timeout_ms, 10_000),
  });
}

/** A fetch over `pool` for one upstream origin. Requests to any other origin are refused. */
export function pooledFetch(pool: Pool, base_url: string): typeof fetch {
  const origin = new URL(base_url).origin;
  const fetchFn = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(origin) || (url.length > origin.length && url[origin.length] !== '/' && url[origin.length] !== '?')) {
      throw new TypeError(`this transport only serves ${origin}`);
    }
    const headers: Record<string, string> = {};
    if (init.headers) {
      const source = init.headers instanceof Headers ? init.headers : new Headers(init.headers);
      for (const [name, value] of source) if (!HOP_BY_HOP.has(name)) headers[name] = value;
    }
    const response = await pool.request({
      path: url.slice(origin.length) || '/',
      method: (init.method ?? 'GET') as 'GET',
      headers,
      body: (init.body ?? null) as string | null,
      signal: init.signal ?? undefined,
    });
    return new PooledResponse(response, url) as unknown as Response;
  };
  return fetchFn as typeof fetch;
}
