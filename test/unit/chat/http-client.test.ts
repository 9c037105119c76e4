import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpClientError, HttpPool, type HttpPoolOptions, type HttpResponse, type ResponseBody } from '../../../gateway/llm/http-client.js';

/** One request as the raw upstream received it. */
interface Received {
  head: string;
  body: string;
  socket: net.Socket;
  /** Across the whole server, from 0. */
  index: number;
  /** Which accepted connection it came on, from 0. */
  connection: number;
}

/** A `node:net` upstream on 127.0.0.1 that hands each complete request to `answer`, which writes raw bytes. */
class RawUpstream {
  readonly requests: Received[] = [];
  readonly sockets: net.Socket[] = [];
  open = 0;
  max_open = 0;
  port = 0;
  private readonly server: net.Server;

  constructor(private readonly answer: (request: Received) => void) {
    this.server = net.createServer((socket) => this.accept(socket));
  }

  get connections(): number {
    return this.sockets.length;
  }

  async listen(): Promise<this> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private accept(socket: net.Socket): void {
    const connection = this.sockets.length;
    this.sockets.push(socket);
    this.max_open = Math.max(this.max_open, ++this.open);
    socket.setNoDelay(true);
    socket.on('error', () => {});
    socket.on('close', () => this.open--);
    let buffer = Buffer.alloc(0);
    socket.on('data', (data: Buffer) => {
      buffer = Buffer.concat([buffer, data]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buffer.toString('latin1', 0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        const body = buffer.toString('utf8', end + 4, end + 4 + length);
        buffer = buffer.subarray(end + 4 + length);
        const request: Received = { head, body, socket, index: this.requests.length, connection };
        this.requests.push(request);
        this.answer(request);
      }
    });
  }
}

async function upstream(t: TestContext, answer: (request: Received) => void): Promise<RawUpstream> {
  const server = await new RawUpstream(answer).listen();
  t.after(() => server.close());
  return server;
}

/** An upstream that answers its n-th request with `raw` cut in two after byte n (n = 1, 2, ...). */
function splitAtEachByte(t: TestContext, raw: Buffer): Promise<RawUpstream> {
  return upstream(t, ({ socket, index }) => {
    const cut = index + 1;
    socket.write(raw.subarray(0, cut));
    setTimeout(() => socket.write(raw.subarray(cut)), 1);
  });
}

function poolFor(t: TestContext, target: RawUpstream | string, options: Partial<HttpPoolOptions> = {}): HttpPool {
  const origin = typeof target === 'string' ? target : `http://127.0.0.1:${target.port}`;
  const pool = new HttpPool(origin, { connections: 1, timeout_ms: 2_000, ...options });
  t.after(() => pool.close());
  return pool;
}

function get(pool: HttpPool, path = '/', signal?: AbortSignal): Promise<HttpResponse> {
  return pool.request(pool.prepare('GET', path, {}), '', signal);
}

/** A complete 200 answer with a content-length. */
function ok(body: string, extra_headers = ''): string {
  return `HTTP/1.1 200 OK\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra_headers}\r\n${body}`;
}

/** The request path, from the request line. */
const pathOf = (request: Received) => request.head.split(' ')[1]!;

/** For assert.rejects: an HttpClientError with one of these codes. */
function withCode(...codes: string[]) {
  return (error: unknown) => {
    assert.ok(error instanceof HttpClientError, `not an HttpClientError: ${String(error)}`);
    assert.ok(codes.includes(error.code), `code ${error.code} (${error.message}), expected ${codes.join(' or ')}`);
    return true;
  };
}

function closed(socket: net.Socket): Promise<void> {
  return socket.closed ? Promise.resolve() : new Promise((resolve) => socket.once('close', () => resolve()));
}

async function chunks(body: ResponseBody): Promise<string[]> {
  const out: string[] = [];
  for await (const chunk of body) out.push(chunk.toString('utf8'));
  return out;
}

/** Peeks at HttpPool's private count of open connections (idle or busy). */
const openConnections = (pool: HttpPool) => (pool as unknown as { open_count: number }).open_count;

/** Peeks at ResponseBody's private state: whether the whole body has arrived, and how much is buffered ahead of the reader. */
const internals = (body: ResponseBody) => body as unknown as { ended: boolean; queued_bytes: number };

async function until(condition: () => boolean, what: string, timeout_ms = 5_000): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

// 1. Framing

test('http client: content-length body, status, lower-case headers with repeats joined; request line, host, headers and body length sent', async (t) => {
  const server = await upstream(t, ({ socket }) => {
    socket.write('HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\nX-Multi: a\r\nx-multi:  b \r\nContent-Length: 5\r\n\r\nhello');
  });
  const pool = poolFor(t, server);
  assert.equal(pool.origin, `http://127.0.0.1:${server.port}`);
  const prepared = pool.prepare('POST', '/v1/chat?x=1', { authorization: 'Bearer k', 'content-type': 'application/json' });
  const response = await pool.request(prepared, 'héllo 😀');
  assert.equal(response.status, 201);
  assert.deepEqual(response.headers, { 'content-type': 'text/plain', 'x-multi': 'a, b', 'content-length': '5' });
  assert.equal(await response.body.text(), 'hello');
  const [received] = server.requests;
  assert.equal(
    received!.head,
    `POST /v1/chat?x=1 HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\nauthorization: Bearer k\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength('héllo 😀')}`,
  );
  assert.equal(received!.body, 'héllo 😀');
});

test('http client: a chunked body split at every byte boundary, with chunk extensions and trailers, on one kept-alive connection', async (t) => {
  const parts = ['hello', ', wörld ', 'x'.repeat(26)];
  const sizes = parts.map((part) => Buffer.byteLength(part).toString(16).toUpperCase());
  const raw = Buffer.from(
    `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `${sizes[0]};ext=1\r\n${parts[0]}\r\n` +
      `${sizes[1]} ;name="q v";flag\r\n${parts[1]}\r\n` +
      `${sizes[2]}\r\n${parts[2]}\r\n` +
      `0;last\r\nx-trailer: yes\r\nx-other: 1\r\n\r\n`,
  );
  const server = await splitAtEachByte(t, raw);
  const pool = poolFor(t, server);
  for (let cut = 1; cut < raw.length; cut++) {
    const response = await get(pool);
    assert.equal(response.headers['transfer-encoding'], 'chunked');
    assert.equal(await response.body.text(), parts.join(''), `cut at ${cut}`);
  }
  assert.equal(server.requests.length, raw.length - 1);
  assert.equal(server.connections, 1, 'the connection was kept alive after every chunked body');
});

test('http client: a body delimited by the connection close (HTTP/1.1 and 1.0) ends normally, and that connection is not reused', async (t) => {
  const server = await upstream(t, ({ socket, index }) => {
    socket.write(index === 0 ? 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\npart one, ' : 'HTTP/1.0 200 OK\r\n\r\npart one, ');
    setTimeout(() => socket.end('part two'), 20);
  });
  const pool = poolFor(t, server);
  for (let i = 0; i < 2; i++) {
    const response = await get(pool);
    assert.equal(await response.body.text(), 'part one, part two');
  }
  assert.equal(server.connections, 2);
});

test('http client: 204, 304 and HEAD answers have no body even with a content-length, and keep the connection', async (t) => {
  const server = await upstream(t, ({ socket, head }) => {
    if (head.startsWith('HEAD')) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 1234\r\n\r\n');
    else if (head.startsWith('GET /204')) socket.write('HTTP/1.1 204 No Content\r\n\r\n');
    else if (head.startsWith('GET /304')) socket.write('HTTP/1.1 304 Not Modified\r\ncontent-length: 99\r\n\r\n');
    else socket.write(ok('', ''));
  });
  const pool = poolFor(t, server);
  const headed = await pool.request(pool.prepare('HEAD', '/', {}), '');
  assert.equal(headed.headers['content-length'], '1234');
  assert.equal(await headed.body.text(), '');
  assert.equal((await get(pool, '/204')).status, 204);
  const not_modified = await get(pool, '/304');
  assert.equal(not_modified.status, 304);
  assert.deepEqual(await chunks(not_modified.body), []);
  assert.equal(await (await get(pool, '/empty')).body.text(), '');
  assert.equal(server.connections, 1);
});

test('http client: 100 Continue and 103 interim responses are skipped, wherever the bytes are split', async (t) => {
  const raw = Buffer.from(`HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n${ok('done', 'x-final: 1\r\n')}`);
  const server = await splitAtEachByte(t, raw);
  const pool = poolFor(t, server);
  for (let cut = 1; cut < raw.length; cut++) {
    const response = await get(pool);
    assert.equal(response.status, 200, `cut at ${cut}`);
    assert.deepEqual(response.headers, { 'content-length': '4', 'x-final': '1' });
    assert.equal(await response.body.text(), 'done');
  }
  assert.equal(server.connections, 1);
});

// 2. Keep-alive and the connection bound

test('http client: sequential requests reuse one TCP connection', async (t) => {
  const server = await upstream(t, (request) => request.socket.write(ok(pathOf(request))));
  const pool = poolFor(t, server, { connections: 4 });
  for (let i = 0; i < 6; i++) assert.equal(await (await get(pool, `/${i}`)).body.text(), `/${i}`);
  assert.equal(server.connections, 1);
  assert.equal(server.requests.length, 6);
});

test('http client: a connection: close answer, or HTTP/1.0 without keep-alive, is not reused even if the upstream keeps it open', async (t) => {
  const server = await upstream(t, ({ socket, index }) => {
    if (index === 0) socket.write(ok('a', 'Connection: close\r\n'));
    else if (index === 1) socket.write('HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nb');
    else socket.write('HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 1\r\n\r\nc');
  });
  const pool = poolFor(t, server);
  assert.equal(await (await get(pool)).body.text(), 'a');
  await closed(server.sockets[0]!);
  assert.equal(await (await get(pool)).body.text(), 'b');
  await closed(server.sockets[1]!);
  assert.equal(await (await get(pool)).body.text(), 'c');
  assert.equal(await (await get(pool)).body.text(), 'c');
  assert.equal(server.connections, 3, 'the HTTP/1.0 keep-alive connection was reused');
});

test('http client: at most `connections` sockets are open; concurrent requests beyond it queue and all complete', async (t) => {
  const server = await upstream(t, (request) => setTimeout(() => request.socket.write(ok(pathOf(request))), 15));
  const pool = poolFor(t, server, { connections: 2 });
  const bodies = await Promise.all(Array.from({ length: 7 }, async (_, i) => (await get(pool, `/${i}`)).body.text()));
  assert.deepEqual(bodies, Array.from({ length: 7 }, (_, i) => `/${i}`));
  assert.equal(server.connections, 2);
  assert.equal(server.max_open, 2);
  assert.equal(server.requests.length, 7);
});

// 3. Stale kept-alive connections. The client never resends a request (the upstream may have run
// it, and billed for it): a connection the upstream closed while idle must be dropped before it is
// reused, and a request that meets a closed connection anyway fails for the caller to decide.

test('http client: a kept-alive connection the upstream closed while idle is dropped, the next request goes on a fresh one', async (t) => {
  const server = await upstream(t, (request) => request.socket.end(ok(pathOf(request))));
  const pool = poolFor(t, server);
  for (let i = 0; i < 3; i++) {
    assert.equal(await (await get(pool, `/${i}`)).body.text(), `/${i}`);
    await closed(server.sockets[i]!);
    await until(() => openConnections(pool) === 0, 'the client to see the close');
  }
  assert.equal(server.connections, 3);
  assert.equal(server.requests.length, 3);
});

test('http client: a request that meets a kept-alive connection the upstream had dropped fails once, without being resent', async (t) => {
  for (const drop of ['close', 'reset'] as const) {
    const server = await upstream(t, (request) => {
      if (request.connection === 0 && request.index > 0) {
        // The upstream's idle close racing the second request: it never answers it.
        if (drop === 'reset') request.socket.resetAndDestroy();
        else request.socket.destroy();
      } else request.socket.write(ok(pathOf(request)));
    });
    const pool = poolFor(t, server);
    assert.equal(await (await get(pool, '/1')).body.text(), '/1');
    await assert.rejects(get(pool, '/2'), withCode('SOCKET_CLOSED', 'ECONNRESET'), drop);
    assert.equal(await (await get(pool, '/3')).body.text(), '/3', 'the next request gets a fresh connection');
    assert.deepEqual(
      server.requests.map((r) => [r.connection, pathOf(r)]),
      [
        [0, '/1'],
        [0, '/2'],
        [1, '/3'],
      ],
    );
  }
});

test('http client: a connection closed without an answer, or halfway through the head, fails with SOCKET_CLOSED', async (t) => {
  const silent = await upstream(t, (request) => request.socket.destroy());
  await assert.rejects(get(poolFor(t, silent)), withCode('SOCKET_CLOSED', 'ECONNRESET'));
  assert.equal(silent.connections, 1);
  const partial = await upstream(t, (request) => (request.index === 0 ? request.socket.write(ok('first')) : request.socket.end('HTTP/1.1 200 OK\r\n')));
  const pool = poolFor(t, partial);
  await (await get(pool)).body.text();
  await assert.rejects(get(pool), withCode('SOCKET_CLOSED'));
  assert.equal(partial.connections, 1);
  assert.equal(partial.requests.length, 2);
});

// 4. Timeouts

test('http client: an upstream that never answers fails with HEADERS_TIMEOUT after timeout_ms, fresh or reused', async (t) => {
  const server = await upstream(t, (request) => {
    if (request.index === 0) request.socket.write(ok('first'));
  });
  const pool = poolFor(t, server, { timeout_ms: 150 });
  await (await get(pool)).body.text();
  const started = Date.now();
  await assert.rejects(get(pool), withCode('HEADERS_TIMEOUT'));
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 140 && elapsed < 3_000, `failed after ${elapsed} ms`);
  await closed(server.sockets[0]!);
  await assert.rejects(get(pool), withCode('HEADERS_TIMEOUT'));
  assert.equal(server.connections, 2);
});

test('http client: silence after the head fails the body with BODY_TIMEOUT; bytes spaced below timeout_ms keep it alive', async (t) => {
  const server = await upstream(t, ({ socket, index }) => {
    if (index === 0) return void socket.write('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc');
    socket.write('HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\n');
    let sent = 0;
    const timer = setInterval(() => {
      socket.write(String(sent++));
      if (sent === 6) clearInterval(timer);
    }, 50);
  });
  const pool = poolFor(t, server, { timeout_ms: 250 });
  const seen: string[] = [];
  const started = Date.now();
  const response = await get(pool);
  await assert.rejects(async () => {
    for await (const chunk of response.body) seen.push(chunk.toString());
  }, withCode('BODY_TIMEOUT'));
  assert.deepEqual(seen, ['abc']);
  assert.ok(Date.now() - started >= 240);
  await closed(server.sockets[0]!);
  assert.equal(await (await get(pool)).body.text(), '012345', '300 ms in all, never 250 ms silent');
});

test('http client: a reader slower than timeout_ms (the socket paused for backpressure) is not a BODY_TIMEOUT', async (t) => {
  const body = randomBytes(3 * 1024 * 1024);
  const server = await upstream(t, ({ socket, index }) => {
    if (index > 0) return void socket.write(ok('next'));
    socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n`);
    socket.write(body);
  });
  const pool = poolFor(t, server, { timeout_ms: 150 });
  const response = await get(pool);
  await sleep(400);
  const parts: Buffer[] = [];
  for await (const chunk of response.body) parts.push(chunk);
  assert.ok(Buffer.concat(parts).equals(body));
  assert.equal(await (await get(pool)).body.text(), 'next', 'the connection is usable afterwards');
});

// 5. Errors

test('http client: connection refused → ECONNREFUSED', async (t) => {
  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const pool = poolFor(t, `http://127.0.0.1:${port}`);
  await assert.rejects(get(pool), withCode('ECONNREFUSED'));
  await assert.rejects(get(pool), withCode('ECONNREFUSED'), 'the failed connection freed its slot');
});

test('http client: the upstream resetting or closing mid-body fails the iteration after what arrived', async (t) => {
  const cases = [
    { framing: 'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nsome', how: 'reset', codes: ['ECONNRESET', 'SOCKET_CLOSED'] },
    { framing: 'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nsome', how: 'close', codes: ['SOCKET_CLOSED'] },
    { framing: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nsome\r\n', how: 'reset', codes: ['ECONNRESET', 'SOCKET_CLOSED'] },
    { framing: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nsome\r\n', how: 'close', codes: ['SOCKET_CLOSED'] },
  ];
  for (const { framing, how, codes } of cases) {
    const server = await upstream(t, ({ socket }) => {
      socket.write(framing);
      setTimeout(() => (how === 'reset' ? socket.resetAndDestroy() : socket.end()), 20);
    });
    const response = await get(poolFor(t, server));
    const seen: string[] = [];
    await assert.rejects(async () => {
      for await (const chunk of response.body) seen.push(chunk.toString());
    }, withCode(...codes));
    assert.deepEqual(seen, ['some'], `${how}: ${framing}`);
  }
});

test('http client: an answer that is not HTTP/1.x, or a malformed head → BAD_RESPONSE', async (t) => {
  const answers = [
    'SSH-2.0-OpenSSH_9.6\r\n\r\n',
    'HTTP/2 200\r\n\r\n',
    'HTTP/1.1 2000 OK\r\n\r\n',
    'HTTP/1.1 200 OK\r\nno colon here\r\n\r\n',
    'HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n',
    'HTTP/1.1 200 OK\r\ncontent-length: 1e3\r\n\r\n',
    'HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n',
  ];
  const server = await upstream(t, (request) => request.socket.write(answers[request.index]!));
  const pool = poolFor(t, server);
  for (const answer of answers) await assert.rejects(get(pool), withCode('BAD_RESPONSE'), JSON.stringify(answer));
  assert.equal(server.connections, answers.length, 'every bad connection was dropped');
});

test('http client: bytes beyond the answer, or arriving while idle, make the connection unusable', async (t) => {
  const server = await upstream(t, ({ socket, index }) => {
    if (index === 0) socket.write(`${ok('ok')}EXTRA`);
    else if (index === 1) {
      socket.write(ok('ok'));
      setTimeout(() => socket.write('unsolicited'), 20);
    } else socket.write(ok('ok'));
  });
  const pool = poolFor(t, server);
  assert.equal(await (await get(pool)).body.text(), 'ok');
  await closed(server.sockets[0]!);
  assert.equal(await (await get(pool)).body.text(), 'ok');
  await closed(server.sockets[1]!);
  assert.equal(await (await get(pool)).body.text(), 'ok');
  assert.equal(server.connections, 3);
});

test('http client: a response head over 64 KiB → BAD_RESPONSE, whether or not it ends; just under is fine', async (t) => {
  const big = (size: number) => `HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(size)}\r\ncontent-length: 2\r\n\r\nok`;
  const answers = [big(60 * 1024), big(70 * 1024), big(200 * 1024), `HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(100 * 1024)}`];
  const server = await upstream(t, ({ socket, index }) => socket.write(answers[index]!));
  const pool = poolFor(t, server);
  const fine = await get(pool);
  assert.equal(fine.headers['x-big']!.length, 60 * 1024);
  assert.equal(await fine.body.text(), 'ok');
  for (const size of [70, 200, 100]) await assert.rejects(get(pool), withCode('BAD_RESPONSE'), `${size} KiB`);
});

test('http client: an invalid chunk size → BAD_RESPONSE on the body', async (t) => {
  const sizes = ['zz', '', '-5', '1ffffffffffffffff', `1${'0'.repeat(5000)}`];
  const server = await upstream(t, ({ socket, index }) => {
    socket.write(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n${sizes[index]}`);
    if (index < sizes.length - 1) socket.write('\r\nmore\r\n');
  });
  const pool = poolFor(t, server);
  for (const size of sizes) {
    const response = await get(pool);
    await assert.rejects(response.body.text(), withCode('BAD_RESPONSE'), JSON.stringify(size.slice(0, 20)));
  }
  assert.equal(server.connections, sizes.length);
});

test('http client: text(limit) beyond the limit → BODY_TOO_LARGE and drops the connection mid-body; json() parses', async (t) => {
  const server = await upstream(t, ({ socket, index }) => {
    socket.write(index === 0 ? `HTTP/1.1 200 OK\r\ncontent-length: 2000\r\n\r\n${'x'.repeat(1000)}` : ok('{"a":[1,"é"]}'));
  });
  const pool = poolFor(t, server);
  await assert.rejects((await get(pool)).body.text(999), withCode('BODY_TOO_LARGE'));
  assert.deepEqual(await (await get(pool)).body.json(), { a: [1, 'é'] });
  assert.equal(await (await get(pool)).body.text(Buffer.byteLength('{"a":[1,"é"]}')), '{"a":[1,"é"]}', 'exactly at the limit is fine');
  assert.equal(server.connections, 2);
});

// 6. Abort

test('http client: aborting before the head rejects with ABORTED and closes the socket; an aborted signal never connects', async (t) => {
  const controller = new AbortController();
  const server = await upstream(t, () => controller.abort());
  const pool = poolFor(t, server);
  await assert.rejects(get(pool, '/', controller.signal), withCode('ABORTED'));
  await closed(server.sockets[0]!);
  await assert.rejects(get(pool, '/', controller.signal), withCode('ABORTED'));
  assert.equal(server.connections, 1);
});

test('http client: aborting mid-body fails the iteration with ABORTED and closes the socket', async (t) => {
  const server = await upstream(t, ({ socket }) => socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n'));
  const controller = new AbortController();
  const response = await get(poolFor(t, server), '/', controller.signal);
  const seen: string[] = [];
  await assert.rejects(async () => {
    for await (const chunk of response.body) {
      seen.push(chunk.toString());
      controller.abort();
    }
  }, withCode('ABORTED'));
  assert.deepEqual(seen, ['first']);
  await closed(server.sockets[0]!);
});

test('http client: aborting a request queued behind a full pool rejects it without sending it', async (t) => {
  const held: Received[] = [];
  const server = await upstream(t, (request) => held.push(request));
  const pool = poolFor(t, server);
  const first = get(pool, '/first');
  await until(() => held.length === 1, 'the first request');
  const controller = new AbortController();
  const queued = get(pool, '/queued', controller.signal);
  controller.abort();
  await assert.rejects(queued, withCode('ABORTED'));
  held[0]!.socket.write(ok('first'));
  assert.equal(await (await first).body.text(), 'first');
  held.length = 0;
  const third = get(pool, '/third');
  await until(() => held.length === 1, 'the third request');
  held[0]!.socket.write(ok('third'));
  assert.equal(await (await third).body.text(), 'third');
  assert.deepEqual(server.requests.map(pathOf), ['/first', '/third']);
  assert.equal(server.connections, 1);
});

test('http client: a request queued behind busy connections for queue_timeout_ms fails with QUEUE_TIMEOUT, unsent; the pool goes on working', async (t) => {
  const held: Received[] = [];
  const server = await upstream(t, (request) => held.push(request));
  const pool = poolFor(t, server, { queue_timeout_ms: 80 });
  const first = get(pool, '/first');
  await until(() => held.length === 1, 'the first request');
  const started = performance.now();
  await assert.rejects(get(pool, '/queued'), withCode('QUEUE_TIMEOUT'));
  assert.ok(performance.now() - started >= 70, 'it waited about queue_timeout_ms');
  held[0]!.socket.write(ok('first'));
  assert.equal(await (await first).body.text(), 'first');
  // A request served from the queue in time does not time out later.
  const second = get(pool, '/second');
  await until(() => held.length === 2, 'the second request');
  const third = get(pool, '/third');
  held[1]!.socket.write(ok('second'));
  assert.equal(await (await second).body.text(), 'second');
  await until(() => held.length === 3, 'the third request');
  await sleep(120);
  held[2]!.socket.write(ok('third'));
  assert.equal(await (await third).body.text(), 'third');
  assert.deepEqual(server.requests.map(pathOf), ['/first', '/second', '/third']);
  assert.equal(server.connections, 1);
});

test('http client: without queue_timeout_ms a queued request waits as long as the connect timeout', async (t) => {
  const held: Received[] = [];
  const server = await upstream(t, (request) => held.push(request));
  const pool = poolFor(t, server, { connect_timeout_ms: 60 });
  const first = get(pool, '/first');
  await until(() => held.length === 1, 'the first request');
  await assert.rejects(get(pool, '/queued'), withCode('QUEUE_TIMEOUT'));
  held[0]!.socket.write(ok('first'));
  assert.equal(await (await first).body.text(), 'first');
});

// 7. Giving up on a body

test('http client: breaking out of for await or destroy() mid-body closes that connection; a body read to the end leaves it reusable', async (t) => {
  const server = await upstream(t, ({ socket, index }) => {
    if (index === 1 || index === 2) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nstart');
    else socket.write(ok('whole'));
  });
  const pool = poolFor(t, server);
  assert.equal(await (await get(pool)).body.text(), 'whole');
  for await (const chunk of (await get(pool)).body) {
    assert.equal(chunk.toString(), 'start');
    break;
  }
  await closed(server.sockets[0]!);
  const response = await get(pool);
  response.body.destroy();
  response.body.destroy();
  assert.deepEqual(await chunks(response.body), [], 'a destroyed body yields nothing');
  await closed(server.sockets[1]!);
  // A body that arrived whole can be dropped unread without losing the connection.
  const unread = await get(pool);
  await until(() => internals(unread.body).ended, 'the body to arrive');
  unread.body.destroy();
  assert.equal(await (await get(pool)).body.text(), 'whole');
  assert.equal(server.connections, 3);
  assert.equal(server.requests.length, 5);
});

test('http client: a body that fills the read-ahead buffer exactly and is dropped unread leaves a working connection', async (t) => {
  const MiB = 1024 * 1024;
  const server = await upstream(t, ({ socket, index }) => socket.write(index === 0 ? ok('y'.repeat(MiB)) : ok('next')));
  const pool = poolFor(t, server, { timeout_ms: 500 });
  const response = await get(pool);
  await until(() => internals(response.body).ended, 'the body to arrive');
  response.body.destroy();
  assert.equal(await (await get(pool)).body.text(), 'next');
  assert.equal(server.connections, 1);
});

// 8. Backpressure

test('http client: an 8 MiB body read slowly arrives intact, with at most about 1 MiB buffered ahead of the reader', async (t) => {
  const body = randomBytes(8 * 1024 * 1024);
  const digest = createHash('sha256').update(body).digest('hex');
  const server = await upstream(t, ({ socket }) => {
    socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n`);
    socket.write(body);
  });
  const pool = poolFor(t, server);
  const response = await get(pool);
  await sleep(150);
  const bound = 1024 * 1024 + 256 * 1024;
  assert.ok(internals(response.body).queued_bytes <= bound, `${internals(response.body).queued_bytes} bytes buffered`);
  const hash = createHash('sha256');
  let count = 0;
  let most = 0;
  for await (const chunk of response.body) {
    hash.update(chunk);
    most = Math.max(most, internals(response.body).queued_bytes);
    if (++count % 16 === 0) await sleep(2);
  }
  assert.equal(hash.digest('hex'), digest);
  assert.ok(most <= bound, `${most} bytes buffered at most`);
});

test('http client: a reader still draining an earlier body does not lift the backpressure on the next body of that connection', async (t) => {
  const big = Buffer.alloc(6 * 1024 * 1024, 'b');
  const server = await upstream(t, ({ socket, index }) => {
    if (index > 0) {
      socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${big.length}\r\n\r\n`);
      return void socket.write(big);
    }
    socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n');
    for (let i = 0; i < 64; i++) socket.write(`1000\r\n${'a'.repeat(4096)}\r\n`);
    socket.write('0\r\n\r\n');
  });
  const pool = poolFor(t, server);
  const first = await get(pool);
  await until(() => internals(first.body).ended, 'the first body to arrive');
  const second = await get(pool);
  await sleep(100);
  let size = 0;
  for await (const chunk of first.body) {
    size += chunk.length;
    await sleep(1);
  }
  assert.equal(size, 64 * 4096);
  await sleep(50);
  const bound = 1024 * 1024 + 256 * 1024;
  assert.ok(internals(second.body).queued_bytes <= bound, `${internals(second.body).queued_bytes} bytes buffered`);
  assert.equal((await second.body.text()).length, big.length);
  assert.equal(server.connections, 1);
});

test('http client: a large chunked body from node:http read slowly arrives intact', async (t) => {
  const body = randomBytes(4 * 1024 * 1024 + 123);
  const server = http.createServer(async (req, res) => {
    if (req.url !== '/big') return void res.end('next');
    for (let at = 0; at < body.length; at += 50_000) {
      if (!res.write(body.subarray(at, at + 50_000))) await once(res, 'drain');
    }
    res.end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const pool = poolFor(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const response = await get(pool, '/big');
  assert.equal(response.headers['transfer-encoding'], 'chunked');
  const hash = createHash('sha256');
  let count = 0;
  for await (const chunk of response.body) {
    hash.update(chunk);
    if (++count % 16 === 0) await sleep(2);
  }
  assert.equal(hash.digest('hex'), createHash('sha256').update(body).digest('hex'));
  assert.equal(await (await get(pool)).body.text(), 'next', 'the connection is reusable: nothing was left over');
});

// 9. TLS

test('http client: https to localhost and 127.0.0.1 with a throwaway self-signed certificate, kept alive; an unknown CA is refused', async (t) => {
  if (spawnSync('openssl', ['version']).error) return void t.skip('openssl is not on PATH');
  const dir = mkdtempSync(path.join(tmpdir(), 'http-client-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const made = spawnSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
    { stdio: 'pipe' },
  );
  assert.equal(made.status, 0, made.stderr?.toString());
  const key = readFileSync(path.join(dir, 'key.pem'));
  const cert = readFileSync(path.join(dir, 'cert.pem'));
  let connections = 0;
  const server = https.createServer({ key, cert }, (req, res) => {
    res.setHeader('content-type', 'text/plain');
    res.end(`secure ${req.url} ${req.headers.host}`);
  });
  server.on('secureConnection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const pool = poolFor(t, `https://localhost:${port}`, { tls: { ca: cert } });
  for (let i = 0; i < 3; i++) assert.equal(await (await get(pool, `/${i}`)).body.text(), `secure /${i} localhost:${port}`);
  assert.equal(connections, 1);
  const by_ip = poolFor(t, `https://127.0.0.1:${port}`, { tls: { ca: cert } });
  assert.equal(await (await get(by_ip, '/ip')).body.text(), `secure /ip 127.0.0.1:${port}`);
  await assert.rejects(get(poolFor(t, `https://localhost:${port}`)), (error: unknown) => error instanceof HttpClientError && /SELF_SIGNED|UNABLE_TO_VERIFY/.test(error.code));
});

// 10. Requests and the pool

test('http client: prepare() refuses CR or LF in header names and values; only http and https origins', (t) => {
  const pool = poolFor(t, 'http://127.0.0.1:9');
  for (const value of ['a\r\nx-injected: 1', 'a\nb', 'a\rb']) assert.throws(() => pool.prepare('GET', '/', { 'x-test': value }), /line break/);
  assert.throws(() => pool.prepare('GET', '/', { 'x-a\r\nx-b': 'v' }), /line break/);
  assert.match(pool.prepare('GET', '/p', { 'x-ok': 'v' }).prefix, /^GET \/p HTTP\/1\.1\r\nhost: 127\.0\.0\.1:9\r\nx-ok: v\r\n$/);
  assert.throws(() => new HttpPool('ftp://127.0.0.1/', { connections: 1, timeout_ms: 100 }), /unsupported protocol/);
});

test('http client: close() rejects queued and later requests with CLOSED and closes idle connections', async (t) => {
  const held: Received[] = [];
  const server = await upstream(t, (request) => held.push(request));
  const pool = poolFor(t, server);
  const first = get(pool);
  await until(() => held.length === 1, 'the first request');
  const queued = get(pool);
  await pool.close();
  await assert.rejects(queued, withCode('CLOSED'));
  await assert.rejects(get(pool), withCode('CLOSED'));
  held[0]!.socket.write(ok('in flight'));
  assert.equal(await (await first).body.text(), 'in flight', 'a request in flight completes');
  await closed(server.sockets[0]!);
  assert.equal(server.requests.length, 1);
});
