// The admin API's request schemas: validation, request types and the OpenAPI document in one.
import { z } from 'zod';
import { unitsAmountSchema } from '../util/amount-schema.js';

export const createAccountBody = z.strictObject({
  email: z.email('must be an email address').max(254),
  name: z.string().trim().max(200).optional(),
});
export { createKeyBody, patchKeyBody } from './key-limits.js';
export const moneyBody = z.strictObject({
  amount: unitsAmountSchema(2),
  reference: z.string().trim().min(1).max(128),
  memo: z.string().trim().max(200).optional(),
});
export const listQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});

/** An id in a path (an account, a key). */
export const idParam = z.string().min(1).max(100);
