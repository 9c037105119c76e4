// GSTIN's check (the other identity numbers: identity/). Returns an error message or null,
// so the zod schemas at the edge can name the field.

const GSTIN_CHARSET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** GSTIN's 15th character: the mod-36 check over the first 14 (alternating weights 1 and 2, digits of base 36 summed). */
export function gstinCheckCharacter(first14: string): string {
  let sum = 0;
  for (let i = 0; i < first14.length; i++) {
    const value = GSTIN_CHARSET.indexOf(first14[i]!);
    if (value < 0) throw new Error(`invalid GSTIN character ${first14[i]}`);
    const product = value * (i % 2 === 0 ? 1 : 2);
    sum += Math.floor(product / 36) + (product % 36);
  }
  return GSTIN_CHARSET[(36 - (sum % 36)) % 36]!;
}

/** GSTIN: state code 01–38, the PAN, an entity character, `Z`, the check character. */
export function gstinError(gstin: string, pan?: string): string | null {
  if (!/^[0-9]{2}[A-Z]{5}[0-9]{4}[A-Z][1-9A-Z]Z[0-9A-Z]$/.test(gstin)) {
    return 'must be 15 characters: a 2-digit state code, the PAN, an entity character, Z and a check character';
  }
  const state = Number(gstin.slice(0, 2));
  if (state < 1 || state > 38) return 'has a state code outside 01–38';
  if (pan !== undefined && gstin.slice(2, 12) !== pan)
    return 'does not contain the PAN given in pan_number';
  if (gstinCheckCharacter(gstin.slice(0, 14)) !== gstin[14])
    return 'fails the mod-36 check character';
  return null;
}
