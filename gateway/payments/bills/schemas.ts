// Bill payment's requests: the biller list, bill fetch, payment and the receipt.
import { z } from 'zod';
import { unitsAmountSchema } from '../../util/amount-schema.js';
import { BILL_CATEGORIES } from '../config.js';
import { clientRef } from '../schemas.js';

export const billerIdSchema = z
  .string({ error: 'is required' })
  .trim()
  .toUpperCase()
  .pipe(z.string().regex(/^[A-Z0-9_-]{2,32}$/, 'is not a biller id'));
export const consumerSchema = z
  .string({ error: 'is required' })
  .max(40)
  .transform((text) => text.replace(/\s/g, ''));
export const billIdSchema = z.string().regex(/^bill_[0-9a-f]{24}$/, 'is not a bill id');
export const billersQuery = z.object({ category: z.enum(BILL_CATEGORIES).optional() });
export const fetchBody = z.strictObject({
  biller_id: billerIdSchema,
  consumer_number: consumerSchema,
});
export const payBody = z.strictObject({
  biller_id: billerIdSchema,
  consumer_number: consumerSchema,
  amount: unitsAmountSchema(2, 10_000_000),
  bill_id: billIdSchema.optional(),
  client_ref: clientRef,
  allow_duplicate: z.boolean().optional(),
});
export const receiptQuery = z.object({
  format: z.enum(['html', 'pdf']).default('html'),
  token: z.string().max(64).optional(),
});
