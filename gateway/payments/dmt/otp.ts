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
export function refuseOtpTooSoon(
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

/** 503 in live mode without an SMS sender: no OTP could reach the customer. */
export function requireSms(ctx: Pick<PaymentsContext, 'config' | 'sms'>): void {
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
export async function sendOtpSms(
  ctx: Pick<PaymentsContext, 'sms' | 'logger'>,
  to: { mobile: string; text: string; what: string; log: Record<string, unknown> },
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
