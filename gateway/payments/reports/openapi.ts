// The reports' routes in GET /openapi.json: the wallet history, and the reports of the
// account (its key) and of any account (the admin), as JSON or CSV.
import { z } from 'zod';
import type { RouteDoc } from '../../http/openapi.js';
import { historyQuery, reportsQuery } from './schemas.js';

const api = { auth: 'api_key' } as const;
const admin = { tag: 'admin', auth: 'admin' } as const;
const REPORTS_QUERY = reportsQuery.extend({
  status: z
    .string()
    .max(16)
    .optional()
    .describe(
      'transactions: pending|success|failed; commissions: success; api-logs: an HTTP status (404) or a class (4xx); ai-usage: ok|client_closed|upstream_error|stream_error',
    ),
  method: z.enum(['GET', 'POST', 'PUT', 'DELETE']).optional().describe('api-logs only'),
  protocol: z
    .string()
    .max(32)
    .optional()
    .describe(
      'ai-usage only: the wire protocol of the request, as GET /v1/balance names it (chat, responses, ...)',
    ),
});

/** The wallet history, then the reports (the account's and the admin's). */
export function reportRouteDocs(): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'wallet',
      method: 'get',
      path: '/api/wallet/history',
      summary: 'Wallet postings with opening and closing balance',
      query: historyQuery,
      success: {
        status: 200,
        description: '{opening_balance, closing_balance, balance, held, total, entries}',
      },
    },
    {
      ...api,
      tag: 'reports',
      method: 'get',
      path: '/api/reports/:report',
      summary:
        'transactions | commissions | wallet | api-logs | ai-usage (AI requests of every protocol: tokens, cached and reasoning tokens, cost, owed) of the account, paginated, with totals; format=csv gives the same rows as CSV',
      query: REPORTS_QUERY,
      success: {
        status: 200,
        description:
          '{status: true, data: {report, total, page, limit, totals, columns, rows}}, or text/csv',
      },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/reports/:report',
      summary: 'A report across accounts (or one, with account_id); rows name their account',
      query: REPORTS_QUERY,
      success: {
        status: 200,
        description: '{object: "report", total, page, limit, totals, columns, rows}, or text/csv',
      },
    },
  ];
}
