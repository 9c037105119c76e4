// Money is an integer count of micro-units everywhere inside the gateway; JSON numbers in
// currency units exist only at the API edge, and are converted here without float sums.
export const MICROS_PER_UNIT = 1_000_000;

export class AmountError extends Error {}

/**
 * Converts an API amount (a JSON number in currency units) to micro-units exactly.
 * Works on the number's shortest decimal representation, so 0.1 becomes 100000, not 99999.
 */
export function unitsToMicros(amount: number, max_decimals = 6): number {
  if (typeof amount !== 'number' || !Number.isFinite(amount))
    throw new AmountError('must be a finite number');
  const text = String(amount);
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw new AmountError('is out of range');
  const [, sign, whole, fraction = ''] = match;
  if (fraction.length > max_decimals)
    throw new AmountError(`must have at most ${max_decimals} decimal places`);
  const micros = Number(whole) * MICROS_PER_UNIT + Number(fraction.padEnd(6, '0'));
  if (!Number.isSafeInteger(micros)) throw new AmountError('is out of range');
  return sign === '-' ? -micros : micros;
}

/** Micro-units to a JSON number in currency units (the division is correctly rounded). */
export function microsToUnits(micros: number): number {
  assertMicros(micros);
  return micros / MICROS_PER_UNIT;
}

export function assertMicros(micros: number): void {
  if (!Number.isSafeInteger(micros))
    throw new Error(`invariant: amount ${micros} is not an integer of micro-units`);
}
