// A scripted HTTP server on loopback standing in for a payment aggregator or a webhook
// receiver: each request is recorded (headers and raw body) and answered by a script.
import {
  createServer,
  type IncomingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { once } from 'node:events';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  raw: string;
  json: any;
}

export type Script = (request: Seen, res: ServerResponse, index: number) => void | Promise<void>;

export interface Upstream {
  url: string;
  seen: Seen[];
  script: Script;
  close(): Promise<void>;
  /** Resolves when `count` requests have arrived (rejects after `timeout_ms`). */
  waitFor(count: number, timeout_ms?: number): Promise<Seen[]>;
}

export async function startUpstream(
  script: Script = (_r, res) => json(res, 200, {}),
): Promise<Upstream> {
  const seen: Seen[] = [];
  const waiters: Array<() => void> = [];
  const upstream: Upstream = {
    url: '',
    seen,
    script,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
    waitFor(count, timeout_ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (seen.length >= count) {
            clearTimeout(timer);
            resolve(seen);
            return true;
          }
          return false;
        };
        const timer = setTimeout(
          () => reject(new Error(`only ${seen.length} of ${count} requests arrived`)),
          timeout_ms,
        );
        const wait = () => {
          if (!check()) waiters.push(wait);
        };
        wait();
      });
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let parsed: unknown = null;
      try {
        parsed = raw ? JSON.parse(raw) : null;
      } catch {
        parsed = null;
      }
      const request: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        raw,
        json: parsed,
      };
      seen.push(request);
      for (const wake of waiters.splice(0)) wake();
      Promise.resolve(upstream.script(request, res, seen.length - 1)).catch(() => res.destroy());
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  upstream.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return upstream;
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
