// Bill payment's requests: the category and biller lists, bill fetch and validation,
// payment, the receipt, complaints.
import { z } from 'zod';
import { unitsAmountSchema } from '../../util/amount-schema.js';
import { BILL_CATEGORIES, BILL_CATEGORY_ALIASES, type BillCategory } from './config.js';
import { billIdSchema, clientRef } from '../schemas.js';

export const billerIdSchema = z
  .string({ error: 'is required' })
  .trim()
  .toUpperCase()
  .pipe(z.string().regex(/^[A-Z0-9_-]{2,32}$/, 'is not a biller id'));
export const consumerSchema = z
  .string({ error: 'is required' })
  .max(40)
  .transform((text) => text.replace(/\s/g, ''));
/** The customer parameters by name (a biller's `params`): at most 5, each short text. */
export const paramsSchema = z
  .record(
    z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'is not a parameter name'),
    z
      .union([z.string(), z.number().transform(String)])
      .pipe(z.string().trim().max(100, 'is too long')),
  )
  .refine((params) => Object.keys(params).length <= 5, 'at most 5 parameters');
const category = z
  .string()
  .trim()
  .toLowerCase()
  .transform((text) => BILL_CATEGORY_ALIASES[text] ?? text)
  .pipe(z.enum(BILL_CATEGORIES));
export const billersQuery = z.object({
  category: category.optional(),
  q: z.string().trim().min(1).max(60).optional(),
});
/** Who the customer is at the biller: its parameters, or (before them) the consumer number alone. */
const customer = {
  biller_id: billerIdSchema,
  consumer_number: consumerSchema.optional(),
  params: paramsSchema.optional(),
};
export const fetchBody = z.strictObject({
  ...customer,
  customer_mobile: z.string().trim().max(20).optional(),
});
export const validateBody = fetchBody;
export const payBody = z.strictObject({
  ...customer,
  amount: unitsAmountSchema(2, 10_000_000),
  bill_id: billIdSchema.optional(),
  /** The customer's mobile (BBPS asks every payment for it). */
  customer_mobile: z.string().trim().max(20).optional(),
  /** The customer's PAN (BBPS asks for it at ₹50,000 and above). */
  customer_pan: z.string().trim().max(20).optional(),
  client_ref: clientRef,
  allow_duplicate: z.boolean().optional(),
});
export const receiptQuery = z.object({
  format: z.enum(['html', 'pdf']).default('html'),
  token: z.string().max(64).optional(),
});
export type CategoryId = BillCategory;
