// The one GSTIN check (a regular taxpayer's GST identification number, CGST Rules, rule 10 and
// Form GST REG-06), used wherever a GSTIN enters: the operator's own (`payments.tax.operator.
// gstin`) and an account's on its eKYC. Fifteen characters:
//   1–2   the State or Union territory code (01–38 as the GST state list; 97 "Other Territory")
//   3–12  the holder's PAN (5 letters, 4 digits, a letter; the 4th letter is the holder's type)
//   13    the entity number: the holder's 1st to 35th registration in that state (1–9, A–Z)
//   14    `Z` (reserved; every regular registration has it)
//   15    the check character, GSTN's mod-36 scheme over the first 14 characters
// Other registrations (UIN of UN bodies, non-resident OIDAR `99..OS.`, TDS/TCS deductors with a
// TAN) have other shapes; neither the operator nor a retailer paying our fees holds one, so
// they are refused here with the same message.
import { z } from 'zod';
import { PAN_HOLDER_TYPES } from './pan.js';

const BASE36 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

const GSTIN_SHAPE = /^[0-9]{2}[A-Z]{5}[0-9]{4}[A-Z][1-9A-Z]Z[0-9A-Z]$/;

/** State codes a regular GSTIN may start with: 01–38 and 97 (Other Territory). */
function knownState(code: string): boolean {
  const n = Number(code);
  return (n >= 1 && n <= 38) || n === 97;
}

/**
 * The 15th character: each of the first 14 characters' value (0–9, A–Z = 10–35) times its
 * weight (1 at odd places, 2 at even ones, from the left), the product's base-36 digits
 * summed (quotient + remainder of ÷36); the check is (36 − sum mod 36) mod 36.
 */
export function gstinCheckCharacter(first14: string): string {
  let sum = 0;
  for (let i = 0; i < first14.length; i++) {
    const value = BASE36.indexOf(first14[i]!);
    if (value < 0) throw new Error(`not a GSTIN character: ${JSON.stringify(first14[i])}`);
    const product = value * (i % 2 === 0 ? 1 : 2);
    sum += Math.floor(product / 36) + (product % 36);
  }
  return BASE36[(36 - (sum % 36)) % 36]!;
}

/**
 * Why `gstin` is not a regular taxpayer's GSTIN, or null when it is. With `pan`, the GSTIN
 * must also carry that PAN (a registration is PAN-based).
 */
export function gstinError(gstin: string, pan?: string): string | null {
  if (!GSTIN_SHAPE.test(gstin))
    return 'must be 15 characters: a 2-digit state code, the PAN, an entity character, Z and a check character';
  if (!knownState(gstin.slice(0, 2)))
    return 'has a state code that is not a GST state (01–38, or 97)';
  if (!Object.hasOwn(PAN_HOLDER_TYPES, gstin[5]!))
    return `carries a PAN whose 4th character (${gstin[5]}) is no holder type (${Object.keys(PAN_HOLDER_TYPES).join(', ')})`;
  if (pan !== undefined && gstin.slice(2, 12) !== pan)
    return 'does not contain the PAN given in pan_number';
  if (gstinCheckCharacter(gstin.slice(0, 14)) !== gstin[14])
    return 'fails the mod-36 check character';
  return null;
}

/** A GSTIN as it arrives (spaces trimmed, upper-cased), checked in full. */
export const gstinSchema = z
  .string()
  .trim()
  .max(15, 'must be 15 characters')
  .transform((v) => v.toUpperCase())
  .superRefine((value, ctx) => {
    const message = gstinError(value);
    if (message) ctx.addIssue({ code: 'custom', message });
  });
