// BBPS's routes in GET /openapi.json (issue #27): the categories, validation of a customer
// (validate-and-pay billers), complaints. The biller list, fetch, pay and the receipt are
// documented in payments/openapi.ts.
import type { RouteDoc } from '../../http/openapi.js';
import { complaintBody } from './complaints.js';
import { validateBody } from './schemas.js';

const api = { tag: 'bills', auth: 'api_key' } as const;

export function bbpsRouteDocs(): RouteDoc[] {
  return [
    {
      ...api,
      method: 'get',
      path: '/api/bills/categories',
      summary: 'The BBPS biller categories, with their names and how many billers each has',
      success: { status: 200, description: '{status: true, data: [{category, name, billers}]}' },
    },
    {
      ...api,
      method: 'post',
      path: '/api/bills/validate',
      summary:
        "A validate-and-pay biller's check of the customer; pay naming its validation_id as bill_id",
      body: validateBody,
      success: {
        status: 200,
        description:
          '{status: true, data: {bill_id, validation_id, kind: "validation", biller_id, params, customer_name, amount: null, expires_at, ...}}',
      },
      errors: {
        400: 'validation_not_supported (the biller is not validate and pay), invalid_param, missing_param, unknown_param',
        403: 'service_inactive',
        404: 'customer_not_found',
        503: 'no provider could validate the customer (Retry-After)',
      },
    },
    {
      ...api,
      method: 'post',
      path: '/api/bills/complaints',
      summary:
        'Register a BBPS complaint: about a bill payment (txn_id, a transaction reason) or a service (biller_id, a service reason)',
      body: complaintBody,
      success: {
        status: 201,
        description:
          '{status: true, message, data: {complaint_id, complaint_ref, type, txn_id, biller_id, reason, reason_text, description, status, assigned_to, resolution, history, created_at, updated_at}}',
      },
      errors: {
        400: 'a reason not of the type, a missing txn_id or biller_id, "others" without a description',
        403: 'service_inactive',
        404: 'transaction_not_found',
        409: 'complaint_exists (the payment has an open complaint), not_submitted',
        429: 'too_many_complaints (open ones per account)',
        503: 'complaints_unavailable, providers_unavailable (Retry-After)',
      },
    },
    {
      ...api,
      method: 'get',
      path: '/api/bills/complaints',
      summary: "The account's complaints, newest first (at most 500)",
      success: { status: 200, description: '{status: true, data: [complaint...]}' },
    },
    {
      ...api,
      method: 'get',
      path: '/api/bills/complaints/:complaint_id',
      summary:
        'A complaint with its status over time (registered, assigned, in_progress, resolved or rejected), asked of the provider when read',
      success: { status: 200, description: '{status: true, data: complaint with history}' },
      errors: { 404: 'complaint_not_found' },
    },
  ];
}
