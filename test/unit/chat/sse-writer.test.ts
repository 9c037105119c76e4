// SseWriter's waits (gateway/chat/sse.ts): a client that reads slower than the gateway writes
// makes event() wait for `drain` (memory stays bounded) and every event still arrives, once,
// in order; once a client has gone no write waits. Real HTTP on loopback: a client that does
// not read until told to.
import assert from 'node:assert/strict';
import { createServer, request, type ServerResponse } from 'node:http';
import { test } from 'node:test';
import { SseWriter } from '../../../gateway/chat/sse.js';

async function serving(handler: (res: ServerResponse) => Promise<void>) {
  const server = createServer((_req, res) => {
    handler(res).catch((error: unknown) => res.destroy(error as Error));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return { server, port: address.port };
}

test(
  'a client that reads slowly: the writer waits for drain, and every event arrives once, in order',
  { timeout: 60_000 },
  async () => {
    const EVENTS = 400;
    const big = 'x'.repeat(64 * 1024); // 26 MB in all: far more than the sockets hold
    let finished = false;
    let finished_before_reading: boolean | null = null;
    const { server, port } = await serving(async (res) => {
      const sse = new SseWriter(res);
      sse.open(200);
      // one at a time, as the relay writes chunks
      for (let i = 0; i < EVENTS; i++) await sse.event({ i, big });
      await sse.done();
      sse.end();
      finished = true;
    });
    try {
      const body = await new Promise<string>((resolve, reject) => {
        const req = request({ port, path: '/', method: 'GET' }, (res) => {
          res.pause(); // the client reads nothing at first
          const parts: Buffer[] = [];
          setTimeout(() => {
            finished_before_reading = finished;
            res.on('data', (part: Buffer) => parts.push(part));
            res.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
            res.resume();
          }, 200);
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(finished_before_reading, false, 'the writer waited for the client');
      const indexes = [...body.matchAll(/"i":(\d+)/g)].map((m) => Number(m[1]));
      assert.deepEqual(
        indexes,
        Array.from({ length: EVENTS }, (_, i) => i),
      );
      assert.ok(body.endsWith('data: [DONE]\n\n'));
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  },
);

test('once the client is gone no write waits', { timeout: 60_000 }, async () => {
  let gone_writes: Array<Promise<void>> = [];
  let closed!: () => void;
  const after_close = new Promise<void>((resolve) => (closed = resolve));
  const { server, port } = await serving(async (res) => {
    const sse = new SseWriter(res);
    sse.open(200);
    void sse.event({ small: 1 });
    res.once('close', () => {
      gone_writes = [sse.event({ late: 1 }), sse.event({ late: 2 }, 'named'), sse.done()];
      closed();
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const req = request({ port, path: '/', method: 'GET' }, (res) => {
        res.once('data', () => {
          req.destroy(); // the client leaves
          resolve();
        });
      });
      req.on('error', () => {});
      req.once('error', reject);
      req.end();
    });
    await after_close;
    assert.equal(gone_writes.length, 3);
    await Promise.all(gone_writes); // (a hang here fails the test at its timeout)
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
