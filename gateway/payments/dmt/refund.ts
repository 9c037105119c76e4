// The refund of a failed transfer, with the customer's consent (as Eko and PaySprint do
// against agent fraud): a transfer that a bank accepted and that then failed is
// refund_pending, its money still held; the agent asks for an OTP, which goes to the
// remitter's mobile (in sandbox mode it comes back in the answer), and the customer's OTP,
// entered by the agent, moves it to refunded and credits the agent's wallet. The OTP is kept
// only as a salted hash, is valid for `dmt.otp.ttl_ms`, is cancelled after
// `dmt.otp.max_attempts` wrong tries (each counted in its own commit before the refusal), and
// is sent at most as often as remitter OTPs are (resend interval, sends per hour).
import { ApiError, conflict, notFound } from '../../http/errors.js';
import type { Account } from '../../store/state.js';
import type { Tx } from '../../store/store.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsContext } from '../context.js';
import type { PaymentTxn } from '../engine/tables.js';
import {
  checkOtp,
  countOtpSend,
  issueOtp,
  newOtp,
  otpRefusal,
  refuseOtpTooSoon,
  requireSms,
  sendOtpSms,
  uncountOtpSend,
  type OtpSends,
  type StoredOtp,
} from './otp.js';
import { maskAccountNumber } from '../identity/bank.js';

type Ctx = Pick<PaymentsContext, 'store' | 'logger' | 'settings' | 'engine' | 'config' | 'sms'>;

/** The OTP of one refund_pending transfer's refund, and how often it was sent. */
export interface RefundOtp {
  txn_id: string;
  account_id: string;
  mobile: string;
  otp: StoredOtp | null;
  sends: OtpSends;
}

declare module '../../store/state.js' {
  interface Tables {
    /** txn id → the OTP of its refund (a row per refund_pending transfer that asked for one) */
    dmt_refund_otps: Record<string, RefundOtp>;
  }
}

/** The refund message, sent by SMS to the remitter in live mode. */
const REFUND_SMS =
  '{otp} is the OTP to confirm that the failed transfer of Rs {amount} to A/c {account} is refunded to your agent. Share it with the agent only when you get your cash back.';

/** The account's own transfer waiting for the customer's consent (404 another's, 409 any other status). */
function refundable(tx: Pick<Tx, 'get'>, account: Account, txn_id: string): PaymentTxn {
  const txn = tx.get('payment_txns', txn_id);
  if (!txn || txn.account_id !== account.id || txn.service !== 'dmt')
    throw notFound(`no transfer ${txn_id.slice(0, 64)}`, 'transaction_not_found');
  if (txn.status !== 'refund_pending')
    throw conflict(
      `transfer ${txn.id} is ${txn.status}; only a transfer in refund_pending is refunded with the customer's OTP`,
      'not_refund_pending',
    );
  return txn;
}

/** Sends (or, in sandbox mode, returns) a new OTP for the refund of a refund_pending transfer. */
export async function requestRefundOtp(
  ctx: Ctx,
  account: Account,
  txn_id: string,
): Promise<{ txn: PaymentTxn; otp: string; expires_at: string; mobile: string }> {
  const { settings, store } = ctx;
  const rules = settings.dmt.otp;
  const live = ctx.config.mode === 'live';
  requireSms(ctx);
  const otp = newOtp(rules.digits);
  const recorded = await store.transact((tx) => {
    const txn = refundable(tx, account, txn_id);
    const mobile = String(txn.details.mobile);
    const existing = tx.get('dmt_refund_otps', txn.id);
    refuseOtpTooSoon(existing?.sends ?? null, mobile, tx.now.getTime(), rules);
    const row: RefundOtp = {
      txn_id: txn.id,
      account_id: account.id,
      mobile,
      otp: issueOtp(otp, tx.now.getTime(), rules.ttl_ms),
      sends: countOtpSend(existing?.sends ?? null, tx.now.toISOString()),
    };
    tx.set('dmt_refund_otps', txn.id, row);
    return { txn, row };
  });
  const { txn, row } = recorded;
  if (live) {
    const text = REFUND_SMS.replaceAll('{otp}', otp)
      .replaceAll('{amount}', String(microsToUnits(txn.amount_micros)))
      .replaceAll('{account}', maskAccountNumber(txn.subject));
    // Nothing was sent: the OTP is void and the send is not counted, so it can be retried at once.
    await sendOtpSms(
      ctx,
      { mobile: row.mobile, text, what: 'a refund', log: { txn_id: txn.id } },
      () =>
        store.transact((tx) => {
          const current = tx.get('dmt_refund_otps', txn.id);
          if (current?.otp?.hash === row.otp!.hash)
            tx.set('dmt_refund_otps', txn.id, {
              ...current,
              otp: null,
              sends: uncountOtpSend(current.sends),
            });
        }),
    );
  }
  return { txn, otp, expires_at: row.otp!.expires_at, mobile: row.mobile };
}

/**
 * The customer's OTP: right, the transfer is refunded (refund_pending → refunded, the hold
 * released to the wallet) in the same commit; wrong, the try is counted and refused.
 */
export async function confirmRefund(
  ctx: Ctx,
  account: Account,
  txn_id: string,
  given: string,
): Promise<PaymentTxn> {
  const { settings, store, engine } = ctx;
  const outcome = await store.transact((tx): { txn: PaymentTxn } | { error: ApiError } => {
    const txn = refundable(tx, account, txn_id);
    const row = tx.get('dmt_refund_otps', txn.id);
    const check = checkOtp(
      row?.otp ?? null,
      given,
      tx.now.getTime(),
      settings.dmt.otp.max_attempts,
    );
    if (!check.ok) {
      if (row?.otp) tx.set('dmt_refund_otps', txn.id, { ...row, otp: check.keep });
      return { error: otpRefusal(check, `POST /api/dmt/refund/${txn.id}/otp`) };
    }
    tx.del('dmt_refund_otps', txn.id);
    return {
      txn: engine.refundWithConsent(
        tx,
        txn,
        `refund confirmed by the customer's OTP (${row!.mobile})`,
      ),
    };
  });
  if ('error' in outcome) throw outcome.error;
  return outcome.txn;
}
