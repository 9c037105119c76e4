// The floor of the bench: the least a Node process in the gateway's place can do — read a
// request, forward its body to the upstream over a kept-alive connection, send the answer
// back — with no auth, validation, billing, journal or logs. Raw HTTP/1.1 on net sockets
// (content-length bodies only, which is what the bench sends and the upstream answers).
// The bench runs it beside the gateway so that "added latency" has a reference measured on
// the same machine in the same run. Prints {"port": N} when listening.
import net from 'node:net';

const upstream_port = Number(process.argv[2]);
const idle: Upstream[] = [];

interface Upstream {
  socket: net.Socket;
  buffer: Buffer | null;
  done: ((body: Buffer) => void) | null;
}

function connect(): Upstream {
  const socket = net.connect({ port: upstream_port, host: '127.0.0.1', noDelay: true });
  const up: Upstream = { socket, buffer: null, done: null };
  socket.on('error', () => undefined);
  socket.on('data', (data: Buffer) => {
    up.buffer = up.buffer ? Buffer.concat([up.buffer, data]) : data;
    const end = up.buffer.indexOf('\r\n\r\n');
    if (end === -1) return;
    const length = Number(
      /\r\ncontent-length:\s*(\d+)/i.exec(up.buffer.toString('latin1', 0, end))?.[1] ?? 0,
    );
    if (up.buffer.length < end + 4 + length) return;
    const body = up.buffer.subarray(end + 4, end + 4 + length);
    up.buffer = null;
    const done = up.done!;
    up.done = null;
    idle.push(up);
    done(body);
  });
  return up;
}

const server = net.createServer({ noDelay: true }, (client) => {
  let buffer: Buffer | null = null;
  client.on('error', () => undefined);
  client.on('data', (data: Buffer) => {
    buffer = buffer ? Buffer.concat([buffer, data]) : data;
    for (;;) {
      const end: number = buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length: number = Number(
        /\r\ncontent-length:\s*(\d+)/i.exec(buffer.toString('latin1', 0, end))?.[1] ?? 0,
      );
      if (buffer.length < end + 4 + length) return;
      const body = buffer.subarray(end + 4, end + 4 + length);
      buffer = buffer.length > end + 4 + length ? buffer.subarray(end + 4 + length) : null;
      const up = idle.pop() ?? connect();
      up.done = (answer) =>
        client.write(
          Buffer.concat([
            Buffer.from(
              `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${answer.length}\r\n\r\n`,
            ),
            answer,
          ]),
        );
      up.socket.write(
        Buffer.concat([
          Buffer.from(
            `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
          ),
          body,
        ]),
      );
      if (!buffer) return;
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as net.AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
