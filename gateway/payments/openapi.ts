// The payments room's routes for GET /openapi.json, with the same zod schemas the routes
// parse with (bodies and queries), so the document cannot drift from what /api accepts.
import { z } from 'zod';
import type { RouteDoc } from '../http/openapi.js';
import type { PaymentsConfig } from './config.js';
import { kycBody } from './onboarding/kyc.js';
import { webhookBody } from './account/schemas.js';
import {
  approveBody,
  auditQuery,
  kycListQuery,
  rejectBody,
  servicesBody,
  whitelistBody,
} from './admin/schemas.js';
import { billersQuery, fetchBody, payBody, receiptQuery } from './bills/schemas.js';
import {
  beneficiaryBody,
  beneficiaryListQuery,
  otpBody,
  remitterBody,
  transactBody,
  verifyBody,
} from './dmt/schemas.js';
import { registerBody } from './onboarding/schemas.js';
import { panBody } from './pan/schemas.js';
import { operatorsQuery, rechargeBody } from './recharge/schemas.js';
import { historyQuery, reportsQuery } from './reports/schemas.js';
import { adminTransactionsQuery, transactionsQuery } from './engine/txn-filter.js';
import { networkRouteDocs } from './network/openapi.js';
import { statementRouteDocs } from './statements/openapi.js';
import { invoiceRouteDocs } from './invoices/openapi.js';
import { rechargeLookupDocs } from './recharge/openapi.js';
import { bbpsRouteDocs } from './bills/openapi.js';
import { dmtRefundRouteDocs, rbiRouteDocs } from './dmt/openapi.js';
import { panVerifyRouteDoc } from './pan/openapi.js';
import { callbackRouteDocs } from './callbacks/openapi.js';
import { reasonBody, recheckBody } from './admin/schemas.js';

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
    .enum(['chat', 'responses', 'messages', 'embeddings', 'completions'])
    .optional()
    .describe('ai-usage only: the wire protocol of the request'),
});
const PAYMENT = {
  402: 'insufficient_balance: the wallet cannot cover amount and charges; nothing is held',
  403: 'service_inactive, or ip_not_allowed',
  409: 'idempotency_conflict (same key, another request), or duplicate_transaction (same subject and amount within the window)',
  503: 'no provider configured, or shutting down',
};

export function paymentsRouteDocs(settings: PaymentsConfig): RouteDoc[] {
  return [
    ...onboardingDocs(),
    ...rechargeDocs(),
    ...rechargeLookupDocs(),
    ...webhookDocs(),
    ...remitterDocs(settings),
    ...beneficiaryDocs(),
    ...transferDocs(settings),
    ...billsDocs(),
    ...bbpsRouteDocs(),
    ...reportsDocs(),
    ...adminKycDocs(),
    ...adminAccountDocs(),
    ...adminTransactionDocs(),
    ...networkRouteDocs(),
    ...statementRouteDocs(),
    ...invoiceRouteDocs(),
    ...rbiRouteDocs(settings),
    panVerifyRouteDoc(),
    ...callbackRouteDocs(),
    ...dmtRefundRouteDocs(settings.dmt.otp.digits),
  ];
}

/** The account itself: registering, eKYC, the wallet. */
function onboardingDocs(): RouteDoc[] {
  return [
    {
      tag: 'onboarding',
      auth: 'none',
      method: 'post',
      path: '/api/register',
      summary: 'Register a developer account (AI on, payments off); the key is shown once',
      body: registerBody,
      success: {
        status: 201,
        description: '{account_id, api_key, key_prefix, services, kyc_status}',
      },
      errors: { 409: 'email taken', 429: 'too many sign-ups from this address' },
    },
    {
      ...api,
      tag: 'onboarding',
      method: 'post',
      path: '/api/kyc',
      summary: 'Submit eKYC (JSON, or multipart with documents)',
      body: kycBody,
      success: { status: 200, description: '{status: "submitted", ...}' },
      errors: {
        409: 'under review or approved already',
        413: 'document too large',
        415: 'document not PDF, PNG or JPEG',
      },
    },
    {
      ...api,
      tag: 'onboarding',
      method: 'get',
      path: '/api/kyc',
      summary: 'The eKYC status',
      success: { status: 200, description: '{status, reason?, ...}' },
    },
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
  ];
}

/** Mobile recharge and the account's transactions. */
function rechargeDocs(): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'recharge',
      method: 'get',
      path: '/api/operators',
      summary: 'Operators with commission and amount bounds',
      query: operatorsQuery,
      success: {
        status: 200,
        description: '[{operator_id, name, type, commission_pct, min_amount, max_amount}]',
      },
    },
    {
      ...api,
      tag: 'recharge',
      method: 'post',
      path: '/api/recharge',
      summary:
        'Recharge (Idempotency-Key or client_ref makes retries safe); without operator_id the number is looked up',
      body: rechargeBody,
      success: {
        status: 200,
        description:
          '{status, message, txn_id, data: {txn_id, operator, amount, status, commission, balance}}; a decline is status false with the wallet refunded',
      },
      errors: {
        ...PAYMENT,
        422: 'amount_not_a_plan (an operator that sells plans only, or plan_check enforce)',
        503: 'no provider configured, shutting down, or plans_unavailable (Retry-After)',
      },
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
  ];
}

/** The account's webhook: set, read, remove. */
function webhookDocs(): RouteDoc[] {
  return [
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

/** DMT remitters: register by OTP, verify, read. */
function remitterDocs(settings: PaymentsConfig): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/remitter',
      summary: 'Register a remitter; an OTP is sent (sandbox: returned as sandbox_otp)',
      body: remitterBody,
      success: {
        status: 200,
        description:
          '{mobile, name, verified, otp_required, otp_expires_at, sandbox_otp?, monthly_limit, used, available}',
      },
      errors: {
        403: 'service_inactive',
        429: 'otp_rate_limited (Retry-After)',
        502: 'the SMS could not be sent',
        503: 'no SMS sender in live mode',
      },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/remitter/verify',
      summary: 'Verify the remitter with the OTP',
      body: otpBody(settings.dmt.otp.digits),
      success: { status: 200, description: 'the remitter' },
      errors: {
        404: 'remitter_not_found',
        422: 'otp_invalid, otp_expired, otp_attempts_exceeded, otp_not_requested',
      },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'get',
      path: '/api/dmt/remitter/:mobile',
      summary:
        'A remitter with the monthly limit, the amount used this month and the amount available',
      success: {
        status: 200,
        description: '{mobile, name, verified, monthly_limit, used, available}',
      },
      errors: { 404: 'remitter_not_found' },
    },
  ];
}

/** DMT beneficiaries: add, list, delete, verify. */
function beneficiaryDocs(): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/beneficiary',
      summary:
        'Add a beneficiary (account number as the bank issued it, 6–34 letters and digits; IFSC, its bank named from it)',
      body: beneficiaryBody,
      success: {
        status: 200,
        description:
          '{bene_id, mobile, name, account_number, ifsc, bank, verified, registered_name}',
      },
      errors: {
        404: 'remitter_not_found',
        409: 'beneficiary_exists',
        422: 'remitter_not_verified, beneficiary_limit',
      },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'get',
      path: '/api/dmt/beneficiary',
      summary: "A remitter's beneficiaries",
      query: beneficiaryListQuery,
      success: { status: 200, description: '[beneficiary]' },
      errors: { 404: 'remitter_not_found' },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'delete',
      path: '/api/dmt/beneficiary/:bene_id',
      summary: 'Delete a beneficiary',
      success: { status: 200, description: '{bene_id, deleted: true}' },
      errors: { 404: 'beneficiary_not_found' },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/beneficiary/:bene_id/verify',
      summary: 'Penny-drop verification (charged verification_fee once)',
      body: verifyBody,
      success: {
        status: 200,
        description: '{bene_id, registered_name, name_match, verified, status, fee}',
      },
      errors: { ...PAYMENT, 404: 'beneficiary_not_found' },
    },
  ];
}

/** The DMT transfer, then PAN find. */
function transferDocs(settings: PaymentsConfig): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/transact',
      summary:
        'Transfer by IMPS (settles at once) or NEFT (pending until the batch settles); under RBI 2024 with the OTP of POST /api/dmt/transact/otp (otp_ref, otp); above the per-transfer limit, split into parts under one reference',
      body: transactBody(settings.dmt),
      success: {
        status: 200,
        description:
          '{status, message, data: {reference_id, utr, amount, charges, status, ...}}; a failure is status false with amount and charges refunded',
      },
      errors: {
        ...PAYMENT,
        404: 'remitter_not_found, beneficiary_not_found',
        422: 'remitter_not_verified, monthly_limit_exceeded',
      },
    },
    {
      ...api,
      tag: 'pan',
      method: 'post',
      path: '/api/pan-find',
      summary: 'PAN lookup: holder name and type; the fee is charged only when found',
      body: panBody,
      success: {
        status: 200,
        description:
          '{status: true, data: {pan, name, type}, txn_id, fee, balance} (no message); not found: status false, error.code pan_not_found, nothing charged',
      },
      errors: PAYMENT,
    },
  ];
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
        ...PAYMENT,
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

/** Reports (the account's and the admin's), then the admin's eKYC review. */
function reportsDocs(): RouteDoc[] {
  return [
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

/** The admin's eKYC review: the queue, one submission, its documents, the decisions. */
function adminKycDocs(): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'get',
      path: '/admin/kyc',
      summary: 'eKYC submissions',
      query: kycListQuery,
      success: {
        status: 200,
        description: '{object: "list", total, data}: each submission with its duplicates',
      },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/kyc/:accountId',
      summary: "One account's eKYC submission (Aadhaar masked, documents listed)",
      success: {
        status: 200,
        description:
          '{account_id, status, reason?, name, aadhaar_number (masked), pan_number, gstin, documents: [{id, kind, filename, content_type, size_bytes, sha256}], submitted_at, reviewed_at, submissions, duplicates: {aadhaar: {count, accounts: [{account_id, status}]}, pan: {count, accounts}}}: the other accounts of its Aadhaar number and PAN, flagged, not refused',
      },
      errors: { 404: 'kyc_not_found' },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/kyc/:accountId/documents/:docId',
      summary: 'One eKYC document, decrypted, as the file it was uploaded as',
      success: {
        status: 200,
        description: 'the file (application/pdf, image/png or image/jpeg), as an attachment',
        content_type: 'application/octet-stream',
      },
      errors: { 404: 'document_not_found' },
    },
    {
      ...admin,
      method: 'post',
      path: '/admin/kyc/:accountId/approve',
      summary: 'Approve an eKYC submission',
      body: approveBody,
      success: { status: 200, description: 'the submission' },
      errors: { 404: 'no submission', 409: 'not under review' },
    },
    {
      ...admin,
      method: 'post',
      path: '/admin/kyc/:accountId/reject',
      summary: 'Reject an eKYC submission',
      body: rejectBody,
      success: { status: 200, description: 'the submission' },
      errors: { 404: 'no submission', 409: 'not under review' },
    },
  ];
}

/** The admin's account settings, audit and transactions. */
function adminAccountDocs(): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'post',
      path: '/admin/accounts/:id/services',
      summary: 'Activate or deactivate payments services (activation needs approved eKYC)',
      body: servicesBody,
      success: { status: 200, description: 'the account' },
      errors: { 409: 'kyc_not_approved' },
    },
    {
      ...admin,
      method: 'put',
      path: '/admin/accounts/:id/ip-whitelist',
      summary: "The account's IP whitelist ([] = no restriction)",
      body: whitelistBody,
      success: { status: 200, description: 'the account' },
    },
    {
      ...admin,
      method: 'post',
      path: '/admin/accounts/:id/signing-secret',
      summary:
        'Turn signed /api requests on for the account, or replace the secret (the old one stops at once); the secret is shown once',
      success: { status: 201, description: '{account_id, secret, created_at, headers}' },
      errors: { 404: 'account_not_found' },
    },
    {
      ...admin,
      method: 'delete',
      path: '/admin/accounts/:id/signing-secret',
      summary: 'Turn signed /api requests off for the account',
      success: { status: 200, description: 'the account' },
      errors: { 404: 'account_not_found' },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/audit',
      summary: 'The admin audit log, newest first',
      query: auditQuery,
      success: { status: 200, description: '{object: "list", total, data}' },
    },
  ];
}

/** Any account's transactions, for the admin. */
/** A hand move of a transaction refused (admin/commands.ts moveTransaction). */
const MOVE = {
  400: 'invalid_request: a reason is required (except for a re-check)',
  404: 'transaction_not_found',
  409: "the action does not apply to the transaction's status (the answer names both)",
};

function adminTransactionDocs(): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'get',
      path: '/admin/transactions',
      summary: "Any account's transactions",
      query: adminTransactionsQuery,
      success: { status: 200, description: '{object: "list", total, data}' },
    },
    {
      ...admin,
      method: 'get',
      path: '/admin/transactions/:txnId',
      summary: "Any account's transaction: state, state history, attempts, status checks, refund",
      success: {
        status: 200,
        description:
          '{account_id, txn_id, service, status, ..., history, attempts, status_checks, refund, postings}',
      },
      errors: { 404: 'transaction_not_found' },
    },
    {
      ...admin,
      method: 'post',
      path: '/admin/transactions/:txnId/recheck',
      summary:
        'Re-arm the status checks of a transaction on hold (or pending with its checks run out): it becomes pending; never a blind refund',
      body: recheckBody,
      success: { status: 200, description: 'the transaction' },
      errors: MOVE,
    },
    {
      ...admin,
      method: 'post',
      path: '/admin/transactions/:txnId/hold',
      summary: 'Hold a pending transaction for a look (pending → on_hold), with a reason; audited',
      body: reasonBody,
      success: { status: 200, description: 'the transaction, on_hold' },
      errors: MOVE,
    },
    {
      ...admin,
      method: 'post',
      path: '/admin/transactions/:txnId/refund',
      summary:
        'Refund a transaction on hold or waiting for the customer (on_hold | refund_pending → refunded): its money back to the wallet, with a reason; audited',
      body: reasonBody,
      success: { status: 200, description: 'the transaction, refunded, with its refund posting' },
      errors: MOVE,
    },
    {
      ...admin,
      method: 'post',
      path: '/admin/transactions/:txnId/reverse',
      summary:
        'Reverse a success (success → reversed): every posting it made mirrored, the commission taken back, with a reason; audited; the webhook says so',
      body: reasonBody,
      success: { status: 200, description: 'the transaction, reversed' },
      errors: MOVE,
    },
  ];
}
