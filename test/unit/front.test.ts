import assert from 'node:assert/strict';
import { once } from 'node:events';
import http, { type IncomingHttpHeaders, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseSseData, SseWriter } from '../../gateway/chat/sse.js';
import { FrontServer, type FrontOptions } from '../../gateway/http/front.js';

// ---------------------------------------------------------------------------------------------
// The handler: mimics the gateway's use of req/res (readJson's preread_body, sendJson's
// writeHead + end with content-length, SseWriter's streamed body without content-length).

type Lane = 'hot' | 'node';

/** One request as the handler saw it. */
interface Call {
  lane: Lane;
  method: string;
  url: string;
  httpVersion: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  remote_port: number | undefined;
  req: IncomingMessage;
  res: ServerResponse;
  /** For `/hang` routes: answers the request. */
  release: () => void;
}

/** The hot lane's request carries the whole body; Node's IncomingMessage does not. */
function laneOf(req: IncomingMessage): Lane {
  return 'preread_body' in req ? 'hot' : 'node';
}

/** As readJson in gateway/chat/routes.ts: the preread body when there is one, else the stream. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  const preread = (req as { preread_body?: Buffer }).preread_body;
  if (preread) return Promise.resolve(preread);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The echo every JSON route answers with. */
interface Echo {
  lane: Lane;
  method: string;
  url: string;
  httpVersion: string;
  headers: IncomingHttpHeaders;
  body: string;
  remote_port: number | undefined;
}

const HANDLER_BODY_LIMIT = 4096;

class App {
  readonly calls: Call[] = [];
  readonly errors: unknown[] = [];
  readonly handler: RequestListener = (req, res) => {
    this.handle(req, res).catch((error: unknown) => {
      this.errors.push(error);
      res.destroy?.();
    });
  };

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const declared = Number(req.headers['content-length']);
    if (declared > HANDLER_BODY_LIMIT) {
      // As readJson: refused on the declared length, without reading the body.
      this.calls.push(this.call(req, res, Buffer.alloc(0), () => undefined));
      return sendJson(res, 413, { error: 'too large', lane: laneOf(req) }, { connection: 'close' });
    }
    const body = await readBody(req);
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const call = this.call(req, res, body, release);
    this.calls.push(call);
    const delay = Number(url.searchParams.get('delay') ?? 0);
    const path = url.pathname;

    if (path.endsWith('/hang')) {
      await released;
      if (!res.destroyed) sendJson(res, 200, this.echo(call));
      return;
    }
    if (path.endsWith('/sse')) {
      // Streamed with res.write, no content-length: chunked on the wire.
      const n = Number(url.searchParams.get('n') ?? 3);
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      for (let i = 0; i < n; i++) {
        if (res.destroyed) return;
        res.write(`data: ${JSON.stringify({ i, text: `é😀 ${i}` })}\n\n`);
        if (url.searchParams.has('hang') && i === 0) await released;
        if (delay) await sleep(delay);
      }
      res.write('data: [DONE]\n\n');
      res.end();
      return;
    }
    if (path.endsWith('/coalesce')) {
      // As the chat route streams: SseWriter, several events written in one tick.
      const sse = new SseWriter(res);
      sse.open(200, { 'x-lane': laneOf(req) });
      const n = Number(url.searchParams.get('n') ?? 5);
      const written: Promise<void>[] = [];
      for (let i = 0; i < n; i++) written.push(sse.event({ i, text: 'x'.repeat(i * 7), unicode: 'नमस्ते' }));
      await Promise.all(written);
      await sleep(5);
      await sse.event({ i: n, late: true });
      await sse.done();
      sse.end();
      return;
    }
    if (path.endsWith('/binary')) {
      // Bytes that are not UTF-8, once with content-length, once chunked in pieces that split a character.
      const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      if (url.searchParams.has('chunked')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const text = Buffer.from('é😀नमस्ते');
        for (let i = 0; i < text.length; i++) res.write(text.subarray(i, i + 1));
        res.end(bytes);
      } else {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length });
        res.end(bytes);
      }
      return;
    }
    if (delay) await sleep(delay);
    if (res.destroyed) return;
    const extra: Record<string, string> = {};
    if (path.endsWith('/close')) extra.connection = 'close';
    sendJson(res, 200, this.echo(call), extra);
  }

  private call(req: IncomingMessage, res: ServerResponse, body: Buffer, release: () => void): Call {
    return {
      lane: laneOf(req),
      method: req.method ?? '',
      url: req.url ?? '',
      httpVersion: req.httpVersion,
      headers: req.headers,
      body,
      remote_port: req.socket?.remotePort,
      req,
      res,
      release,
    };
  }

  private echo(call: Call): Echo {
    return { lane: call.lane, method: call.method, url: call.url, httpVersion: call.httpVersion, headers: call.headers, body: call.body.toString('utf8'), remote_port: call.remote_port };
  }

  /** The first call to `url` (waits for it). */
  waitCall(url: string): Promise<Call> {
    return until(() => this.calls.find((call) => call.url === url));
  }
}

interface Started {
  front: FrontServer;
  app: App;
  port: number;
}

const DEFAULTS: FrontOptions = {
  keepAliveTimeout: 5_000,
  headersTimeout: 5_000,
  requestTimeout: 10_000,
  max_body_bytes: 256,
  hot: (target) => target.startsWith('/v1/'),
};

async function start(t: TestContext, options: Partial<FrontOptions> = {}): Promise<Started> {
  const app = new App();
  const front = new FrontServer({ ...DEFAULTS, ...options }, app.handler);
  let closed = false;
  const closed_event = once(front, 'close').then(() => {
    closed = true;
  });
  front.listen(0, '127.0.0.1');
  await once(front, 'listening');
  const port = (front.address() as AddressInfo).port;
  t.after(async () => {
    for (const call of app.calls) call.release();
    if (!closed) {
      front.close();
      front.closeAllConnections();
    }
    await closed_event;
    assert.deepEqual(app.errors, [], 'the handler failed');
  });
  return { front, app, port };
}

async function until<T>(probe: () => T | undefined | null | false, ms = 5_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

// ---------------------------------------------------------------------------------------------
// A raw client: exact bytes out, responses parsed strictly (framing errors fail the test).

interface RawResponse {
  version: string;
  status: number;
  reason: string;
  /** Lower-case names; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** Every header line, as sent. */
  header_lines: [string, string][];
  body: Buffer;
  /** The data of each chunk of a chunked body, the terminator excluded. */
  chunks: Buffer[];
  /** The whole response as it came on the wire. */
  raw: Buffer;
}

/** Parses one response at the start of `buffer`; undefined while it is incomplete. */
function parseResponse(buffer: Buffer, head_only: boolean, eof: boolean): { response: RawResponse; used: number } | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const lines = buffer.toString('latin1', 0, end).split('\r\n');
  const status_line = /^(HTTP\/1\.[01]) (\d{3}) ?(.*)$/.exec(lines[0]!);
  assert.ok(status_line, `bad status line ${JSON.stringify(lines[0])}`);
  const headers: Record<string, string> = {};
  const header_lines: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    assert.ok(colon > 0, `bad header line ${JSON.stringify(line)}`);
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).trim();
    header_lines.push([name, value]);
    const lower = name.toLowerCase();
    headers[lower] = headers[lower] === undefined ? value : `${headers[lower]}, ${value}`;
  }
  const status = Number(status_line[2]);
  let position = end + 4;
  const chunks: Buffer[] = [];
  let body: Buffer;
  if (head_only || status < 200 || status === 204 || status === 304) body = Buffer.alloc(0);
  else if (headers['transfer-encoding'] !== undefined) {
    assert.equal(headers['transfer-encoding'], 'chunked');
    assert.equal(headers['content-length'], undefined, 'both content-length and transfer-encoding');
    for (;;) {
      const line_end = buffer.indexOf('\r\n', position);
      if (line_end === -1) return undefined;
      const size_text = buffer.toString('latin1', position, line_end);
      assert.match(size_text, /^[0-9a-f]+$/i, `bad chunk size line ${JSON.stringify(size_text)}`);
      const size = parseInt(size_text, 16);
      if (size === 0) {
        if (buffer.length < line_end + 4) return undefined;
        assert.equal(buffer.toString('latin1', line_end + 2, line_end + 4), '\r\n', 'the last chunk is not followed by CRLF');
        position = line_end + 4;
        break;
      }
      if (buffer.length < line_end + 2 + size + 2) return undefined;
      chunks.push(buffer.subarray(line_end + 2, line_end + 2 + size));
      assert.equal(buffer.toString('latin1', line_end + 2 + size, line_end + 4 + size), '\r\n', 'a chunk is not followed by CRLF');
      position = line_end + 4 + size;
    }
    body = Buffer.concat(chunks);
  } else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (buffer.length < position + length) return undefined;
    body = buffer.subarray(position, position + length);
    position += length;
  } else {
    // Delimited by the end of the connection.
    if (!eof) return undefined;
    body = buffer.subarray(position);
    position = buffer.length;
  }
  const response: RawResponse = { version: status_line[1]!, status, reason: status_line[3]!, headers, header_lines, body, chunks, raw: Buffer.from(buffer.subarray(0, position)) };
  return { response, used: position };
}

class RawClient {
  readonly socket: net.Socket;
  private buffer = Buffer.alloc(0);
  ended = false;
  closed = false;
  error: Error | null = null;
  private wake: (() => void) | null = null;

  private constructor(port: number, allowHalfOpen: boolean) {
    this.socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen });
    this.socket.setNoDelay(true);
    this.socket.on('data', (data: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, data]);
      this.notify();
    });
    this.socket.on('end', () => {
      this.ended = true;
      this.notify();
    });
    this.socket.on('close', () => {
      this.closed = true;
      this.notify();
    });
    this.socket.on('error', (error) => {
      this.error = error;
    });
  }

  static async open(t: TestContext, port: number, options: { allowHalfOpen?: boolean } = {}): Promise<RawClient> {
    const client = new RawClient(port, options.allowHalfOpen === true);
    t.after(() => client.socket.destroy());
    await once(client.socket, 'connect');
    return client;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private async waitFor<T>(probe: () => T | undefined, ms: number, what: string): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = probe();
      if (value !== undefined) return value;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; received ${JSON.stringify(this.buffer.toString('latin1').slice(0, 300))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  write(data: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(data, (error) => (error ? reject(error) : resolve())));
  }

  /** The next response on the connection. */
  async response(options: { head_only?: boolean; ms?: number } = {}): Promise<RawResponse> {
    const parsed = await this.waitFor(
      () => {
        const found = parseResponse(this.buffer, options.head_only === true, this.ended || this.closed);
        if (found) return found;
        if ((this.ended || this.closed) ) throw new Error(`the connection ended before a whole response; received ${JSON.stringify(this.buffer.toString('latin1').slice(0, 300))}`);
        return undefined;
      },
      options.ms ?? 5_000,
      'a response',
    );
    this.buffer = this.buffer.subarray(parsed.used);
    return parsed.response;
  }

  /** Resolves when the server has ended the connection; returns the bytes not yet taken. */
  async end(ms = 5_000): Promise<Buffer> {
    await this.waitFor(() => (this.ended || this.closed ? true : undefined), ms, 'the end of the connection');
    return this.buffer;
  }

  /** The bytes received and not yet taken by response(). */
  get pending(): Buffer {
    return this.buffer;
  }
}

function request(method: string, target: string, headers: Record<string, string> = {}, body = '', version = 'HTTP/1.1'): string {
  let text = `${method} ${target} ${version}\r\nHost: 127.0.0.1\r\n`;
  for (const [name, value] of Object.entries(headers)) text += `${name}: ${value}\r\n`;
  if (body.length > 0 && headers['Content-Length'] === undefined && headers['Transfer-Encoding'] === undefined) text += `Content-Length: ${Buffer.byteLength(body)}\r\n`;
  return `${text}\r\n${body}`;
}

function echoOf(response: RawResponse): Echo {
  assert.match(response.headers['content-type'] ?? '', /^application\/json/);
  return JSON.parse(response.body.toString('utf8')) as Echo;
}

function connectionsOf(front: FrontServer): Set<unknown> {
  return (front as unknown as { connections: Set<unknown> }).connections;
}

// ---------------------------------------------------------------------------------------------
// 1. The hot lane

test('front: hot lane POST gives the handler method, url, lower-cased headers and the exact body', async (t) => {
  const { port, app } = await start(t);
  const client = await RawClient.open(t, port);
  const body = JSON.stringify({ model: 'service-ai-lite', messages: [{ role: 'user', content: 'héllo 😀 नमस्ते' }] });
  await client.write(
    `POST /v1/chat/completions?trace=1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer sk-test\r\nContent-Type: application/json\r\nX-Multi: a\r\nX-Multi: b\r\nX-Spaces:  \tpadded value \t\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  const response = await client.response();
  assert.equal(response.version, 'HTTP/1.1');
  assert.equal(response.status, 200);
  assert.equal(response.reason, 'OK');
  assert.equal(response.headers['connection'], 'keep-alive');
  assert.equal(response.headers['content-length'], String(response.body.length));
  assert.equal(response.headers['transfer-encoding'], undefined);
  const date = Date.parse(response.headers['date'] ?? '');
  assert.ok(Math.abs(date - Date.now()) < 5_000, `date header ${response.headers['date']}`);
  assert.match(response.headers['date']!, /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);

  const echo = echoOf(response);
  assert.equal(echo.lane, 'hot');
  assert.equal(echo.method, 'POST');
  assert.equal(echo.url, '/v1/chat/completions?trace=1');
  assert.equal(echo.httpVersion, '1.1');
  assert.equal(echo.body, body);
  assert.deepEqual(echo.headers, {
    host: `127.0.0.1:${port}`,
    authorization: 'Bearer sk-test',
    'content-type': 'application/json',
    'x-multi': 'a, b',
    'x-spaces': 'padded value',
    'content-length': String(Buffer.byteLength(body)),
  });
  const call = app.calls[0]!;
  assert.deepEqual((call.req as unknown as { preread_body: Buffer }).preread_body, Buffer.from(body));
  assert.deepEqual(call.req.rawHeaders.slice(0, 4), ['Host', `127.0.0.1:${port}`, 'Authorization', 'Bearer sk-test']);
});

test('front: hot lane GET and POST from fetch and node:http, with the headers they send', async (t) => {
  const { port, app } = await start(t);
  const get = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { 'X-Api-Key': 'k1' } });
  assert.equal(get.status, 200);
  assert.equal(get.headers.get('connection'), 'keep-alive');
  assert.ok(get.headers.get('date'));
  const got = (await get.json()) as Echo;
  assert.equal(got.lane, 'hot');
  assert.equal(got.method, 'GET');
  assert.equal(got.headers['x-api-key'], 'k1');
  assert.equal(got.body, '');

  const payload = JSON.stringify({ a: 'ü'.repeat(50) });
  const post = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: payload });
  const posted = (await post.json()) as Echo;
  assert.equal(posted.lane, 'hot');
  assert.equal(posted.body, payload);
  assert.equal(posted.headers['content-length'], String(Buffer.byteLength(payload)));

  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const answer = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/echo', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(payload);
  });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.connection, 'keep-alive');
  const echo = JSON.parse(answer.body) as Echo;
  assert.equal(echo.lane, 'hot');
  assert.equal(echo.body, payload);
  assert.equal(app.calls.length, 3);
  assert.ok(app.calls.every((call) => call.lane === 'hot'));
});

test('front: HEAD on the hot lane sends the headers and no body, and the connection stays usable', async (t) => {
  const { port } = await start(t);
  const client = await RawClient.open(t, port);
  await client.write(request('HEAD', '/v1/models'));
  const head = await client.response({ head_only: true });
  assert.equal(head.status, 200);
  assert.equal(head.headers['connection'], 'keep-alive');
  assert.ok(Number(head.headers['content-length']) > 0, 'the length the GET would have');
  assert.equal(head.headers['transfer-encoding'], undefined);
  await sleep(30);
  assert.equal(client.pending.length, 0, 'no body after the head');
  // A streamed (chunked) answer to HEAD: no chunks, not even the terminator.
  await client.write(request('HEAD', '/v1/sse'));
  const sse = await client.response({ head_only: true });
  assert.equal(sse.status, 200);
  await client.write(request('GET', '/v1/models'));
  const get = await client.response();
  assert.equal(get.status, 200);
  assert.equal(echoOf(get).method, 'GET');
  assert.equal(client.pending.length, 0);
});

// ---------------------------------------------------------------------------------------------
// 2. Keep-alive, pipelining, requests in pieces

test('front: several sequential requests on one keep-alive connection, all on the hot lane', async (t) => {
  const { port, app } = await start(t);
  const client = await RawClient.open(t, port);
  for (let i = 0; i < 6; i++) {
    const body = JSON.stringify({ i });
    await client.write(i % 2 ? request('POST', `/v1/echo?i=${i}`, { 'Content-Type': 'application/json' }, body) : request('GET', `/v1/echo?i=${i}`));
    const response = await client.response();
    assert.equal(response.status, 200);
    assert.equal(response.headers['connection'], 'keep-alive');
    const echo = echoOf(response);
    assert.equal(echo.url, `/v1/echo?i=${i}`);
    assert.equal(echo.body, i % 2 ? body : '');
  }
  assert.equal(client.closed, false);
  assert.equal(new Set(app.calls.map((call) => call.remote_port)).size, 1);
  assert.ok(app.calls.every((call) => call.lane === 'hot'));

  // node:http with a keep-alive agent: one socket for all.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const ports = new Set<number | undefined>();
  for (let i = 0; i < 4; i++) {
    const text = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: `/v1/agent/${i}`, agent }, (res) => {
          let out = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (out += chunk));
          res.on('end', () => resolve(out));
        })
        .on('error', reject);
    });
    const echo = JSON.parse(text) as Echo;
    assert.equal(echo.lane, 'hot');
    ports.add(echo.remote_port);
  }
  assert.equal(ports.size, 1, 'the agent reused its connection');
});

test('front: pipelined requests sent in one write are answered in order, a slow first one included', async (t) => {
  const { port, app } = await start(t);
  const client = await RawClient.open(t, port);
  const bodies = ['{"n":1}', '', '{"n":"three ✓"}', '', ''];
  const targets = ['/v1/echo?delay=40', '/v1/echo?b', '/v1/echo?c', '/v1/sse?n=2', '/v1/echo?e'];
  await client.write(targets.map((target, i) => (bodies[i] ? request('POST', target, {}, bodies[i]) : request('GET', target))).join(''));
  for (let i = 0; i < targets.length; i++) {
    const response = await client.response();
    assert.equal(response.status, 200);
    if (targets[i]!.startsWith('/v1/sse')) {
      assert.deepEqual(parseSseData(response.body.toString('utf8')).at(-1), '[DONE]');
      continue;
    }
    const echo = echoOf(response);
    assert.equal(echo.url, targets[i]);
    assert.equal(echo.body, bodies[i]);
    assert.equal(echo.lane, 'hot');
  }
  assert.deepEqual(
    app.calls.map((call) => call.url),
    targets,
    'one at a time, in order',
  );
});

test('front: a request split byte by byte across many writes, and split at every offset, is served', async (t) => {
  const { port, app } = await start(t);
  const client = await RawClient.open(t, port);
  const body = '{"q":"ünïcode ✓"}';
  const text = Buffer.from(request('POST', '/v1/echo?split', { 'Content-Type': 'application/json' }, body));
  for (const byte of text) {
    await client.write(Buffer.from([byte]));
    await new Promise((resolve) => setImmediate(resolve));
  }
  const response = await client.response();
  const echo = echoOf(response);
  assert.equal(echo.lane, 'hot');
  assert.equal(echo.body, body);
  assert.equal(echo.headers['content-type'], 'application/json');

  for (let cut = 1; cut < text.length; cut += 3) {
    await client.write(text.subarray(0, cut));
    await sleep(1);
    await client.write(text.subarray(cut));
    const each = echoOf(await client.response());
    assert.equal(each.body, body, `cut at ${cut}`);
    assert.equal(each.lane, 'hot');
  }
  assert.equal(new Set(app.calls.map((call) => call.remote_port)).size, 1);
});

// ---------------------------------------------------------------------------------------------
// 3. Chunked responses

test('front: a response without content-length is chunked, with exact framing and the 0 terminator', async (t) => {
  const { port } = await start(t);
  const client = await RawClient.open(t, port);
  await client.write(request('GET', '/v1/sse?n=3'));
  const response = await client.response();
  assert.equal(response.status, 200);
  assert.equal(response.headers['transfer-encoding'], 'chunked');
  assert.equal(response.headers['content-length'], undefined);
  assert.equal(response.headers['content-type'], 'text/event-stream; charset=utf-8');
  assert.equal(response.headers['connection'], 'keep-alive');
  const events = [0, 1, 2].map((i) => `data: ${JSON.stringify({ i, text: `é😀 ${i}` })}\n\n`).concat('data: [DONE]\n\n');
  const head_end = response.raw.indexOf('\r\n\r\n') + 4;
  const expected = events.map((event) => `${Buffer.byteLength(event).toString(16)}\r\n${event}\r\n`).join('') + '0\r\n\r\n';
  assert.equal(response.raw.subarray(head_end).toString('utf8'), expected);
  assert.deepEqual(response.chunks.map((chunk) => chunk.toString('utf8')), events);
  // The framing ended exactly: the next response parses.
  await client.write(request('GET', '/v1/models'));
  assert.equal((await client.response()).status, 200);
  assert.equal(client.pending.length, 0);
});

test('front: node:http and fetch read a whole streamed SSE body from the hot lane', async (t) => {
  const { port, app } = await start(t);
  const response = await fetch(`http://127.0.0.1:${port}/v1/sse?n=20&delay=2`);
  assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const data = parseSseData(await response.text());
  assert.equal(data.length, 21);
  assert.deepEqual(JSON.parse(data[19]!), { i: 19, text: 'é😀 19' });
  assert.equal(data[20], '[DONE]');

  const text = await new Promise<string>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/v1/sse?n=8&delay=1', agent: false }, (res) => {
        assert.equal(res.headers['transfer-encoding'], 'chunked');
        let out = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (out += chunk));
        res.on('end', () => resolve(out));
        res.on('error', reject);
      })
      .on('error', reject);
  });
  const events = parseSseData(text);
  assert.equal(events.length, 9);
  assert.deepEqual(events.slice(0, 8).map((event) => (JSON.parse(event) as { i: number }).i), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.ok(app.calls.every((call) => call.lane === 'hot'));
});

test('front: Buffers are written as bytes: binary with content-length, and chunks that split a character', async (t) => {
  const { port } = await start(t);
  const client = await RawClient.open(t, port);
  await client.write(request('GET', '/v1/binary'));
  const plain = await client.response();
  assert.equal(plain.headers['content-length'], '256');
  assert.deepEqual(plain.body, Buffer.from(Array.from({ length: 256 }, (_, i) => i)));
  await client.write(request('GET', '/v1/binary?chunked'));
  const chunked = await client.response();
  assert.equal(chunked.headers['transfer-encoding'], 'chunked');
  assert.deepEqual(chunked.body, Buffer.concat([Buffer.from('é😀नमस्ते'), Buffer.from(Array.from({ length: 256 }, (_, i) => i))]));
  await client.write(request('GET', '/v1/models'));
  assert.equal((await client.response()).status, 200);
});

// ---------------------------------------------------------------------------------------------
// 4. Hand-over to Node's http.Server

test('front: a first request to a non-/v1 path is served by Node, and the connection stays with Node', async (t) => {
  const { port, app, front } = await start(t);
  const client = await RawClient.open(t, port);
  await client.write(request('POST', '/health?x=1', { 'Content-Type': 'application/json' }, '{"ping":true}'));
  const first = await client.response();
  assert.equal(first.status, 200);
  const echo = echoOf(first);
  assert.equal(echo.lane, 'node');
  assert.equal(echo.url, '/health?x=1');
  assert.equal(echo.body, '{"ping":true}', 'the bytes the hot lane had read reached Node');
  assert.ok(first.headers['keep-alive'], "Node's own keep-alive header");
  // The rest of the connection's life is Node's, /v1 included.
  await client.write(request('POST', '/v1/echo', {}, '{"after":1}'));
  const second = echoOf(await client.response());
  assert.equal(second.lane, 'node');
  assert.equal(second.body, '{"after":1}');
  assert.equal(connectionsOf(front).size, 0, 'no longer a hot connection');
  // Another connection starts on the hot lane again.
  const other = await fetch(`http://127.0.0.1:${port}/v1/models`);
  assert.equal(((await other.json()) as Echo).lane, 'hot');
  assert.deepEqual(app.calls.map((call) => call.lane), ['node', 'node', 'hot']);
});

test('front: HTTP/1.0, chunked request bodies and other methods go to Node with their bytes', async (t) => {
  const { port } = await start(t);

  const http10 = await RawClient.open(t, port);
  await http10.write(request('GET', '/v1/models', {}, '', 'HTTP/1.0'));
  const answer10 = await http10.response();
  const echo10 = echoOf(answer10);
  assert.equal(echo10.lane, 'node');
  assert.equal(echo10.httpVersion, '1.0');
  await http10.end();

  const chunked = await RawClient.open(t, port);
  await chunked.write(request('POST', '/v1/chat/completions', { 'Transfer-Encoding': 'chunked' }, '5\r\n{"a":\r\n'));
  await sleep(10);
  await chunked.write('3\r\n12}\r\n0\r\n\r\n');
  const echo_chunked = echoOf(await chunked.response());
  assert.equal(echo_chunked.lane, 'node');
  assert.equal(echo_chunked.body, '{"a":12}');

  const put = await RawClient.open(t, port);
  await put.write(request('PUT', '/v1/echo', {}, 'put body') + request('GET', '/v1/echo?next'));
  const echo_put = echoOf(await put.response());
  assert.equal(echo_put.lane, 'node');
  assert.equal(echo_put.method, 'PUT');
  assert.equal(echo_put.body, 'put body');
  const echo_next = echoOf(await put.response());
  assert.equal(echo_next.lane, 'node');
  assert.equal(echo_next.url, '/v1/echo?next');
});

test('front: expect: 100-continue is answered by Node, which then reads the body', async (t) => {
  const { port } = await start(t);
  const client = await RawClient.open(t, port);
  const body = '{"expect":"continue"}';
  await client.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`);
  const interim = await client.response();
  assert.equal(interim.status, 100);
  await client.write(body);
  const echo = echoOf(await client.response());
  assert.equal(echo.lane, 'node');
  assert.equal(echo.body, body);
  assert.equal(echo.headers.expect, '100-continue');
});

test('front: heads Node must judge (duplicate content-length, no host, bare LF, control bytes) get Node\'s 400', async (t) => {
  const { port, app } = await start(t, { headersTimeout: 3_000 });
  const cases = [
    'POST /v1/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}',
    'POST /v1/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x',
    'GET /v1/echo HTTP/1.1\r\nX-No-Host: 1\r\n\r\n',
    'GET /v1/echo HTTP/1.1\nHost: a\n\n',
    'GET /v1/echo HTTP/1.1\r\nHost: a\r\nBad Name: 1\r\n\r\n',
    'GET /v1/echo HTTP/1.1\r\nHost: a\r\nX-Bare-Cr: a\r\r\n\r\n',
    'GET /v1/echo HTTP/1.1\r\nHost: a\r\nX-Vtab: a\x0b\r\n\r\n',
    'GET /v1/echo HTTP/1.1\r\nHost: a\r\nX-Formfeed: \x0ca\r\n\r\n',
  ];
  for (const text of cases) {
    const client = await RawClient.open(t, port);
    const started = Date.now();
    await client.write(text);
    const response = await client.response({ ms: 2_000 });
    assert.equal(response.status, 400, JSON.stringify(text));
    assert.equal(response.headers['connection'], 'close');
    await client.end();
    assert.ok(Date.now() - started < 1_000, `answered at once: ${JSON.stringify(text)}`);
  }
  assert.deepEqual(app.calls, [], 'the handler saw none of them');
});

test('front: the handler sees the same headers on both lanes (repeats, padding, bytes beyond ASCII)', async (t) => {
  const { port } = await start(t);
  const blocks = [
    'X-Multi: a\r\nx-multi:\tb \r\nX-Empty:\r\nAccept: text/plain\r\nAccept: */*\r\n',
    'X-Latin: \xa0b\xa0\r\nX-Tabbed:\t\t v \t\r\n',
    'User-Agent: first\r\nUser-Agent: second\r\nReferer: r1\r\nReferer: r2\r\n',
    'Cookie: a=1\r\nCookie: b=2\r\n',
    'Authorization: Bearer one\r\nAuthorization: Bearer two\r\n',
    'Content-Type: application/json\r\nContent-Type: text/plain\r\n',
  ];
  for (const block of blocks) {
    const seen: Partial<Record<Lane, Echo>> = {};
    for (const target of ['/v1/echo', '/other/echo']) {
      const client = await RawClient.open(t, port);
      await client.write(Buffer.from(`GET ${target} HTTP/1.1\r\nHost: h\r\n${block}\r\n`, 'latin1'));
      const echo = echoOf(await client.response());
      seen[target.startsWith('/v1/') ? 'hot' : 'node'] = echo;
      client.socket.destroy();
    }
    assert.equal(seen.node!.lane, 'node');
    assert.deepEqual(seen.hot!.headers, seen.node!.headers, JSON.stringify(block));
  }
});

test('front: a body larger than max_body_bytes is read by Node (or refused by the handler there)', async (t) => {
  const { port, app } = await start(t, { max_body_bytes: 256 });
  const at_limit = JSON.stringify({ fill: 'a'.repeat(256 - 11) });
  assert.equal(at_limit.length, 256);
  const over = JSON.stringify({ fill: 'b'.repeat(1_000) });
  const client = await RawClient.open(t, port);
  await client.write(request('POST', '/v1/echo?at-limit', {}, at_limit));
  const hot = echoOf(await client.response());
  assert.equal(hot.lane, 'hot');
  assert.equal(hot.body, at_limit);
  await client.write(request('POST', '/v1/echo?over', {}, over));
  const node = echoOf(await client.response());
  assert.equal(node.lane, 'node');
  assert.equal(node.body, over, 'every byte, those the hot lane read included');

  // Over the handler's own limit: refused with connection: close, by the Node lane.
  const refused = await RawClient.open(t, port);
  await refused.write(request('POST', '/v1/echo?huge', {}, 'c'.repeat(HANDLER_BODY_LIMIT + 1)));
  const answer = await refused.response();
  assert.equal(answer.status, 413);
  assert.equal(answer.headers['connection'], 'close');
  assert.deepEqual(JSON.parse(answer.body.toString()), { error: 'too large', lane: 'node' });
  await refused.end();
  assert.deepEqual(app.calls.map((call) => call.lane), ['hot', 'node', 'node']);
});

test('front: a head over 16 KiB goes to Node (431), whether it arrives whole or in parts', async (t) => {
  const { port, app } = await start(t);
  const big = 'x'.repeat(17 * 1024);
  // Whole, in one write.
  const whole = await RawClient.open(t, port);
  await whole.write(request('GET', '/v1/echo?whole', { 'X-Big': big }));
  const first = await whole.response();
  assert.equal(first.status, 431);
  await whole.end();
  // In parts: the hot lane stops waiting for the end of the head at 16 KiB.
  const parts = await RawClient.open(t, port);
  const text = request('GET', '/v1/echo?parts', { 'X-Big': big });
  await parts.write(text.slice(0, 16 * 1024 + 100));
  const second = await parts.response(); // without the rest of the head
  assert.equal(second.status, 431);
  await parts.end();
  // Under the limit the hot lane serves it.
  const fits = await RawClient.open(t, port);
  await fits.write(request('GET', '/v1/echo?fits', { 'X-Big': 'y'.repeat(12 * 1024) }));
  const third = echoOf(await fits.response());
  assert.equal(third.lane, 'hot');
  assert.equal(third.headers['x-big'], 'y'.repeat(12 * 1024));
  assert.deepEqual(app.calls.map((call) => call.url), ['/v1/echo?fits']);
});

test('front: /v1 calls then a non-/v1 call mid-connection: handed over at that point, every answer arrives', async (t) => {
  const { port, app, front } = await start(t);
  // Sequential.
  const client = await RawClient.open(t, port);
  await client.write(request('POST', '/v1/echo?1', {}, '{"one":1}'));
  assert.equal(echoOf(await client.response()).lane, 'hot');
  await client.write(request('GET', '/v1/echo?2'));
  assert.equal(echoOf(await client.response()).lane, 'hot');
  assert.equal(connectionsOf(front).size, 1);
  await client.write(request('POST', '/api/other', {}, '{"three":3}'));
  const third = echoOf(await client.response());
  assert.equal(third.lane, 'node');
  assert.equal(third.body, '{"three":3}');
  await client.write(request('GET', '/v1/echo?4'));
  assert.equal(echoOf(await client.response()).lane, 'node');
  assert.equal(new Set(app.calls.map((call) => call.remote_port)).size, 1, 'one connection throughout');

  // Pipelined in one write, the hand-over in the middle, a slow hot one first.
  const piped = await RawClient.open(t, port);
  const targets = ['/v1/echo?p1&delay=30', '/v1/echo?p2', '/health?p3', '/v1/echo?p4', '/v1/sse?p5&n=2'];
  await piped.write(targets.map((target, i) => request(i === 1 ? 'POST' : 'GET', target, {}, i === 1 ? '{"p":2}' : '')).join(''));
  const lanes: Lane[] = [];
  for (const target of targets) {
    const response = await piped.response();
    assert.equal(response.status, 200);
    if (target.startsWith('/v1/sse')) {
      assert.equal(parseSseData(response.body.toString()).at(-1), '[DONE]');
      continue;
    }
    const echo = echoOf(response);
    assert.equal(echo.url, target);
    lanes.push(echo.lane);
  }
  assert.deepEqual(lanes, ['hot', 'hot', 'node', 'node']);
  assert.equal(app.calls.at(-1)!.lane, 'node');
});

// ---------------------------------------------------------------------------------------------
// 5. connection: close

test('front: connection: close in the request closes the socket after the response; later pipelined bytes are not served', async (t) => {
  const { port, app, front } = await start(t);
  const client = await RawClient.open(t, port);
  await client.write(request('GET', '/v1/echo?closing', { Connection: 'close' }) + request('GET', '/v1/echo?after'));
  const response = await client.response();
  assert.equal(response.headers['connection'], 'close');
  assert.equal(echoOf(response).lane, 'hot');
  const rest = await client.end();
  assert.equal(rest.length, 0, 'nothing after the response');
  assert.deepEqual(app.calls.map((call) => call.url), ['/v1/echo?closing']);
  await until(() => client.closed, 2_000, 'the client socket to close');
  await until(() => connectionsOf(front).size === 0, 2_000, 'the server to forget the connection');
});

test('front: connection: close in the response headers closes the socket after the response', async (t) => {
  const { port, front } = await start(t);
  const client = await RawClient.open(t, port);
  await client.write(request('POST', '/v1/close', {}, '{}'));
  const response = await client.response();
  assert.equal(response.status, 200);
  assert.equal(response.headers['connection'], 'close');
  assert.equal(response.header_lines.filter(([name]) => name.toLowerCase() === 'connection').length, 1, 'one connection header');
  assert.equal(echoOf(response).lane, 'hot');
  assert.equal((await client.end()).length, 0);
  await until(() => connectionsOf(front).size === 0, 2_000, 'the server to forget the connection');
  // fetch gets the answer too, and a new connection for the next call.
  const answer = await fetch(`http://127.0.0.1:${port}/v1/close`);
  assert.equal(answer.headers.get('connection'), 'close');
  assert.equal(((await answer.json()) as Echo).lane, 'hot');
});

test('front: after connection: close the server closes the socket itself, even when the client keeps its side open', async (t) => {
  const { port, front, app } = await start(t);
  const client = await RawClient.open(t, port, { allowHalfOpen: true });
  await client.write(request('GET', '/v1/echo?half', { Connection: 'close' }));
  const response = await client.response();
  assert.equal(response.headers['connection'], 'close');
  await client.end();
  // The client goes on sending (it has not closed its side): nothing is served or kept.
  const hot = [...connectionsOf(front)][0] as { buffer: Buffer | null } | undefined;
  client.socket.write(request('GET', '/v1/echo?ignored') + 'x'.repeat(64 * 1024));
  await sleep(30);
  assert.ok(hot === undefined || hot.buffer === null || hot.buffer.length === 0, 'bytes after the last request are not buffered');
  let closed = false;
  front.on('close', () => (closed = true));
  front.close();
  await until(() => closed, 2_000, 'the server to close (it waits for every connection)');
  assert.equal(connectionsOf(front).size, 0);
  assert.deepEqual(app.calls.map((call) => call.url), ['/v1/echo?half']);
});

// ---------------------------------------------------------------------------------------------
// 6. The client leaves mid-response

test('front: a client that disconnects mid-response: res emits close with writableFinished false', async (t) => {
  const { port, app, front } = await start(t);
  // Before any byte of the response.
  const waiting = await RawClient.open(t, port);
  await waiting.write(request('POST', '/v1/hang', {}, '{"wait":1}'));
  const call = await app.waitCall('/v1/hang');
  assert.equal(call.lane, 'hot');
  const closed = once(call.res, 'close');
  let finished = false;
  call.res.on('finish', () => (finished = true));
  waiting.socket.destroy();
  await closed;
  assert.equal(call.res.writableFinished, false);
  assert.equal(call.res.destroyed, true);
  assert.equal(finished, false);
  call.release(); // the handler finds res destroyed and writes nothing

  // Mid-stream, headers and a first chunk sent.
  const streaming = await RawClient.open(t, port);
  await streaming.write(request('GET', '/v1/sse?hang=1&n=5'));
  const stream_call = await app.waitCall('/v1/sse?hang=1&n=5');
  await until(() => streaming.pending.includes('data: {"i":0'), 2_000, 'the first event');
  const stream_closed = once(stream_call.res, 'close');
  streaming.socket.destroy();
  await stream_closed;
  assert.equal(stream_call.res.writableFinished, false);
  assert.equal(stream_call.res.write('data: late\n\n'), false, 'writes after the client left are refused');
  stream_call.release();
  await until(() => connectionsOf(front).size === 0, 2_000, 'the server to forget both connections');

  // The same on Node's lane.
  const node = await RawClient.open(t, port);
  await node.write(request('GET', '/other/hang'));
  const node_call = await app.waitCall('/other/hang');
  assert.equal(node_call.lane, 'node');
  const node_closed = once(node_call.res, 'close');
  node.socket.destroy();
  await node_closed;
  assert.equal(node_call.res.writableFinished, false);
  node_call.release();

  // A response that completes: finish, then close, writableFinished true.
  const done = await RawClient.open(t, port);
  await done.write(request('GET', '/v1/hang?complete'));
  const done_call = await app.waitCall('/v1/hang?complete');
  const events: string[] = [];
  done_call.res.on('finish', () => events.push('finish'));
  done_call.res.on('close', () => events.push(`close ${done_call.res.writableFinished}`));
  done_call.release();
  assert.equal((await done.response()).status, 200);
  await until(() => events.length === 2, 2_000, 'finish and close');
  assert.deepEqual(events, ['finish', 'close true']);
});

test('front: back-pressure: write returns false while the client does not read, drain follows', async (t) => {
  const { port, app } = await start(t);
  const client = await RawClient.open(t, port);
  client.socket.pause();
  await client.write(request('GET', '/v1/hang?pressure'));
  const call = await app.waitCall('/v1/hang?pressure');
  const res = call.res;
  res.writeHead(200, { 'content-type': 'application/octet-stream' });
  const piece = 'z'.repeat(256 * 1024);
  let written = 0;
  while (res.write(piece)) {
    written++;
    assert.ok(written < 400, 'write never returned false');
  }
  written++;
  const drained = once(res, 'drain');
  client.socket.resume();
  await drained;
  res.end();
  const response = await client.response({ ms: 10_000 });
  assert.equal(response.body.length, written * piece.length);
});

// ---------------------------------------------------------------------------------------------
// 7. Timeouts

test('front: an idle keep-alive connection is closed after keepAliveTimeout, a slow response is not', async (t) => {
  const { port } = await start(t, { keepAliveTimeout: 150, headersTimeout: 1_000 });
  const client = await RawClient.open(t, port);
  // A response slower than keepAliveTimeout: the timer does not run while it is in flight.
  await client.write(request('GET', '/v1/echo?delay=300'));
  assert.equal((await client.response()).status, 200);
  const answered = Date.now();
  await client.end(3_000);
  const idle = Date.now() - answered;
  assert.ok(idle >= 100, `closed after ${idle} ms`);
  assert.ok(idle < 2_500, `closed after ${idle} ms`);
});

test('front: a head sent in part, or nothing at all, is closed after headersTimeout; a slow body after requestTimeout', async (t) => {
  const { port, app } = await start(t, { keepAliveTimeout: 5_000, headersTimeout: 150, requestTimeout: 300 });
  const silent = await RawClient.open(t, port);
  const half = await RawClient.open(t, port);
  const started = Date.now();
  await half.write('POST /v1/echo HTTP/1.1\r\nHost: a\r\nContent-Le');
  await half.end(3_000);
  const half_ms = Date.now() - started;
  assert.ok(half_ms >= 100 && half_ms < 2_500, `half head closed after ${half_ms} ms`);
  assert.equal(half.pending.length, 0, 'closed without an answer');
  await silent.end(3_000);

  const body = await RawClient.open(t, port);
  const body_started = Date.now();
  await body.write('POST /v1/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n{"a"');
  await body.end(3_000);
  const body_ms = Date.now() - body_started;
  assert.ok(body_ms >= 200 && body_ms < 2_500, `slow body closed after ${body_ms} ms`);
  assert.deepEqual(app.calls, []);
});

test('front: a partial head pipelined behind a response is still bounded by headersTimeout', async (t) => {
  const { port, app } = await start(t, { keepAliveTimeout: 5_000, headersTimeout: 200, requestTimeout: 5_000 });
  const client = await RawClient.open(t, port);
  await client.write(request('GET', '/v1/echo?delay=50') + 'GET /v1/echo?never HTTP/1.1\r\nHo');
  assert.equal((await client.response()).status, 200);
  await client.end(3_000);
  assert.deepEqual(app.calls.map((call) => call.url), ['/v1/echo?delay=50']);
});

test('front: a body trickled slower than requestTimeout is closed, each byte does not restart the clock', async (t) => {
  const { port, app } = await start(t, { keepAliveTimeout: 5_000, headersTimeout: 300, requestTimeout: 300 });
  const client = await RawClient.open(t, port);
  const started = Date.now();
  await client.write('POST /v1/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n');
  for (let i = 0; i < 12 && !client.closed && !client.ended; i++) {
    await sleep(100);
    if (!client.closed && !client.ended) client.socket.write('x');
  }
  await client.end(3_000);
  const elapsed = Date.now() - started;
  assert.ok(elapsed < 1_000, `closed after ${elapsed} ms`);
  assert.deepEqual(app.calls, [], 'never served');
});

// ---------------------------------------------------------------------------------------------
// 8. Closing

test('front: closeIdleConnections closes idle connections, not one with a response in flight', async (t) => {
  const { port, app, front } = await start(t);
  const idle = await RawClient.open(t, port);
  await idle.write(request('GET', '/v1/echo?idle'));
  await idle.response();
  const fresh = await RawClient.open(t, port); // connected, nothing sent
  const busy = await RawClient.open(t, port);
  await busy.write(request('POST', '/v1/hang', {}, '{"busy":1}'));
  const call = await app.waitCall('/v1/hang');
  const node_idle = await RawClient.open(t, port);
  await node_idle.write(request('GET', '/health'));
  assert.equal(echoOf(await node_idle.response()).lane, 'node');
  await until(() => connectionsOf(front).size === 3, 2_000, 'three hot connections');

  front.closeIdleConnections();
  await idle.end(2_000);
  await fresh.end(2_000);
  await node_idle.end(2_000);
  await sleep(50);
  assert.equal(busy.closed || busy.ended, false, 'the busy connection stays');
  call.release();
  const response = await busy.response();
  assert.equal(response.status, 200);
  assert.equal(response.headers['connection'], 'keep-alive');
  // Still usable afterwards.
  await busy.write(request('GET', '/v1/echo?again'));
  assert.equal((await busy.response()).status, 200);

  front.closeAllConnections();
  await busy.end(2_000);
  assert.equal(connectionsOf(front).size, 0);
});

test('front: closeAllConnections closes every connection, in flight or not, on both lanes', async (t) => {
  const { port, app, front } = await start(t);
  const busy = await RawClient.open(t, port);
  await busy.write(request('GET', '/v1/hang?all'));
  const call = await app.waitCall('/v1/hang?all');
  const idle = await RawClient.open(t, port);
  const node_busy = await RawClient.open(t, port);
  await node_busy.write(request('GET', '/other/hang'));
  const node_call = await app.waitCall('/other/hang');
  const closes = [once(call.res, 'close'), once(node_call.res, 'close')];
  front.closeAllConnections();
  await Promise.all([busy.end(2_000), idle.end(2_000), node_busy.end(2_000), ...closes]);
  assert.equal(call.res.writableFinished, false);
  assert.equal(node_call.res.writableFinished, false);
  assert.equal(busy.pending.length, 0);
});

test('front: close() stops accepting, lets the response in flight finish, then emits close', async (t) => {
  const { port, app, front } = await start(t);
  const busy = await RawClient.open(t, port);
  await busy.write(request('GET', '/v1/hang?closing'));
  const call = await app.waitCall('/v1/hang?closing');
  const idle = await RawClient.open(t, port);
  let closed = false;
  front.on('close', () => (closed = true));
  front.close();
  front.closeIdleConnections();
  await idle.end(2_000);
  await assert.rejects(
    new Promise<void>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.on('error', reject);
    }),
    /ECONNREFUSED/,
  );
  await sleep(30);
  assert.equal(closed, false, 'a connection is still open');
  call.release();
  const response = await busy.response();
  assert.equal(response.status, 200);
  await busy.end(2_000);
  await until(() => closed, 2_000, "the server's close event");
});

// ---------------------------------------------------------------------------------------------
// 9. SSE through SseWriter

test('front: SseWriter over the hot lane: events written in one tick arrive intact and in order', async (t) => {
  const { port, app } = await start(t);
  const client = await RawClient.open(t, port);
  for (const n of [1, 5, 40]) {
    await client.write(request('POST', `/v1/coalesce?n=${n}`, {}, '{"stream":true}'));
    const response = await client.response();
    assert.equal(response.status, 200);
    assert.equal(response.headers['x-lane'], 'hot');
    assert.equal(response.headers['transfer-encoding'], 'chunked');
    assert.equal(response.headers['cache-control'], 'no-cache, no-transform');
    assert.equal(response.header_lines.filter(([name]) => name.toLowerCase() === 'connection').length, 1);
    const data = parseSseData(response.body.toString('utf8'));
    assert.equal(data.length, n + 2);
    for (let i = 0; i < n; i++) assert.deepEqual(JSON.parse(data[i]!), { i, text: 'x'.repeat(i * 7), unicode: 'नमस्ते' });
    assert.deepEqual(JSON.parse(data[n]!), { i: n, late: true });
    assert.equal(data[n + 1], '[DONE]');
  }
  assert.ok(app.calls.every((call) => call.lane === 'hot'));
  // And through fetch.
  const text = await (await fetch(`http://127.0.0.1:${port}/v1/coalesce?n=12`, { method: 'POST', body: '{}' })).text();
  assert.equal(parseSseData(text).length, 14);
});

test('front: pipelined bytes past 1 MiB behind a response in flight pause the socket, then are all served', async (t) => {
  const { port, app } = await start(t);
  const client = await RawClient.open(t, port);
  await client.write(request('GET', '/v1/hang?first'));
  const call = await app.waitCall('/v1/hang?first');
  const filler = 'f'.repeat(15 * 1024);
  const count = 100;
  let text = '';
  for (let i = 0; i < count; i++) text += request('GET', `/v1/echo?n=${i}`, { 'X-Fill': filler });
  void client.write(text);
  const socket = call.req.socket;
  await until(() => socket.bytesRead > 1024 * 1024 && socket.isPaused(), 5_000, 'the server socket to pause');
  call.release();
  const first = await client.response();
  assert.equal(echoOf(first).url, '/v1/hang?first');
  for (let i = 0; i < count; i++) {
    const echo = echoOf(await client.response());
    assert.equal(echo.url, `/v1/echo?n=${i}`);
  }
  assert.equal(app.calls.length, count + 1);
});

test("front: a hot-lane handler that reads the body as a stream gets it as 'data' and 'end'; a header with a line break is refused", async (t) => {
  const seen: { body: string; header_error: string | null }[] = [];
  const server = new FrontServer(
    { keepAliveTimeout: 5_000, headersTimeout: 5_000, requestTimeout: 5_000, max_body_bytes: 1024 * 1024, hot: (target) => target.startsWith('/v1/') },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        let header_error: string | null = null;
        try {
          res.setHeader('x-injected', 'a\r\nset-cookie: evil=1');
        } catch (error) {
          header_error = (error as Error).message;
        }
        seen.push({ body: Buffer.concat(chunks).toString('utf8'), header_error });
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
        res.end('ok');
      });
    },
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const answer = await fetch(`http://127.0.0.1:${port}/v1/echo`, { method: 'POST', body: 'streamed body' });
  assert.equal(await answer.text(), 'ok');
  assert.equal(answer.headers.get('set-cookie'), null);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.body, 'streamed body');
  assert.match(seen[0]!.header_error ?? '', /invalid character in header "x-injected"/);
});

test('front: a body arriving in many reads is served whole, and a pipelined request behind it too', async (t) => {
  const { port, app } = await start(t, { max_body_bytes: 8 * 1024 });
  const client = await RawClient.open(t, port);
  const body = Buffer.alloc(4000, 'abcdefghijklmnopqrstuvwxyz0123456789');
  const second = '{"second":true}';
  client.socket.write(`POST /v1/big HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`);
  for (let offset = 0; offset < body.length; offset += 250) {
    client.socket.write(body.subarray(offset, offset + 250));
    await sleep(2); // one read on the server's side per piece
  }
  client.socket.write(`POST /v1/small HTTP/1.1\r\nHost: x\r\nContent-Length: ${second.length}\r\n\r\n${second}`);
  const first = echoOf(await client.response());
  assert.equal(first.lane, 'hot');
  assert.equal(first.body, body.toString('latin1'));
  const next = echoOf(await client.response());
  assert.equal(next.url, '/v1/small');
  assert.equal(next.body, second);
  assert.equal(app.calls.length, 2);
});
