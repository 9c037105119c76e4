// The floor of the stack the gateway stands on: Node's HTTP server reading a request, its body
// forwarded on an undici pool (the gateway's upstream transport, gateway/llm/transport.ts)
// with the answer read whole and sent back, nothing else: no auth, validation, billing,
// journal or logs. bench:chat measures its CPU per request beside the raw-socket floor
// (floor-proxy.ts) and the gateway, so that what Node's HTTP machinery costs on this machine
// is a measured row rather than an estimate. Prints {"port": N} when listening.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

const upstream_port = Number(process.argv[2]);
const pool = new Pool(`http://127.0.0.1:${upstream_port}`, { connections: 128, pipelining: 1 });

const server = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    pool
      .request({
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json' },
        body: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks),
      })
      .then(async (answer) => {
        const text = await answer.body.text();
        res.writeHead(answer.statusCode, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        });
        res.end(text);
      })
      .catch(() => {
        res.writeHead(502).end();
      });
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
