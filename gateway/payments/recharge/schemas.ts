// Recharge's requests: the operator list and a recharge.
import { z } from 'zod';
import { unitsAmountSchema } from '../../util/amount-schema.js';
import { OPERATOR_TYPES } from '../config.js';
import { clientRef } from '../schemas.js';

export const rechargeBody = z.strictObject({
  operator_id: z.union([
    z.int().min(1),
    z
      .string()
      .regex(/^\d{1,7}$/, 'must be an operator id')
      .transform(Number),
  ]),
  number: z.string().trim().min(1, 'must not be empty').max(32),
  amount: unitsAmountSchema(2, 1_000_000),
  client_ref: clientRef,
  allow_duplicate: z.boolean().optional(),
});

export const operatorsQuery = z.object({ type: z.enum(OPERATOR_TYPES).optional() });
