// A collector's stand-in for the bench (BENCH_TRACING=1): accepts OTLP/HTTP exports (any
// path), reads and drops them, answers 200. Its own process, so that the gateway's export
// work is measured and the sink's is not. Prints {"port": N} when listening.
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
process.on('SIGTERM', () => process.exit(0));
