// Issue #13, finding 1: every connection is served by Node's http.Server (llhttp); the /v1
// handlers authenticate from the request head before they read a body. These assertions
// were the hand-made socket parser's (test/unit/front.test.ts, deleted with it) where they
// still say something about the gateway, plus the attack run's findings.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { createFundedAccount, startGateway, type Gateway } from './helpers.js';

let gateway: Gateway;
let key: string;

before(async () => {
  gateway = await startGateway();
  ({ key } = await createFundedAccount(gateway, 100));
});

after(async () => {
  assert.equal(await gateway.stop(), 0);
});

/** Writes raw bytes on one connection and reads until the server closes it (or `until` matches). */
async function raw(bytes: Buffer | string, until?: (text: string) => boolean): Promise<string> {
  const socket = net.connect(gateway.port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(bytes);
  let text = '';
  socket.setEncoding('latin1');
  return new Promise((resolve, reject) => {
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (until?.(text)) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

/**
 * Starts a chat upload that announces `declared_bytes`, writes only `first` of it, and returns
 * the answer that arrives meanwhile, with how many bytes this client had written by then.
 */
async function partialUpload(
  declared_bytes: number,
  first: Buffer | string,
  authorization: string,
  path = '/v1/chat/completions',
) {
  const req = http.request({
    host: '127.0.0.1',
    port: gateway.port,
    method: 'POST',
    path,
    agent: false,
    headers: {
      'content-type': 'application/json',
      'content-length': declared_bytes,
      authorization,
    },
  });
  req.on('error', () => undefined); // destroyed below, mid-body
  req.write(first);
  const [res] = (await once(req, 'response')) as [http.IncomingMessage];
  let text = '';
  for await (const chunk of res) text += chunk;
  const written = req.socket?.bytesWritten ?? 0;
  req.destroy();
  return { status: res.statusCode, body: JSON.parse(text), written };
}

const chatBody = JSON.stringify({
  model: 'service-ai-free',
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 5,
});

// Bounded: a server that waits for the whole body never answers, and the test must fail, not hang.
test(
  'an unauthenticated 4 MiB chat body is refused with 401 after the head, while the client is still sending',
  { timeout: 60_000 },
  async () => {
    const total = 4 * 1024 * 1024;
    const sent = 64 * 1024;
    // 32 connections at once, each sending a sixty-fourth of its declared body and then waiting:
    // the socket parser read whole bodies before the handler saw the key (and kept them up to 300 s).
    const answers = await Promise.all(
      Array.from({ length: 32 }, () =>
        partialUpload(total, Buffer.alloc(sent, 0x20), 'Bearer sk-aihub-not-a-key'),
      ),
    );
    for (const answer of answers) {
      assert.equal(answer.status, 401);
      assert.equal(answer.body.error.code, 'invalid_api_key');
      assert.ok(answer.written < total / 4, `the client had written ${answer.written} bytes`);
    }
    // The gateway goes on serving.
    const models = await fetch(`${gateway.url}/v1/models`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(models.status, 200);
  },
);

test(
  'on /api too, a refused key is a 401 after the head, before the JSON body is read',
  { timeout: 60_000 },
  async () => {
    const declared = 1024 * 1024 - 1; // within limits.body_bytes: the body parser would wait for all of it
    for (const path of ['/api/recharge', '/api/kyc', '/api/dmt/transact']) {
      const answer = await partialUpload(
        declared,
        Buffer.alloc(16 * 1024, 0x20),
        'Bearer sk-aihub-not-a-key',
        path,
      );
      assert.equal(answer.status, 401, path);
      assert.equal(answer.body.status, false);
      assert.ok(
        answer.written < declared / 4,
        `${path}: the client had written ${answer.written} bytes`,
      );
    }
  },
);

test('a declared body over the chat limit is refused with 413 before it is read, with a valid key', async () => {
  const answer = await partialUpload(64 * 1024 * 1024, '{', `Bearer ${key}`);
  assert.equal(answer.status, 413);
  assert.equal(answer.body.error.code, 'request_too_large');
});

test('request-target bytes 0x80-0xFF are a 400 from Node, on /v1 as on every other path', async () => {
  for (const path of ['/v1/models/\xe9', '/api/transactions/\xff', '/healthz\x80']) {
    const answer = await raw(
      Buffer.from(
        `GET ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\n\r\n`,
        'latin1',
      ),
    );
    assert.match(answer, /^HTTP\/1\.1 400 /, `${JSON.stringify(path)}: ${answer.slice(0, 80)}`);
  }
});

test('an Authorization header after 2,100 others is dropped, as Node drops every header past 2,000', async () => {
  const filler = 'x:1\r\n'.repeat(2_100);
  assert.ok(filler.length < 16 * 1024 - 200);
  const answer = await raw(
    `GET /v1/balance HTTP/1.1\r\nhost: x\r\n${filler}authorization: Bearer ${key}\r\nconnection: close\r\n\r\n`,
  );
  assert.match(answer, /^HTTP\/1\.1 401 /);
  assert.match(answer, /no API key/);
});

test('a request head over 16 KiB is refused with 431, whether it arrives whole or in parts', async () => {
  const head = `GET /v1/models HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(17 * 1024)}\r\n\r\n`;
  assert.match(await raw(head), /^HTTP\/1\.1 431 /);
  const socket = net.connect(gateway.port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (text += chunk));
  const ended = once(socket, 'close');
  for (let i = 0; i < head.length && !socket.destroyed; i += 1024)
    socket.write(head.slice(i, i + 1024));
  await ended;
  assert.match(text, /^HTTP\/1\.1 431 /);
});

test('pipelined requests sent in one write are answered in order on one connection', async () => {
  const auth = `authorization: Bearer ${key}\r\n`;
  const requests =
    `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n${auth}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(chatBody)}\r\n\r\n${chatBody}` +
    `GET /v1/models/service-ai-lite HTTP/1.1\r\nhost: x\r\n${auth}\r\n` +
    `GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`;
  const answer = await raw(requests);
  const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
  assert.deepEqual(statuses, ['200', '200', '200']);
  const chat = answer.indexOf('"chat.completion"');
  const model = answer.indexOf('"id":"service-ai-lite"');
  const health = answer.indexOf('"status":"ok"');
  assert.ok(chat > 0 && chat < model && model < health, 'in request order');
});

test('a chunked chat upload and an Expect: 100-continue upload are served', async () => {
  const chunked = await raw(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n` +
      `${(10).toString(16)}\r\n${chatBody.slice(0, 10)}\r\n${(chatBody.length - 10).toString(16)}\r\n${chatBody.slice(10)}\r\n0\r\n\r\n`,
  );
  assert.match(chunked, /^HTTP\/1\.1 200 /);
  assert.match(chunked, /"x_aihub"/);

  const req = http.request({
    host: '127.0.0.1',
    port: gateway.port,
    method: 'POST',
    path: '/v1/chat/completions',
    agent: false,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(chatBody),
      authorization: `Bearer ${key}`,
      expect: '100-continue',
    },
  });
  req.on('continue', () => req.end(chatBody));
  const [res] = (await once(req, 'response')) as [http.IncomingMessage];
  let text = '';
  for await (const chunk of res) text += chunk;
  assert.equal(res.statusCode, 200);
  assert.equal(JSON.parse(text).object, 'chat.completion');
});

test('HEAD /v1/models sends the headers without a body and the connection stays usable', async () => {
  const answer = await raw(
    `HEAD /v1/models HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${key}\r\n\r\nGET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`,
  );
  const [head_answer, rest] = answer.split('\r\n\r\n', 2) as [string, string];
  assert.match(head_answer, /^HTTP\/1\.1 200 /);
  assert.match(head_answer, /content-length: \d+/i);
  assert.match(
    rest,
    /^HTTP\/1\.1 200 /,
    'the next response follows the head at once: no body was sent',
  );
});
