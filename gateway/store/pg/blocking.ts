// Synchronous queries for the one case that needs them: a read outside any run (`store.get`,
// `store.state` after a route's `readDurable`) of a row the cache lacks. The main thread posts
// the query to a worker thread holding its own connection and waits on a shared flag
// (Atomics.wait) until the answer is there: the event loop stops for one round trip. The
// request paths the gateway serves at volume load their rows at their door instead (no wait);
// the store counts these loads (`blocking_loads`) so that tests and the bench can see which
// paths still use them.
import {
  MessageChannel,
  receiveMessageOnPort,
  Worker,
  type MessagePort,
} from 'node:worker_threads';
import { StoreUnavailableError } from '../../kernel/errors.js';
import type { BlockingReply, BlockingWorkerData } from './blocking-worker.js';

/** After a failure, blocking queries fail at once for this long (PostgreSQL is down: do not stall the loop). */
const FAIL_FAST_MS = 2_000;

export class BlockingQueries {
  private worker: Worker | null = null;
  private port: MessagePort | null = null;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private next_id = 1;
  private failed_at = 0;
  count = 0;

  constructor(
    private readonly database_url: string,
    private readonly timeout_ms: number,
  ) {}

  private start(): MessagePort {
    if (this.port) return this.port;
    const { port1, port2 } = new MessageChannel();
    const data: BlockingWorkerData = {
      aihub: 'pg-blocking',
      database_url: this.database_url,
      statement_timeout_ms: this.timeout_ms,
      flag: this.flag.buffer as SharedArrayBuffer,
      port: port2,
    };
    // In the bundle the worker runs the bundle itself; under tsx (tests, scripts) it runs its
    // own module, through tsx registered in the worker (a worker thread does not inherit the
    // parent's `--import tsx` loader hooks on Node 20).
    const dev = import.meta.url.endsWith('.ts');
    const options = { workerData: data, transferList: [port2] };
    this.worker = dev
      ? new Worker(
          `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(
            new URL('./blocking-worker.ts', import.meta.url).href,
          )}); });`,
          { ...options, eval: true },
        )
      : new Worker(new URL(import.meta.url), options);
    this.worker.unref();
    port1.unref();
    this.port = port1;
    return port1;
  }

  /** Runs `text` and waits for its rows, the event loop stopped meanwhile. */
  query<R>(text: string, params: unknown[]): R[] {
    if (Date.now() - this.failed_at < FAIL_FAST_MS)
      throw new StoreUnavailableError('the database is unavailable (a recent query failed)');
    const port = this.start();
    while (receiveMessageOnPort(port)) {
      // an answer to a query that timed out earlier
    }
    const id = this.next_id++;
    this.count++;
    Atomics.store(this.flag, 0, 0);
    port.postMessage({ id, text, params });
    const deadline = Date.now() + this.timeout_ms + 2_000;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) {
        this.failed_at = Date.now();
        throw new StoreUnavailableError('the database did not answer in time');
      }
      Atomics.wait(this.flag, 0, 0, left);
      Atomics.store(this.flag, 0, 0);
      for (;;) {
        const received = receiveMessageOnPort(port);
        if (!received) break;
        const reply = received.message as BlockingReply;
        if (reply.id !== id) continue;
        if ('error' in reply) {
          this.failed_at = Date.now();
          throw new StoreUnavailableError(`the database is unavailable (${reply.error})`);
        }
        return reply.rows as R[];
      }
    }
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.port?.close();
    this.port = null;
    await worker?.terminate();
  }
}
