// Slow and many connections (issue #25, item 9). An attack run held 200 unauthenticated
// connections, each sending 999,980 of a 1,000,000-byte body, for five minutes (Node's
// requestTimeout) while the JSON parser buffered each body (RSS 133 → 307 MB). Two bounds:
//
// - A body deadline: a request with a body (Content-Length or Transfer-Encoding) has
//   `body_timeout_ms` from its head to its last byte. Past it the request is answered 408
//   `request_timeout` in its surface's shape with `Connection: close` (or, when an answer has
//   already begun, as for a key refused from the head whose body Node drains, the connection
//   is closed), so a slow body costs at most that long.
// - Open connections, per client address and in all. A connection past either cap is not
//   served: its first request is answered at once (429 `too_many_connections` for its
//   address, 503 `server_busy` for the gateway) in the surface's shape with `Connection:
//   close`, and a connection that sends no request within REFUSAL_GRACE_MS is closed. At most
//   MAX_REFUSING such connections wait for their answer; beyond that they are closed at once.
//   Addresses in `exempt` ("loopback" by default: the local extension, or a reverse proxy on
//   the same host, whose clients are many) are held to the total cap only.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { isIP } from 'node:net';
import { ApiError, errorBody, errorShapeOf, isPaymentsPath } from './errors.js';
import { pathOf, sendJson } from './lean.js';

export interface ConnectionLimits {
  body_timeout_ms: number;
  connections: { max: number; per_address: number; exempt: readonly string[] };
}

/** How long a connection past a cap has to send its request head before it is closed. */
export const REFUSAL_GRACE_MS = 2_000;
/** Connections past a cap that may wait for their answer at once; the next is closed unanswered. */
export const MAX_REFUSING = 64;

type Refusal = 'address' | 'total';

/**
 * What the guard tells whoever watches it (/metrics, the log): a connection refused past a
 * cap (`unanswered`: closed at once, MAX_REFUSING already waiting) and a body past its deadline.
 */
export interface ConnectionEvents {
  refused(reason: Refusal | 'unanswered', address: string): void;
  bodyTimedOut(path: string): void;
}

/** Counts connections in and out and guards every request of the server with the limits. */
export class ConnectionGuard {
  private total = 0;
  private readonly by_address = new Map<string, number>();
  /** Connections past a cap, by `address|port` (the same for a TLS socket and its TCP socket). */
  private readonly refused = new Map<string, Refusal>();
  private readonly exempt: (address: string) => boolean;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly events: ConnectionEvents | null = null,
  ) {
    this.exempt = exemptions(limits.connections.exempt);
  }

  /** Connections open and served now (not those past a cap). */
  get open(): number {
    return this.total;
  }

  /** The server's 'connection' listener. */
  readonly onConnection = (socket: Socket): void => {
    const address = normalizeAddress(socket.remoteAddress ?? '');
    const key = `${address}|${socket.remotePort}`;
    const mine = this.by_address.get(address) ?? 0;
    const over: Refusal | null =
      this.total >= this.limits.connections.max
        ? 'total'
        : !this.exempt(address) && mine >= this.limits.connections.per_address
          ? 'address'
          : null;
    if (over) {
      if (this.refused.size >= MAX_REFUSING) {
        this.events?.refused('unanswered', address);
        socket.destroy();
        return;
      }
      this.events?.refused(over, address);
      this.refused.set(key, over);
      socket.setTimeout(REFUSAL_GRACE_MS, () => socket.destroy());
      socket.once('close', () => this.refused.delete(key));
      return;
    }
    this.total++;
    this.by_address.set(address, mine + 1);
    socket.once('close', () => {
      this.total--;
      const left = (this.by_address.get(address) ?? 1) - 1;
      if (left === 0) this.by_address.delete(address);
      else this.by_address.set(address, left);
    });
  };

  /** Wraps the request listener: refuses the requests of a refused connection, times bodies. */
  guard(handler: RequestListener): RequestListener {
    return (req, res) => {
      const socket = req.socket;
      const over = this.refused.get(
        `${normalizeAddress(socket.remoteAddress ?? '')}|${socket.remotePort}`,
      );
      const path = pathOf(req.url); // now: Express rewrites req.url inside a mounted router
      if (over) {
        socket.setTimeout(0);
        refuse(path, req, res, over === 'total' ? serverBusy() : tooManyConnections());
        return;
      }
      if (hasBody(req)) this.timeBody(path, req, res);
      handler(req, res);
    };
  }

  private timeBody(path: string, req: IncomingMessage, res: ServerResponse): void {
    const timer = setTimeout(() => {
      if (req.complete) return;
      this.events?.bodyTimedOut(path);
      if (res.headersSent) req.socket.destroy();
      else refuse(path, req, res, bodyTimeout(this.limits.body_timeout_ms));
    }, this.limits.body_timeout_ms);
    const clear = () => clearTimeout(timer);
    req.once('end', clear);
    req.once('close', clear);
    res.once('close', () => {
      if (req.complete) clear();
    });
  }
}

/** HTTP/1.1: a request has a body when it says its length (other than 0) or its transfer coding. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Answers a request the gateway will not serve, in its surface's shape (JSON on /v1, the paths
 * an API error shape was added for, /api and the admin API; an HTML page on the dashboard's paths), and closes the connection
 * once the answer is out, whatever is left of the body unread.
 */
function refuse(path: string, req: IncomingMessage, res: ServerResponse, error: ApiError): void {
  const headers = { ...error.headers, connection: 'close' };
  res.once('finish', () => req.socket.destroySoon());
  if (isJsonPath(path)) {
    sendJson(res, error.status, errorBody(path, error), headers);
    return;
  }
  const page =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${error.status}</title></head>` +
    `<body><h1>${error.status === 408 ? 'Too slow' : 'Too busy'}</h1><p>${error.message}</p></body></html>`;
  res.writeHead(error.status, {
    ...headers,
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(page),
  });
  res.end(page);
}

/** The paths whose clients read JSON errors; everything else is the dashboard's (HTML). */
function isJsonPath(path: string): boolean {
  if (path.startsWith('/v1/') || errorShapeOf(path) || isPaymentsPath(path)) return true;
  if (['/healthz', '/readyz', '/openapi.json', '/metrics'].includes(path)) return true;
  return (
    path.startsWith('/admin/') &&
    !/^\/admin\/(console|login|logout)(\/|$)/.test(path) &&
    path !== '/admin/'
  );
}

function bodyTimeout(ms: number): ApiError {
  return new ApiError(
    408,
    'request_timeout',
    `the request body did not arrive within ${ms / 1000} s; send it whole and at once`,
    null,
    'invalid_request_error',
  );
}

function tooManyConnections(): ApiError {
  return new ApiError(
    429,
    'too_many_connections',
    'this address has as many connections open as the gateway serves; reuse one (keep-alive) or retry when one closes',
    null,
    'rate_limit_exceeded',
    { 'retry-after': '1' },
  );
}

function serverBusy(): ApiError {
  return new ApiError(
    503,
    'server_busy',
    'the gateway has as many connections open as it serves; retry shortly',
    null,
    'api_error',
    { 'retry-after': '1' },
  );
}

/** `::ffff:10.0.0.1` is 10.0.0.1: one address, one count. */
function normalizeAddress(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

function exemptions(list: readonly string[]): (address: string) => boolean {
  const exact = new Set(list.filter((entry) => entry !== 'loopback').map(normalizeAddress));
  const loopback = list.includes('loopback');
  return (address) =>
    exact.has(address) || (loopback && (address === '::1' || address.startsWith('127.')));
}
