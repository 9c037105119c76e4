// ClientGone, the chat pipeline's abort signal (a plain object in place of an AbortSignal, issue
// #40): it behaves as an AbortSignal where the calls use one, and undici's pool takes it.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { ClientGone } from '../../../gateway/llm/call-signal.js';
import { UpstreamClient } from '../../../gateway/llm/transport.js';

test('abort() runs every listener once, in order, with the signal already aborted; later aborts do nothing', () => {
  const gone = new ClientGone();
  const seen: string[] = [];
  const removed = () => seen.push('removed');
  gone.addEventListener('abort', () => seen.push(`first ${gone.aborted}`));
  gone.addEventListener('abort', removed);
  gone.addEventListener('abort', () => seen.push('second'), { once: true });
  gone.removeEventListener('abort', removed);
  gone.removeEventListener('abort', () => {}); // one never added: nothing
  assert.equal(gone.aborted, false);
  assert.equal(gone.reason, undefined);
  gone.abort();
  assert.deepEqual(seen, ['first true', 'second']);
  assert.ok((gone.reason as unknown as object) instanceof DOMException);
  assert.equal((gone.reason as unknown as DOMException).name, 'AbortError');
  gone.abort(new Error('again'));
  assert.deepEqual(seen, ['first true', 'second'], 'listeners run once');
  assert.equal(
    (gone.reason as unknown as DOMException).name,
    'AbortError',
    'the first reason stays',
  );
  gone.addEventListener('abort', () => seen.push('late'));
  assert.deepEqual(seen, ['first true', 'second'], 'an event already raised is not replayed');
});

test('a listener that throws does not keep the others from running; its error is not swallowed', async () => {
  const gone = new ClientGone();
  let ran = false;
  gone.addEventListener('abort', () => {
    throw new Error('listener broke');
  });
  gone.addEventListener('abort', () => {
    ran = true;
  });
  // The error is thrown again from a microtask, as an EventTarget reports a listener's error.
  const original = globalThis.queueMicrotask;
  const rethrown: unknown[] = [];
  globalThis.queueMicrotask = (fn) => {
    try {
      fn();
    } catch (error) {
      rethrown.push(error);
    }
  };
  try {
    gone.abort(new Error('why'));
  } finally {
    globalThis.queueMicrotask = original;
  }
  assert.equal(ran, true);
  assert.equal((rethrown[0] as Error).message, 'listener broke');
  assert.equal((gone.reason as Error).message, 'why');
});

test("undici's pool takes it: a streamed answer and a whole one are cut when it is raised", async () => {
  let closed = 0;
  let received = 0;
  const server = createServer((req, res) => {
    received++;
    req.resume();
    res.on('close', () => closed++);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"n":1}\n\n'); // and never ends
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  const client = new UpstreamClient(`http://127.0.0.1:${address.port}`, {
    connections: 2,
    timeout_ms: 10_000,
  });
  try {
    const streamed = new ClientGone();
    const response = await client.request({
      path: '/s',
      method: 'POST',
      headers: {},
      body: '{}',
      signal: streamed,
    });
    const ended = new Promise<unknown>((resolve) => response.body.once('error', resolve));
    response.body.resume();
    streamed.abort(new Error('client left the stream'));
    assert.equal(((await ended) as Error).message, 'client left the stream');

    const whole = new ClientGone();
    const pending = client.requestText(
      { path: '/j', method: 'POST', headers: {}, body: '{}', signal: whole },
      { ok: 1_000, error: 100 },
    );
    // raised once the upstream has the request (while it waits for an answer that never ends)
    while (received < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    whole.abort(new Error('client left the answer'));
    await assert.rejects(pending, /client left the answer/);
    while (closed < 2) await new Promise((resolve) => setTimeout(resolve, 10));
  } finally {
    await client.close().catch(() => {});
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
