// UpstreamClient.requestText: an upstream's whole answer read straight from the pool's dispatch
// (issue #40), against a raw TCP server on loopback that writes exactly the bytes each case
// needs: a whole answer, one cut short, one too large, informational heads before it, silence,
// and a client that leaves. Each case also checks the connection slot came back (a pool of one
// connection serves the next request) so that no failure leaks a slot.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import {
  BodyTooLargeError,
  QueueTimeoutError,
  UpstreamClient,
  type TextAnswer,
} from '../../../gateway/llm/transport.js';

/** What the server does with the next request: write these parts (a function of the socket). */
type Script = (socket: Socket) => void;

let server: Server;
let base_url = '';
const scripts: Script[] = [];
/** Every request's socket, to see whether the client closed it. */
const sockets: Socket[] = [];

function answer(status: number, body: string, extra = ''): string {
  return `HTTP/1.1 ${status} X\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;
}

before(async () => {
  server = createServer((socket) => {
    let seen = '';
    socket.on('data', (data) => {
      seen += data.toString('latin1');
      // One request per script; the bodies here are small and have a content-length.
      for (;;) {
        const head_end = seen.indexOf('\r\n\r\n');
        if (head_end === -1) return;
        const length = Number(/content-length: *(\d+)/i.exec(seen.slice(0, head_end))?.[1] ?? 0);
        if (seen.length < head_end + 4 + length) return;
        seen = seen.slice(head_end + 4 + length);
        sockets.push(socket);
        const script = scripts.shift() ?? ((s: Socket) => s.write(answer(200, '{"ok":true}')));
        script(socket);
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  base_url = `http://127.0.0.1:${address.port}`;
});

after(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const LIMITS = { ok: 1_000, error: 100 };

function client(options: Partial<{ timeout_ms: number; queue_timeout_ms: number }> = {}) {
  return new UpstreamClient(base_url, { connections: 1, timeout_ms: 5_000, ...options });
}

function post(c: UpstreamClient, signal?: AbortSignal): Promise<TextAnswer> {
  return c.requestText(
    { path: '/v1/x', method: 'POST', headers: {}, body: '{"q":1}', signal },
    LIMITS,
  );
}

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string };
  }
  assert.fail('expected a rejection');
}

/** The slot is back: the next request on the pool of one connection is served. */
async function servesNext(c: UpstreamClient): Promise<void> {
  const next = await post(c);
  assert.equal(next.statusCode, 200);
  assert.equal(next.text, '{"ok":true}');
}

test(
  'a whole answer: status, headers and body as text, split across writes and multi-byte',
  { timeout: 20_000 },
  async () => {
    const c = client();
    const body = JSON.stringify({ text: 'ह'.repeat(200) }); // 600 bytes of UTF-8, 3 bytes each
    const bytes = Buffer.from(answer(200, body, 'x-upstream: yes\r\n'));
    scripts.push((socket) => {
      // cut inside a character: the text is decoded once, whole
      socket.write(bytes.subarray(0, bytes.length - 301));
      setImmediate(() => socket.write(bytes.subarray(bytes.length - 301)));
    });
    const got = await post(c);
    assert.equal(got.statusCode, 200);
    assert.equal(got.headers['x-upstream'], 'yes');
    assert.equal(got.text, body);
    await servesNext(c);
    await c.close();
  },
);

test(
  'an informational head (103 Early Hints) before the answer is passed over',
  { timeout: 20_000 },
  async () => {
    const c = client();
    scripts.push((socket) =>
      socket.write(
        // (an unasked-for 100 Continue undici refuses as a bad answer: nothing sends Expect)
        'HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n' + answer(201, '{"made":1}'),
      ),
    );
    const got = await post(c);
    assert.equal(got.statusCode, 201);
    assert.equal(got.text, '{"made":1}');
    await servesNext(c);
    await c.close();
  },
);

test(
  "a success's body past the bound fails with BodyTooLargeError and its connection is dropped",
  { timeout: 20_000 },
  async () => {
    const c = client();
    let closed: Promise<void> = Promise.resolve();
    scripts.push((socket) => {
      closed = new Promise((resolve) => socket.once('close', () => resolve()));
      socket.write(answer(200, 'x'.repeat(LIMITS.ok + 1)));
    });
    const error = await rejection(post(c));
    assert.ok(error instanceof BodyTooLargeError, String(error));
    await closed; // the rest is never read: the connection goes
    await servesNext(c);
    await c.close();
  },
);

test(
  "an error status's body is read up to its own bound, to quote; the rest is dropped",
  { timeout: 20_000 },
  async () => {
    const c = client();
    scripts.push((socket) => socket.write(answer(500, `{"error":"${'y'.repeat(500)}"}`)));
    const got = await post(c);
    assert.equal(got.statusCode, 500);
    assert.equal(got.text, `{"error":"${'y'.repeat(LIMITS.error - 10)}`);
    await servesNext(c);
    await c.close();
  },
);

test(
  'a success cut short fails; an error status cut short gives what arrived',
  { timeout: 20_000 },
  async () => {
    const c = client();
    scripts.push((socket) => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{"half":');
      setImmediate(() => socket.destroy());
    });
    const cut = await rejection(post(c));
    assert.equal(cut.code, 'UND_ERR_SOCKET', String(cut));
    await servesNext(c);
    scripts.push((socket) => {
      socket.write('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 50\r\n\r\n{"error":"bro');
      setImmediate(() => socket.destroy());
    });
    const quoted = await post(c);
    assert.equal(quoted.statusCode, 502);
    assert.equal(quoted.text, '{"error":"bro');
    await servesNext(c);
    await c.close();
  },
);

test(
  'silence inside the body beyond timeout_ms fails as a body timeout',
  { timeout: 20_000 },
  async () => {
    // undici measures silence with a ~1 s resolution
    const c = client({ timeout_ms: 300 });
    scripts.push((socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{"slow":'));
    const error = await rejection(post(c));
    assert.equal(error.code, 'UND_ERR_BODY_TIMEOUT', String(error));
    await servesNext(c);
    await c.close();
  },
);

test(
  'the client leaving: before the request starts, while it waits for its head, and inside its body',
  { timeout: 20_000 },
  async () => {
    const c = client();
    const gone = new AbortController();
    gone.abort(new Error('gone before'));
    const before_count = sockets.length;
    assert.equal((await rejection(post(c, gone.signal))).message, 'gone before');
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(sockets.length, before_count, 'nothing was sent');

    for (const partial of ['', 'HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n{"part']) {
      const leaving = new AbortController();
      let closed: Promise<void> = Promise.resolve();
      scripts.push((socket) => {
        closed = new Promise((resolve) => socket.once('close', () => resolve()));
        if (partial)
          socket.write(partial, () => setTimeout(() => leaving.abort(new Error('left')), 20));
        else setTimeout(() => leaving.abort(new Error('left')), 20);
      });
      const error = await rejection(post(c, leaving.signal));
      assert.equal(error.message, 'left');
      await closed; // the upstream saw the connection close
      await servesNext(c);
    }
    await c.close();
  },
);

test(
  'a request behind the busy connection waits queue_timeout_ms, then fails unsent; one that leaves in line goes',
  { timeout: 20_000 },
  async () => {
    const c = client({ queue_timeout_ms: 50 });
    let release = () => {};
    scripts.push((socket) => {
      release = () => socket.write(answer(200, '{"slow":1}'));
    });
    const sent = sockets.length + 1;
    const slow = post(c);
    while (sockets.length < sent) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.ok((await rejection(post(c))) instanceof QueueTimeoutError);
    const leaving = new AbortController();
    const queued = post(c, leaving.signal);
    leaving.abort(new Error('left the line'));
    assert.equal((await rejection(queued)).message, 'left the line');
    assert.equal(sockets.length, sent, 'neither was sent');
    release();
    assert.equal((await slow).text, '{"slow":1}', 'the request holding the connection is unharmed');
    await servesNext(c);
    await c.close();
  },
);
