// The /api and payments /admin request schemas: the single source of validation, request
// types and the OpenAPI document (payments/openapi.ts), so that no builder imports a route.
import { z } from 'zod';
import { unitsAmountSchema } from '../util/amount-schema.js';
import { microsToUnits } from '../util/money.js';
import { BILL_CATEGORIES, OPERATOR_TYPES, type PaymentsConfig } from './config.js';
import {
  ACCOUNT_NUMBER_PATTERN,
  IFSC_PATTERN,
  TXN_TYPES,
  normalizeAccountNumber,
  normalizeIfsc,
} from './dmt/rules.js';
import { KEY_TEXT } from './engine/intent.js';
import { MAX_WHITELIST_ENTRIES } from '../accounts/ip-whitelist.js';
import { SERVICES, dateBound } from './engine/txn-filter.js';
import { MOBILE_PATTERN, normalizeMobile } from './validators.js';

const page = {
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  limit: z.coerce.number().int().min(1).max(500).default(50),
};

export const historyQuery = z.object({
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  txn_id: z.string().max(64).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
  ...page,
});

export const webhookBody = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2_048),
});

export const kycListQuery = z.object({
  status: z.enum(['submitted', 'approved', 'rejected']).optional(),
  ...page,
});
export const approveBody = z.strictObject({ reason: z.string().trim().max(500).optional() });
export const rejectBody = z.strictObject({
  reason: z.string().trim().min(1, 'a rejection needs a reason').max(500),
});
export const servicesBody = z
  .strictObject({
    recharge: z.boolean().optional(),
    dmt: z.boolean().optional(),
    pan: z.boolean().optional(),
    bills: z.boolean().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'name at least one of recharge, dmt, pan, bills');
export const whitelistBody = z.strictObject({
  ips: z
    .array(z.string().max(64))
    .max(MAX_WHITELIST_ENTRIES, `at most ${MAX_WHITELIST_ENTRIES} entries`),
});
export const auditQuery = z.object({
  account_id: z.string().max(100).optional(),
  action: z.string().max(200).optional(),
  ...page,
});

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
  client_ref: z
    .string()
    .regex(KEY_TEXT, 'must be 1–128 printable characters without spaces')
    .optional(),
  allow_duplicate: z.boolean().optional(),
});
export const receiptQuery = z.object({
  format: z.enum(['html', 'pdf']).default('html'),
  token: z.string().max(64).optional(),
});

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

export const remitterBody = z.strictObject({ mobile: mobileSchema, name: nameSchema });
export const otpBody = (digits: number) =>
  z.strictObject({
    mobile: mobileSchema,
    otp: z
      .union([z.string(), z.int().transform(String)])
      .pipe(
        z
          .string()
          .regex(new RegExp(`^\\d{${digits}}$`), `must be the ${digits}-digit code that was sent`),
      ),
  });
export const beneficiaryBody = z.strictObject({
  mobile: mobileSchema,
  name: nameSchema,
  account_number: z
    .string({ error: 'is required' })
    .max(40)
    .transform(normalizeAccountNumber)
    .refine((n) => ACCOUNT_NUMBER_PATTERN.test(n), 'must be 9 to 18 digits'),
  ifsc: z
    .string({ error: 'is required' })
    .max(20)
    .transform(normalizeIfsc)
    .refine(
      (code) => IFSC_PATTERN.test(code),
      'must be an IFSC: 4 letters, 0, then 6 letters or digits (e.g. SBIN0001234)',
    ),
  bank: z.string().trim().min(1).max(100).optional(),
});
export const beneficiaryListQuery = z.object({ mobile: mobileSchema });
export const beneIdParam = z.string().regex(/^bene_[0-9a-f]{24}$/, 'is not a beneficiary id');
export const verifyBody = z.strictObject({ client_ref: clientRef });
export const transactBody = (settings: PaymentsConfig['dmt']) =>
  z
    .strictObject({
      mobile: mobileSchema,
      bene_id: beneIdParam,
      amount: unitsAmountSchema(2, 10_000_000),
      txn_type: z
        .string({ error: 'is required' })
        .transform((type) => type.toUpperCase())
        .pipe(z.enum(TXN_TYPES, { error: 'must be IMPS or NEFT' })),
      client_ref: clientRef,
      allow_duplicate: z.boolean().optional(),
    })
    .superRefine((body, ctx) => {
      if (body.amount < settings.min_amount || body.amount > settings.per_txn_limit) {
        ctx.addIssue({
          code: 'custom',
          path: ['amount'],
          message: `must be between ${microsToUnits(settings.min_amount)} and ${microsToUnits(settings.per_txn_limit)} per transfer`,
        });
      }
    });

export const registerBody = z.strictObject({
  email: z.email('must be an email address').max(254),
  password: z.string().min(8, 'must be at least 8 characters').max(256),
  name: z.string().trim().min(1, 'must not be empty').max(200),
});

export const panBody = z.strictObject({
  pan_number: z.string({ error: 'is required' }).max(20),
  client_ref: z
    .string()
    .regex(KEY_TEXT, 'must be 1–128 printable characters without spaces')
    .optional(),
});

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
  client_ref: z
    .string()
    .regex(KEY_TEXT, 'must be 1–128 printable characters without spaces')
    .optional(),
  allow_duplicate: z.boolean().optional(),
});

export const operatorsQuery = z.object({ type: z.enum(OPERATOR_TYPES).optional() });

export const reportsQuery = z.strictObject({
  service: z.enum(SERVICES).optional(),
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  txn_id: z.string().trim().max(64).optional(),
  number: z.string().trim().max(40).optional(),
  /** Another name for `number` (a remitter's or a recharge's mobile). */
  mobile: z.string().trim().max(40).optional(),
  page: z.coerce.number().int().min(1).max(1_000_000).optional(),
  limit: z.coerce.number().int().min(1).max(1_000_000).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
  format: z.enum(['json', 'csv']).default('json'),
  /** Admin only: one account (omitted: every account). */
  account_id: z.string().max(100).optional(),
});
