// The DMT refund with the customer's consent in GET /openapi.json: a transfer that failed
// after the debit waits in refund_pending until the remitter's OTP releases it to the wallet.
import type { RouteDoc } from '../../http/openapi.js';
import { refundBody, refundOtpBody } from './schemas.js';

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
