// The top-ups room: createTopups(deps) builds the configured provider (topups.provider, its
// secrets from the environment), the service, the reconciliation pass and the routers that
// main.ts hands on (the /api routes to the payments room's /api, the webhooks and the admin
// lists to app.ts). README.md beside this file describes the room.
import type { RoomDeps } from '../deps.js';
import { createTopupProvider } from './providers/index.js';
import { Reconciler } from './reconcile.js';
import type { Topups } from './room.js';
import { RejectedWebhooks, adminRoutes, apiRoutes, webhookRoutes } from './routes.js';
import { TopupService, dailyRowOver, topupView } from './service.js';
import { pruneTarget } from '../payments/engine/prune.js';
import { priceTopup } from './fees.js';
import { topupRouteDocs } from './openapi.js';
import {
  loadDetailsView,
  virtualAccountAdmin,
  virtualAccountApi,
} from './virtual-accounts/routes.js';
import { VirtualAccounts } from './virtual-accounts/service.js';
import { virtualAccountRouteDocs } from './virtual-accounts/openapi.js';
import { Router } from 'express';

export type { Topups, TopupView } from './room.js';

export function createTopups(deps: RoomDeps, env: NodeJS.ProcessEnv = process.env): Topups {
  const { config, store, logger, clock } = deps;
  const provider = createTopupProvider({
    config: config.topups,
    env,
    logger,
    currency: config.currency,
  });
  // The reconciliation pass and the operator's list read the top-ups by status, and the pass
  // the failed ones still awaiting a check by `awaiting` (an account's own list is topup_recent).
  store.indexBy('topups', 'status');
  store.indexBy('topups', 'awaiting');
  const virtual_accounts = new VirtualAccounts({ config, store, logger, provider });
  const service_deps = {
    config,
    store,
    logger,
    clock,
    public_url: deps.public_url,
    provider,
    virtual_accounts,
  };
  const service = new TopupService(service_deps);
  const reconciler = new Reconciler(service_deps, service);
  const rejected = new RejectedWebhooks();
  const route_deps = { store, logger, config, service };
  if (provider) logger.info({ msg: 'top-ups through a payment gateway', provider: provider.name });
  return {
    provider: provider?.name ?? null,
    api: Router().use(
      apiRoutes(route_deps),
      virtualAccountApi({ ...route_deps, virtual_accounts }),
    ),
    webhooks: webhookRoutes({ ...route_deps, provider, rejected, now: () => clock.now() }),
    admin: Router().use(
      adminRoutes({ ...route_deps, rejected }),
      virtualAccountAdmin({ ...route_deps, virtual_accounts }),
    ),
    route_docs: [...topupRouteDocs, ...virtualAccountRouteDocs],
    prune: [
      pruneTarget({ table: 'topup_daily', expired: (id, _amount, tx) => dailyRowOver(id, tx.now) }),
    ],
    quote: (amount_micros, method) => priceTopup(config, amount_micros, method),
    create: async (account_id, input) => topupView(await service.create(account_id, input)),
    get: async (account_id, topup_id) => {
      const topup = await service.get(account_id, topup_id);
      return topup ? topupView(topup) : null;
    },
    recent: async (account_id, limit) => (await service.recent(account_id, limit)).map(topupView),
    apply: (event) => service.apply(event),
    alerts: (limit) => service.alerts(limit),
    loadDetails: async (account_id) =>
      loadDetailsView(await virtual_accounts.loadDetails(account_id)),
    virtual_accounts: Boolean(provider?.createVirtualAccount),
    storedLoadDetails: async (account_id) => {
      const stored = await store.fetch('topup_virtual_accounts', account_id);
      return stored && stored.provider === provider?.name ? loadDetailsView(stored) : null;
    },
    start: () => reconciler.start(),
    stop: () => reconciler.stop(),
  };
}
