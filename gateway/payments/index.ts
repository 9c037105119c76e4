// The payments room: `createPayments(deps)` builds the /api and /admin routers and the
// background work (status checks of pending transactions, webhook deliveries), which
// main.ts starts after listening and stops before the store closes.
import { Router, type RequestHandler } from 'express';
import type { AppDeps } from '../app.js';
import { buildProviders } from '../providers/index.js';
import type { PaymentProvider, PaymentService } from '../providers/types.js';
import { accountRouter } from './account-routes.js';
import { paymentsAdminRouter } from './admin-routes.js';
import type { PaymentsConfig } from './config.js';
import type { PaymentsContext } from './context.js';
import { PaymentEngine } from './engine.js';
import { apiLog, auditMiddleware } from './logs.js';
import { onboardingRouter } from './onboarding-routes.js';
import { rechargeRouter, renderRecharge } from './recharge-routes.js';
import { WebhookSender, enqueueWebhook } from './webhooks.js';
import './tables.js';

export interface Payments {
  /** Mounted at /api. */
  api: Router;
  /** Mounted at /admin after admin authentication and the JSON body parser. */
  admin: Router;
  /** Audits admin calls not audited by their own commit; mounted before every /admin router. */
  audit: RequestHandler;
  engine: PaymentEngine;
  start(): void;
  stop(): Promise<void>;
}

export function createPayments(
  deps: Omit<AppDeps, 'payments'>,
  options: { providers?: Partial<Record<PaymentService, PaymentProvider[]>> } = {},
): Payments {
  const { store, logger, clock, config } = deps;
  const payments = config.payments;
  const build = (list: PaymentsConfig['providers']['recharge']) =>
    buildProviders(list, { mode: config.mode, now: () => clock.now(), warn: (message) => logger.warn({ msg: message }) });
  const providers: Record<PaymentService, PaymentProvider[]> = {
    recharge: options.providers?.recharge ?? build(payments.providers.recharge),
    dmt: options.providers?.dmt ?? [],
    pan: options.providers?.pan ?? [],
    bills: options.providers?.bills ?? [],
  };
  const webhooks = new WebhookSender({ store, logger, clock, config: payments, mode: config.mode });
  const engine = new PaymentEngine({
    store,
    logger,
    clock,
    config: payments,
    providers,
    renderers: { recharge: renderRecharge },
    hooks: {
      onFinal: (tx, txn) => {
        const delivery = enqueueWebhook(tx, txn);
        if (delivery) webhooks.notify(delivery.id);
      },
    },
  });
  const ctx: PaymentsContext = { ...deps, settings: payments, engine, webhooks };

  const api = Router();
  api.use(apiLog(store, logger));
  api.use(onboardingRouter(ctx));
  api.use(rechargeRouter(ctx));
  api.use(accountRouter(ctx));

  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    try {
      engine.reconcileDue();
      webhooks.deliverDue();
    } catch (error) {
      logger.error({ msg: 'payments background tick failed', err: error });
    }
  };

  return {
    api,
    admin: paymentsAdminRouter(ctx),
    audit: auditMiddleware(store, logger),
    engine,
    start() {
      if (timer || stopped) return;
      timer = setInterval(tick, payments.tick_ms);
      timer.unref();
      tick();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = null;
      await Promise.all([engine.stop(), webhooks.stop()]);
    },
  };
}
