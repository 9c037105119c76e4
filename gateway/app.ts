// createGateway mounts the rooms main.ts built (each as its createX(deps) returned it) and
// builds none itself; every dependency is an argument, so tests build a gateway with a temp
// data dir and scripted upstreams, without module mocking. The hot path (/v1) is served by
// the lean lane straight from Node's HTTP server; everything else goes through Express,
// where the rooms' routers are mounted.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type Express } from 'express';
import type { RoomDeps } from './deps.js';
import type { Accounts } from './accounts/index.js';
import type { TrustProxy } from './accounts/ip-whitelist.js';
import { jsonBody } from './http/body.js';
import { errorHandler } from './http/errors.js';
import { assertWellFormedPath } from './http/path.js';
import type { Metrics } from './http/metrics.js';
import { notFoundHandler, requestId, requestLog } from './http/middleware.js';
import type { ChatService } from './chat/index.js';
import { runLean } from './http/lean.js';
import { inRequestScope } from './kernel/request-scope.js';
import { inServerSpan } from './telemetry/index.js';
import type { Payments } from './payments/index.js';
import type { Topups } from './topups/index.js';
import type { Dashboard } from './web/router.js';
import { buildOpenApi, type RouteDoc } from './http/openapi.js';
import packageJson from '../package.json' with { type: 'json' };

export interface AppDeps extends Pick<RoomDeps, 'config' | 'logger' | 'public_url'> {
  metrics: Metrics;
  /** The config's trust_proxy, compiled once by main.ts: Express's req.ip and the /v1 lane apply this one rule. */
  trust_proxy: TrustProxy;
  /** Why the gateway cannot serve now (`/readyz`): none, it is ready. */
  readiness?: () => Promise<string[]>;
}

/** What the app mounts: each room as its factory returned it. main.ts builds them and owns their lifecycles. */
export interface Rooms {
  accounts: Accounts;
  chat: ChatService;
  dashboard: Dashboard;
  /** The payments room (/api and its /admin routes), when the gateway serves it. */
  payments?: Payments;
  /** The top-ups room: its provider's webhooks at the root, its lists in /admin (its /api routes are inside the payments room's). */
  topups?: Topups;
}

export function createApp(deps: AppDeps, rooms: Rooms): Express {
  const { config, logger, metrics } = deps;
  const { accounts, chat, dashboard, payments, topups } = rooms;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', deps.trust_proxy);

  app.use(requestId);
  app.use(requestLog(logger));
  app.use(metrics.middleware());
  app.use((req, _res, next) => {
    assertWellFormedPath(req.path);
    next();
  });

  // Liveness: the process answers. Readiness: it can commit and serve (Kubernetes' two probes).
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', (_req, res, next) => {
    (deps.readiness?.() ?? Promise.resolve([])).then((reasons) => {
      res.setHeader('cache-control', 'no-store');
      if (reasons.length === 0) res.json({ status: 'ready' });
      else res.status(503).json({ status: 'not_ready', reasons });
    }, next);
  });
  let openapi: unknown = null;
  app.get('/openapi.json', (_req, res) => {
    const routes: RouteDoc[] = [
      ...chat.docs,
      ...accounts.docs,
      ...(payments?.route_docs ?? []),
      ...(topups?.route_docs ?? []),
    ];
    openapi ??= buildOpenApi(routes, {
      version: packageJson.version,
      server_url: deps.public_url(),
      currency: config.currency,
    });
    res.json(openapi);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  if (topups) app.use(topups.webhooks); // signed by the provider, read raw: before any body parser
  app.use('/admin', dashboard.admin); // the HTML console's own paths; everything else falls through
  const payments_admin = payments ? [payments.audit] : [];
  const admin_lock = dashboard.context.admin_by_ip; // one failure count per address for the console login and the bearer API
  app.use(
    '/admin',
    accounts.auth(admin_lock),
    jsonBody(config),
    ...payments_admin,
    accounts.admin,
    ...(payments ? [payments.admin] : []),
    ...(topups ? [topups.admin] : []),
  );
  if (payments) app.use('/api', accounts.knownKeys, payments.api);

  app.use(dashboard.pages);

  app.use(notFoundHandler);
  app.use(
    errorHandler((error, req) => {
      logger.error({
        msg: 'unexpected error',
        request_id: req.res?.locals.request_id,
        route: req.path,
        err: error,
      });
    }),
  );
  return app;
}

export interface Gateway {
  /** The HTTP server's request listener: the chat room's paths (/v1, its protocols' own) in the lean lane, the rest through Express. */
  handler: RequestListener;
  app: Express;
}

export function createGateway(deps: AppDeps, rooms: Rooms): Gateway {
  const app = createApp(deps, rooms);
  // The request line holds ids, route, status and timing only, nothing to redact: skipping
  // pino's redaction halves its cost (docs/chat-api.md#benchmark).
  const request_logger = deps.logger.child({}, { redact: { paths: [], censor: '' } });
  const lane = { logger: deps.logger, request_logger, metrics: deps.metrics, surface: 'v1' };
  // Each request in a scope of its own: a refusal by the store says "nothing was changed"
  // only when no transaction of this request was committed (kernel/request-scope.ts). The
  // lean lane carries its scope in its locals; an Express request's is implicit, until its
  // response closes.
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (rooms.chat.serves(req.url))
      inServerSpan(req, res, () =>
        runLean(req, res, lane, (locals) => rooms.chat.handle(req, res, locals)),
      );
    else inRequestScope(() => inServerSpan(req, res, () => app(req, res)), { until: res });
  };
  return { handler, app };
}
