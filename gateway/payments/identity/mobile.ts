// Indian mobile numbers (TRAI's National Numbering Plan): ten digits, the first 6–9. Typed
// with +91, a trunk 0, spaces or hyphens, they are kept as the ten digits.

export const MOBILE_PATTERN = /^[6-9]\d{9}$/;

/** An Indian mobile number as ten digits: strips whitespace and hyphens, `+91` or a leading `0`. */
export function normalizeMobile(input: string): string {
  const compact = input.replace(/[\s-]/g, '');
  if (compact.startsWith('+91')) return compact.slice(3);
  if (compact.startsWith('0')) return compact.slice(1);
  return compact;
}

/** Why `mobile` (normalized) is not a mobile number, or null. */
export function mobileError(mobile: string): string | null {
  return MOBILE_PATTERN.test(mobile)
    ? null
    : 'must be a 10-digit Indian mobile number starting with 6–9';
}
