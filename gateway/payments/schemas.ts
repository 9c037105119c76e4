// Request schema parts shared by the services' own schemas (each service's schemas.ts):
// paging, client references, a fetched bill's id (identity fields: identity/fields.ts). With
// the services' schemas they are the single source of validation, request types and the
// OpenAPI document (each service's openapi.ts, composed by payments/openapi.ts).
import { z } from 'zod';
import { KEY_TEXT } from './engine/intent.js';

export const page = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(500).default(50),
};

export const clientRef = z
  .string()
  .regex(KEY_TEXT, 'must be 1–128 printable characters without spaces')
  .optional();

/** A fetched bill's id, which a bill payment names (POST /api/bills/pay, and an electricity board's recharge). */
export const billIdSchema = z.string().regex(/^bill_[0-9a-f]{24}$/, 'is not a bill id');
