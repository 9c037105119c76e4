// Aadhaar numbers (UIDAI): 12 digits, the first 2–9 (0 and 1 are never issued), the last a
// Verhoeff check digit over the other eleven. Only the last four digits are ever shown; a
// duplicate across accounts is found by the number's fingerprint (identity/duplicates.ts).

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

/** An Aadhaar number as typed (groups of four with spaces or hyphens) as its 12 digits. */
export function normalizeAadhaar(input: string): string {
  return input.replace(/[\s-]/g, '');
}

/** Why `digits` (normalized) is not an Aadhaar number, or null. */
export function aadhaarError(digits: string): string | null {
  if (!/^\d{12}$/.test(digits)) return 'must be 12 digits';
  if (!/^[2-9]/.test(digits)) return 'must not start with 0 or 1';
  if (!verhoeffValid(digits)) return 'fails the Verhoeff check digit (a digit is mistyped)';
  return null;
}

/** What is shown of an Aadhaar number: the last four digits. */
export function maskAadhaar(digits: string): string {
  return `XXXX-XXXX-${digits.slice(-4)}`;
}
