// The convenience fee of a top-up and the limits it must keep (pure). The fee is a percentage
// of the amount for the method asked for (else `default`), with GST at the payments room's fee
// rate added (none when the operator has no GSTIN, as for every fee: payments/engine/tax.ts);
// the customer pays amount + fee, the wallet gets the amount.
import type { Config } from '../config.js';
import { badRequest } from '../http/errors.js';
import { gstSplit, gstinState, type TaxSplit } from '../payments/engine/tax.js';
import { microsToUnits } from '../util/money.js';
import type { FeeQuote } from './room.js';
import type { TopupMethod } from './types.js';

const PAISA = 10_000;

/** `micros × bp / 10 000`, rounded half up to the paisa. */
function percentOf(micros: number, bp: number): number {
  const exact =
    (BigInt(micros) * BigInt(bp) * 2n + 10_000n * BigInt(PAISA)) / (20_000n * BigInt(PAISA));
  return Number(exact) * PAISA;
}

export interface PricedTopup extends FeeQuote {
  /** The fee's GST split (null without a fee). */
  tax: TaxSplit | null;
}

/** The fee of a top-up of `amount_micros` paid by `method`; throws 400 outside the limits. */
export function priceTopup(
  config: Pick<Config, 'topups' | 'payments' | 'currency'>,
  amount_micros: number,
  method: TopupMethod | null,
): PricedTopup {
  const { topups } = config;
  const units = (micros: number) => `${microsToUnits(micros)} ${config.currency}`;
  if (topups.min_amount !== null && amount_micros < topups.min_amount)
    throw badRequest(
      `amount: the smallest top-up is ${units(topups.min_amount)}`,
      'amount',
      'amount_too_small',
    );
  if (topups.max_amount !== null && amount_micros > topups.max_amount)
    throw badRequest(
      `amount: the largest top-up is ${units(topups.max_amount)}`,
      'amount',
      'amount_too_large',
    );
  const fee_bp = (method !== null ? topups.fees[method] : undefined) ?? topups.fees.default ?? 0;
  const taxable = percentOf(amount_micros, fee_bp);
  if (taxable === 0)
    return {
      amount_micros,
      fee_micros: 0,
      fee_gst_micros: 0,
      total_micros: amount_micros,
      tax: null,
    };
  const operator = config.payments.tax.operator;
  const rate_bp = operator.gstin ? config.payments.tax.gst.rate : 0;
  const operator_state = operator.state ?? gstinState(operator.gstin) ?? '29';
  const fee_micros = taxable + percentOf(taxable, rate_bp);
  const tax = gstSplit(fee_micros, rate_bp, operator_state, null);
  return {
    amount_micros,
    fee_micros,
    fee_gst_micros: fee_micros - tax.taxable_micros,
    total_micros: amount_micros + fee_micros,
    tax,
  };
}
