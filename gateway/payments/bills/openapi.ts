// BBPS's routes in GET /openapi.json (issue #27): the categories, validation of a customer
// (validate-and-pay billers), complaints. The biller list, fetch, pay and the receipt are
// documented in payments/openapi.ts.
import type { RouteDoc } from '../../http/openapi.js';
import { complaintBody } from './complaints.js';
import { PAYMENT_ERRORS } from '../shared/openapi.js';
import { billersQuery, fetchBody, payBody, receiptQuery, validateBody } from './schemas.js';

const api = { tag: 'bills', auth: 'api_key' } as const;

/** Bill payment: billers, fetch, pay, receipt, then BBPS's own routes. */
export function billsRouteDocs(): RouteDoc[] {
  return [...billsDocs(), ...bbpsRouteDocs()];
}

/** Bill payments: billers, fetch, pay, receipt. */
function billsDocs(): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'bills',
      method: 'get',
      path: '/api/bills/billers',
      summary:
        'BBPS billers by category (or q: name), with their customer parameters, mode and amount rule',
      query: billersQuery,
      success: {
        status: 200,
        description:
          '[{biller_id, name, category, params: [{name, label, regex, optional}], mode, amount_rule, partial_pay, min_amount, max_amount, fee, ...}]',
      },
    },
    {
      ...api,
      tag: 'bills',
      method: 'post',
      path: '/api/bills/fetch',
      summary:
        "Fetch the bill due for a customer (the biller's params; consumer_number only while payments.bills.allow_legacy_requests)",
      body: fetchBody,
      success: { status: 200, description: '{bill_id, customer_name, amount, due_date, ...}' },
      errors: {
        400: 'invalid_param, missing_param, legacy_request_shape',
        403: 'service_inactive',
        404: 'bill_not_found',
        503: 'no provider could fetch it (Retry-After)',
      },
    },
    {
      ...api,
      tag: 'bills',
      method: 'post',
      path: '/api/bills/pay',
      summary:
        "Pay a bill (by bill_id as the biller's mode and amount rule say, once), with the customer's mobile and, from 50,000, PAN",
      body: payBody,
      success: {
        status: 200,
        description:
          '{status, message, txn_id, data: {txn_id, status, receipt_url, amount, charges, commission, balance}}',
      },
      errors: {
        ...PAYMENT_ERRORS,
        404: 'bill_not_found',
        409: 'bill_already_paid, idempotency_conflict, duplicate_transaction',
        400: 'invalid_param, missing_param, fetch_required, validation_required, pan_required, legacy_request_shape (consumer_number, unless payments.bills.allow_legacy_requests)',
        422: 'amount_mismatch, bill_expired',
      },
    },
    {
      tag: 'bills',
      auth: 'none',
      method: 'get',
      path: '/api/bills/receipt/:txn_id',
      summary:
        'The receipt as HTML or (format=pdf) PDF; with the API key, or with the token of receipt_url',
      query: receiptQuery,
      success: {
        status: 200,
        description: 'text/html, or application/pdf',
        content_type: 'text/html',
      },
      errors: { 401: 'neither a key nor a token', 404: 'receipt_not_found' },
    },
  ];
}

function bbpsRouteDocs(): RouteDoc[] {
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
