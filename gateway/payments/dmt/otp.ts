// One OTP mechanism for DMT's three confirmations: a remitter's registration (its mobile), a
// failed transfer's refund (the customer's consent) and every transfer (RBI's 2024
// framework). A code is random, kept only as a salted SHA-256 and compared in constant time;
// it expires after `dmt.otp.ttl_ms`; wrong tries are counted in their own commit and cancel it
// at `dmt.otp.max_attempts`; sends to one number are limited (a resend interval, a number an
// hour); an SMS that could not be sent voids its OTP and is not counted, so it can be asked
// for again at once.
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { ApiError } from '../../http/errors.js';
import { ProviderUnavailableError } from '../../providers/types.js';
import type { Tx } from '../../store/types.js';
import type { PaymentsContext } from '../context.js';

export function newOtp(digits: number): string {
  return String(randomInt(0, 10 ** digits)).padStart(digits, '0');
}

export function hashOtp(otp: string, salt: string): string {
  return createHash('sha256').update(`${salt}:${otp}`).digest('hex');
}

export function newOtpSalt(): string {
  return randomBytes(16).toString('hex');
}

export function otpMatches(otp: string, salt: string, hash: string): boolean {
  const given = Buffer.from(hashOtp(otp, salt), 'hex');
  const stored = Buffer.from(hash, 'hex');
  return given.length === stored.length && timingSafeEqual(given, stored);
}

/** An OTP waiting to be entered: only its salted hash is kept. */
export interface StoredOtp {
  hash: string;
  salt: string;
  expires_at: string;
  attempts: number;
}

/** What an entered OTP is worth: right, or why not and what to keep of the stored OTP (null: cancel it). */
export type OtpCheck =
  | { ok: true }
  | {
      ok: false;
      code: 'otp_not_requested' | 'otp_expired' | 'otp_invalid' | 'otp_attempts_exceeded';
      /** Attempts left (otp_invalid). */
      left: number;
      attempts: number;
      keep: StoredOtp | null;
    };

/**
 * One try of an OTP (a remitter's registration, a refund's consent, a transfer): none waiting,
 * expired (it is cancelled), wrong (counted; at `max_attempts` it is cancelled), or right. The
 * caller commits `keep` before it refuses, so wrong guesses are really counted.
 */
export function checkOtp(
  stored: StoredOtp | null,
  given: string,
  now_ms: number,
  max_attempts: number,
): OtpCheck {
  if (!stored) return { ok: false, code: 'otp_not_requested', left: 0, attempts: 0, keep: null };
  if (now_ms >= Date.parse(stored.expires_at))
    return { ok: false, code: 'otp_expired', left: 0, attempts: stored.attempts, keep: null };
  if (otpMatches(given, stored.salt, stored.hash)) return { ok: true };
  const attempts = stored.attempts + 1;
  const left = max_attempts - attempts;
  if (left <= 0) return { ok: false, code: 'otp_attempts_exceeded', left: 0, attempts, keep: null };
  return { ok: false, code: 'otp_invalid', left, attempts, keep: { ...stored, attempts } };
}

/** A new OTP waiting for `code`: salted, hashed, valid `ttl_ms` from `now_ms`. */
export function issueOtp(code: string, now_ms: number, ttl_ms: number): StoredOtp {
  const salt = newOtpSalt();
  return {
    hash: hashOtp(code, salt),
    salt,
    expires_at: new Date(now_ms + ttl_ms).toISOString(),
    attempts: 0,
  };
}

/** Sends of OTPs to one number in the current hour window (bounded: resend interval, sends per hour). */
export interface OtpSends {
  window_start: string;
  count: number;
  last_at: string;
}

/** Why a new OTP may not be sent yet (the wait in seconds), or null; and the sends counted with this one. */
export function otpSendRefusal(
  sends: OtpSends | null,
  now_ms: number,
  rules: { resend_interval_ms: number; max_sends_per_hour: number },
): { message: string; wait_s: number } | null {
  if (!sends) return null;
  const since_ms = now_ms - Date.parse(sends.last_at);
  if (since_ms < rules.resend_interval_ms) {
    const wait_s = Math.ceil((rules.resend_interval_ms - since_ms) / 1000);
    return {
      message: `an OTP was sent ${Math.floor(since_ms / 1000)} s ago; a new one can be requested in ${wait_s} s`,
      wait_s,
    };
  }
  const in_window = now_ms - Date.parse(sends.window_start) < 3_600_000;
  if (in_window && sends.count >= rules.max_sends_per_hour)
    return {
      message: `${sends.count} OTPs were sent in the last hour, the most allowed`,
      wait_s: Math.ceil((Date.parse(sends.window_start) + 3_600_000 - now_ms) / 1000),
    };
  return null;
}

/** The sends with one more at `at`. */
export function countOtpSend(sends: OtpSends | null, at: string): OtpSends {
  const now_ms = Date.parse(at);
  const in_window = sends !== null && now_ms - Date.parse(sends.window_start) < 3_600_000;
  return {
    window_start: in_window ? sends.window_start : at,
    count: in_window ? sends.count + 1 : 1,
    last_at: at,
  };
}

/** The sends without one that failed: not counted against the hour, no resend interval to wait. */
export function uncountOtpSend(sends: OtpSends): OtpSends {
  return { ...sends, count: Math.max(0, sends.count - 1), last_at: new Date(0).toISOString() };
}

/** The 422 of an OTP that was not accepted; `request` names the call that sends a new one. */
export function otpRefusal(check: Extract<OtpCheck, { ok: false }>, request: string): ApiError {
  const text = {
    otp_not_requested: `there is no OTP to verify; request one with ${request}`,
    otp_expired: `the OTP has expired; request a new one with ${request}`,
    otp_invalid: `wrong OTP; ${check.left} attempt${check.left === 1 ? '' : 's'} left`,
    otp_attempts_exceeded: `wrong OTP ${check.attempts} times; this OTP is cancelled, request a new one with ${request}`,
  }[check.code];
  return new ApiError(422, check.code, text, 'otp');
}

/** The resend interval and the hourly limit of OTPs to one number: 429 with Retry-After. */
function refuseOtpTooSoon(
  sends: OtpSends | null,
  mobile: string,
  now_ms: number,
  rules: { resend_interval_ms: number; max_sends_per_hour: number },
): void {
  const refusal = otpSendRefusal(sends, now_ms, rules);
  if (!refusal) return;
  throw new ApiError(429, 'otp_rate_limited', `${refusal.message} (${mobile})`, 'mobile', null, {
    'Retry-After': String(refusal.wait_s),
  });
}

/**
 * One more send of an OTP to `mobile`, in the commit that records it: refused (429, with
 * Retry-After) within the resend interval or past the hour's limit, else counted.
 */
export function countSend(
  sends: OtpSends | null,
  mobile: string,
  now: Date,
  rules: { resend_interval_ms: number; max_sends_per_hour: number },
): OtpSends {
  refuseOtpTooSoon(sends, mobile, now.getTime(), rules);
  return countOtpSend(sends, now.toISOString());
}

/** An OTP's SMS from its template: `{otp}`, then the template's own `fields`, then `{minutes}` (its lifetime). */
export function otpText(
  template: string,
  code: string,
  ttl_ms: number,
  fields: Record<string, string> = {},
): string {
  let text = template.replaceAll('{otp}', code);
  for (const [name, value] of Object.entries(fields)) text = text.replaceAll(`{${name}}`, value);
  return text.replaceAll('{minutes}', String(Math.round(ttl_ms / 60_000)));
}

/** An OTP's SMS, and how to undo its send when it cannot go out (in its own commit). */
export interface OtpMessage {
  mobile: string;
  text: string;
  /** What the OTP confirms, for the log line of a failed send ('a remitter'). */
  what: string;
  log: Record<string, unknown>;
  /** The OTP void (a late SMS confirms nothing) and its send uncounted, so it can be asked for again at once. */
  unsend(tx: Tx): void;
}

/**
 * Sends an OTP: the one sequence of DMT's three (a remitter's registration, a refund's
 * consent, a transfer). 503 in live mode without an SMS sender; a new code of `digits`; one
 * commit in which `record` checks its own rules and the sends (countSend), counts this one and
 * keeps the OTP issued for the code (issueOtp); then, in live mode, the SMS `message` gives
 * (null: nothing to send, e.g. a remitter verified already). A send that fails runs `unsend`
 * and is 502 `sms_failed` (sendOtpSms).
 */
export async function sendOtp<R>(
  ctx: Pick<PaymentsContext, 'config' | 'sms' | 'logger' | 'store'>,
  digits: number,
  record: (tx: Tx, code: string) => R,
  message: (recorded: R, code: string) => OtpMessage | null,
): Promise<{ recorded: R; code: string }> {
  requireSms(ctx);
  const code = newOtp(digits);
  const recorded = await ctx.store.transact((tx) => record(tx, code));
  const sms = ctx.config.mode === 'live' ? message(recorded, code) : null;
  if (sms) await sendOtpSms(ctx, sms, () => ctx.store.transact((tx) => sms.unsend(tx)));
  return { recorded, code };
}

/** One try of an OTP as its holder takes it, in the try's commit (see verifyOtp). */
export type OtpTry<T> =
  | {
      /** The OTP waiting (null: none was requested, or it was cancelled). */
      stored: StoredOtp | null;
      /** A wrong or expired code: what to keep of the OTP (`check.keep`), committed before the refusal. */
      refused(check: Extract<OtpCheck, { ok: false }>): void;
      /** The right code: the OTP used up, and what it confirmed, in the same commit. */
      accepted(): T;
    }
  /** Nothing to check (a remitter verified already): the answer as it is. */
  | { answer: T };

/**
 * Verifies an OTP: the one sequence of DMT's three. In one commit `take` reads the holder (and
 * throws its own refusals), then the code is checked (checkOtp: expiry, the attempts left,
 * `max_attempts`): wrong or expired, `refused` keeps the counted try and the commit is made
 * before the 422 that names `request` (the call that sends a new one), so wrong guesses are
 * really counted; right, `accepted` uses it in the same commit.
 */
export async function verifyOtp<T>(
  store: Pick<PaymentsContext['store'], 'transact'>,
  given: string,
  rules: { max_attempts: number; request: string },
  take: (tx: Tx) => OtpTry<T>,
): Promise<T> {
  const outcome = await store.transact((tx): { value: T } | { error: ApiError } => {
    const step = take(tx);
    if ('answer' in step) return { value: step.answer };
    const check = checkOtp(step.stored, given, tx.now.getTime(), rules.max_attempts);
    if (!check.ok) {
      step.refused(check);
      return { error: otpRefusal(check, rules.request) };
    }
    return { value: step.accepted() };
  });
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

/** 503 in live mode without an SMS sender: no OTP could reach the customer. */
function requireSms(ctx: Pick<PaymentsContext, 'config' | 'sms'>): void {
  if (ctx.config.mode === 'live' && !ctx.sms)
    throw new ApiError(
      503,
      'sms_unavailable',
      'no SMS sender is configured (payments.dmt.otp.sms), so no OTP can be sent',
    );
}

/**
 * Sends an OTP's text by SMS. When it cannot be sent, `voidOtp` (its own commit) cancels the
 * OTP and uncounts the send, the failure is logged (without the text), and the answer is 502
 * `sms_failed` naming the sender's failure.
 */
async function sendOtpSms(
  ctx: Pick<PaymentsContext, 'sms' | 'logger'>,
  to: Pick<OtpMessage, 'mobile' | 'text' | 'what' | 'log'>,
  voidOtp: () => Promise<void>,
): Promise<void> {
  try {
    await ctx.sms!.send(to.mobile, to.text);
  } catch (error) {
    await voidOtp();
    ctx.logger.warn({ msg: `could not send ${to.what} OTP`, ...to.log, err: error });
    const detail =
      error instanceof ProviderUnavailableError ? error.message : 'the SMS sender failed';
    throw new ApiError(
      502,
      'sms_failed',
      `the OTP could not be sent (${detail}); request it again`,
    );
  }
}
