// The gateway's route table, read from the gateway itself: the /v1 routes the lean lane
// serves (as the OpenAPI document lists them) and every route Express has registered for
// /api, /admin, the admin console and the dashboard, with its mount path. Built in-process
// from a gateway on a temp data dir, so that a test can walk every route a real gateway
// process serves, and a route added later is walked without editing the test.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { removeTempDir, tempDir } from './temp.ts';
import { createGateway } from '../../gateway/app.ts';
import { createAccounts } from '../../gateway/accounts/index.ts';
import { compileTrustProxy } from '../../gateway/accounts/ip-whitelist.ts';
import { chatRouteDocs } from '../../gateway/chat/openapi.ts';
import { createChat } from '../../gateway/chat/index.ts';
import { loadConfig } from '../../gateway/config.ts';
import { Metrics } from '../../gateway/http/metrics.ts';
import { createLogger } from '../../gateway/log.ts';
import { createPayments } from '../../gateway/payments/index.ts';
import { createTopups } from '../../gateway/topups/index.ts';
import { FileStore } from '../../gateway/store/store.ts';
import type { Store } from '../../gateway/store/types.ts';
import type { Clock } from '../../gateway/kernel/clock.ts';
import { Sealer, newKey } from '../../gateway/util/sealed.ts';
import { createDashboard } from '../../gateway/web/router.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Express-style: `/api/transactions/:txn_id`. */
  path: string;
}

interface Layer {
  rawPath?: unknown;
  route?: { path: unknown; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

function join_paths(prefix: string, path: string): string {
  const joined = `${prefix}${path === '/' ? '' : path}`;
  return joined === '' ? '/' : joined;
}

function walk(stack: Layer[], prefix: string, out: Route[]): void {
  for (const layer of stack) {
    if (layer.route) {
      const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
      for (const path of paths) {
        if (typeof path !== 'string') continue;
        for (const [method, on] of Object.entries(layer.route.methods)) {
          if (on && method !== '_all')
            out.push({
              method: method.toUpperCase() as Route['method'],
              path: join_paths(prefix, path),
            });
        }
      }
    } else if (layer.handle?.stack) {
      const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      walk(layer.handle.stack, `${prefix}${mount}`, out);
    }
  }
}

/** A gateway built in-process as main.ts builds it, on an open store (its routes, its handler). */
export function inProcessGateway(
  store: Store,
  data_dir: string,
  admin_token_hash = '0'.repeat(64),
  options: {
    clock?: Clock;
    config_file?: string;
    /** What the payments room is built with besides the top-ups' routes (a test's extra service). */
    payments?: Parameters<typeof createPayments>[1];
  } = {},
): {
  gateway: ReturnType<typeof createGateway>;
  payments: ReturnType<typeof createPayments>;
  close: () => Promise<void>;
} {
  const config = loadConfig({
    env: {},
    flags: { data_dir, ...(options.config_file ? { config: options.config_file } : {}) },
  });
  const logger = createLogger('silent');
  const clock = options.clock ?? { now: () => new Date() };
  const metrics = new Metrics();
  const deps = {
    config,
    store,
    logger,
    clock,
    metrics,
    admin_token_hash,
    sealer: new Sealer([newKey()]),
    public_url: () => 'http://127.0.0.1',
  };
  // The rooms as main.ts builds them, mounted by the same createGateway.
  const topups = createTopups(deps, {});
  const payments = createPayments(deps, {
    ...options.payments,
    api: [topups.api],
    prune: topups.prune,
  });
  const chat = createChat(deps);
  const rooms = {
    accounts: createAccounts(deps, {
      payment_services: payments.services.map((service) => service.code),
    }),
    chat,
    dashboard: createDashboard({ ...deps, payments, topups }),
    payments,
    topups,
  };
  const gateway = createGateway(
    { ...deps, trust_proxy: compileTrustProxy(config.trust_proxy) },
    rooms,
  );
  return { gateway, payments, close: () => chat.close() };
}

export async function routeTable(): Promise<Route[]> {
  const data_dir = tempDir('aihub-routes-');
  const store = await FileStore.open(data_dir, { history_tags: PAYMENT_HISTORY_TAGS });
  try {
    const { gateway, close } = inProcessGateway(store, data_dir);
    const routes: Route[] = chatRouteDocs.map((doc) => ({
      method: doc.method.toUpperCase() as Route['method'],
      path: doc.path,
    }));
    walk((gateway.app as unknown as { router: { stack: Layer[] } }).router.stack, '', routes);
    await close();
    const seen = new Set<string>();
    return routes.filter((route) => {
      const key = `${route.method} ${route.path}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  } finally {
    await store.close();
    removeTempDir(data_dir);
  }
}

/**
 * The gateway as main.ts builds it, on a JSON-file store in `data_dir`, on a clock of the
 * test's and a config file, listening on a loopback port with its payments' background work
 * started: for tests that move time (a month of business). `stop` closes all of it.
 */
export async function serveInProcess(
  data_dir: string,
  admin_token: string,
  options: { clock: Clock; config_file: string },
): Promise<{ url: string; store: Store; stop: () => Promise<void> }> {
  const store = await FileStore.open(data_dir, {
    now: () => options.clock.now(),
    history_tags: PAYMENT_HISTORY_TAGS,
  });
  const token_hash = createHash('sha256').update(admin_token).digest('hex');
  const built = inProcessGateway(store, data_dir, token_hash, options);
  const server = createServer(built.gateway.handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  built.payments.start();
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    store,
    stop: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await built.payments.stop();
      await built.close();
      await store.close();
    },
  };
}
