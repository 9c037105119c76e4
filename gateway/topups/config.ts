// The top-ups room's part of the gateway config (`topups`). Every field has a default: no
// provider (sandbox keeps its simulated payment; live mode keeps the bank-transfer text), no
// fee, no limits. Secrets are never here: they come from the environment (types.ts TOPUP_ENV).
import { z } from 'zod';
import { percentBpSchema, unitsMicrosSchema } from '../util/amount-schema.js';
import { TOPUP_METHODS, TOPUP_PROVIDERS } from './types.js';

const ms = (min: number, max: number, fallback: number) =>
  z.int().min(min).max(max).default(fallback);

/** A base URL without a trailing slash (a scripted server's in tests). */
const baseUrl = (fallback: string) =>
  z
    .url()
    .transform((url) => url.replace(/\/+$/, ''))
    .default(fallback);

/** An amount in currency units, or null for no limit. */
const limit = z.union([unitsMicrosSchema(100_000_000), z.null()]).default(null);

export const topupsConfigSchema = z
  .strictObject({
    /** The payment gateway top-ups go through; null: none (sandbox's simulated payment, or live's bank-transfer text). */
    provider: z.enum(TOPUP_PROVIDERS).nullable().default(null),
    razorpay: z
      .strictObject({
        base_url: baseUrl('https://api.razorpay.com'),
        /** Standard Checkout's script, which /wallet loads. */
        checkout_script_url: z.url().default('https://checkout.razorpay.com/v1/checkout.js'),
        /** The business name the checkout shows. */
        display_name: z.string().min(1).max(100).default('AIHub wallet top-up'),
      })
      .prefault({}),
    cashfree: z
      .strictObject({
        base_url: baseUrl('https://api.cashfree.com'),
        /** Cashfree's browser SDK (v3), which the pay page loads to open the checkout. */
        checkout_script_url: z.url().default('https://sdk.cashfree.com/js/v3/cashfree.js'),
      })
      .prefault({}),
    /** Smallest and largest top-up, in currency units (null: none). */
    min_amount: limit,
    max_amount: limit,
    /** Most an account may top up per day (India time), in currency units (null: none). */
    daily_cap: limit,
    /**
     * Convenience fee per method, in percent of the amount (GST on it at payments.tax.gst's
     * rate, added): `{"card": 2, "default": 1}`. The method is the one asked for at
     * POST /api/wallet/topups (else `default`). Empty: no fee.
     */
    fees: z.partialRecord(z.enum([...TOPUP_METHODS, 'default']), percentBpSchema(10)).default({}),
    /** The reconciliation pass: polls top-ups still pending at the provider (a lost webhook). */
    reconcile: z
      .strictObject({
        interval_ms: ms(100, 3_600_000, 60_000),
        /** A pending top-up is first asked about this long after its order. */
        first_after_ms: ms(0, 3_600_000, 30_000),
        /** Top-ups asked about per pass. */
        batch: z.int().min(1).max(1_000).default(50),
        /** Past this age an unpaid order is expired (nothing credited, listed as expired). */
        expire_after_ms: ms(1_000, 30 * 86_400_000, 86_400_000),
      })
      .prefault({}),
    /** Virtual accounts (GET /api/wallet/load-details) and their credits. */
    virtual_accounts: z
      .strictObject({
        /** Hold a transfer from someone other than the account holder for an operator's review. */
        hold_third_party: z.boolean().default(false),
      })
      .prefault({}),
    /** A provider call's deadline. */
    timeout_ms: ms(100, 120_000, 15_000),
    /** The largest webhook body read (bigger: 413, nothing read). */
    webhook_body_bytes: z
      .int()
      .min(1_024)
      .max(1024 * 1024)
      .default(64 * 1024),
  })
  .refine((t) => t.min_amount === null || t.max_amount === null || t.min_amount <= t.max_amount, {
    message: 'min_amount must not exceed max_amount',
    path: ['min_amount'],
  });

export type TopupsConfig = z.output<typeof topupsConfigSchema>;
