// The raw bytes of a request body as a parser read them, for checks that sign the body
// (signed /api requests). Held weakly: gone with the request.
import type { IncomingMessage } from 'node:http';

const raw_bodies = new WeakMap<IncomingMessage, Buffer>();

/** body-parser's `verify` hook: keeps the body it has just read. */
export function keepRawBody(req: IncomingMessage, _res: unknown, buffer: Buffer): void {
  raw_bodies.set(req, buffer);
}

export function rawBodyOf(req: IncomingMessage): Buffer | undefined {
  return raw_bodies.get(req);
}

/** True when the request carries a body (a length above zero or a chunked upload), as body-parser judges it. */
export function hasBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')
  );
}
