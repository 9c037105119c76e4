// A recording tap between an agent and the gateway, on loopback: it passes every request and
// answer through unchanged (streams as they come) and keeps a copy of both, so that a test
// reads the statuses the agent got, the costs the gateway reported to it, and the requests
// it sent (the fixtures).
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type Server,
} from 'node:http';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';

/** A copy of an answer is kept up to this size (the rest still goes to the agent). */
const KEEP_BYTES = 8 * 1024 * 1024;

export interface Exchange {
  method: string;
  /** Path and query, as the agent sent them. */
  path: string;
  request_headers: IncomingHttpHeaders;
  request_body: Buffer;
  status: number;
  response_headers: IncomingHttpHeaders;
  response_body: Buffer;
  /** The exchange broke off (the agent hung up, or the gateway did). */
  error: string | null;
}

export class Tap {
  readonly exchanges: Exchange[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** A tap in front of `target` (an origin, `http://127.0.0.1:PORT`). */
  static async start(target: string): Promise<Tap> {
    const to = new URL(target);
    let tap: Tap | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const exchange: Exchange = {
          method: req.method ?? 'GET',
          path: req.url ?? '/',
          request_headers: req.headers,
          request_body: Buffer.concat(chunks),
          status: 0,
          response_headers: {},
          response_body: Buffer.alloc(0),
          error: null,
        };
        tap!.exchanges.push(exchange);
        const kept: Buffer[] = [];
        let kept_bytes = 0;
        const forward = httpRequest(
          {
            host: to.hostname,
            port: to.port,
            method: req.method,
            path: req.url,
            headers: { ...req.headers, host: to.host },
          },
          (answer) => {
            exchange.status = answer.statusCode ?? 0;
            exchange.response_headers = answer.headers;
            res.writeHead(exchange.status, answer.headers);
            answer.on('data', (chunk: Buffer) => {
              if (kept_bytes < KEEP_BYTES) {
                kept.push(chunk);
                kept_bytes += chunk.length;
              }
              res.write(chunk);
            });
            answer.on('end', () => {
              exchange.response_body = Buffer.concat(kept);
              res.end();
            });
            answer.on('error', (error) => {
              exchange.error = `gateway: ${error.message}`;
              exchange.response_body = Buffer.concat(kept);
              res.destroy();
            });
          },
        );
        forward.on('error', (error) => {
          exchange.error = `gateway: ${error.message}`;
          if (!res.headersSent) res.writeHead(502).end();
          else res.destroy();
        });
        res.on('close', () => {
          if (!res.writableFinished) {
            exchange.error ??= 'the agent hung up';
            forward.destroy();
          }
        });
        forward.end(exchange.request_body);
      });
    });
    server.on('connection', (socket) => {
      tap?.sockets.add(socket);
      socket.once('close', () => tap?.sockets.delete(socket));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    tap = new Tap(server, (server.address() as AddressInfo).port);
    return tap;
  }

  /** The origin agents are pointed at. */
  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    if (!this.server.listening) return;
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }
}

/** The bill the gateway reported to the agent on one answer. */
export interface ReportedBill {
  request_id: string;
  /** Micro-units. */
  cost: number;
}

/**
 * The bill the gateway reported on an answer: the `x-aihub-cost` and `x-aihub-request-id`
 * headers of a JSON answer, else the `x_aihub` a stream carries on its last event (chat's
 * last chunk, Responses' `response.completed`, Messages' `message_delta`). Null for
 * unbilled answers (models, count_tokens) and for streams cut before their bill.
 */
export function reportedBill(exchange: Exchange): ReportedBill | null {
  const cost = exchange.response_headers['x-aihub-cost'];
  const id = exchange.response_headers['x-aihub-request-id'];
  if (typeof cost === 'string' && typeof id === 'string')
    return { request_id: id, cost: micros(Number(cost)) };
  const type = String(exchange.response_headers['content-type'] ?? '');
  const text = exchange.response_body.toString('utf8');
  let bill: ReportedBill | null = null;
  if (type.includes('text/event-stream')) {
    for (const line of text.split('\n')) {
      if (!line.startsWith('data:')) continue;
      bill = billOf(parse(line.slice(5).trim()), 3) ?? bill;
    }
  } else {
    bill = billOf(parse(text), 1);
  }
  return bill;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** An `x_aihub` bill at most `depth` objects down. */
function billOf(value: unknown, depth: number): ReportedBill | null {
  if (!value || typeof value !== 'object' || depth < 0) return null;
  const bill = (value as { x_aihub?: { cost?: unknown; request_id?: unknown } }).x_aihub;
  if (bill && typeof bill.cost === 'number' && typeof bill.request_id === 'string')
    return { request_id: bill.request_id, cost: micros(bill.cost) };
  for (const inner of Object.values(value)) {
    const found = billOf(inner, depth - 1);
    if (found !== null) return found;
  }
  return null;
}

export function micros(units: number): number {
  return Math.round(units * 1_000_000);
}
