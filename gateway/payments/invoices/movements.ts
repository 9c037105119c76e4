// What a posting moved on the fee and GST accounts, the one reading of the ledger that both
// the issuing of GST documents (issue.ts) and `verify` (verify.ts) use: the taxable value is
// what went to `revenue:<payment service>`, the tax what went to `gst:cgst`, `gst:sgst` /
// `gst:utgst` and `gst:igst`. A charge moves them up (a tax invoice's line), a reversal of a
// charge moves them down (a credit note's line); the AI room's `revenue:ai` is not a fee.
import type { PaymentService } from '../../providers/types.js';
import type { Posting } from '../../store/state.js';

const IST_OFFSET_MS = 330 * 60_000;

/** The calendar month in India (`YYYY-MM`) of an instant. */
export function istMonth(at_ms: number): string {
  return new Date(at_ms + IST_OFFSET_MS).toISOString().slice(0, 7);
}

/** The first instant of a month in India, ms. */
export function istMonthStartMs(month: string): number {
  return Date.UTC(Number(month.slice(0, 4)), Number(month.slice(5, 7)) - 1, 1) - IST_OFFSET_MS;
}

export function nextMonth(month: string): string {
  const y = Number(month.slice(0, 4));
  const m = Number(month.slice(5, 7));
  return m === 12 ? `${y + 1}-01` : `${y}-${String(m + 1).padStart(2, '0')}`;
}

export function previousMonth(month: string): string {
  const y = Number(month.slice(0, 4));
  const m = Number(month.slice(5, 7));
  return m === 1 ? `${y - 1}-12` : `${y}-${String(m - 1).padStart(2, '0')}`;
}

/** The Indian financial year (April to March) of a month: `2026-27`. */
export function financialYear(month: string): string {
  const y = Number(month.slice(0, 4));
  const start = Number(month.slice(5, 7)) >= 4 ? y : y - 1;
  return `${start}-${String((start + 1) % 100).padStart(2, '0')}`;
}

export interface FeeMovement {
  account_id: string;
  month: string;
  /** `invoice`: a fee charged; `credit`: a fee given back (a reversal). */
  side: 'invoice' | 'credit';
  service: string;
  /** Positive on both sides (a credit's amounts are what was given back). */
  taxable_micros: number;
  cgst_micros: number;
  sgst_micros: number;
  igst_micros: number;
  state_tax: 'sgst' | 'utgst';
}

/** The payment services' fee accounts (`revenue:<service>`). */
const FEE_ACCOUNTS: ReadonlySet<string> = new Set([
  ...(['recharge', 'dmt', 'pan', 'bills'] satisfies PaymentService[]).map((s) => `revenue:${s}`),
  // A wallet top-up's convenience fee (topups/postings.ts TOPUP_FEE_REVENUE).
  'revenue:topup',
]);
const isFeeAccount = (account: string) => FEE_ACCOUNTS.has(account);
const isGstAccount = (account: string) => account.startsWith('gst:');

/** Whether a posting moves a fee or a GST account (the month pass's filter). */
export function movesFees(posting: Posting): boolean {
  return posting.entries.some(([account]) => isFeeAccount(account) || isGstAccount(account));
}

/** What `posting` moved on the fee and GST accounts, or null when it moved nothing there. */
export function feeMovement(posting: Posting): FeeMovement | null {
  if (!posting.account_id) return null;
  let service: string | null = null;
  let taxable = 0;
  let cgst = 0;
  let sgst = 0;
  let igst = 0;
  let state_tax: 'sgst' | 'utgst' = 'sgst';
  for (const [account, micros] of posting.entries) {
    if (isFeeAccount(account)) {
      taxable += micros;
      service ??= account.slice('revenue:'.length);
    } else if (account === 'gst:cgst') cgst += micros;
    else if (account === 'gst:sgst') sgst += micros;
    else if (account === 'gst:utgst') {
      sgst += micros;
      state_tax = 'utgst';
    } else if (account === 'gst:igst') igst += micros;
  }
  const total = taxable + cgst + sgst + igst;
  if (service === null || total === 0) return null;
  const sign = total > 0 ? 1 : -1;
  return {
    account_id: posting.account_id,
    month: istMonth(Date.parse(posting.ts)),
    side: sign > 0 ? 'invoice' : 'credit',
    service,
    taxable_micros: sign * taxable,
    cgst_micros: sign * cgst,
    sgst_micros: sign * sgst,
    igst_micros: sign * igst,
    state_tax,
  };
}
