// Recharge's requests: the operator list and a recharge.
import { z } from 'zod';
import { unitsAmountSchema } from '../../util/amount-schema.js';
import { OPERATOR_TYPES } from '../config.js';
import { billIdSchema, clientRef } from '../schemas.js';

const operatorId = z.union([
  z.int().min(1),
  z
    .string()
    .regex(/^\d{1,7}$/, 'must be an operator id')
    .transform(Number),
]);

export const rechargeBody = z.strictObject({
  /** Optional: without it, the operator is looked up from the (mobile) number. */
  operator_id: operatorId.optional(),
  /** The number's circle, for the plan check (else looked up). */
  circle: z.string().trim().min(2).max(60).optional(),
  number: z.string().trim().min(1, 'must not be empty').max(32),
  amount: unitsAmountSchema(2, 1_000_000),
  client_ref: clientRef,
  allow_duplicate: z.boolean().optional(),
  /**
   * An electricity board's recharge is a BBPS bill payment of its biller, with that payment's
   * rules: the fetched bill it pays, the customer's mobile, the PAN from ₹50,000. Other
   * operators take none of these.
   */
  bill_id: billIdSchema.optional(),
  customer_mobile: z.string().trim().max(20).optional(),
  customer_pan: z.string().trim().max(20).optional(),
});

export const operatorsQuery = z.object({ type: z.enum(OPERATOR_TYPES).optional() });

export const lookupQuery = z.object({
  number: z.string({ error: 'is required' }).trim().min(1).max(32),
});
export const plansQuery = z.object({
  operator_id: operatorId,
  circle: z.string().trim().min(2).max(60).optional(),
  category: z.string().trim().min(1).max(40).optional(),
});
export const offersQuery = z.object({
  operator_id: operatorId.optional(),
  number: z.string({ error: 'is required' }).trim().min(1).max(32),
});
export const dthInfoQuery = z.object({
  operator_id: operatorId,
  number: z.string({ error: 'is required' }).trim().min(1).max(32),
});
