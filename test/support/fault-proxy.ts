// A TCP proxy between a gateway and PostgreSQL that a test tells when to fail (issue #36):
// `cutAfter(needles)` cuts the next connection whose client bytes hold every needle: it
// forwards the chunk that completes the message (ends with a Sync), waits for the server's
// answer to it and cuts the gateway's side instead of passing the answer on: the statement
// reaches the server whole, the server runs and commits it, and the gateway never hears.
// Deterministic, unlike killing the server at a random moment: the gateway learns of the cut
// only once the commit is done, so its lookup of the commit id cannot run first (cutting at
// once let the lookup's fence win the race on a busy machine, and the commit proved not
// applied: a right answer, but not the case the test meant). `refuse_ms` also cuts every other connection and refuses new ones for that
// long, so that the gateway cannot look the commit up; `forward: false` drops the chunk
// instead (the statement never reaches the server).
import { connect, createServer, type Server, type Socket } from 'node:net';

/** PostgreSQL's Sync message: 'S' and a length of 4. The extended protocol commits at it. */
const SYNC = Buffer.from([0x53, 0, 0, 0, 4]);
const TAIL_BYTES = 1 << 16;

export interface FaultProxy {
  port: number;
  /** `database_url` with its host and port replaced by the proxy's. */
  url(database_url: string): string;
  /** Arms a cut; resolves once it happened. */
  cutAfter(needles: string[], options?: { refuse_ms?: number; forward?: boolean }): Promise<void>;
  /** Connections cut so far. */
  readonly cuts: number;
  /** New connections refused so far. */
  readonly refused: number;
  close(): Promise<void>;
}

export async function startFaultProxy(
  target_port: number,
  target_host = '127.0.0.1',
): Promise<FaultProxy> {
  const live = new Set<{ client: Socket; server: Socket }>();
  let armed: { needles: Buffer[]; refuse_ms: number; forward: boolean; done: () => void } | null =
    null;
  let refuse_until = 0;
  let cuts = 0;
  let refused = 0;
  const proxy: Server = createServer((client) => {
    if (Date.now() < refuse_until) {
      refused++;
      client.destroy();
      return;
    }
    const server = connect(target_port, target_host);
    const pair = { client, server };
    live.add(pair);
    let tail = Buffer.alloc(0);
    let cut = false;
    const drop = () => {
      live.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      if (!armed) {
        server.write(chunk);
        return;
      }
      tail = Buffer.concat([tail, chunk]);
      if (tail.length > TAIL_BYTES) tail = tail.subarray(tail.length - TAIL_BYTES);
      const ends_with_sync =
        chunk.length >= SYNC.length && chunk.subarray(-SYNC.length).equals(SYNC);
      if (!ends_with_sync || !armed.needles.every((needle) => tail.includes(needle))) {
        server.write(chunk);
        return;
      }
      const { refuse_ms, forward, done } = armed;
      armed = null;
      cut = true;
      cuts++;
      live.delete(pair);
      const cutNow = () => {
        client.destroy(); // the gateway loses the connection
        if (refuse_ms > 0) {
          refuse_until = Date.now() + refuse_ms;
          for (const other of [...live]) {
            live.delete(other);
            other.client.destroy();
            other.server.destroy();
          }
        }
        done();
      };
      if (!forward) {
        server.destroy(); // the statement never reaches the server
        cutNow();
        return;
      }
      server.write(chunk);
      // The server's answer means it ran the statement: then the gateway's side goes, and the
      // server's once it has answered (or after 5 s, if it never does).
      const timer = setTimeout(() => {
        server.destroy();
        cutNow();
      }, 5_000);
      server.once('data', () => {
        clearTimeout(timer);
        server.end();
        cutNow();
      });
    });
    server.on('data', (chunk: Buffer) => {
      if (!cut) client.write(chunk);
    });
    client.on('error', () => {});
    server.on('error', () => {});
    client.on('close', () => {
      if (!cut) drop();
    });
    server.on('close', () => {
      if (!cut) drop();
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    url(database_url) {
      const url = new URL(database_url);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      return url.toString();
    },
    cutAfter(needles, options = {}) {
      return new Promise((resolve) => {
        armed = {
          needles: needles.map((needle) => Buffer.from(needle)),
          refuse_ms: options.refuse_ms ?? 0,
          forward: options.forward ?? true,
          done: resolve,
        };
      });
    },
    get cuts() {
      return cuts;
    },
    get refused() {
      return refused;
    },
    async close() {
      for (const pair of live) {
        pair.client.destroy();
        pair.server.destroy();
      }
      await new Promise((resolve) => proxy.close(resolve));
    },
  };
}
