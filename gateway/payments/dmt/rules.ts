// Pure rules of money transfer: calendar months for the monthly limit, the documents a
// remitter's KYC takes (account numbers, IFSC codes, bank names: identity/bank.ts; OTPs: otp.ts).
import { aadhaarError, maskAadhaar } from '../identity/aadhaar.js';
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

/** The officially valid documents' number formats (KYC Master Direction), after upper-casing and dropping spaces. */
const OVD_PATTERNS: Readonly<Record<string, { pattern: RegExp; example: string }>> = {
  passport: { pattern: /^[A-PR-WY][1-9]\d{5}[1-9]$/, example: 'J8369854' },
  voter_id: { pattern: /^[A-Z]{3}\d{7}$/, example: 'ABC1234567' },
  driving_licence: { pattern: /^[A-Z]{2}\d{2}\d{4}\d{7}$/, example: 'MH1420110062821' },
  nrega_job_card: {
    pattern: /^[A-Z]{2}-\d{2}-\d{3}-\d{3}-\d{3}\/\d{1,4}$/,
    example: 'MH-01-001-001-001/1',
  },
};

/** A document number in canonical form, or why it is not one of its type. */
export function parseOvd(
  type: string,
  input: string,
): { number: string; masked: string } | { error: string } {
  if (type === 'aadhaar') {
    const digits = input.replace(/[\s-]/g, '');
    const error = aadhaarError(digits);
    return error ? { error } : { number: digits, masked: maskAadhaar(digits) };
  }
  const rule = OVD_PATTERNS[type];
  const number = input.replace(type === 'nrega_job_card' ? /\s/g : /[\s-]/g, '').toUpperCase();
  if (!rule || !rule.pattern.test(number))
    return { error: `is not a ${type.replace(/_/g, ' ')} number (e.g. ${rule?.example ?? '?'})` };
  return { number, masked: `${'X'.repeat(Math.max(0, number.length - 4))}${number.slice(-4)}` };
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
