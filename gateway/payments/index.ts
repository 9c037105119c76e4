// The payments room: `createPayments(deps)` builds the /api and /admin routers and the
// background work (status checks of pending transactions, webhook deliveries, the pruning
// pass), which main.ts starts after listening and stops before the store closes.
import { StoreUnavailableError } from '../kernel/errors.js';
import { hasBody } from '../http/raw-body.js';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { RoomDeps } from '../deps.js';
import { createProviders } from '../providers/index.js';
import type { SmsSender } from '../providers/sms.js';
import type { PaymentProvider, PaymentService } from '../providers/types.js';
import type { RouteDoc } from '../http/openapi.js';
import { accountRouter } from './account/routes.js';
import { callbacksRouter } from './callbacks/routes.js';
import { paymentsRouteDocs } from './openapi.js';
import { reportsRouter, runReport, serveReport } from './reports/routes.js';
import { registerReportMetrics } from './shared/report-slots.js';
import type { ReportName, ReportResult, Scope } from './reports/reports.js';
import { paymentsAdminRouter } from './admin/routes.js';
import type { PaymentsContext, ServiceSummary } from './context.js';
import type { Registry } from 'prom-client';
import { scrapedGauge } from '../http/metrics.js';
import { PaymentEngine } from './engine/engine.js';
import { apiLog, auditMiddleware } from './logs.js';
import { authorizeBeforeBody } from './auth.js';
import { jsonBody } from '../http/body.js';
import { onboardingRouter } from './onboarding/routes.js';
import { Pruner, pruneTarget, type PruneCounts, type PruneTarget } from './engine/prune.js';
import { WebhookSender, enqueueWebhook } from './engine/webhooks.js';
import { RequestSigning } from './signing.js';
import { DEFAULT_TURN_BUDGET } from '../store/turns.js';
import { Pricing } from './network/pricing.js';
import type { CommissionScheme } from './network/schemes.js';
import { networkRouter } from './network/routes.js';
import { serveAccountStatement, statementsRouter } from './statements/routes.js';
import { invoicesRouter, issueClosedMonths } from './invoices/routes.js';
import type { ServiceModule } from './service.js';
import { PAYMENT_SERVICES } from './services.js';

export interface Payments {
  /** Mounted at /api. */
  api: Router;
  /** Mounted at /admin after admin authentication and the JSON body parser. */
  admin: Router;
  /** Audits admin calls not audited by their own commit; mounted before every /admin router. */
  audit: RequestHandler;
  engine: PaymentEngine;
  /** The payment services (services.ts), in their order: what other rooms may know of them. */
  services: readonly ServiceSummary[];
  /** The /api and payments /admin routes for GET /openapi.json. */
  route_docs: RouteDoc[];
  /**
   * One report, exactly as GET /api/reports/:report computes it (the dashboard renders the
   * same rows); with `signal`, stopped (rejecting with its reason) when it aborts.
   */
  report(
    name: ReportName,
    query: Record<string, unknown>,
    scope: Scope,
    signal?: AbortSignal,
  ): Promise<{ result: ReportResult; format: 'json' | 'csv' }>;
  /** One report as a CSV download, streamed to `res` as GET /api/reports/:report?format=csv sends it. */
  downloadCsv(
    name: ReportName,
    query: Record<string, unknown>,
    scope: Scope,
    req: Request,
    res: Response,
  ): Promise<void>;
  /** The scheme of accounts without one: the catalogue's rates. */
  default_scheme: CommissionScheme;
  /** One account's commission (monthly) or TDS (quarterly) statement, as JSON, CSV or PDF, sent to `res`. */
  statement(
    kind: 'commission' | 'tds',
    query: Record<string, unknown>,
    account_id: string,
    req: Request,
    res: Response,
  ): Promise<void>;
  /** One pruning pass now (start() also runs one every `payments.prune.interval_ms`). */
  prune(): Promise<PruneCounts>;
  start(): void;
  stop(): Promise<void>;
}

/** The providers room's lists and SMS sender (main.ts builds it); what is missing is built from the config. */
type Options = {
  providers?: Partial<Record<PaymentService, PaymentProvider[]>>;
  sms?: SmsSender | null;
  /** Other rooms' /api routes (the wallet's top-ups), served behind this /api's auth, signing and log. */
  api?: Router[];
  /** Other rooms' rows that expire (the top-ups' daily counts), pruned by this room's pass. */
  prune?: readonly PruneTarget[];
  /** The chat room's /v1 protocol names (the ai-usage report's filter); any name when absent. */
  ai_protocols?: readonly string[];
  /** The payment services to serve: services.ts's list unless given (a test's extra service). */
  services?: readonly ServiceModule[];
};

export function createPayments(deps: RoomDeps, options: Options = {}): Payments {
  const { store, logger, clock, config } = deps;
  const services = options.services ?? PAYMENT_SERVICES;
  // Lists and reports of one account read its transactions through this index; built now, not by a request.
  store.indexBy('payment_txns', 'account_id');
  // The pending transactions the reconciler looks for at start.
  store.indexBy('payment_txns', 'status');
  // The admin's eKYC list by status reads its page, not the table (built here, before any request).
  store.indexBy('kyc_submissions', 'status');
  for (const service of services) service.indexes?.(store);
  const payments = config.payments;
  const { lists: providers, sms } = createProviders(deps, {
    lists: options.providers,
    sms: options.sms,
  });
  if (config.mode === 'live' && !sms)
    logger.warn({
      msg: 'no SMS sender is configured (payments.dmt.otp.sms): remitters cannot be registered in live mode',
    });
  if (config.mode === 'live' && !payments.tax.operator.gstin)
    logger.warn({
      msg: 'no operator GSTIN (payments.tax.operator.gstin): fees carry no GST and the GST documents are bills of supply; set it if the operator is registered for GST',
    });
  const stopping: Array<() => void> = [];
  const webhooks = new WebhookSender({
    store,
    logger,
    clock,
    config: payments,
    mode: config.mode,
    sealer: deps.sealer,
  });
  const engine = engineOf(deps, services, providers, webhooks);
  // Reports are background work: their long reads take at most this share of a busy gateway.
  store.reads.turns.configure({ ...DEFAULT_TURN_BUDGET, share: payments.reports.cpu_share });
  const ctx: PaymentsContext = {
    ...deps,
    settings: payments,
    engine,
    pricing: new Pricing(payments),
    webhooks,
    providers,
    sms,
    services: services.map(({ code, label }) => ({ code, label })),
    ai_protocols: options.ai_protocols ?? null,
    onStop: (fn) => stopping.push(fn),
  };
  const pruner = prunerOf(ctx, services, options.prune ?? []);
  const reports = reportsRouter(ctx);
  const network = networkRouter(ctx);
  const statements = statementsRouter(ctx);
  const invoices = invoicesRouter(ctx);
  if (deps.metrics) {
    registerReportMetrics(ctx, deps.metrics.registry);
    registerStartWindowMetrics(engine, deps.metrics.registry);
  }
  return {
    // The statements' routes before the reports' `/reports/:report`, whose names they are not.
    api: apiRouter(
      ctx,
      services,
      Router().use(statements.api, invoices.api, reports.api, network.api, ...(options.api ?? [])),
    ),
    // Each service's /admin routes after the room's own.
    admin: Router().use(
      paymentsAdminRouter(ctx),
      statements.admin,
      invoices.admin,
      reports.admin,
      network.admin,
      ...services.flatMap((service) => (service.admin ? [service.admin(ctx)] : [])),
    ),
    audit: auditMiddleware(store, logger),
    engine,
    services: ctx.services,
    route_docs: paymentsRouteDocs(payments, services),
    report: (name, query, scope, signal) => runReport(ctx, name, query, scope, signal),
    default_scheme: ctx.pricing.default_scheme,
    statement: (kind, query, account_id, req, res) =>
      serveAccountStatement(ctx, req, res, kind, account_id, query),
    downloadCsv: (name, query, scope, req, res) =>
      serveReport(ctx, req, res, name, { ...query, format: 'csv' }, scope, () => null),
    ...background(ctx, pruner, stopping),
  };
}

/** The engine, with each service's renderer and what happens in the commit of each change of a
 * transaction's status: the service's own bookkeeping, then the webhook delivery it queues. */
function engineOf(
  deps: RoomDeps,
  services: readonly ServiceModule[],
  providers: Record<PaymentService, PaymentProvider[]>,
  webhooks: WebhookSender,
): PaymentEngine {
  const { store, logger, clock, config } = deps;
  const by_code = new Map(services.map((service) => [service.code, service]));
  return new PaymentEngine({
    store,
    logger,
    clock,
    config: config.payments,
    providers,
    renderers: Object.fromEntries(
      services.map((service) => [service.code, service.renderer(deps)]),
    ),
    hooks: {
      onTransition: (tx, txn, from) => {
        by_code.get(txn.service)?.onTransition?.(tx, txn, from);
        const delivery = enqueueWebhook(tx, txn, from);
        if (delivery) webhooks.notify(delivery.id);
      },
      refundNeedsConsent: (txn) => by_code.get(txn.service)?.refundNeedsConsent?.(txn) ?? false,
    },
  });
}

/**
 * Rows no reader will use again, judged by the readers' own rules: the engine's idempotency
 * lookup (store clock, as the records' created_at), the duplicate window, and each service's
 * own tables (its `prune`). Without an idempotency window no record can expire, so that
 * table is not even listed.
 */
function prunerOf(
  ctx: PaymentsContext,
  services: readonly ServiceModule[],
  more_targets: readonly PruneTarget[],
): Pruner {
  const { store, logger, engine } = ctx;
  const payments = ctx.settings;
  return new Pruner({
    store,
    logger,
    batch_size: payments.prune.batch_size,
    targets: [
      ...(payments.idempotency_window_ms > 0
        ? [
            pruneTarget({
              table: 'idempotency',
              expired: (id, record, tx) => engine.idempotencyExpired(id, record, tx.now.getTime()),
            }),
          ]
        : []),
      // Several gateways: the duplicate window's rows (payment_recent), once past it.
      pruneTarget({
        table: 'payment_recent',
        expired: (_id, seen, tx) => tx.now.getTime() - seen.at_ms >= payments.duplicate_window_ms,
      }),
      ...services.flatMap((service) => service.prune?.(ctx) ?? []),
      ...more_targets,
    ],
  });
}

/** The /api router: signing, API logs, authorization before any body, then every service; `more`: reports and the network. */
function apiRouter(ctx: PaymentsContext, services: readonly ServiceModule[], more: Router): Router {
  const signing = new RequestSigning({
    now_ms: () => ctx.clock.now().getTime(),
    sealer: ctx.sealer,
    v1_until: ctx.settings.signing.v1_until,
    store: ctx.store,
  });
  const api = Router();
  api.use(signing.install); // authorize checks signed accounts' requests with it
  api.use(apiLog(ctx.store, ctx.logger));
  // Providers' status callbacks carry no API key: they prove themselves by signature or token.
  api.use(callbacksRouter(ctx));
  api.use(authorizeBeforeBody(() => ctx.store.state, ctx.logger));
  // Signed requests are checked, and their signatures claimed for every gateway, before any route.
  api.use(signing.verifyBeforeRoutes(() => ctx.store.state, jsonBody(ctx.config)));
  // What the services' synchronous pricing reads of the account (its network row, scheme,
  // parent, eKYC), loaded before any route that acts: on PostgreSQL one load at the door
  // instead of a blocking read in the middle of the request (docs/store-postgres.md).
  api.use((req, res, next) => {
    const account_id: unknown = res.locals.account_id;
    if (typeof account_id !== 'string' || !hasBody(req)) return next();
    const loading = ctx.store.preload(() => ctx.pricing.touch(ctx.store, account_id));
    if (!loading) return next();
    loading.then(() => next(), next);
  });
  api.use(onboardingRouter(ctx));
  for (const service of services) api.use(service.api(ctx));
  api.use(accountRouter(ctx));
  api.use(more);
  return api;
}

/** The room's background work: status checks of pending transactions, webhooks, pruning, the GST documents of months that are over. */
function background(
  ctx: PaymentsContext,
  pruner: Pruner,
  stopping: Array<() => void>,
): Pick<Payments, 'prune' | 'start' | 'stop'> {
  const { engine, webhooks, logger, settings } = ctx;
  let timer: NodeJS.Timeout | null = null;
  let prune_timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const prune = () =>
    pruner.run().catch((error: unknown) => {
      logger.error({ msg: 'payments prune failed', err: error });
      return {};
    });
  const halt = new AbortController();
  const issueDocuments = () =>
    issueClosedMonths(ctx, halt.signal).catch((error: unknown) => {
      if (!halt.signal.aborted) logger.error({ msg: 'GST documents: issuing failed', err: error });
    });
  // Several gateways on one database: each looks for the work any of them left (pending
  // transactions, due deliveries) and claims each item before working it (null: one process).
  let discovering = false;
  const discover = ctx.store.acrossGateways(() => () => {
    if (discovering) return;
    discovering = true;
    void ctx.store
      .background(() => Promise.all([engine.discover(), webhooks.discover()]))
      // A refusal by the store is part of its outage, logged by the store (not every tick).
      .catch((error: unknown) => {
        if (!(error instanceof StoreUnavailableError))
          logger.warn({ msg: 'payments work discovery failed', err: error });
      })
      .finally(() => {
        discovering = false;
      });
  });
  const tick = () => {
    if (stopped || !ctx.store.isLeader()) return;
    try {
      discover?.();
      engine.reconcileDue();
      webhooks.deliverDue();
    } catch (error) {
      logger.error({ msg: 'payments background tick failed', err: error });
    }
  };
  return {
    prune,
    start() {
      if (timer || stopped) return;
      timer = setInterval(tick, settings.tick_ms);
      timer.unref();
      prune_timer = setInterval(
        () =>
          void (ctx.store.isLeader()
            ? ctx.store.background(() => Promise.all([prune(), issueDocuments()]))
            : null),
        settings.prune.interval_ms,
      );
      prune_timer.unref();
      tick();
    },
    async stop() {
      stopped = true;
      halt.abort();
      for (const fn of stopping) fn();
      if (timer) clearInterval(timer);
      if (prune_timer) clearInterval(prune_timer);
      timer = null;
      prune_timer = null;
      await Promise.all([engine.stop(), webhooks.stop(), pruner.stop()]);
    },
  };
}

/**
 * What the start read of the duplicate window held (issue #36): the transactions of the
 * window, each as the fields the check compares. A start after a peak must not hold them whole.
 */
function registerStartWindowMetrics(engine: PaymentEngine, registry: Registry): void {
  scrapedGauge(
    registry,
    'aihub_payments_start_window_transactions',
    "Transactions of the duplicate window this gateway's start read (0 on PostgreSQL: the window is rows read in each transaction)",
    () => engine.start_window.entries,
  );
  scrapedGauge(
    registry,
    'aihub_payments_start_window_bytes',
    'Their size as the start held them (JSON text of the fields the duplicate check compares)',
    () => engine.start_window.bytes,
  );
}
