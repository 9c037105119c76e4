// DMT's settings for RBI's Framework for Domestic Money Transfer (circular of 24 July 2024,
// in force since 1 November 2024): a remitter is registered on a verified mobile and an
// officially valid document (OVD), every transfer is confirmed by an OTP (the additional
// factor of authentication), and the limits depend on the remitter's KYC level.
import { z } from 'zod';
import { unitsMicrosSchema } from '../../util/amount-schema.js';

const units = unitsMicrosSchema;

/** A KYC level's limits; absent: `dmt.monthly_limit` and `dmt.per_txn_limit`. */
const levelSchema = z
  .strictObject({
    monthly_limit: units(10_000_000).optional(),
    /** The most one transfer (one leg) moves; a larger amount is split into legs of at most this. */
    per_txn_limit: units(10_000_000).optional(),
  })
  .prefault({});

export const KYC_LEVELS = ['minimum', 'full'] as const;
export type KycLevel = (typeof KYC_LEVELS)[number];

export const dmtRbiSchema = z
  .strictObject({
    /**
     * The 2024 framework's rules: a verified OVD before the first transfer and an OTP on every
     * transfer. false keeps the rules before it (mobile OTP only, no transfer OTP) for a
     * migration window; such transfers do not meet the framework.
     */
    enforce: z.boolean().default(true),
    /** Limits per KYC level: `minimum` (a verified mobile and a verified OVD), `full` (set by an administrator). */
    levels: z.strictObject({ minimum: levelSchema, full: levelSchema }).prefault({}),
    /** A transfer above the per-transfer limit is split into at most this many legs. */
    max_legs: z.int().min(1).max(50).default(10),
    /** Transfer OTPs sent to one remitter per hour. */
    otp_per_hour: z.int().min(1).max(1_000).default(30),
    message: z
      .string()
      .min(1)
      .max(300)
      .refine((text) => text.includes('{otp}'), 'must contain {otp}')
      .default(
        '{otp} is your OTP to send {amount} to {beneficiary}. It is valid for {minutes} minutes. Do not share it with anyone.',
      ),
  })
  .prefault({});
