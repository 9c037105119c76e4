// The top-ups room's routes: the account's (inside /api: its key auth, IP whitelist, signing
// and API log), the provider's webhooks (at the root, the raw body bounded and signed), and
// the operator's lists (inside /admin, behind the admin bearer).
import express, { Router, type Request } from 'express';
import { z } from 'zod';
import { jsonBody } from '../http/body.js';
import { ApiError, notFound, parseWith } from '../http/errors.js';
import type { Logger } from '../log.js';
import { authorize } from '../payments/auth.js';
import type { Store } from '../store/types.js';
import { unitsAmountSchema } from '../util/amount-schema.js';
import type { TopupsConfig } from './config.js';
import { TOPUP_PATHS } from './paths.js';
import { topupView, type TopupService } from './service.js';
import { TOPUP_STATUSES } from './tables.js';
import {
  ProviderCallError,
  TOPUP_METHODS,
  TOPUP_PROVIDERS,
  WebhookRejected,
  type TopupProvider,
} from './types.js';

export const createTopupBody = z.strictObject({
  /** What reaches the wallet, in currency units (at most 2 decimals). */
  amount: unitsAmountSchema(2),
  /** The method the convenience fee is priced for (`topups.fees`); absent: `default`. */
  method: z.enum(TOPUP_METHODS).optional(),
});

export const topupListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

export const adminTopupsQuery = z.object({
  status: z.enum(TOPUP_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

interface RouteDeps {
  store: Store;
  logger: Logger;
  config: { limits: { body_bytes: number }; topups: TopupsConfig };
  service: TopupService;
}

export function apiRoutes(deps: RouteDeps): Router {
  const { store, logger, service } = deps;
  const router = Router();
  router.post(TOPUP_PATHS.api_collection, jsonBody(deps.config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const body = parseWith(createTopupBody, req.body ?? {});
    const topup = await service.create(account.id, {
      amount_micros: body.amount,
      method: body.method ?? null,
    });
    res.status(201).json(topupView(topup));
  });
  router.get(TOPUP_PATHS.api_collection, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const query = parseWith(topupListQuery, req.query);
    const rows = await service.recent(account.id, query.limit);
    res.json({ topups: rows.map(topupView) });
  });
  router.get(TOPUP_PATHS.api_item, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    const id = String(req.params.topup_id);
    const topup = await service.get(account.id, id);
    if (!topup) throw notFound(`no top-up ${id.slice(0, 64)}`, 'topup_not_found');
    res.json(topupView(topup));
  });
  return router;
}

/** Webhook rejections kept in memory for the operator's list (bounded; an attacker fills no store). */
export class RejectedWebhooks {
  count = 0;
  readonly recent: Array<{ at: string; provider: string; reason: string; ip: string | null }> = [];

  add(entry: { at: string; provider: string; reason: string; ip: string | null }): void {
    this.count++;
    this.recent.unshift(entry);
    if (this.recent.length > 50) this.recent.pop();
  }
}

export function webhookRoutes(
  deps: RouteDeps & { provider: TopupProvider | null; rejected: RejectedWebhooks; now: () => Date },
): Router {
  const { logger, service, provider, rejected } = deps;
  const router = Router();
  // The signature covers the bytes as sent: a compressed body is refused (415), never inflated.
  const raw = express.raw({
    type: () => true,
    inflate: false,
    limit: deps.config.topups.webhook_body_bytes,
  });
  for (const name of TOPUP_PROVIDERS) {
    router.post(`/webhooks/${name}`, raw, async (req: Request, res) => {
      if (!provider || provider.name !== name)
        throw notFound(`the ${name} webhook is not configured (topups.provider)`, 'not_found');
      const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      let events;
      try {
        events = provider.readWebhook(req.headers, body);
      } catch (error) {
        if (!(error instanceof WebhookRejected)) throw error;
        const ip = req.ip ?? null;
        rejected.add({ at: deps.now().toISOString(), provider: name, reason: error.reason, ip });
        logger.warn({ msg: 'top-up webhook rejected', provider: name, reason: error.reason, ip });
        throw new ApiError(400, error.reason, error.message, null, 'invalid_request_error');
      }
      try {
        for (const event of events) await service.apply(event);
      } catch (error) {
        if (!(error instanceof ProviderCallError)) throw error;
        // Not checked with the provider: refused, so that the provider sends it again (and
        // the reconciliation pass asks meanwhile). Nothing was credited.
        logger.warn({ msg: 'top-up webhook not checked', provider: name, reason: error.message });
        throw new ApiError(
          503,
          'provider_unavailable',
          'the payment gateway could not be asked; send again later',
          null,
          'api_error',
        );
      }
      res.json({ status: 'ok' });
    });
  }
  return router;
}

export function adminRoutes(deps: RouteDeps & { rejected: RejectedWebhooks }): Router {
  const { store, service, rejected } = deps;
  const router = Router();
  router.get(TOPUP_PATHS.admin_alerts, async (req, res) => {
    const { limit } = parseWith(adminTopupsQuery, req.query);
    res.json({
      alerts: await service.alerts(limit),
      rejected_webhooks: { count: rejected.count, recent: rejected.recent.slice(0, limit) },
    });
  });
  router.get(TOPUP_PATHS.admin_collection, async (req, res) => {
    const { status, limit } = parseWith(adminTopupsQuery, req.query);
    const rows = status
      ? await service.withStatus(status, limit)
      : await store.page('topups', { newest_first: true, offset: 0, limit });
    res.json({
      topups: rows
        .sort((a, b) => (a.created_at < b.created_at ? 1 : -1))
        .slice(0, limit)
        .map((topup) => ({
          ...topupView(topup),
          account_id: topup.account_id,
          history: topup.history,
        })),
    });
  });
  return router;
}
