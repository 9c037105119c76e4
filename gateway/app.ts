// createGateway takes every dependency as an argument, so tests build a gateway with a temp
// data dir and scripted upstreams, without module mocking. The hot path (/v1) is served by
// the lean lane straight from Node's HTTP server; everything else goes through Express,
// where rooms mount their own routers.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type Express } from 'express';
import type { RoomDeps } from './deps.js';
import { createAccounts } from './accounts/index.js';
import { catchUpForUnknownKey } from './accounts/auth.js';
import { jsonBody } from './http/body.js';
import { errorHandler } from './http/errors.js';
import { assertWellFormedPath } from './http/path.js';
import { Metrics } from './http/metrics.js';
import { notFoundHandler, requestId, requestLog } from './http/middleware.js';
import { createChat, type ChatService } from './chat/routes.js';
import { clientAddressOf, type TrustProxy } from './accounts/ip-whitelist.js';
import { runLean } from './http/lean.js';
import type { Payments } from './payments/index.js';
import { createDashboard } from './web/router.js';
import { buildOpenApi, type RouteDoc } from './http/openapi.js';
import { chatRouteDocs } from './chat/openapi.js';
import packageJson from '../package.json' with { type: 'json' };

export interface AppDeps extends RoomDeps {
  /** The payments room (/api and its /admin routes); main.ts owns its background lifecycle. */
  payments?: Payments;
}

export function createApp(deps: AppDeps): Express {
  const { config, logger } = deps;
  const metrics = deps.metrics ?? new Metrics();
  const accounts = createAccounts(deps);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trust_proxy);

  app.use(requestId);
  app.use(requestLog(logger));
  app.use(metrics.middleware());
  app.use((req, _res, next) => {
    assertWellFormedPath(req.path);
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  let openapi: unknown = null;
  app.get('/openapi.json', (_req, res) => {
    const routes: RouteDoc[] = [...chatRouteDocs, ...accounts.docs, ...(deps.payments?.route_docs ?? [])];
    openapi ??= buildOpenApi(routes, { version: packageJson.version, server_url: deps.public_url(), currency: config.currency });
    res.json(openapi);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  const dashboard = createDashboard(deps);
  app.use('/admin', dashboard.admin); // the HTML console's own paths; everything else falls through
  const payments_admin = deps.payments ? [deps.payments.audit] : [];
  const admin_lock = dashboard.context.admin_by_ip; // one failure count per address for the console login and the bearer API
  app.use('/admin', accounts.auth(admin_lock), jsonBody(config), ...payments_admin, accounts.admin, ...(deps.payments ? [deps.payments.admin] : []));
  if (deps.payments) app.use('/api', catchUpForUnknownKey(deps.store), deps.payments.api);

  app.use(dashboard.pages);

  app.use(notFoundHandler);
  app.use(
    errorHandler((error, req) => {
      logger.error({ msg: 'unexpected error', request_id: req.res?.locals.request_id, route: req.path, err: error });
    }),
  );
  return app;
}

export interface Gateway {
  /** The HTTP server's request listener: /v1 in the lean lane, the rest through Express. */
  handler: RequestListener;
  app: Express;
  chat: ChatService;
}

export function createGateway(deps: AppDeps): Gateway {
  const metrics = deps.metrics ?? new Metrics();
  const app = createApp({ ...deps, metrics });
  // /v1 applies the same trust-proxy rule as Express's req.ip on every other surface.
  const trust = app.get('trust proxy fn') as TrustProxy;
  const chat = createChat({ ...deps, metrics }, { client_address: (req) => clientAddressOf(req, trust) });
  // The request line holds ids, route, status and timing only, nothing to redact: skipping
  // pino's redaction halves its cost (docs/chat-api.md#benchmark).
  const request_logger = deps.logger.child({}, { redact: { paths: [], censor: '' } });
  const lane = { logger: deps.logger, request_logger, metrics, surface: 'v1' };
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/v1/')) runLean(req, res, lane, (locals) => chat.handle(req, res, locals));
    else app(req, res);
  };
  return { handler, app, chat };
}
