// The payments room's part of the gateway config. Every field has a default, so `{}` is the
// embedded default: the operator catalogue below and two sandbox providers per service.
import { z } from 'zod';
import { providerListSchema, smsSenderSchema } from '../providers/config.js';
import { type AmountError, unitsToMicros } from '../util/money.js';
import { taxSchema } from './tax-config.js';
import { rechargeConfigSchema } from './recharge/config.js';
import { billsConfigSchema } from './bills/config.js';
import { dmtRbiSchema } from './dmt/config.js';
import { panVariantsSchema } from './pan/config.js';
import { percentBpSchema } from '../util/amount-schema.js';
import { ms, patternSchema, unitsSchema } from './config-parts.js';

export const OPERATOR_TYPES = ['prepaid', 'postpaid', 'dth', 'electricity'] as const;
export type OperatorType = (typeof OPERATOR_TYPES)[number];

export const operatorSchema = z
  .strictObject({
    operator_id: z.int().min(1).max(1_000_000),
    name: z.string().min(1).max(100),
    type: z.enum(OPERATOR_TYPES),
    /** Paid to the customer's wallet on success, as a percentage of the amount (at most 2 decimals). */
    commission_pct: z.number().min(0).max(20),
    min_amount: unitsSchema(2, 1_000_000),
    max_amount: unitsSchema(2, 1_000_000),
    /** Rule for the number after normalization; mobile operators use the mobile rule. */
    number_pattern: patternSchema.optional(),
    /** What the number is called for this operator (shown in errors and in GET /api/operators). */
    number_label: z.string().min(1).max(60).optional(),
    /**
     * The operator's brand as number lookups and plan lists name it (`Airtel` for Airtel and
     * Airtel Postpaid); default: the name without " Postpaid".
     */
    brand: z.string().min(1).max(60).optional(),
    /**
     * A prepaid operator that sells plans only (as the operators' own apps do): a recharge's
     * amount must be one of its plans in the number's circle, or one of the number's offers,
     * whatever `payments.recharge.plan_check` says (that setting decides for the others).
     */
    plans_only: z.boolean().default(false),
    /** An electricity board: the BBPS biller (payments.bills.billers) its recharges pay, one path with bill payment. */
    biller_id: z
      .string()
      .regex(/^[A-Z0-9_-]{2,32}$/)
      .optional(),
  })
  .transform((operator, ctx) => {
    let commission_bp = 0;
    try {
      commission_bp = unitsToMicros(operator.commission_pct, 2) / 10_000;
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        path: ['commission_pct'],
        message: (error as AmountError).message,
      });
      return z.NEVER;
    }
    if (operator.plans_only && operator.type !== 'prepaid') {
      ctx.addIssue({
        code: 'custom',
        path: ['plans_only'],
        message: 'only a prepaid operator has plans to check an amount against',
      });
      return z.NEVER;
    }
    if (operator.min_amount > operator.max_amount || operator.min_amount === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['min_amount'],
        message: 'must be above zero and at most max_amount',
      });
      return z.NEVER;
    }
    const mobile = operator.type === 'prepaid' || operator.type === 'postpaid';
    return {
      ...operator,
      commission_bp,
      min_amount_micros: operator.min_amount,
      max_amount_micros: operator.max_amount,
      number_pattern: operator.number_pattern ?? (mobile ? '^[6-9]\\d{9}$' : '^\\d{6,16}$'),
      number_label:
        operator.number_label ??
        (mobile ? 'mobile number' : operator.type === 'dth' ? 'subscriber id' : 'consumer number'),
      brand: operator.brand ?? operator.name.replace(/ Postpaid$/i, ''),
      mobile,
    };
  });
export type Operator = z.output<typeof operatorSchema>;

const op = (
  operator_id: number,
  name: string,
  type: OperatorType,
  commission_pct: number,
  min_amount: number,
  max_amount: number,
  number_pattern?: string,
  number_label?: string,
) => ({
  operator_id,
  name,
  type,
  commission_pct,
  min_amount,
  max_amount,
  number_pattern,
  number_label,
});

/** The BBPS billers of the built-in electricity operators: their recharges pay these billers. */
const ELECTRICITY_BILLERS: Readonly<Record<number, string>> = {
  31: 'BESCOM',
  32: 'MSEDCL',
  33: 'TPDDL',
  34: 'BSESR',
};

/** The built-in operators as the default made them (not those a config file lists). */
const BUILT_IN_OPERATORS = new WeakSet<object>();

/** The built-in catalogue. Ids are stable: clients store them. */
export const DEFAULT_OPERATORS = [
  op(1, 'Airtel', 'prepaid', 2.5, 10, 5_000),
  // Jio sells plans only: a recharge of any other amount is refused by the operator.
  { ...op(2, 'Jio', 'prepaid', 1.5, 10, 5_000), plans_only: true },
  op(3, 'Vi', 'prepaid', 3.5, 10, 5_000),
  op(4, 'BSNL', 'prepaid', 4, 10, 5_000),
  op(11, 'Airtel Postpaid', 'postpaid', 1, 10, 25_000),
  op(12, 'Jio Postpaid', 'postpaid', 0.5, 10, 25_000),
  op(13, 'Vi Postpaid', 'postpaid', 1, 10, 25_000),
  op(14, 'BSNL Postpaid', 'postpaid', 1, 10, 25_000),
  op(
    21,
    'Tata Play',
    'dth',
    3,
    50,
    10_000,
    '^1\\d{9}$',
    'subscriber id (10 digits, starts with 1)',
  ),
  op(
    22,
    'Airtel Digital TV',
    'dth',
    3,
    50,
    10_000,
    '^3\\d{9}$',
    'customer id (10 digits, starts with 3)',
  ),
  op(23, 'Dish TV', 'dth', 3.5, 50, 10_000, '^0\\d{10}$', 'VC number (11 digits, starts with 0)'),
  op(
    24,
    'Sun Direct',
    'dth',
    3.5,
    50,
    10_000,
    '^[14]\\d{10}$',
    'smart card number (11 digits, starts with 1 or 4)',
  ),
  op(25, 'd2h', 'dth', 3.5, 50, 10_000, '^\\d{10}$', 'subscriber id (10 digits)'),
  op(
    31,
    'BESCOM (Bengaluru)',
    'electricity',
    0.5,
    10,
    50_000,
    '^\\d{10}$',
    'account id (10 digits)',
  ),
  op(
    32,
    'MSEDCL (Maharashtra)',
    'electricity',
    0.5,
    10,
    50_000,
    '^\\d{12}$',
    'consumer number (12 digits)',
  ),
  op(
    33,
    'Tata Power Delhi (TPDDL)',
    'electricity',
    0.5,
    10,
    50_000,
    '^\\d{11}$',
    'CA number (11 digits)',
  ),
  op(34, 'BSES Rajdhani', 'electricity', 0.5, 10, 50_000, '^\\d{9}$', 'CA number (9 digits)'),
];

/** The sandbox pair: the first does not answer for `0004`, so the chain's timeout and failover are real. */
export const DEFAULT_SANDBOX_CHAIN = [
  { type: 'sandbox' as const, name: 'sandbox-a', hang_on: ['0004'] },
  { type: 'sandbox' as const, name: 'sandbox-b' },
];

const percentSchema = percentBpSchema;

/**
 * One slab of a charges table: for amounts up to `up_to` (inclusive; slabs in increasing
 * order), `flat` plus `pct` of the amount (rounded to the paisa, half up), kept within
 * `min`..`max` when they are given.
 */
export const chargeSlabSchema = z.strictObject({
  up_to: unitsSchema(2, 10_000_000),
  flat: unitsSchema(2, 100_000).default(0),
  pct: percentSchema(20).default(0),
  min: unitsSchema(2, 100_000).optional(),
  max: unitsSchema(2, 100_000).optional(),
});
export type ChargeSlab = z.output<typeof chargeSlabSchema>;

const slabsSchema = (defaults: z.input<typeof chargeSlabSchema>[]) =>
  z
    .array(chargeSlabSchema)
    .min(1)
    .max(50)
    .refine(
      (slabs) => slabs.every((slab, i) => i === 0 || slab.up_to > slabs[i - 1]!.up_to),
      'slabs must be in increasing order of up_to',
    )
    .refine(
      (slabs) =>
        slabs.every(
          (slab) => slab.min === undefined || slab.max === undefined || slab.min <= slab.max,
        ),
      'a slab min must not exceed its max',
    )
    .default(() => defaults.map((slab) => chargeSlabSchema.parse(slab)));

/** Typical DMT pricing: ₹10 up to ₹1,000, then 1 % (at least ₹10). */
const DEFAULT_DMT_SLABS = [
  { up_to: 1_000, flat: 10 },
  { up_to: 200_000, pct: 1, min: 10 },
];

export const paymentsConfigSchema = z
  .strictObject({
    tax: taxSchema,
    recharge: rechargeConfigSchema,
    /** Same account, number and amount within this window without an idempotency key → 409 (0 turns it off). */
    duplicate_window_ms: ms(0, 86_400_000, 120_000),
    /**
     * An Idempotency-Key (or client_ref) is remembered for this long after its first use; after
     * that the same key is a new request. 0 (the default) remembers every key forever.
     */
    idempotency_window_ms: ms(0, 366 * 86_400_000, 0),
    operators: z
      .array(operatorSchema)
      .min(1)
      .max(1_000)
      .refine(
        (list) => new Set(list.map((o) => o.operator_id)).size === list.length,
        'operator ids must be unique',
      )
      .default(() =>
        DEFAULT_OPERATORS.map((o) => {
          const operator = operatorSchema.parse({
            ...o,
            biller_id: ELECTRICITY_BILLERS[o.operator_id],
          });
          BUILT_IN_OPERATORS.add(operator);
          return operator;
        }),
      ),
    providers: z
      .strictObject({
        recharge: providerListSchema(DEFAULT_SANDBOX_CHAIN),
        dmt: providerListSchema(DEFAULT_SANDBOX_CHAIN),
        pan: providerListSchema(DEFAULT_SANDBOX_CHAIN),
        bills: providerListSchema(DEFAULT_SANDBOX_CHAIN),
      })
      .prefault({}),
    dmt: z
      .strictObject({
        /** Per remitter and calendar month (RBI's limit for walk-in remitters is ₹25,000). */
        monthly_limit: unitsSchema(2, 10_000_000).default(25_000_000_000),
        /** Per transfer (RBI: ₹5,000 for cash-based remittances). */
        per_txn_limit: unitsSchema(2, 10_000_000).default(5_000_000_000),
        min_amount: unitsSchema(2, 10_000_000).default(1_000_000),
        /** The calendar month is counted in this offset from UTC (India: +330 minutes). */
        utc_offset_minutes: z.int().min(-720).max(840).default(330),
        charges: z
          .strictObject({
            IMPS: slabsSchema(DEFAULT_DMT_SLABS),
            NEFT: slabsSchema(DEFAULT_DMT_SLABS),
          })
          .prefault({}),
        /** The fee of a beneficiary's penny-drop verification. */
        verification_fee: unitsSchema(2, 10_000).default(3_000_000),
        max_beneficiaries_per_remitter: z.int().min(1).max(1_000).default(50),
        rbi: dmtRbiSchema,
        max_remitters_per_account: z.int().min(1).max(1_000_000).default(100_000),
        otp: z
          .strictObject({
            digits: z.int().min(4).max(8).default(6),
            ttl_ms: ms(1_000, 3_600_000, 5 * 60_000),
            max_attempts: z.int().min(1).max(10).default(3),
            resend_interval_ms: ms(0, 3_600_000, 30_000),
            max_sends_per_hour: z.int().min(1).max(100).default(5),
            /** The SMS gateway used in live mode (in sandbox mode the OTP comes back as `sandbox_otp`). */
            sms: smsSenderSchema.optional(),
            message: z
              .string()
              .min(1)
              .max(300)
              .refine((text) => text.includes('{otp}'), 'must contain {otp}')
              .default(
                '{otp} is your OTP to register for money transfers. It is valid for {minutes} minutes. Do not share it with anyone.',
              ),
          })
          .prefault({}),
      })
      .superRefine((dmt, ctx) => {
        if (dmt.min_amount > dmt.per_txn_limit)
          ctx.addIssue({
            code: 'custom',
            path: ['min_amount'],
            message: 'must not exceed per_txn_limit',
          });
        for (const type of ['IMPS', 'NEFT'] as const) {
          if (dmt.charges[type].at(-1)!.up_to < dmt.per_txn_limit) {
            ctx.addIssue({
              code: 'custom',
              path: ['charges', type],
              message: 'the last slab must reach per_txn_limit',
            });
          }
        }
      })
      .prefault({}),
    pan: z
      .strictObject({
        /** Charged per found PAN; a PAN that is not found costs nothing. */
        fee: unitsSchema(2, 10_000).default(2_000_000),
        variants: panVariantsSchema,
      })
      .prefault({}),
    bills: billsConfigSchema,
    reports: z
      .strictObject({
        /**
         * The largest `limit` of a paged CSV download (JSON pages are at most 500 rows); a CSV
         * without page/limit holds every matching row.
         */
        csv_max_rows: z.int().min(100).max(1_000_000).default(10_000),
        /** Reports one account (or the admin) may have running at once; more get 429 with Retry-After. */
        max_concurrent_per_account: z.int().min(1).max(64).default(2),
        /** Reports the gateway runs at once, every account together; more wait in a queue. */
        max_running: z.int().min(1).max(256).default(4),
        /** Reports waiting for one of `max_running`; past this they get 429 with Retry-After. */
        max_queued: z.int().min(0).max(10_000).default(64),
        /**
         * The share of the event loop's time reports take, all together, while other requests
         * keep it busy (on an otherwise idle gateway they run at full speed).
         */
        cpu_share: z.number().min(0.01).max(1).default(0.05),
        /**
         * How long a CSV download waits for a client that takes none of it before it drops the
         * connection: a download holds a report slot while it is written.
         */
        client_stall_ms: ms(1_000, 3_600_000, 60_000),
      })
      .prefault({}),
    /** Background work (status checks, webhook deliveries) wakes this often. */
    tick_ms: ms(10, 60_000, 500),
    /**
     * The pruning pass: idempotency records past idempotency_window_ms and DMT monthly usage of
     * months that are over are deleted every `interval_ms`, at most `batch_size` per commit.
     */
    prune: z
      .strictObject({
        interval_ms: ms(10, 86_400_000, 10 * 60_000),
        batch_size: z.int().min(1).max(10_000).default(1_000),
      })
      .prefault({}),
    reconcile: z
      .strictObject({
        first_check_ms: ms(10, 86_400_000, 5_000),
        max_backoff_ms: ms(10, 86_400_000, 15 * 60_000),
        /** After this many checks without a final answer, checks stop and the transaction is flagged for an operator. */
        max_checks: z.int().min(1).max(10_000).default(200),
        /** A provider that has no record of an interrupted submission is believed only after this long. */
        not_found_grace_ms: ms(0, 86_400_000, 120_000),
        concurrency: z.int().min(1).max(64).default(4),
      })
      .prefault({}),
    webhooks: z
      .strictObject({
        timeout_ms: ms(100, 60_000, 5_000),
        first_retry_ms: ms(10, 86_400_000, 10_000),
        max_backoff_ms: ms(10, 86_400_000, 3_600_000),
        max_attempts: z.int().min(1).max(50).default(8),
        concurrency: z.int().min(1).max(64).default(4),
        /** Deliveries to loopback and private addresses; default: allowed in sandbox mode, refused in live mode. */
        allow_private_addresses: z.boolean().optional(),
      })
      .prefault({}),
    kyc: z
      .strictObject({
        max_file_bytes: z
          .int()
          .min(1_024)
          .max(20 * 1024 * 1024)
          .default(5 * 1024 * 1024),
        max_files: z.int().min(1).max(10).default(5),
        /** eKYC requests one account may have in flight at once (the next is 429 at once). */
        max_uploads_per_account: z.int().min(1).max(16).default(1),
        /** eKYC requests the gateway reads at once, every account together (the next is 429). */
        max_uploads: z.int().min(1).max(1_000).default(16),
      })
      .prefault({}),
    register: z
      .strictObject({
        /** Sign-ups per client address per hour (0 = no limit). */
        per_ip_per_hour: z.int().min(0).max(100_000).default(20),
      })
      .prefault({}),
    /** IP whitelists (PUT /admin/accounts/:id/ip-whitelist): ranges wider than these need `force: true`. */
    ip_whitelist: z
      .strictObject({
        min_prefix_ipv4: z.int().min(0).max(32).default(8),
        min_prefix_ipv6: z.int().min(0).max(128).default(32),
      })
      .prefault({}),
    /** Signed /api requests (docs/payments-api.md#signed-requests). */
    signing: z
      .strictObject({
        /**
         * Until when v1 signatures (timestamp + "." + body, without the method and path) are
         * still accepted from signing secrets made before v2 existed (an ISO date-time); null:
         * never. Secrets made since take v2 only, whatever this says.
         */
        v1_until: z.iso.datetime({ offset: true }).nullable().default('2027-03-31T23:59:59Z'),
      })
      .prefault({}),
  })
  .transform((payments) => {
    // The built-in electricity boards whose BBPS biller a configured catalogue leaves out are
    // left out too: there is no biller for their recharges to pay.
    const billers = new Set(payments.bills.billers.map((b) => b.biller_id));
    const operators = payments.operators.filter(
      (o) =>
        o.type !== 'electricity' ||
        !BUILT_IN_OPERATORS.has(o) ||
        (o.biller_id !== undefined && billers.has(o.biller_id)),
    );
    return operators.length === payments.operators.length ? payments : { ...payments, operators };
  })
  .superRefine((payments, ctx) => {
    // An electricity board's recharge is a bill payment of its BBPS biller: one path, one duplicate rule.
    payments.operators.forEach((operator, index) => {
      if (operator.type !== 'electricity') return;
      if (!payments.bills.billers.some((b) => b.biller_id === operator.biller_id))
        ctx.addIssue({
          code: 'custom',
          path: ['operators', index, 'biller_id'],
          message: `electricity operator ${operator.operator_id} must name one of payments.bills.billers (its recharges are bill payments)`,
        });
    });
  });

export type PaymentsConfig = z.output<typeof paymentsConfigSchema>;
