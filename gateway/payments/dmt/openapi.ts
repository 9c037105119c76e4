// The routes of DMT under RBI's 2024 framework, and the refund with the customer's consent
// (a transfer that failed after the debit waits in refund_pending until the remitter's OTP
// releases it to the wallet), for GET /openapi.json, from the schemas the routes parse with.
import type { RouteDoc } from '../../http/openapi.js';
import type { PaymentsConfig } from '../config.js';
import {
  refundBody,
  refundOtpBody,
  remitterKycBody,
  remitterLevelBody,
  transferOtpBody,
} from './schemas.js';

const api = { auth: 'api_key' } as const;
const admin = { tag: 'admin', auth: 'admin' } as const;

/** DMT under RBI's 2024 framework: the remitter's OVD, the transfer OTP, a split transfer, the remitter's level. */
export function rbiRouteDocs(settings: PaymentsConfig): RouteDoc[] {
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

export function dmtRefundRouteDocs(otpDigits: number): RouteDoc[] {
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
