// The gateway's one HTTP server: Node's own http.Server (llhttp) for every connection and
// every surface. A payments platform's public socket is not the place for a private HTTP
// parser: a hand-made one (gateway/http/front.ts until issue #13) buffered up to 4 MiB of
// an unauthenticated body per connection before the handler could refuse the key, and
// judged request targets and header floods differently from Node.
//
// Node's bounds: request heads of at most 16 KiB (431 beyond), at most 2,000 headers (the
// rest are dropped), the head within `headersTimeout`, the whole request within
// `requestTimeout` (an outer bound), idle keep-alive connections closed after
// `keepAliveTimeout`. Ours (http/connections.ts, around the request listener): a body within
// `limits.body_timeout_ms` of its head, and caps on open connections per address and in all.
// A body the handler does not read (a refused key, a 413) is drained and discarded by Node,
// never buffered, until the body deadline: the /v1 handlers authenticate from the head before
// they read a body. A connection that closes under such a body lingers (http/linger.ts), so
// that the rest of the body does not reset the connection before the client reads the answer.
import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer, Server as HttpsServer } from 'node:https';
import { ConnectionGuard, type ConnectionEvents, type ConnectionLimits } from './connections.js';
import { lingerOnClose } from './linger.js';

/** A PEM certificate chain and its key: with them the same handler is served over HTTPS. */
export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

export const SERVER_LIMITS = {
  /** A little longer than common load balancers' idle timeout (60 s), so that they close first. */
  keepAliveTimeout: 65_000,
  headersTimeout: 66_000,
  requestTimeout: 300_000,
  maxHeaderSize: 16 * 1024,
  maxHeadersCount: 2_000,
} as const;

/**
 * The server, its request listener guarded by `limits` when given (the body deadline and the
 * connection caps of http/connections.ts; main.ts always gives them).
 */
export function createHttpServer(
  handler: RequestListener,
  tls: TlsFiles | null = null,
  limits: ConnectionLimits | null = null,
  watch: { events: ConnectionEvents; open(count: () => number): void } | null = null,
): Server | HttpsServer {
  const guard = limits ? new ConnectionGuard(limits, watch?.events ?? null) : null;
  if (guard) watch?.open(() => guard.open);
  if (guard) handler = guard.guard(handler);
  handler = lingerOnClose(handler); // outermost: a refused connection's answer lingers too
  const options = {
    keepAliveTimeout: SERVER_LIMITS.keepAliveTimeout,
    headersTimeout: SERVER_LIMITS.headersTimeout,
    requestTimeout: SERVER_LIMITS.requestTimeout,
    maxHeaderSize: SERVER_LIMITS.maxHeaderSize,
    noDelay: true,
  };
  const server = tls
    ? createHttpsServer({ ...options, ...tls }, handler)
    : createServer(options, handler);
  server.maxHeadersCount = SERVER_LIMITS.maxHeadersCount;
  if (guard) server.on('connection', guard.onConnection);
  return server;
}

export { HttpsServer };
