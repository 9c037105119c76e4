// The admin's payments routes in GET /openapi.json: the eKYC review, an account's services,
// IP whitelist and signing secret, the audit log, and any account's transactions.
import type { RouteDoc } from '../../http/openapi.js';
import { adminTransactionsQuery } from '../engine/txn-filter.js';
import {
  approveBody,
  auditQuery,
  kycListQuery,
  reasonBody,
  recheckBody,
  rejectBody,
  servicesBody,
  whitelistBody,
} from './schemas.js';

const admin = { tag: 'admin', auth: 'admin' } as const;

/** The eKYC review, an account's settings and the audit, any account's transactions. */
export function adminRouteDocs(service_codes: readonly string[]): RouteDoc[] {
  return [...adminKycDocs(), ...adminAccountDocs(service_codes), ...adminTransactionDocs()];
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
function adminAccountDocs(service_codes: readonly string[]): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'post',
      path: '/admin/accounts/:id/services',
      summary: 'Activate or deactivate payments services (activation needs approved eKYC)',
      body: servicesBody(service_codes),
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

/** A hand move of a transaction refused (admin/commands.ts moveTransaction). */
const MOVE = {
  400: 'invalid_request: a reason is required (except for a re-check)',
  404: 'transaction_not_found',
  409: "the action does not apply to the transaction's status (the answer names both)",
};

/** Any account's transactions, for the admin. */
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
