// Pure rules of money transfer: calendar months for the monthly limit, account numbers and
// IFSC codes, bank names, and OTPs (generated at random, kept only as a salted hash).
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

export const IFSC_PATTERN = /^[A-Z]{4}0[A-Z0-9]{6}$/;
export const ACCOUNT_NUMBER_PATTERN = /^\d{9,18}$/;
export const TXN_TYPES = ['IMPS', 'NEFT'] as const;
export type TxnType = (typeof TXN_TYPES)[number];

/** The calendar month (`YYYY-MM`) of an instant, in the given offset from UTC (India: +330). */
export function monthKey(at: Date, utc_offset_minutes: number): string {
  return new Date(at.getTime() + utc_offset_minutes * 60_000).toISOString().slice(0, 7);
}

export function usageKey(mobile: string, month: string): string {
  return `${mobile}:${month}`;
}

/** The month (`YYYY-MM`) of a `dmt_usage` key, or null if the key is not one `usageKey` makes. */
export function usageKeyMonth(key: string): string | null {
  const month = key.slice(key.lastIndexOf(':') + 1);
  return key.includes(':') && /^\d{4}-\d{2}$/.test(month) ? month : null;
}

/**
 * Whether a `dmt_usage` row belongs to a month that is over. The limit is only ever read and
 * reserved under `usageKey(mobile, monthKey(now, offset))`, so such a row is never read again.
 * Rows of the current month, of a later month (a clock set back) and unknown keys are kept.
 */
export function usageMonthOver(key: string, now: Date, utc_offset_minutes: number): boolean {
  const month = usageKeyMonth(key);
  return month !== null && month < monthKey(now, utc_offset_minutes);
}

export function remitterKey(account_id: string, mobile: string): string {
  return `${account_id}:${mobile}`;
}

export function normalizeAccountNumber(input: string): string {
  return input.replace(/[\s-]/g, '');
}

export function normalizeIfsc(input: string): string {
  return input.trim().toUpperCase();
}

/** Banks by the first four letters of the IFSC, for the beneficiary's `bank` when none is given. */
const BANKS: Readonly<Record<string, string>> = {
  SBIN: 'State Bank of India',
  HDFC: 'HDFC Bank',
  ICIC: 'ICICI Bank',
  UTIB: 'Axis Bank',
  KKBK: 'Kotak Mahindra Bank',
  PUNB: 'Punjab National Bank',
  BARB: 'Bank of Baroda',
  CNRB: 'Canara Bank',
  UBIN: 'Union Bank of India',
  BKID: 'Bank of India',
  IOBA: 'Indian Overseas Bank',
  IDIB: 'Indian Bank',
  CBIN: 'Central Bank of India',
  MAHB: 'Bank of Maharashtra',
  UCBA: 'UCO Bank',
  PSIB: 'Punjab & Sind Bank',
  YESB: 'Yes Bank',
  INDB: 'IndusInd Bank',
  IDFB: 'IDFC First Bank',
  FDRL: 'Federal Bank',
  KARB: 'Karnataka Bank',
  SIBL: 'South Indian Bank',
  RATN: 'RBL Bank',
  AIRP: 'Airtel Payments Bank',
  PYTM: 'Paytm Payments Bank',
  IPOS: 'India Post Payments Bank',
};

export function bankForIfsc(ifsc: string): string {
  return BANKS[ifsc.slice(0, 4)] ?? `${ifsc.slice(0, 4)} (IFSC ${ifsc})`;
}

/** Names compared the way a penny-drop match is read: case, punctuation, titles and order ignored. */
export function namesMatch(a: string, b: string): boolean {
  const words = (name: string) =>
    name
      .toUpperCase()
      .replace(/[^A-Z ]/g, ' ')
      .split(/\s+/)
      .filter((w) => w && !['MR', 'MRS', 'MS', 'DR', 'SHRI', 'SMT'].includes(w))
      .sort()
      .join(' ');
  return words(a) !== '' && words(a) === words(b);
}

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

export function maskAccountNumber(account_number: string): string {
  return `${'X'.repeat(Math.max(0, account_number.length - 4))}${account_number.slice(-4)}`;
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
 * One try of an OTP (remitter registration, a refund's consent): none waiting, expired (it is
 * cancelled), wrong (counted; at `max_attempts` it is cancelled), or right. The caller commits
 * `keep` before it refuses, so wrong guesses are really counted.
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
