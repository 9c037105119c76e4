// The statements' routes in GET /openapi.json: an account's monthly commission statement and
// quarterly TDS statement (section 194H), as JSON, CSV or PDF, for its key and for the admin.
import type { RouteDoc } from '../../http/openapi.js';
import { monthQuery, quarterQuery } from './schemas.js';

const api = { tag: 'reports', auth: 'api_key' } as const;
const admin = { tag: 'admin', auth: 'admin' } as const;
const FILES = 'JSON, or with format=csv a CSV and with format=pdf a PDF (an attachment)';

export function statementRouteDocs(): RouteDoc[] {
  return [
    {
      ...api,
      method: 'get',
      path: '/api/reports/commission-statement',
      summary:
        "The account's commission statement for a month or up to 12 months (month=YYYY-MM, or from_month and to_month); a distributor may name one of its retailers in account_id",
      query: monthQuery,
      success: { status: 200, description: `{status: true, data: the statement}: ${FILES}` },
      errors: { 400: 'account_id is neither this account nor one of its retailers' },
    },
    {
      ...api,
      method: 'get',
      path: '/api/reports/tds-statement',
      summary:
        "The TDS withheld from the account's commissions in a quarter of a financial year (fy=2025-26, quarter=Q1..Q4)",
      query: quarterQuery,
      success: { status: 200, description: `{status: true, data: the statement}: ${FILES}` },
      errors: { 400: 'account_id is neither this account nor one of its retailers' },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/reports/commission-statement',
      summary: "One account's commission statement (account_id required)",
      query: monthQuery,
      success: { status: 200, description: `the statement: ${FILES}` },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/reports/tds-statement',
      summary: "One account's TDS statement, or without account_id the quarter's TDS by deductee",
      query: quarterQuery,
      success: { status: 200, description: `the statement: ${FILES}` },
    },
  ];
}
