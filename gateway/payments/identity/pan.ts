// PAN (Income-tax Act s. 139A; the Income Tax Department's structure): five letters, four
// digits, a check letter. The first three letters are a series, the fourth names the holder's
// status, the fifth is the initial of the surname (a person) or of the name. One parser for
// every field that takes a PAN: eKYC, /api/pan-find and verification, BBPS customer_pan.

/** The fourth character of a PAN names the holder's status. */
export const PAN_HOLDER_TYPES: Readonly<Record<string, string>> = {
  P: 'Individual',
  C: 'Company',
  H: 'HUF',
  F: 'Firm',
  A: 'AOP',
  T: 'Trust',
  B: 'BOI',
  L: 'Local Authority',
  J: 'Artificial Juridical Person',
  G: 'Government',
};

/** A PAN as typed (any case, spaces) in canonical form. */
export function normalizePan(input: string): string {
  return input.replace(/\s/g, '').toUpperCase();
}

/** A PAN in canonical form (upper case, no spaces) with its holder type, or the reason it is not one. */
export function parsePan(input: string): { pan: string; type: string } | { error: string } {
  const pan = normalizePan(input);
  if (!/^[A-Z]{5}[0-9]{4}[A-Z]$/.test(pan))
    return { error: 'must be 5 letters, 4 digits and a letter (e.g. ABCPE1234F)' };
  const type = Object.hasOwn(PAN_HOLDER_TYPES, pan[3]!) ? PAN_HOLDER_TYPES[pan[3]!] : undefined;
  if (!type)
    return {
      error: `the fourth character must be a holder status (${Object.keys(PAN_HOLDER_TYPES).join(', ')}), not ${pan[3]}`,
    };
  return { pan, type };
}

/** Why `input` is not a PAN, or null. */
export function panError(input: string): string | null {
  const parsed = parsePan(input);
  return 'error' in parsed ? parsed.error : null;
}
