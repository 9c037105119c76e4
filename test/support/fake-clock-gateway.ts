// A payments gateway built in-process as main.ts builds it, on a fake clock a test moves, over
// real HTTP on loopback: on the JSON-file store, or on PostgreSQL when a database URL is given
// (several such gateways on one database are several gateways of one deployment).
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { openPgStore } from '../../gateway/store/pg/store.ts';
import { FileStore } from '../../gateway/store/store.ts';
import type { Store } from '../../gateway/store/types.ts';
import type { PruneCounts } from '../../gateway/payments/engine/prune.ts';
import { admin, request, type Reply } from '../gateway/helpers.ts';
import { inProcessGateway } from './route-table.ts';
import { tempDir } from './temp.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const ADMIN_TOKEN = 'fake-clock-admin-token-0123456789abcdef';

export interface FakeClockGateway {
  url: string;
  data_dir: string;
  store: Store;
  api: ReturnType<typeof admin>;
  call: (
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ) => Promise<Reply<any>>;
  /** One pruning pass of the payments room now. */
  prune: () => Promise<PruneCounts>;
  stop: () => Promise<void>;
}

/** The clock every gateway of a test shares: `set` moves it. */
export function fakeClock(start: string) {
  let now_ms = Date.parse(start);
  return {
    now: () => new Date(now_ms),
    set: (at: string) => {
      now_ms = Date.parse(at);
    },
  };
}

export async function fakeClockGateway(
  config: Record<string, unknown>,
  clock: { now: () => Date },
  database_url?: string,
  payments?: NonNullable<Parameters<typeof inProcessGateway>[3]>['payments'],
): Promise<FakeClockGateway> {
  const data_dir = tempDir('aihub-fake-clock-');
  const config_file = join(tempDir('aihub-fake-clock-config-'), 'config.json');
  writeFileSync(config_file, JSON.stringify(config));
  const store: Store = database_url
    ? await openPgStore(database_url, {
        now: clock.now,
        poll_ms: 60_000,
        history_tags: PAYMENT_HISTORY_TAGS,
      })
    : await FileStore.open(data_dir, { now: clock.now, history_tags: PAYMENT_HISTORY_TAGS });
  const token_hash = createHash('sha256').update(ADMIN_TOKEN).digest('hex');
  const built = inProcessGateway(store, data_dir, token_hash, {
    clock,
    config_file,
    ...(payments ? { payments } : {}),
  });
  const server = createServer(built.gateway.handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  built.payments.start();
  let stopped = false;
  return {
    url,
    data_dir,
    store,
    api: admin({ url, admin_token: ADMIN_TOKEN }),
    prune: () => built.payments.prune(),
    call: (method, path, headers, body) =>
      request<any>(`${url}${path}`, { method, headers, ...(body ? { body } : {}) }),
    async stop() {
      if (stopped) return;
      stopped = true;
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await built.payments.stop();
      await built.close();
      await store.close();
    },
  };
}
