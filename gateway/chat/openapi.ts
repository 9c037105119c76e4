import type { RouteDoc } from '../http/openapi.js';
import { chatRequestSchema } from './schema.js';

const v1 = { tag: 'chat', auth: 'api_key' } as const;

export const chatRouteDocs: RouteDoc[] = [
  {
    ...v1,
    method: 'post',
    path: '/v1/chat/completions',
    summary:
      'Create a chat completion (OpenAI shape plus x_aihub; stream: true gives text/event-stream chunks ending in data: [DONE])',
    body: chatRequestSchema,
    success: {
      status: 200,
      description:
        'a chat.completion object with x_aihub {request_id, tier, target, cost, balance, currency, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, usage: "reported" | "estimated", receivable?}',
    },
    errors: {
      400: 'invalid_value, invalid_json, context_length_exceeded; or an upstream 4xx relayed with its own status, code, param and message',
      402: 'insufficient_balance: the wallet cannot cover the worst case; top up at /wallet',
      403: 'account or key disabled',
      404: 'model_not_found',
      429: 'rate_limit_exceeded (requests per minute, or the free tier daily allowance), with Retry-After',
      502: 'every upstream failed',
      503: 'no upstream available',
      504: 'upstream timed out',
    },
  },
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
];
