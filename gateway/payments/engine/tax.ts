// The tax rules of the platform's money (docs/payments-api.md, "Tax"), pure functions:
// - GST on a fee: every fee is GST-inclusive; it splits into its taxable value and the GST,
//   CGST + SGST (UTGST in a union territory without a legislature) when the account's state is
//   the operator's (an intra-state supply), IGST otherwise. Rounding, to the paisa, half up:
//     inter-state: IGST = round(fee × r / (100 + r)), taxable = fee − IGST
//     intra-state: CGST = SGST = round(fee × (r / 2) / (100 + r)), taxable = fee − CGST − SGST
//   so the parts always add up to the fee, and CGST always equals SGST as an invoice shows them.
// - TDS on a commission (section 194H): round(gross × rate) to the paisa, half up; the rate is
//   the 206AA rate (20 %) when the payee has no PAN on record.
import { microsToUnits } from '../../util/money.js';

const PAISA = 10_000n;
const BP = 10_000n;

/** `numerator / denominator` in micro-units, rounded half up to the paisa. */
function roundToPaisa(numerator: bigint, denominator: bigint): number {
  const paise = (2n * numerator + denominator * PAISA) / (2n * denominator * PAISA);
  return Number(paise * PAISA);
}

/** GST state codes and names (the first two digits of a GSTIN). `ut`: a union territory without a legislature (UTGST). */
export const GST_STATES: Readonly<Record<string, { name: string; ut: boolean }>> = {
  '01': { name: 'Jammu and Kashmir', ut: false },
  '02': { name: 'Himachal Pradesh', ut: false },
  '03': { name: 'Punjab', ut: false },
  '04': { name: 'Chandigarh', ut: true },
  '05': { name: 'Uttarakhand', ut: false },
  '06': { name: 'Haryana', ut: false },
  '07': { name: 'Delhi', ut: false },
  '08': { name: 'Rajasthan', ut: false },
  '09': { name: 'Uttar Pradesh', ut: false },
  '10': { name: 'Bihar', ut: false },
  '11': { name: 'Sikkim', ut: false },
  '12': { name: 'Arunachal Pradesh', ut: false },
  '13': { name: 'Nagaland', ut: false },
  '14': { name: 'Manipur', ut: false },
  '15': { name: 'Mizoram', ut: false },
  '16': { name: 'Tripura', ut: false },
  '17': { name: 'Meghalaya', ut: false },
  '18': { name: 'Assam', ut: false },
  '19': { name: 'West Bengal', ut: false },
  '20': { name: 'Jharkhand', ut: false },
  '21': { name: 'Odisha', ut: false },
  '22': { name: 'Chhattisgarh', ut: false },
  '23': { name: 'Madhya Pradesh', ut: false },
  '24': { name: 'Gujarat', ut: false },
  '25': { name: 'Daman and Diu', ut: true },
  '26': { name: 'Dadra and Nagar Haveli and Daman and Diu', ut: true },
  '27': { name: 'Maharashtra', ut: false },
  '28': { name: 'Andhra Pradesh (before 2014)', ut: false },
  '29': { name: 'Karnataka', ut: false },
  '30': { name: 'Goa', ut: false },
  '31': { name: 'Lakshadweep', ut: true },
  '32': { name: 'Kerala', ut: false },
  '33': { name: 'Tamil Nadu', ut: false },
  '34': { name: 'Puducherry', ut: false },
  '35': { name: 'Andaman and Nicobar Islands', ut: true },
  '36': { name: 'Telangana', ut: false },
  '37': { name: 'Andhra Pradesh', ut: false },
  '38': { name: 'Ladakh', ut: true },
  '97': { name: 'Other Territory', ut: true },
};

export function stateName(code: string | null): string | null {
  return code === null ? null : (GST_STATES[code]?.name ?? null);
}

/** The GST split of one fee, as stored on its transaction and shown on its receipt. */
export interface TaxSplit {
  /** The fee as charged (GST included). */
  fee_micros: number;
  taxable_micros: number;
  cgst_micros: number;
  /** SGST, or UTGST when the operator's state is a union territory without a legislature. */
  sgst_micros: number;
  igst_micros: number;
  /** The GST rate in basis points (1800 = 18 %). */
  rate_bp: number;
  supply: 'intra_state' | 'inter_state';
  /** Where the service is supplied (the account's state, or the operator's when it has none on record). */
  place_of_supply: string;
  /** The second half's name: `sgst` or `utgst`. */
  state_tax: 'sgst' | 'utgst';
}

/**
 * Splits a GST-inclusive fee. The recipient's state is the account's (from its GSTIN or its
 * address); without one, the operator's own (IGST Act s.12(2)(b): the supplier's location
 * when the recipient's address is not on record), which makes it intra-state.
 */
export function gstSplit(
  fee_micros: number,
  rate_bp: number,
  operator_state: string,
  recipient_state: string | null,
): TaxSplit {
  const place_of_supply = recipient_state ?? operator_state;
  const intra = place_of_supply === operator_state;
  const state_tax = GST_STATES[operator_state]?.ut ? 'utgst' : 'sgst';
  const base = {
    fee_micros,
    rate_bp,
    place_of_supply,
    state_tax,
    supply: intra ? ('intra_state' as const) : ('inter_state' as const),
  } as const;
  const fee = BigInt(fee_micros);
  const denominator = BP + BigInt(rate_bp);
  if (intra) {
    const half = roundToPaisa(fee * BigInt(rate_bp), 2n * denominator);
    return {
      ...base,
      taxable_micros: fee_micros - 2 * half,
      cgst_micros: half,
      sgst_micros: half,
      igst_micros: 0,
    };
  }
  const igst = roundToPaisa(fee * BigInt(rate_bp), denominator);
  return {
    ...base,
    taxable_micros: fee_micros - igst,
    cgst_micros: 0,
    sgst_micros: 0,
    igst_micros: igst,
  };
}

/** The ledger accounts a fee goes to: its taxable value to `revenue`, each GST part to its own account. */
export function taxEntries(revenue: string, split: TaxSplit): Array<[string, number]> {
  const entries: Array<[string, number]> = [[revenue, split.taxable_micros]];
  if (split.cgst_micros > 0) entries.push(['gst:cgst', split.cgst_micros]);
  if (split.sgst_micros > 0) entries.push([`gst:${split.state_tax}`, split.sgst_micros]);
  if (split.igst_micros > 0) entries.push(['gst:igst', split.igst_micros]);
  return entries;
}

export function gstMicros(split: TaxSplit): number {
  return split.cgst_micros + split.sgst_micros + split.igst_micros;
}

/** How a split reads on a transaction, a receipt or a webhook (currency units). */
export function taxView(split: TaxSplit) {
  return {
    fee: microsToUnits(split.fee_micros),
    taxable_value: microsToUnits(split.taxable_micros),
    gst_rate: split.rate_bp / 100,
    supply: split.supply,
    place_of_supply: split.place_of_supply,
    cgst: microsToUnits(split.cgst_micros),
    [split.state_tax]: microsToUnits(split.sgst_micros),
    igst: microsToUnits(split.igst_micros),
    gst: microsToUnits(gstMicros(split)),
  };
}

/** TDS on a commission of `gross_micros` at `rate_bp`, rounded half up to the paisa (never more than the gross). */
export function tdsMicros(gross_micros: number, rate_bp: number): number {
  return Math.min(gross_micros, roundToPaisa(BigInt(gross_micros) * BigInt(rate_bp), BP));
}

/** The TDS rate for a payee: section 194H's, or section 206AA's when no PAN is on record. */
export function tdsRateBp(
  tds: { rate: number; rate_without_pan: number },
  pan: string | null,
): number {
  return pan ? tds.rate : Math.max(tds.rate, tds.rate_without_pan);
}

/** The state of a GSTIN (its first two digits). */
export function gstinState(gstin: string | null | undefined): string | null {
  return gstin && /^\d{2}/.test(gstin) ? gstin.slice(0, 2) : null;
}

/** The operator as a party to its tax documents (statements, invoices): its settings and its GST state. */
export function operatorParty(
  pricing: { operator_state: string },
  settings: { tax: { operator: Record<string, unknown> } },
) {
  const operator = settings.tax.operator as {
    name: string;
    gstin?: string;
    pan?: string;
    tan?: string;
    address?: string;
  };
  return {
    name: operator.name,
    gstin: operator.gstin ?? null,
    pan: operator.pan ?? null,
    tan: operator.tan ?? null,
    address: operator.address ?? null,
    state: pricing.operator_state,
  };
}
