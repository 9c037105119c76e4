// Request schema parts shared by the services' own schemas (each service's schemas.ts):
// paging, mobile numbers, names and client references. With the services' schemas they are the
// single source of validation, request types and the OpenAPI document (payments/openapi.ts).
import { z } from 'zod';
import { KEY_TEXT } from './engine/intent.js';
import { MOBILE_PATTERN, normalizeMobile } from './validators.js';

export const page = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(500).default(50),
};

export const mobileSchema = z
  .string({ error: 'is required' })
  .max(20)
  .transform(normalizeMobile)
  .refine(
    (mobile) => MOBILE_PATTERN.test(mobile),
    'must be a 10-digit Indian mobile number starting with 6–9',
  );
export const nameSchema = z
  .string({ error: 'is required' })
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .regex(/^[\p{L}\p{M} .'-]+$/u, "may hold letters, spaces and . ' - only");
export const clientRef = z
  .string()
  .regex(KEY_TEXT, 'must be 1–128 printable characters without spaces')
  .optional();
