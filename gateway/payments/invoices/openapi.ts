// The GST documents' routes in GET /openapi.json: an account's tax invoice (or bill of
// supply) and credit note of a month that is over, as JSON or PDF, for its key and the admin.
import type { RouteDoc } from '../../http/openapi.js';
import { gstInvoicesQuery } from './routes.js';

const api = { tag: 'reports', auth: 'api_key' } as const;
const admin = { tag: 'admin', auth: 'admin' } as const;

export function invoiceRouteDocs(): RouteDoc[] {
  return [
    {
      ...api,
      method: 'get',
      path: '/api/reports/gst-invoices',
      summary:
        "The account's GST documents of a month that is over (month=YYYY-MM): its tax invoice (or bill of supply) for the month's fees and its credit note for the fees given back, numbered per financial year; issued on the first request for the month",
      query: gstInvoicesQuery,
      success: {
        status: 200,
        description:
          '{status: true, data: {month, account_id, supplier, documents: [{kind, invoice_number, date, supplier, recipient, place_of_supply, lines, totals, refers_to?}]}}, or with format=pdf a PDF',
      },
      errors: {
        400: 'account_id is neither this account nor one of its retailers',
        409: 'month_not_closed: the month is not over in India yet',
      },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/reports/gst-invoices',
      summary: "One account's GST documents of a month (account_id required)",
      query: gstInvoicesQuery,
      success: { status: 200, description: 'the documents, or with format=pdf a PDF' },
    },
  ];
}
