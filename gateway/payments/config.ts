// The payments room's part of the gateway config. Every field has a default, so `{}` is the
// embedded default: the operator catalogue below and two sandbox providers per service.
import { z } from 'zod';
import { providerListSchema } from '../providers/config.js';
import { AmountError, unitsToMicros } from '../util/money.js';

export const OPERATOR_TYPES = ['prepaid', 'postpaid', 'dth', 'electricity'] as const;
export type OperatorType = (typeof OPERATOR_TYPES)[number];

/** A JSON number in currency units with at most `decimals` decimals, kept as integer micro-units. */
const unitsSchema = (decimals: number, max_units: number) =>
  z
    .number()
    .min(0)
    .max(max_units)
    .transform((units, ctx) => {
      try {
        return unitsToMicros(units, decimals);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as AmountError).message });
        return z.NEVER;
      }
    });

const patternSchema = z
  .string()
  .min(2)
  .max(200)
  .refine((text) => {
    try {
      new RegExp(text);
      return text.startsWith('^') && text.endsWith('$');
    } catch {
      return false;
    }
  }, 'must be a regular expression anchored with ^ and $');

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
  })
  .transform((operator, ctx) => {
    let commission_bp = 0;
    try {
      commission_bp = unitsToMicros(operator.commission_pct, 2) / 10_000;
    } catch (error) {
      ctx.addIssue({ code: 'custom', path: ['commission_pct'], message: (error as AmountError).message });
      return z.NEVER;
    }
    if (operator.min_amount > operator.max_amount || operator.min_amount === 0) {
      ctx.addIssue({ code: 'custom', path: ['min_amount'], message: 'must be above zero and at most max_amount' });
      return z.NEVER;
    }
    const mobile = operator.type === 'prepaid' || operator.type === 'postpaid';
    return {
      ...operator,
      commission_bp,
      min_amount_micros: operator.min_amount,
      max_amount_micros: operator.max_amount,
      number_pattern: operator.number_pattern ?? (mobile ? '^[6-9]\\d{9}$' : '^\\d{6,16}$'),
      number_label: operator.number_label ?? (mobile ? 'mobile number' : operator.type === 'dth' ? 'subscriber id' : 'consumer number'),
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
) => ({ operator_id, name, type, commission_pct, min_amount, max_amount, number_pattern, number_label });

/** The built-in catalogue. Ids are stable: clients store them. */
export const DEFAULT_OPERATORS = [
  op(1, 'Airtel', 'prepaid', 2.5, 10, 5_000),
  op(2, 'Jio', 'prepaid', 1.5, 10, 5_000),
  op(3, 'Vi', 'prepaid', 3.5, 10, 5_000),
  op(4, 'BSNL', 'prepaid', 4, 10, 5_000),
  op(11, 'Airtel Postpaid', 'postpaid', 1, 10, 25_000),
  op(12, 'Jio Postpaid', 'postpaid', 0.5, 10, 25_000),
  op(13, 'Vi Postpaid', 'postpaid', 1, 10, 25_000),
  op(14, 'BSNL Postpaid', 'postpaid', 1, 10, 25_000),
  op(21, 'Tata Play', 'dth', 3, 50, 10_000, '^1\\d{9}$', 'subscriber id (10 digits, starts with 1)'),
  op(22, 'Airtel Digital TV', 'dth', 3, 50, 10_000, '^3\\d{9}$', 'customer id (10 digits, starts with 3)'),
  op(23, 'Dish TV', 'dth', 3.5, 50, 10_000, '^0\\d{10}$', 'VC number (11 digits, starts with 0)'),
  op(24, 'Sun Direct', 'dth', 3.5, 50, 10_000, '^[14]\\d{10}$', 'smart card number (11 digits, starts with 1 or 4)'),
  op(25, 'd2h', 'dth', 3.5, 50, 10_000, '^\\d{10}$', 'subscriber id (10 digits)'),
  op(31, 'BESCOM (Bengaluru)', 'electricity', 0.5, 10, 50_000, '^\\d{10}$', 'account id (10 digits)'),
  op(32, 'MSEDCL (Maharashtra)', 'electricity', 0.5, 10, 50_000, '^\\d{12}$', 'consumer number (12 digits)'),
  op(33, 'Tata Power Delhi (TPDDL)', 'electricity', 0.5, 10, 50_000, '^\\d{11}$', 'CA number (11 digits)'),
  op(34, 'BSES Rajdhani', 'electricity', 0.5, 10, 50_000, '^\\d{9}$', 'CA number (9 digits)'),
];

/** The sandbox pair: the first does not answer for `0004`, so the chain's timeout and failover are real. */
export const DEFAULT_SANDBOX_CHAIN = [
  { type: 'sandbox' as const, name: 'sandbox-a', hang_on: ['0004'] },
  { type: 'sandbox' as const, name: 'sandbox-b' },
];

const ms = (min: number, max: number, fallback: number) => z.int().min(min).max(max).default(fallback);

export const paymentsConfigSchema = z.strictObject({
  /** Same account, number and amount within this window without an idempotency key → 409 (0 turns it off). */
  duplicate_window_ms: ms(0, 86_400_000, 120_000),
  operators: z
    .array(operatorSchema)
    .min(1)
    .max(1_000)
    .refine((list) => new Set(list.map((o) => o.operator_id)).size === list.length, 'operator ids must be unique')
    .default(() => DEFAULT_OPERATORS.map((o) => operatorSchema.parse(o))),
  providers: z
    .strictObject({
      recharge: providerListSchema(DEFAULT_SANDBOX_CHAIN),
    })
    .prefault({}),
  /** Background work (status checks, webhook deliveries) wakes this often. */
  tick_ms: ms(10, 60_000, 500),
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
      max_file_bytes: z.int().min(1_024).max(20 * 1024 * 1024).default(5 * 1024 * 1024),
      max_files: z.int().min(1).max(10).default(5),
    })
    .prefault({}),
  register: z
    .strictObject({
      /** Sign-ups per client address per hour (0 = no limit). */
      per_ip_per_hour: z.int().min(0).max(100_000).default(20),
    })
    .prefault({}),
});

export type PaymentsConfig = z.output<typeof paymentsConfigSchema>;
