import { z } from 'zod';
import { type AmountError, unitsToMicros } from './money.js';

/** A positive amount in currency units at the API edge, parsed to integer micro-units. */
export function unitsAmountSchema(max_decimals: number, max_units = 100_000_000) {
  return z
    .number({ error: 'must be a number' })
    .positive('must be greater than zero')
    .max(max_units, `must be at most ${max_units}`)
    .transform((amount, ctx) => {
      try {
        return unitsToMicros(amount, max_decimals);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as AmountError).message });
        return z.NEVER;
      }
    });
}

/** A percentage with at most 2 decimals, kept as basis points (1.25 % → 125, 18 % → 1800). */
export function percentBpSchema(max: number) {
  return z
    .number()
    .min(0)
    .max(max)
    .transform((pct, ctx) => {
      try {
        return unitsToMicros(pct, 2) / 10_000;
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as AmountError).message });
        return z.NEVER;
      }
    });
}

/** An amount ≥ 0 in currency units (at most `max_units`, `decimals` decimals), parsed to integer micro-units. */
export function unitsMicrosSchema(max_units: number, decimals = 2) {
  return z
    .number()
    .min(0)
    .max(max_units)
    .transform((units, ctx) => {
      try {
        return unitsToMicros(units, decimals);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as AmountError).message });
        return z.NEVER;
      }
    });
}
