// Money transfer's requests: remitters and their OTPs, beneficiaries, transfers.
import { z } from 'zod';
import { unitsAmountSchema } from '../../util/amount-schema.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsConfig } from '../config.js';
import { clientRef, mobileSchema, nameSchema } from '../schemas.js';
import {
  ACCOUNT_NUMBER_PATTERN,
  IFSC_PATTERN,
  TXN_TYPES,
  normalizeAccountNumber,
  normalizeIfsc,
} from './rules.js';

export const remitterBody = z.strictObject({ mobile: mobileSchema, name: nameSchema });
const otpField = (digits: number) =>
  z
    .union([z.string(), z.int().transform(String)])
    .pipe(
      z
        .string()
        .regex(new RegExp(`^\\d{${digits}}$`), `must be the ${digits}-digit code that was sent`),
    );
export const otpBody = (digits: number) =>
  z.strictObject({ mobile: mobileSchema, otp: otpField(digits) });
/** The customer's OTP confirming a failed transfer's refund. */
export const refundBody = (digits: number) => z.strictObject({ otp: otpField(digits) });
export const refundOtpBody = z.strictObject({});
export const txnIdParam = z.string().regex(/^txn_[0-9a-f]{24}$/, 'is not a transaction id');
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
