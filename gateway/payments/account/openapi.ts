// The account's own routes in GET /openapi.json: its balance, its transactions, its webhook.
import type { RouteDoc } from '../../http/openapi.js';
import { transactionsQuery } from '../engine/txn-filter.js';
import { webhookBody } from './schemas.js';

const api = { auth: 'api_key' } as const;

/** The wallet's balance, the account's transactions, its webhook (set, read, remove). */
export function accountRouteDocs(): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'wallet',
      method: 'get',
      path: '/api/wallet/balance',
      summary: 'Wallet balance',
      success: { status: 200, description: '{balance, currency}' },
    },
    {
      ...api,
      tag: 'transactions',
      method: 'get',
      path: '/api/transactions',
      summary: "The account's transactions",
      query: transactionsQuery,
      success: { status: 200, description: '{total, page, limit, transactions}' },
    },
    {
      ...api,
      tag: 'transactions',
      method: 'get',
      path: '/api/transactions/:txn_id',
      summary: 'A transaction: state history, attempts, status checks, refund link',
      success: { status: 200, description: 'the transaction' },
      errors: { 404: 'no such transaction' },
    },
    {
      ...api,
      tag: 'webhooks',
      method: 'put',
      path: '/api/webhook',
      summary: 'Set the webhook URL (a new signing secret each time)',
      body: webhookBody,
      success: { status: 200, description: '{url, secret}' },
    },
    {
      ...api,
      tag: 'webhooks',
      method: 'get',
      path: '/api/webhook',
      summary: 'The webhook URL',
      success: { status: 200, description: '{url, secret_hint}' },
    },
    {
      ...api,
      tag: 'webhooks',
      method: 'delete',
      path: '/api/webhook',
      summary: 'Remove the webhook',
      success: { status: 200, description: '{url: null}' },
    },
  ];
}
