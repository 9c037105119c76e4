// A connection that closes after an answer given before the request's body was read
// (gateway/http/linger.ts). Without the linger the server closed its socket as soon as the
// answer was written, the rest of the body met a closed socket, and the reset that followed
// could destroy the answer in the client's buffer before the client read it: the eKYC test
// of an approved account lost its 409 about one run in eight. The test below makes the race
// certain instead of likely: the client sends more of the body only after the server's FIN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '../../../gateway/http/server.ts';

/** A server that refuses every request with a 409 from its head, never reading the body. */
async function refusingServer() {
  const server = createHttpServer((_req, res) => {
    res.writeHead(409, { 'content-type': 'application/json', connection: 'close' });
    res.end('{"error":{"code":"kyc_approved"}}');
  });
  /** What each connection's server side had read when it closed. */
  const reads: Array<Promise<number>> = [];
  server.on('connection', (socket: Socket) =>
    // (an 'error' is expected: the client ends inside the body it announced, a parse error)
    reads.push(new Promise((resolve) => socket.once('close', () => resolve(socket.bytesRead)))),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, reads, port: (server.address() as AddressInfo).port };
}

/** Sends a request head promising `length` bytes of body, and the first `first` of them. */
async function send(port: number, length: number, first: number) {
  const socket: Socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  await once(socket, 'connect');
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  const ended = once(socket, 'end');
  const closed = new Promise<Error | null>((resolve) => {
    socket.once('error', (error) => resolve(error));
    socket.once('close', () => resolve(null));
  });
  socket.write(
    `POST /api/kyc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/pdf\r\n` +
      `Content-Length: ${length}\r\n\r\n`,
  );
  socket.write(Buffer.alloc(first, 'a'));
  return { socket, received, ended, closed };
}

test('a connection closed under an unread body reads the rest of it: the client that sends more after the answer gets no reset', async () => {
  const { server, port, reads } = await refusingServer();
  try {
    const client = await send(port, 20 * 1024 * 1024, 64 * 1024);
    await client.ended; // the answer and the server's FIN
    assert.match(Buffer.concat(client.received).toString(), /^HTTP\/1\.1 409 [^]*kyc_approved/);
    // More of the body after the server ended its side: a server that has closed its socket
    // answers it with a reset; a lingering one reads it and closes when the client closes.
    client.socket.write(Buffer.alloc(256 * 1024, 'b'));
    await new Promise<void>((resolve) => client.socket.end(resolve));
    assert.equal(await client.closed, null, 'the client saw its connection close without an error');
    // The server read every byte the client sent, the 256 KiB after its FIN included.
    assert.equal(await reads[0], client.socket.bytesWritten);
  } finally {
    server.close();
  }
});

test('many refused uploads in a row: every client reads its 409, none a reset', async () => {
  const { server, port } = await refusingServer();
  try {
    for (let i = 0; i < 100; i++) {
      const client = await send(port, 20 * 1024 * 1024, 2_000);
      client.socket.write(Buffer.alloc(64 * 1024, 'b')); // more of the body, as the answer leaves
      await client.ended;
      assert.match(Buffer.concat(client.received).toString(), /^HTTP\/1\.1 409 /, `upload ${i}`);
      client.socket.end();
      assert.equal(await client.closed, null, `upload ${i} closed without an error`);
    }
  } finally {
    server.close();
  }
});

test('a connection whose request was read whole closes at once, as before (no linger)', async () => {
  const { server, port } = await refusingServer();
  try {
    const client = await send(port, 10, 10);
    await client.ended;
    assert.match(Buffer.concat(client.received).toString(), /^HTTP\/1\.1 409 /);
    // The server closed without waiting for the client: a write now meets a closed socket.
    client.socket.end();
    assert.equal(await client.closed, null);
  } finally {
    server.close();
  }
});
