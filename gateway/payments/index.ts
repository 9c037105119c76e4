// The payments room: `createPayments(deps)` builds the /api and /admin routers and the
// background work (status checks of pending transactions, webhook deliveries, the pruning
// pass), which main.ts starts after listening and stops before the store closes.
import { Router, type RequestHandler } from 'express';
import { publicUrl, type AppDeps } from '../app.js';
import { buildProviders } from '../providers/index.js';
import { buildSmsSender, type SmsSender } from '../providers/sms.js';
import type { PaymentProvider, PaymentService } from '../providers/types.js';
import type { RouteDoc } from '../http/openapi.js';
import type { Tx } from '../store/store.js';
import { accountRouter } from './account-routes.js';
import { billsOnFinal, billsRouter, renderBillFactory } from './bills-routes.js';
import { dmtOnFinal, dmtRouter, renderDmt } from './dmt-routes.js';
import { usageMonthOver } from './dmt.js';
import { paymentsRouteDocs } from './openapi.js';
import { panRouter, renderPan } from './pan-routes.js';
import { reportsRouter, runReport } from './reports-routes.js';
import type { ReportName, ReportResult, Scope } from './reports.js';
import { paymentsAdminRouter } from './admin-routes.js';
import type { PaymentsConfig } from './config.js';
import type { PaymentsContext } from './context.js';
import { PaymentEngine } from './engine.js';
import { apiLog, auditMiddleware } from './logs.js';
import { authorizeBeforeBody } from './auth.js';
import { onboardingRouter } from './onboarding-routes.js';
import { Pruner, pruneTarget, type PruneCounts } from './prune.js';
import { rechargeRouter, renderRecharge } from './recharge-routes.js';
import { WebhookSender, enqueueWebhook } from './webhooks.js';
import { RequestSigning } from './signing.js';
import { billFetchExpired } from './tables.js';

export interface Payments {
  /** Mounted at /api. */
  api: Router;
  /** Mounted at /admin after admin authentication and the JSON body parser. */
  admin: Router;
  /** Audits admin calls not audited by their own commit; mounted before every /admin router. */
  audit: RequestHandler;
  engine: PaymentEngine;
  /** The /api and payments /admin routes for GET /openapi.json. */
  route_docs: RouteDoc[];
  /** One report, exactly as GET /api/reports/:report computes it (the dashboard renders the same rows). */
  report(name: ReportName, query: Record<string, unknown>, scope: Scope): Promise<{ result: ReportResult; format: 'json' | 'csv' }>;
  /** One pruning pass now (start() also runs one every `payments.prune.interval_ms`). */
  prune(): Promise<PruneCounts>;
  start(): void;
  stop(): Promise<void>;
}

export function createPayments(
  deps: Omit<AppDeps, 'payments'>,
  options: { providers?: Partial<Record<PaymentService, PaymentProvider[]>>; sms?: SmsSender | null } = {},
): Payments {
  const { store, logger, clock, config } = deps;
  // Lists and reports of one account read its transactions through this index; built now, not by a request.
  store.indexBy('payment_txns', 'account_id');
  const payments = config.payments;
  const build = (list: PaymentsConfig['providers']['recharge']) =>
    buildProviders(list, { mode: config.mode, now: () => clock.now(), warn: (message) => logger.warn({ msg: message }) });
  const providers: Record<PaymentService, PaymentProvider[]> = {
    recharge: options.providers?.recharge ?? build(payments.providers.recharge),
    dmt: options.providers?.dmt ?? build(payments.providers.dmt),
    pan: options.providers?.pan ?? build(payments.providers.pan),
    bills: options.providers?.bills ?? build(payments.providers.bills),
  };
  const sms = options.sms !== undefined ? options.sms : buildSmsSender(payments.dmt.otp.sms);
  if (config.mode === 'live' && !sms) logger.warn({ msg: 'no SMS sender is configured (payments.dmt.otp.sms): remitters cannot be registered in live mode' });
  /** Each service's own bookkeeping in the commit that makes one of its transactions final. */
  const onFinal: Partial<Record<PaymentService, (tx: Tx, txn: import('./tables.js').PaymentTxn) => void>> = { dmt: dmtOnFinal, bills: billsOnFinal };
  const stopping: Array<() => void> = [];
  const webhooks = new WebhookSender({ store, logger, clock, config: payments, mode: config.mode, sealer: deps.sealer });
  const engine = new PaymentEngine({
    store,
    logger,
    clock,
    config: payments,
    providers,
    renderers: { recharge: renderRecharge, dmt: renderDmt, pan: renderPan, bills: renderBillFactory(() => publicUrl(config)) },
    hooks: {
      onFinal: (tx, txn) => {
        onFinal[txn.service]?.(tx, txn);
        const delivery = enqueueWebhook(tx, txn);
        if (delivery) webhooks.notify(delivery.id);
      },
    },
  });
  // Rows no reader will use again, judged by the readers' own rules: the engine's idempotency
  // lookup (store clock, as the records' created_at) and the DMT routes' month (room clock).
  // Without an idempotency window no record can expire, so that table is not even listed.
  const pruner = new Pruner({
    store,
    logger,
    batch_size: payments.prune.batch_size,
    targets: [
      ...(payments.idempotency_window_ms > 0
        ? [pruneTarget({ table: 'idempotency', expired: (id, record, tx) => engine.idempotencyExpired(id, record, tx.now.getTime()) })]
        : []),
      pruneTarget({ table: 'dmt_usage', expired: (id) => usageMonthOver(id, clock.now(), payments.dmt.utc_offset_minutes) }),
      pruneTarget({ table: 'bill_fetches', expired: (_id, bill, tx) => billFetchExpired(bill, tx.now.getTime()) }),
    ],
  });
  const ctx: PaymentsContext = { ...deps, settings: payments, engine, webhooks, providers, sms, onStop: (fn) => stopping.push(fn) };

  const signing = new RequestSigning({ now_ms: () => clock.now().getTime(), sealer: deps.sealer });
  const api = Router();
  api.use(signing.install); // authorize checks signed accounts' requests with it
  api.use(apiLog(store, logger));
  api.use(authorizeBeforeBody(() => store.state, logger));
  api.use(onboardingRouter(ctx));
  api.use(rechargeRouter(ctx));
  api.use(dmtRouter(ctx));
  api.use(panRouter(ctx));
  api.use(billsRouter(ctx));
  api.use(accountRouter(ctx));
  const reports = reportsRouter(ctx);
  api.use(reports.api);

  let timer: NodeJS.Timeout | null = null;
  let prune_timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const prune = () =>
    pruner.run().catch((error: unknown) => {
      logger.error({ msg: 'payments prune failed', err: error });
      return {};
    });
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
    admin: Router().use(paymentsAdminRouter(ctx), reports.admin),
    audit: auditMiddleware(store, logger),
    engine,
    route_docs: paymentsRouteDocs(payments),
    report: (name, query, scope) => runReport(ctx, name, query, scope),
    prune,
    start() {
      if (timer || stopped) return;
      timer = setInterval(tick, payments.tick_ms);
      timer.unref();
      prune_timer = setInterval(() => void prune(), payments.prune.interval_ms);
      prune_timer.unref();
      tick();
    },
    async stop() {
      stopped = true;
      for (const fn of stopping) fn();
      if (timer) clearInterval(timer);
      if (prune_timer) clearInterval(prune_timer);
      timer = null;
      prune_timer = null;
      await Promise.all([engine.stop(), webhooks.stop(), pruner.stop()]);
    },
  };
}
