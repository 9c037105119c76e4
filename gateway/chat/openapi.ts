// The /v1 routes in GET /openapi.json: the room's own (models, balance), then every wire
// protocol's (chat/routes.ts dispatches them), documented in its folder (ProtocolRoutes.docs)
// with the zod schema its requests are validated with.
import type { RouteDoc } from '../http/openapi.js';
import { V1_DOC } from './route.js';
import { protocolRouteDocs } from './routes.js';

const v1 = V1_DOC;

export const chatRouteDocs: RouteDoc[] = [
  {
    ...v1,
    method: 'get',
    path: '/v1/models',
    summary: 'The model tiers with prices and limits',
    success: {
      status: 200,
      description:
        '{object: "list", data: [{id, object, created, owned_by, tier, pricing, context_window, max_output_tokens}]}',
    },
  },
  {
    ...v1,
    method: 'get',
    path: '/v1/models/:model',
    summary: 'One model tier with its prices and limits',
    success: {
      status: 200,
      description:
        '{id, object: "model", created, owned_by, tier, pricing, context_window, max_output_tokens}',
    },
    errors: { 404: 'model_not_found' },
  },
  {
    ...v1,
    method: 'get',
    path: '/v1/balance',
    summary: 'Wallet balance and AI usage',
    success: {
      status: 200,
      description:
        '{object: "balance", currency, balance, owed, usage: {requests, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost, by_protocol: {chat, responses, messages, embeddings, completions: {requests, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cost}}}}',
    },
  },
  {
    ...v1,
    method: 'get',
    path: '/v1/key',
    summary: "The key's own limit, what is left of it and its usage (OpenRouter's shape)",
    success: {
      status: 200,
      description:
        '{data: {name, label, limit, limit_remaining, limit_reset, limit_resets_at, usage, usage_daily, usage_weekly, usage_monthly, models, expires_at, rate_limit, currency, time_zone}}',
    },
  },
  ...protocolRouteDocs,
];
