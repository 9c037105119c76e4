// The /v1 routes in GET /openapi.json: every wire protocol the lean lane serves (chat/routes.ts
// dispatches them), each with the zod schema its requests are validated with; a protocol's
// routes beyond its fixed paths documented in its folder (ProtocolRoutes.docs).
import type { RouteDoc } from '../http/openapi.js';
import { chatRequestSchema } from './schema.js';
import { completionsRequestSchema } from './protocols/completions/route.js';
import { embeddingsRequestSchema } from './protocols/embeddings/route.js';
import { countTokensRequestSchema, messagesRequestSchema } from './protocols/messages/schemas.js';
import { responsesRequestSchema } from './protocols/responses/schemas.js';
import { HEADERS_NOTE } from './route.js';
import { protocolRouteDocs } from './routes.js';

const v1 = { tag: 'chat', auth: 'api_key' } as const;

/** What every billed /v1 protocol may answer besides its success. */
const BILLED_ERRORS: Record<number, string> = {
  402: 'insufficient_balance: the wallet cannot cover the worst case; top up at /wallet?amount=<shortfall> (named in the message, x_aihub.topup_url and the x-aihub-topup-url header)',
  403: "account or key disabled, or the caller outside the account's IP whitelist",
  404: 'model_not_found',
  429: 'rate_limit_exceeded (requests per minute, or the free tier daily allowance), with Retry-After',
  502: 'every upstream failed',
  503: 'no upstream available',
  504: 'upstream timed out',
};

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
        'a chat.completion object with x_aihub {request_id, tier, target, cost, balance, currency, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, usage: "reported" | "estimated", receivable?, unpriced?}',
    },
    errors: {
      400: 'invalid_value, invalid_json, context_length_exceeded; or an upstream 4xx relayed with its own status, code, param and message',
      402: 'insufficient_balance: the wallet cannot cover the worst case; top up at /wallet?amount=<shortfall> (named in the message, x_aihub.topup_url and the x-aihub-topup-url header)',
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
    method: 'post',
    path: '/v1/responses',
    summary:
      'Create a response (OpenAI Responses API: input as text or items, instructions, function tools, text.format json_schema, max_output_tokens; stream: true gives response.* events)',
    body: responsesRequestSchema,
    success: {
      status: 200,
      description: `a response object (output items, usage) with x_aihub; ${HEADERS_NOTE}`,
    },
    errors: { ...BILLED_ERRORS, 400: 'invalid_value, invalid_json, context_length_exceeded' },
  },
  {
    ...v1,
    method: 'post',
    path: '/v1/messages',
    summary:
      "Create a message (Anthropic Messages API: x-api-key or Bearer, anthropic-version accepted; system, messages with text, image, tool_use and tool_result blocks, tools, max_tokens required; stream: true gives message_start ... message_stop events); errors in Anthropic's shape",
    body: messagesRequestSchema,
    success: {
      status: 200,
      description: `a message {id, type: "message", role, content, stop_reason, usage}; ${HEADERS_NOTE}`,
    },
    errors: { ...BILLED_ERRORS, 400: 'invalid_request_error (the field named in the message)' },
  },
  {
    ...v1,
    method: 'post',
    path: '/v1/messages/count_tokens',
    summary: 'Count the input tokens of an Anthropic Messages request (not billed)',
    body: countTokensRequestSchema,
    success: { status: 200, description: '{input_tokens}' },
    errors: { 400: 'invalid_request_error', 404: 'model_not_found' },
  },
  {
    ...v1,
    method: 'post',
    path: '/v1/embeddings',
    summary: 'Create embeddings (OpenAI shape: string or array input, dimensions, encoding_format)',
    body: embeddingsRequestSchema,
    success: {
      status: 200,
      description: `{object: "list", data: [{object: "embedding", index, embedding}], model, usage} with x_aihub; ${HEADERS_NOTE}`,
    },
    errors: { ...BILLED_ERRORS, 400: 'invalid_value, input too long' },
  },
  {
    ...v1,
    method: 'post',
    path: '/v1/completions',
    summary:
      'Create a legacy completion, with suffix for fill-in-the-middle (editor autocomplete); stream: true gives text/event-stream chunks',
    body: completionsRequestSchema,
    success: {
      status: 200,
      description: `a text_completion object {id, object, choices: [{text, index, finish_reason}], usage} with x_aihub; ${HEADERS_NOTE}`,
    },
    errors: { ...BILLED_ERRORS, 400: 'invalid_value, context_length_exceeded' },
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
