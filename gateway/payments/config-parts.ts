// Pieces of the payments config that its per-service parts share (recharge/, bills/, config.ts).
import { z } from 'zod';
import { type AmountError, unitsToMicros } from '../util/money.js';

/** A JSON number in currency units with at most `decimals` decimals, kept as integer micro-units. */
export const unitsSchema = (decimals: number, max_units: number) =>
  z
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

/** A regular expression anchored with ^ and $ (a number's or a customer parameter's rule). */
export const patternSchema = z
  .string()
  .min(2)
  .max(200)
  .refine((text) => {
    try {
      new RegExp(text);
      return text.startsWith('^') && text.endsWith('$');
    } catch {
      return false;
    }
  }, 'must be a regular expression anchored with ^ and $');

/** A duration in milliseconds within bounds, with its default. */
export const ms = (min: number, max: number, fallback: number) =>
  z.int().min(min).max(max).default(fallback);
