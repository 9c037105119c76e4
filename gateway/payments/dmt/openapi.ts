// DMT's routes in GET /openapi.json, from the schemas the routes parse with: remitters,
// beneficiaries and transfers; RBI's 2024 framework; and the refund with the customer's
// consent (a transfer that failed after the debit waits in refund_pending until the
// remitter's OTP releases it to the wallet).
import type { RouteDoc } from '../../http/openapi.js';
import type { PaymentsConfig } from '../config.js';
import { PAYMENT_ERRORS } from '../shared/openapi.js';
import {
  beneficiaryBody,
  beneficiaryListQuery,
  otpBody,
  refundBody,
  refundOtpBody,
  remitterKycBody,
  remitterBody,
  remitterLevelBody,
  transactBody,
  transferOtpBody,
  verifyBody,
} from './schemas.js';

const api = { auth: 'api_key' } as const;
const admin = { tag: 'admin', auth: 'admin' } as const;

/** DMT: its remitters, beneficiaries and transfers; RBI's framework; the refund with consent. */
export function dmtRouteDocs(settings: PaymentsConfig): RouteDoc[] {
  return [
    ...remitterDocs(settings),
    ...beneficiaryDocs(),
    ...transferDocs(settings),
    ...rbiRouteDocs(settings),
    ...dmtRefundRouteDocs(settings.dmt.otp.digits),
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
        409: 'remitter_refused (a provider that sends the OTP itself refused)',
        429: 'otp_rate_limited (Retry-After)',
        502: 'the SMS could not be sent; provider_unavailable (a provider that sends the OTP itself)',
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
        502: 'provider_unavailable (a provider that checks the OTP itself)',
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
      errors: { ...PAYMENT_ERRORS, 404: 'beneficiary_not_found' },
    },
  ];
}

/** The DMT transfer. */
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
        ...PAYMENT_ERRORS,
        404: 'remitter_not_found, beneficiary_not_found',
        422: 'remitter_not_verified, monthly_limit_exceeded',
      },
    },
  ];
}

/** DMT under RBI's 2024 framework: the remitter's OVD, the transfer OTP, a split transfer, the remitter's level. */
function rbiRouteDocs(settings: PaymentsConfig): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'put',
      path: '/admin/dmt/remitters/:account_id/:mobile/level',
      summary: "A verified remitter's KYC level (its monthly and per-transfer limits)",
      body: remitterLevelBody,
      success: { status: 200, description: 'the remitter' },
      errors: { 409: 'remitter_kyc_required' },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/remitter/kyc',
      summary:
        "Verify the remitter's officially valid document once (RBI's 2024 framework; before the first transfer)",
      body: remitterKycBody,
      success: {
        status: 200,
        description: 'the remitter with kyc {document_type, document_number (masked), level}',
      },
      errors: {
        400: 'invalid_document',
        422: 'kyc_not_verified, remitter_not_verified',
        503: 'providers_unavailable',
      },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'post',
      path: '/api/dmt/transact/otp',
      summary:
        'Send the OTP that confirms one transfer (the parts it will be split into are shown)',
      body: transferOtpBody(settings.dmt),
      success: {
        status: 200,
        description: '{otp_ref, otp_expires_at, sandbox_otp?, parts, per_txn_limit, kyc_level}',
      },
      errors: { 422: 'remitter_kyc_required, monthly_limit_exceeded', 429: 'otp_rate_limited' },
    },
    {
      ...api,
      tag: 'dmt',
      method: 'get',
      path: '/api/dmt/transfers/:parent_id',
      summary: 'A transfer split into parts: its status from its parts, and each part',
      success: {
        status: 200,
        description: '{reference_id, amount, charges, status, sent, refunded, legs}',
      },
    },
  ];
}

const dmt = { tag: 'dmt', auth: 'api_key' } as const;
const REFUNDABLE = {
  404: 'transaction_not_found: no such transfer of this account',
  409: 'not_refund_pending: the transfer is not waiting for a refund',
};

function dmtRefundRouteDocs(otpDigits: number): RouteDoc[] {
  return [
    {
      ...dmt,
      method: 'post',
      path: '/api/dmt/refund/:txn_id/otp',
      summary:
        "Send the remitter an OTP for the refund of a failed transfer (refund_pending); in sandbox mode the OTP is in the answer's sandbox_otp",
      body: refundOtpBody,
      success: {
        status: 200,
        description:
          '{status: true, message, data: {txn_id, status, mobile, amount, otp_expires_at}}',
      },
      errors: {
        ...REFUNDABLE,
        502: 'sms_failed: the OTP could not be sent',
        503: 'sms_unavailable: live mode without an SMS sender',
      },
    },
    {
      ...dmt,
      method: 'post',
      path: '/api/dmt/refund/:txn_id',
      summary:
        "Confirm the refund with the remitter's OTP: the transfer becomes refunded and the amount goes back to the wallet",
      body: refundBody(otpDigits),
      success: {
        status: 200,
        description:
          '{status: true, message, data: {txn_id, status, refund: {posting_id, amount}, balance}}',
      },
      errors: {
        ...REFUNDABLE,
        422: 'otp_not_requested, otp_expired, otp_invalid (attempts left in the message), otp_attempts_exceeded',
      },
    },
  ];
}
