// Money transfer's requests: remitters and their OTPs, beneficiaries, transfers.
import { z } from 'zod';
import { unitsAmountSchema } from '../../util/amount-schema.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsConfig } from '../config.js';
import { clientRef } from '../schemas.js';
import { accountNumberField, ifscField, mobileField, personNameField } from '../identity/fields.js';
import { KYC_LEVELS } from './config.js';
import { OVD_TYPES } from './tables.js';
import { TXN_TYPES } from './rules.js';

export const remitterBody = z.strictObject({ mobile: mobileField, name: personNameField });
const otpField = (digits: number) =>
  z
    .union([z.string(), z.int().transform(String)])
    .pipe(
      z
        .string()
        .regex(new RegExp(`^\\d{${digits}}$`), `must be the ${digits}-digit code that was sent`),
    );
export const otpBody = (digits: number) =>
  z.strictObject({ mobile: mobileField, otp: otpField(digits) });
/** The customer's OTP confirming a failed transfer's refund. */
export const refundBody = (digits: number) => z.strictObject({ otp: otpField(digits) });
export const refundOtpBody = z.strictObject({});
export const txnIdParam = z.string().regex(/^txn_[0-9a-f]{24}$/, 'is not a transaction id');
export const beneficiaryBody = z.strictObject({
  mobile: mobileField,
  name: personNameField,
  account_number: accountNumberField,
  ifsc: ifscField,
  bank: z.string().trim().min(1).max(100).optional(),
});
export const beneficiaryListQuery = z.object({ mobile: mobileField });
export const beneIdParam = z.string().regex(/^bene_[0-9a-f]{24}$/, 'is not a beneficiary id');
export const verifyBody = z.strictObject({ client_ref: clientRef });
/** The most one transfer request may move: the per-transfer limit (2024 framework: the largest level's) times the legs allowed. */
export function maxTransferMicros(settings: PaymentsConfig['dmt']): number {
  if (!settings.rbi.enforce) return settings.per_txn_limit;
  const per_txn = Math.max(
    ...Object.values(settings.rbi.levels).map(
      (level) => level.per_txn_limit ?? settings.per_txn_limit,
    ),
  );
  return per_txn * settings.rbi.max_legs;
}

const otpCode = (digits: number) =>
  z
    .union([z.string(), z.int().transform(String)])
    .pipe(
      z
        .string()
        .regex(new RegExp(`^\\d{${digits}}$`), `must be the ${digits}-digit code that was sent`),
    );

const transferFields = () => ({
  mobile: mobileField,
  bene_id: beneIdParam,
  amount: unitsAmountSchema(2, 10_000_000),
  txn_type: z
    .string({ error: 'is required' })
    .transform((type) => type.toUpperCase())
    .pipe(z.enum(TXN_TYPES, { error: 'must be IMPS or NEFT' })),
});

const amountWithin =
  (settings: PaymentsConfig['dmt']) => (body: { amount: number }, ctx: z.RefinementCtx) => {
    const max = maxTransferMicros(settings);
    if (body.amount < settings.min_amount || body.amount > max) {
      ctx.addIssue({
        code: 'custom',
        path: ['amount'],
        message: settings.rbi.enforce
          ? `must be between ${microsToUnits(settings.min_amount)} and ${microsToUnits(max)} (a transfer above the per-transfer limit is split into at most ${settings.rbi.max_legs} parts)`
          : `must be between ${microsToUnits(settings.min_amount)} and ${microsToUnits(settings.per_txn_limit)} per transfer`,
      });
    }
  };

export const transactBody = (settings: PaymentsConfig['dmt']) =>
  z
    .strictObject({
      ...transferFields(),
      client_ref: clientRef,
      allow_duplicate: z.boolean().optional(),
      /** The transfer's OTP (RBI's 2024 framework): its id from POST /api/dmt/transact/otp and the code. */
      otp_ref: z
        .string()
        .regex(/^otp_[0-9a-f]{24}$/, 'is not an OTP reference')
        .optional(),
      otp: otpCode(settings.otp.digits).optional(),
    })
    .superRefine(amountWithin(settings));

export const transferOtpBody = (settings: PaymentsConfig['dmt']) =>
  z.strictObject(transferFields()).superRefine(amountWithin(settings));

export const remitterKycBody = z.strictObject({
  mobile: mobileField,
  document_type: z.enum(OVD_TYPES, { error: `must be one of ${OVD_TYPES.join(', ')}` }),
  document_number: z.string({ error: 'is required' }).trim().min(4).max(40),
  /** The name on the document. */
  name: personNameField,
  address: z.string().trim().min(1).max(300).optional(),
});

export const remitterLevelBody = z.strictObject({ level: z.enum(KYC_LEVELS) });
