// The top-ups room's routes for GET /openapi.json, with the schemas the routes parse with.
import type { RouteDoc } from '../http/openapi.js';
import { adminTopupsQuery, createTopupBody, topupListQuery } from './routes.js';
import { TOPUP_PROVIDERS } from './types.js';

const VIEW =
  '{topup_id, provider, order_id, amount, fee, fee_gst, total, currency, status, reversed, owed, note, checkout, created_at, updated_at}';

export const topupRouteDocs: RouteDoc[] = [
  {
    auth: 'api_key',
    tag: 'wallet',
    method: 'post',
    path: '/api/wallet/topups',
    summary: 'Start a top-up through the configured payment gateway (its order and checkout)',
    body: createTopupBody,
    success: { status: 201, description: VIEW },
    errors: {
      400: 'amount outside topups.min_amount/max_amount, or past the daily cap',
      409: 'no payment gateway is configured (topups_not_configured)',
      502: 'the payment gateway made no order (provider_error); nothing was charged',
    },
  },
  {
    auth: 'api_key',
    tag: 'wallet',
    method: 'get',
    path: '/api/wallet/topups',
    summary: "The account's latest top-ups, newest first",
    query: topupListQuery,
    success: { status: 200, description: `{topups: [${VIEW}]}` },
  },
  {
    auth: 'api_key',
    tag: 'wallet',
    method: 'get',
    path: '/api/wallet/topups/:topup_id',
    summary: 'One of the account’s own top-ups',
    success: { status: 200, description: VIEW },
    errors: { 404: 'no top-up by that id for this account (topup_not_found)' },
  },
  {
    auth: 'admin',
    tag: 'admin',
    method: 'get',
    path: '/admin/topups',
    summary: 'Top-ups, newest first, optionally in one status',
    query: adminTopupsQuery,
    success: { status: 200, description: `{topups: [${VIEW} + account_id, history]}` },
  },
  {
    auth: 'admin',
    tag: 'admin',
    method: 'get',
    path: '/admin/topups/alerts',
    summary: 'What the operator must look at: payments not credited, rejected webhooks',
    query: adminTopupsQuery,
    success: {
      status: 200,
      description:
        '{alerts: [{id, provider, reason, topup_id, account_id, order_id, payment_id, detail, at}], rejected_webhooks: {count, recent}}',
    },
  },
  ...TOPUP_PROVIDERS.map((provider): RouteDoc => ({
    auth: 'none',
    tag: 'webhooks',
    method: 'post',
    path: `/webhooks/${provider}`,
    summary: `${provider}'s webhooks (signed; the raw body, at most topups.webhook_body_bytes)`,
    success: { status: 200, description: '{status: "ok"}' },
    errors: {
      400: 'a bad signature or a body not in the provider’s shape',
      404: `${provider} is not the configured provider`,
      413: 'the body is too large',
      503: 'the provider could not be asked to confirm; sent again later',
    },
  })),
];
