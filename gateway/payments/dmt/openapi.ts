// The routes of DMT under RBI's 2024 framework for GET /openapi.json, from the schemas the
// routes parse with.
import type { RouteDoc } from '../../http/openapi.js';
import type { PaymentsConfig } from '../config.js';
import { remitterKycBody, remitterLevelBody, transferOtpBody } from './schemas.js';

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
