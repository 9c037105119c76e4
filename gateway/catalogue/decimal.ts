// Exact decimal arithmetic for prices: a catalogue price (US dollars per million tokens, a
// decimal string) times an exchange rate (a decimal) becomes integer micro-units of the
// wallet's currency per million tokens, rounded up once; no float product ever decides a price.

interface Decimal {
  /** The value is digits / 10^scale. */
  digits: bigint;
  scale: number;
}

const DECIMAL = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i;

/** A non-negative decimal from its text ("1.25", "3e-7") or a finite number's shortest text. */
export function parseDecimal(value: string | number): Decimal {
  const text = typeof value === 'number' ? String(value) : value;
  const match = DECIMAL.exec(text);
  if (!match || text.length > 64) throw new RangeError(`"${text}" is not a non-negative decimal`);
  const [, whole, fraction = '', exponent = '0'] = match;
  const scale = fraction.length - Number(exponent);
  const digits = BigInt(whole! + fraction);
  if (Math.abs(scale) > 40) throw new RangeError(`"${text}" is out of range`);
  return scale >= 0 ? { digits, scale } : { digits: digits * 10n ** BigInt(-scale), scale: 0 };
}

/** The decimal's shortest plain text ("0.000003" → "0.000003", 3e-7 → "0.0000003"). */
export function formatDecimal({ digits, scale }: Decimal): string {
  if (scale === 0) return digits.toString();
  const text = digits.toString().padStart(scale + 1, '0');
  const whole = text.slice(0, text.length - scale);
  const fraction = text.slice(text.length - scale).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

/** A per-token price as per million tokens, exactly (the shift of six decimal places). */
export function perMillion(per_token: string | number): string {
  const { digits, scale } = parseDecimal(per_token);
  return scale >= 6
    ? formatDecimal({ digits, scale: scale - 6 })
    : formatDecimal({ digits: digits * 10n ** BigInt(6 - scale), scale: 0 });
}

/**
 * `units_per_million` (a price in the catalogue's currency per million tokens) at
 * `exchange_rate` (wallet currency units per catalogue currency unit), in integer micro-units
 * of the wallet's currency per million tokens: exact, rounded up to the next micro-unit.
 */
export function convertedMicrosPerMillion(
  units_per_million: string,
  exchange_rate: string | number,
): number {
  const price = parseDecimal(units_per_million);
  const rate = parseDecimal(exchange_rate);
  const scale = 10n ** BigInt(price.scale + rate.scale);
  const numerator = price.digits * rate.digits * 1_000_000n;
  const micros = (numerator + scale - 1n) / scale;
  if (micros > BigInt(Number.MAX_SAFE_INTEGER))
    throw new RangeError(`${units_per_million} at ${exchange_rate} is out of range`);
  return Number(micros);
}
