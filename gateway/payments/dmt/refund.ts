// The refund of a failed transfer, with the customer's consent (as Eko and PaySprint do
// against agent fraud): a transfer that a bank accepted and that then failed is
// refund_pending, its money still held; the agent asks for an OTP, which goes to the
// remitter's mobile (in sandbox mode it comes back in the answer), and the customer's OTP,
// entered by the agent, moves it to refunded and credits the agent's wallet. The OTP is kept
// only as a salted hash, is valid for `dmt.otp.ttl_ms`, is cancelled after
// `dmt.otp.max_attempts` wrong tries (each counted in its own commit before the refusal), and
// is sent at most as often as remitter OTPs are (resend interval, sends per hour).
// A transfer whose provider refunds at its own end (PaySprint: `PaymentProvider.refunds`) is
// refunded there instead: the provider sends the remitter its OTP, the customer's OTP claims
// the refund at the provider, and only the provider's "done" credits the wallet. The same
// send limits and wrong-try count apply, kept by the gateway.
import { ApiError, conflict, notFound } from '../../http/errors.js';
import { callWithTimeout } from '../../providers/chain.js';
import {
  ProviderUnavailableError,
  type PaymentProvider,
  type ProviderRefunds,
} from '../../providers/types.js';
import type { Account } from '../../store/state.js';
import type { Tx } from '../../store/types.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsContext } from '../context.js';
import { providerRequest } from '../engine/engine.js';
import type { PaymentTxn } from '../engine/tables.js';
import {
  countSend,
  issueOtp,
  otpRefusal,
  otpText,
  sendOtp,
  uncountOtpSend,
  verifyOtp,
  type OtpSends,
  type StoredOtp,
} from './otp.js';
import { maskAccountNumber } from '../identity/bank.js';

type Ctx = Pick<
  PaymentsContext,
  'store' | 'logger' | 'settings' | 'engine' | 'config' | 'sms' | 'providers'
>;

/** The OTP of one refund_pending transfer's refund, and how often it was sent. */
export interface RefundOtp {
  txn_id: string;
  account_id: string;
  mobile: string;
  otp: StoredOtp | null;
  sends: OtpSends;
  /**
   * The OTP was sent by the transfer's provider, which checks it (absent: ours, in `otp`):
   * until when it may be claimed, and the wrong tries counted so far.
   */
  at_provider?: { provider: string; expires_at: string; attempts: number };
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
  const rules = ctx.settings.dmt.otp;
  const provider = await refundingProvider(ctx, account, txn_id);
  if (provider) return requestProviderOtp(ctx, account, txn_id, provider);
  const { recorded, code } = await sendOtp(
    ctx,
    rules.digits,
    (tx, code) =>
      countRefundOtp(tx, account, txn_id, rules, (now_ms) => issueOtp(code, now_ms, rules.ttl_ms)),
    ({ txn, row }, code) => ({
      mobile: row.mobile,
      text: otpText(REFUND_SMS, code, rules.ttl_ms, {
        amount: String(microsToUnits(txn.amount_micros)),
        account: maskAccountNumber(txn.subject),
      }),
      what: 'a refund',
      log: { txn_id: txn.id },
      unsend: (tx) => {
        const current = tx.get('dmt_refund_otps', txn.id);
        if (current?.otp?.hash === row.otp!.hash)
          tx.set('dmt_refund_otps', txn.id, {
            ...current,
            otp: null,
            sends: uncountOtpSend(current.sends),
          });
      },
    }),
  );
  const { txn, row } = recorded;
  return { txn, otp: code, expires_at: row.otp!.expires_at, mobile: row.mobile };
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
  const provider = await refundingProvider(ctx, account, txn_id);
  if (provider) return claimAtProvider(ctx, account, txn_id, given, provider);
  const rules = {
    max_attempts: settings.dmt.otp.max_attempts,
    request: `POST /api/dmt/refund/${txn_id}/otp`,
  };
  return verifyOtp(store, given, rules, (tx) => {
    const txn = refundable(tx, account, txn_id);
    const row = tx.get('dmt_refund_otps', txn.id);
    return {
      stored: row?.otp ?? null,
      refused: (check) => {
        if (row?.otp) tx.set('dmt_refund_otps', txn.id, { ...row, otp: check.keep });
      },
      accepted: () => {
        tx.del('dmt_refund_otps', txn.id);
        return engine.refundWithConsent(
          tx,
          txn,
          `refund confirmed by the customer's OTP (${row!.mobile})`,
        );
      },
    };
  });
}

/** The transfer's provider when it refunds at its own end (checked against the account's own refund_pending transfer). */
async function refundingProvider(
  ctx: Ctx,
  account: Account,
  txn_id: string,
): Promise<(PaymentProvider & { refunds: ProviderRefunds }) | null> {
  const txn = await ctx.store.read(() => refundable(ctx.store, account, txn_id));
  const provider = ctx.providers.dmt.find((candidate) => candidate.name === txn.provider);
  return provider?.refunds ? (provider as PaymentProvider & { refunds: ProviderRefunds }) : null;
}

/** One call to a provider's own OTP API (a refund's, a remitter's), bounded by its timeout; unavailable → 502 `provider_unavailable`. */
export async function askProvider(
  ctx: Pick<Ctx, 'logger'>,
  provider: PaymentProvider,
  what: string,
  call: (signal: AbortSignal) => Promise<{ done: boolean; message: string }>,
): Promise<{ done: boolean; message: string }> {
  let answer: { done: boolean; message: string } | null;
  try {
    answer = await callWithTimeout(provider.timeout_ms, undefined, call);
  } catch (error) {
    if (!(error instanceof ProviderUnavailableError)) throw error;
    ctx.logger.warn({
      msg: `${what} at ${provider.name} failed`,
      provider: provider.name,
      error: error.message,
    });
    answer = null;
  }
  if (answer === null)
    throw new ApiError(
      502,
      'provider_unavailable',
      `${provider.name} could not be reached for ${what}; nothing changed, try again`,
    );
  return answer;
}

/**
 * A send the provider makes itself (a refund's or a remitter's OTP), already counted here:
 * uncounted by `uncount` when the provider cannot be reached (502) or refuses (409 `code`,
 * with its message), so that it can be asked again at once.
 */
export async function providerSendsOtp(
  ctx: Pick<Ctx, 'logger'>,
  provider: PaymentProvider,
  what: string,
  call: (signal: AbortSignal) => Promise<{ done: boolean; message: string }>,
  uncount: () => Promise<unknown>,
  code: string,
  field: string | null = null,
): Promise<void> {
  let answer: { done: boolean; message: string };
  try {
    answer = await askProvider(ctx, provider, what, call);
  } catch (error) {
    await uncount();
    throw error;
  }
  if (!answer.done) {
    await uncount();
    throw new ApiError(
      409,
      code,
      `${provider.name} refused to send ${what}: ${answer.message.slice(0, 200) || 'no reason given'}`,
      field,
    );
  }
}

/** The provider sends the remitter its refund OTP; the send counted against the same limits as ours. */
/**
 * One refund OTP send for a refundable transfer, in the commit that records it: refused while
 * the last send is too recent, counted, with the code `issue` gives (null: the provider's own).
 */
function countRefundOtp(
  tx: Tx,
  account: Account,
  txn_id: string,
  rules: Ctx['settings']['dmt']['otp'],
  issue: (now_ms: number) => RefundOtp['otp'],
): { txn: PaymentTxn; row: RefundOtp } {
  const txn = refundable(tx, account, txn_id);
  const mobile = String(txn.details.mobile);
  const existing = tx.get('dmt_refund_otps', txn.id);
  const sends = countSend(existing?.sends ?? null, mobile, tx.now, rules);
  const row: RefundOtp = {
    txn_id: txn.id,
    account_id: account.id,
    mobile,
    otp: issue(tx.now.getTime()),
    sends,
  };
  tx.set('dmt_refund_otps', txn.id, row);
  return { txn, row };
}

async function requestProviderOtp(
  ctx: Ctx,
  account: Account,
  txn_id: string,
  provider: PaymentProvider & { refunds: ProviderRefunds },
): Promise<{ txn: PaymentTxn; otp: string; expires_at: string; mobile: string }> {
  const { store, settings } = ctx;
  const rules = settings.dmt.otp;
  // The provider sends (and checks) its own code: only the send is counted here.
  const { txn, row } = await store.transact((tx) =>
    countRefundOtp(tx, account, txn_id, rules, () => null),
  );
  const query = { ...providerRequest(txn), provider_ref: txn.provider_ref };
  const uncount = () =>
    store.transact((tx) => {
      const current = tx.get('dmt_refund_otps', txn.id);
      if (current)
        tx.set('dmt_refund_otps', txn.id, { ...current, sends: uncountOtpSend(current.sends) });
    });
  await providerSendsOtp(
    ctx,
    provider,
    'the refund OTP',
    (signal) => provider.refunds.requestOtp(query, signal),
    uncount,
    'refund_refused',
  );
  const expires_at = await store.transact((tx) => {
    const current = tx.get('dmt_refund_otps', txn.id) ?? row;
    const at_provider = {
      provider: provider.name,
      expires_at: new Date(tx.now.getTime() + rules.ttl_ms).toISOString(),
      attempts: 0,
    };
    tx.set('dmt_refund_otps', txn.id, { ...current, otp: null, at_provider });
    return at_provider.expires_at;
  });
  return { txn, otp: '', expires_at, mobile: row.mobile };
}

/**
 * The customer's OTP, claimed at the provider: the provider's "done" refunds the transfer
 * (refund_pending → refunded, in one commit); its refusal is a wrong try, counted before the
 * 422 (the OTP is given up after `max_attempts`, as ours is).
 */
async function claimAtProvider(
  ctx: Ctx,
  account: Account,
  txn_id: string,
  given: string,
  provider: PaymentProvider & { refunds: ProviderRefunds },
): Promise<PaymentTxn> {
  const { store, settings, engine } = ctx;
  const request = `POST /api/dmt/refund/${txn_id.slice(0, 64)}/otp`;
  const txn = await store.transact((tx) => {
    const txn = refundable(tx, account, txn_id);
    const pending = tx.get('dmt_refund_otps', txn.id)?.at_provider;
    if (!pending || pending.provider !== provider.name)
      throw otpRefusal(
        { ok: false, code: 'otp_not_requested', left: 0, attempts: 0, keep: null },
        request,
      );
    if (tx.now.getTime() >= Date.parse(pending.expires_at))
      throw otpRefusal(
        { ok: false, code: 'otp_expired', left: 0, attempts: pending.attempts, keep: null },
        request,
      );
    return txn;
  });
  const query = { ...providerRequest(txn), provider_ref: txn.provider_ref };
  const answer = await askProvider(ctx, provider, 'the refund', (signal) =>
    provider.refunds.claim(query, given, signal),
  );
  const outcome = await store.transact((tx): { txn: PaymentTxn } | { error: ApiError } => {
    const current = refundable(tx, account, txn_id);
    const row = tx.get('dmt_refund_otps', current.id);
    if (answer.done) {
      tx.del('dmt_refund_otps', current.id);
      return {
        txn: engine.refundWithConsent(
          tx,
          current,
          `refund claimed at ${provider.name} with the customer's OTP (${row?.mobile ?? current.details.mobile})`,
        ),
      };
    }
    const attempts = (row?.at_provider?.attempts ?? 0) + 1;
    const left = settings.dmt.otp.max_attempts - attempts;
    if (row?.at_provider)
      tx.set('dmt_refund_otps', current.id, {
        ...row,
        at_provider: left > 0 ? { ...row.at_provider, attempts } : undefined,
      });
    return {
      error: otpRefusal(
        left > 0
          ? { ok: false, code: 'otp_invalid', left, attempts, keep: null }
          : { ok: false, code: 'otp_attempts_exceeded', left: 0, attempts, keep: null },
        request,
      ),
    };
  });
  if ('error' in outcome) throw outcome.error;
  return outcome.txn;
}
