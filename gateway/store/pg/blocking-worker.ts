// The worker thread behind BlockingQueries (blocking.ts): one PostgreSQL connection that answers
// the main thread's queries while the main thread waits on a shared flag. The gateway bundle
// runs itself as this worker (main.ts checks IS_BLOCKING_WORKER before its CLI); under tsx the
// worker runs this file.
import { isMainThread, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';

export interface BlockingWorkerData {
  aihub: 'pg-blocking';
  database_url: string;
  statement_timeout_ms: number;
  flag: SharedArrayBuffer;
  port: MessagePort;
}

export interface BlockingRequest {
  id: number;
  text: string;
  params: unknown[];
}

export type BlockingReply =
  { id: number; rows: Array<Record<string, unknown>> } | { id: number; error: string };

export const IS_BLOCKING_WORKER =
  !isMainThread && (workerData as Partial<BlockingWorkerData> | null)?.aihub === 'pg-blocking';

function runBlockingWorker(data: BlockingWorkerData): void {
  const flag = new Int32Array(data.flag);
  let client: pg.Client | null = null;
  const connect = async (): Promise<pg.Client> => {
    if (client) return client;
    const fresh = new pg.Client({
      connectionString: data.database_url,
      connectionTimeoutMillis: 2_000,
      statement_timeout: data.statement_timeout_ms,
      application_name: 'aihub-gateway-blocking',
    });
    fresh.on('error', () => {
      if (client === fresh) client = null;
      fresh.end().catch(() => {});
    });
    await fresh.connect();
    client = fresh;
    return fresh;
  };
  data.port.on('message', (request: BlockingRequest) => {
    void (async () => {
      let reply: BlockingReply;
      try {
        const result = await (await connect()).query(request.text, request.params);
        reply = { id: request.id, rows: result.rows as Array<Record<string, unknown>> };
      } catch (error) {
        const lost = client;
        client = null;
        await lost?.end().catch(() => {});
        reply = { id: request.id, error: (error as Error).message };
      }
      data.port.postMessage(reply);
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    })();
  });
}

if (IS_BLOCKING_WORKER) runBlockingWorker(workerData as BlockingWorkerData);
