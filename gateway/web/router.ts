// The dashboard: server-rendered pages for users (/signup, /login, /api-keys, /wallet,
// /reports) and the admin console (/admin/login, /admin/console/...), plus their two assets.
import { Router, type Request, type Response } from 'express';
import type { WebDeps } from './deps.js';
import { CSS, CSS_PATH, JS, JS_PATH } from './assets.js';
import { CHECKOUT_JS, CHECKOUT_JS_PATH } from './checkout-asset.js';
import { WebContext } from './context.js';
import { adminRoutes } from './pages/admin.js';
import { authRoutes } from './pages/auth.js';
import { keyRoutes } from './pages/keys.js';
import { paymentsAdminRoutes } from './pages/payments-admin.js';
import { networkAdminRoutes } from './pages/network-admin.js';
import { reportRoutes } from './pages/reports.js';
import { walletRoutes } from './pages/wallet.js';

export interface Dashboard {
  context: WebContext;
  /** Mount at the root, before the 404 handler. */
  pages: Router;
  /** Mount at /admin, before the JSON admin API (it handles only its own paths). */
  admin: Router;
}

function asset(body: string, type: string) {
  return (_req: Request, res: Response) => {
    res.setHeader('Content-Type', type);
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.send(body);
  };
}

export function createDashboard(deps: WebDeps): Dashboard {
  const context = new WebContext(deps);

  const pages = Router();
  pages.get(CSS_PATH, asset(CSS, 'text/css; charset=utf-8'));
  pages.get(JS_PATH, asset(JS, 'text/javascript; charset=utf-8'));
  pages.get(CHECKOUT_JS_PATH, asset(CHECKOUT_JS, 'text/javascript; charset=utf-8'));
  authRoutes(context, pages);
  keyRoutes(context, pages);
  walletRoutes(context, pages);
  if (deps.payments) reportRoutes(context, pages);
  pages.use(context.errorPage('user'));

  const admin = Router();
  if (deps.payments) {
    paymentsAdminRoutes(context, admin);
    networkAdminRoutes(context, admin);
  }
  adminRoutes(context, admin);
  admin.use(context.errorPage('admin'));

  return { context, pages, admin };
}
