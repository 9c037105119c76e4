// Display formatting for the dashboard. Amounts stay integers of micro-units until here;
// the text is built from the integer digits, never from a float.
import { MICROS_PER_UNIT } from '../util/money.js';

const SYMBOLS: Record<string, string> = { INR: '₹', USD: '$', EUR: '€', GBP: '£', JPY: '¥' };

function groupDigits(whole: string, currency: string): string {
  if (currency === 'INR') {
    // Indian grouping: the last three digits, then pairs (12,34,567).
    if (whole.length <= 3) return whole;
    const last = whole.slice(-3);
    const rest = whole.slice(0, -3).replace(/\B(?=(\d{2})+(?!\d))/g, ',');
    return `${rest},${last}`;
  }
  return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * 1234567891 micros → "1,234.567891"; 1500000 → "1.50". At least two decimals, more only
 * when the amount has them (AI costs carry up to six).
 */
export function formatUnits(micros: number, currency = 'INR'): string {
  if (!Number.isSafeInteger(micros)) throw new Error(`not an integer of micro-units: ${micros}`);
  const negative = micros < 0;
  const abs = Math.abs(micros);
  const whole = String(Math.floor(abs / MICROS_PER_UNIT));
  let fraction = String(abs % MICROS_PER_UNIT)
    .padStart(6, '0')
    .replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${negative ? '−' : ''}${groupDigits(whole, currency)}.${fraction}`;
}

/** With the currency symbol (or code): "₹1,234.50". */
export function formatMoney(micros: number, currency = 'INR'): string {
  const symbol = SYMBOLS[currency];
  const text = formatUnits(micros, currency);
  const sign = text.startsWith('−') ? '−' : '';
  const digits = sign ? text.slice(1) : text;
  return symbol ? `${sign}${symbol}${digits}` : `${sign}${digits} ${currency}`;
}

/** A signed amount for history rows: "+₹100.00" / "−₹0.002300". */
export function formatSignedMoney(micros: number, currency = 'INR'): string {
  return micros > 0 ? `+${formatMoney(micros, currency)}` : formatMoney(micros, currency);
}

/** "2025-03-04 13:05 UTC": the server renders in UTC, and says so. */
export function formatTimestamp(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '—';
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
