// Pure checks of Indian identity and account numbers (Aadhaar, PAN; GSTIN: identity/gstin.ts) and of the
// numbers a recharge goes to. Each returns an error message or null, so the zod schemas at
// the edge can name the field.

// Verhoeff's dihedral-group tables (multiplication d, permutation p, inverse inv).
const VERHOEFF_D = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  [1, 2, 3, 4, 0, 6, 7, 8, 9, 5],
  [2, 3, 4, 0, 1, 7, 8, 9, 5, 6],
  [3, 4, 0, 1, 2, 8, 9, 5, 6, 7],
  [4, 0, 1, 2, 3, 9, 5, 6, 7, 8],
  [5, 9, 8, 7, 6, 0, 4, 3, 2, 1],
  [6, 5, 9, 8, 7, 1, 0, 4, 3, 2],
  [7, 6, 5, 9, 8, 2, 1, 0, 4, 3],
  [8, 7, 6, 5, 9, 3, 2, 1, 0, 4],
  [9, 8, 7, 6, 5, 4, 3, 2, 1, 0],
] as const;
const VERHOEFF_P = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  [1, 5, 7, 6, 2, 8, 3, 0, 9, 4],
  [5, 8, 0, 3, 7, 9, 6, 1, 4, 2],
  [8, 9, 1, 6, 0, 4, 3, 5, 2, 7],
  [9, 4, 5, 3, 1, 2, 6, 8, 7, 0],
  [4, 2, 8, 6, 5, 7, 3, 9, 0, 1],
  [2, 7, 9, 3, 8, 0, 6, 4, 1, 5],
  [7, 0, 4, 6, 9, 1, 3, 2, 5, 8],
] as const;
const VERHOEFF_INV = [0, 4, 3, 2, 1, 5, 6, 7, 8, 9] as const;

/** True when the digit string (check digit last) passes Verhoeff's check. */
export function verhoeffValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let c = 0;
  const reversed = [...digits].reverse();
  for (let i = 0; i < reversed.length; i++)
    c = VERHOEFF_D[c]![VERHOEFF_P[i % 8]![Number(reversed[i])]!]!;
  return c === 0;
}

/** The Verhoeff check digit to append to `digits`. */
export function verhoeffCheckDigit(digits: string): string {
  let c = 0;
  const reversed = [...digits].reverse();
  for (let i = 0; i < reversed.length; i++)
    c = VERHOEFF_D[c]![VERHOEFF_P[(i + 1) % 8]![Number(reversed[i])]!]!;
  return String(VERHOEFF_INV[c]);
}

/** Aadhaar: 12 digits (spaces or hyphens between groups allowed), first digit 2–9, Verhoeff check digit last. */
export function normalizeAadhaar(input: string): string {
  return input.replace(/[\s-]/g, '');
}
export function aadhaarError(input: string): string | null {
  const digits = normalizeAadhaar(input);
  if (!/^\d{12}$/.test(digits)) return 'must be 12 digits';
  if (!/^[2-9]/.test(digits)) return 'must not start with 0 or 1';
  if (!verhoeffValid(digits)) return 'fails the Verhoeff check digit';
  return null;
}

/** What is kept of an Aadhaar number: the last four digits. */
export function maskAadhaar(digits: string): string {
  return `XXXX-XXXX-${digits.slice(-4)}`;
}

const PAN_PATTERN = /^[A-Z]{5}[0-9]{4}[A-Z]$/;
export function panError(pan: string): string | null {
  return PAN_PATTERN.test(pan)
    ? null
    : 'must be 5 letters, 4 digits and a letter (e.g. ABCDE1234F)';
}

/** An Indian mobile number as ten digits: strips whitespace, `+91` or a leading `0`. */
export function normalizeMobile(input: string): string {
  const compact = input.replace(/[\s-]/g, '');
  if (compact.startsWith('+91')) return compact.slice(3);
  if (compact.startsWith('0')) return compact.slice(1);
  return compact;
}
export const MOBILE_PATTERN = /^[6-9]\d{9}$/;
