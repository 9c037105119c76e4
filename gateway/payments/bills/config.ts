// Bill payment's part of the payments config (`payments.bills`): BBPS as NPCI defines it (the
// biller categories of Bharat Connect; each biller with its customer parameters, its mode,
// its amount rule, partial payment), the fetch lifetime, the customer details a payment
// carries, complaints. The catalogue itself (billers) is in catalogue.ts.
import { z } from 'zod';
import { percentBpSchema } from '../../util/amount-schema.js';
import { ms, patternSchema, unitsSchema } from '../config-parts.js';
import { DEFAULT_BILLERS } from './catalogue.js';

/** The biller categories of BBPS (Bharat Connect), by the id the API uses, with their names. */
export const BILL_CATEGORY_NAMES = {
  electricity: 'Electricity',
  water: 'Water',
  gas: 'Piped Gas',
  lpg: 'LPG Cylinder',
  broadband: 'Broadband Postpaid',
  landline: 'Landline Postpaid',
  postpaid: 'Mobile Postpaid',
  dth: 'DTH',
  cable_tv: 'Cable TV',
  fastag: 'FASTag',
  insurance: 'Insurance',
  health_insurance: 'Health Insurance',
  life_insurance: 'Life Insurance',
  loan_repayment: 'Loan Repayment',
  credit_card: 'Credit Card',
  municipal_tax: 'Municipal Taxes',
  municipal_services: 'Municipal Services',
  education_fees: 'Education Fees',
  subscription: 'Subscription',
  housing_society: 'Housing Society',
  hospital: 'Hospital and Pathology',
  clubs_associations: 'Clubs and Associations',
  recurring_deposit: 'Recurring Deposit',
  nps: 'National Pension System',
  prepaid_meter: 'Prepaid Meter',
  donation: 'Donation',
  rental: 'Rental',
  ncmc: 'NCMC Recharge',
  echallan: 'eChallan',
} as const;
export type BillCategory = keyof typeof BILL_CATEGORY_NAMES;
export const BILL_CATEGORIES = Object.keys(BILL_CATEGORY_NAMES) as [
  BillCategory,
  ...BillCategory[],
];
/** Other names clients use for a category (NPCI's "Gas" and "Piped Gas" are one category here). */
export const BILL_CATEGORY_ALIASES: Readonly<Record<string, BillCategory>> = {
  piped_gas: 'gas',
  mobile_postpaid: 'postpaid',
  broadband_postpaid: 'broadband',
  landline_postpaid: 'landline',
  municipal_taxes: 'municipal_tax',
  lpg_cylinder: 'lpg',
  education: 'education_fees',
};

/**
 * How a biller is paid (NPCI's fetch and validation requirements): `fetch_and_pay` (the
 * biller gives the bill, a payment pays it), `validate_and_pay` (the biller confirms the
 * customer, a payment names that confirmation), `pay_directly` (no fetch: an amount for a
 * customer, as a FASTag or an NPS contribution).
 */
export const BILLER_MODES = ['fetch_and_pay', 'validate_and_pay', 'pay_directly'] as const;
export type BillerMode = (typeof BILLER_MODES)[number];

/** NPCI's payment amount exactness against a fetched bill; `ANY`: any amount within the biller's bounds. */
export const AMOUNT_RULES = ['EXACT', 'EXACT_AND_ABOVE', 'EXACT_AND_BELOW', 'ANY'] as const;
export type AmountRule = (typeof AMOUNT_RULES)[number];

/** A customer parameter of a biller (NPCI's customerParams): its name in requests, label, rule, whether optional. */
export const billerParamSchema = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'must be a lower-case identifier'),
  label: z.string().min(1).max(80),
  regex: patternSchema,
  optional: z.boolean().default(false),
});
export type BillerParam = z.output<typeof billerParamSchema>;

export const billerSchema = z
  .strictObject({
    biller_id: z
      .string()
      .regex(/^[A-Z0-9_-]{2,32}$/, 'must be 2–32 upper-case letters, digits, _ or -'),
    name: z.string().min(1).max(100),
    category: z.enum(BILL_CATEGORIES),
    /** The customer parameters, the first being the customer's number at the biller (consumer number, policy number...). */
    params: z.array(billerParamSchema).min(1).max(5).optional(),
    /** Before `params`: the one parameter, `consumer_number`, as a rule and a label. */
    consumer_pattern: patternSchema.optional(),
    consumer_label: z.string().min(1).max(60).optional(),
    mode: z.enum(BILLER_MODES).default('fetch_and_pay'),
    /**
     * Kept for configs written before #35, when a fetch-and-pay biller could be paid without a
     * fetch: a fetch-and-pay biller is paid only against a fetched bill (NPCI), so `false` is
     * refused for one (a biller paid without a fetch is `pay_directly`).
     */
    fetch_required: z.boolean().optional(),
    amount_rule: z.enum(AMOUNT_RULES).optional(),
    /** Before `amount_rule`: true is EXACT, false is ANY. */
    exact_amount: z.boolean().optional(),
    /** A bill may be paid in part (less than its amount), whatever the amount rule says of less. */
    partial_pay: z.boolean().default(false),
    min_amount: unitsSchema(2, 1_000_000).default(1_000_000),
    max_amount: unitsSchema(2, 1_000_000).default(200_000_000_000),
    /** A convenience fee charged on each payment, posted separately to revenue:bills. */
    fee: unitsSchema(2, 10_000).default(0),
    /** Paid to the customer's wallet on success, as a percentage of the amount. */
    commission_pct: percentBpSchema(20).default(0),
    /** Where the biller serves (a state, a city, "All India"). */
    coverage: z.string().min(1).max(60).default('All India'),
  })
  .refine((biller) => biller.min_amount > 0 && biller.min_amount <= biller.max_amount, {
    message: 'min_amount must be above zero and at most max_amount',
    path: ['min_amount'],
  })
  .refine(
    (biller) =>
      biller.params === undefined ||
      new Set(biller.params.map((p) => p.name)).size === biller.params.length,
    { message: 'parameter names must be unique', path: ['params'] },
  )
  .refine((biller) => biller.mode !== 'fetch_and_pay' || biller.fetch_required !== false, {
    message:
      'a fetch-and-pay biller is paid only against a fetched bill (NPCI); a biller paid without a fetch is mode pay_directly',
    path: ['fetch_required'],
  })
  .refine((biller) => !biller.params?.[0]?.optional, {
    message: 'the first parameter (the customer number) cannot be optional',
    path: ['params'],
  })
  .transform((biller) => {
    const params: BillerParam[] = biller.params ?? [
      {
        name: 'consumer_number',
        label: biller.consumer_label ?? 'consumer number',
        regex: biller.consumer_pattern ?? '^\\d{6,16}$',
        optional: false,
      },
    ];
    const amount_rule: AmountRule =
      biller.amount_rule ?? (biller.exact_amount === false ? 'ANY' : 'EXACT');
    return {
      ...biller,
      fetch_required: biller.mode === 'fetch_and_pay',
      params,
      consumer_pattern: params[0]!.regex,
      consumer_label: params[0]!.label,
      amount_rule,
      exact_amount: amount_rule === 'EXACT',
    };
  });
export type Biller = z.output<typeof billerSchema>;

export const billsConfigSchema = z
  .strictObject({
    billers: z
      .array(billerSchema)
      .min(1)
      .max(20_000)
      .refine(
        (list) => new Set(list.map((b) => b.biller_id)).size === list.length,
        'biller ids must be unique',
      )
      .default(() => DEFAULT_BILLERS.map((b) => billerSchema.parse(b))),
    /** A fetched bill (or a validation) can be paid by its bill_id for this long. */
    fetch_ttl_ms: ms(1_000, 30 * 86_400_000, 86_400_000),
    /**
     * The request shape from before BBPS: the customer named by `consumer_number` alone (no
     * `params`). Off by default; on, it is still taken (every rule of the current shape applies
     * to it: the fetch, the amount rule, the customer's mobile and PAN) and every answer to it
     * carries `Deprecation` and `Sunset` headers (LEGACY_SUNSET in bills/commands.ts).
     */
    allow_legacy_requests: z.boolean().default(false),
    /** BBPS asks for the customer's PAN (or Form 60) on a payment of this much or more. */
    pan_from_amount: unitsSchema(2, 10_000_000).default(50_000_000_000),
    complaints: z
      .strictObject({
        /** The provider is asked for a complaint's status at most this often (per complaint). */
        refresh_ms: ms(0, 86_400_000, 5_000),
        /** A resolved or rejected complaint is kept this long, then pruned. */
        keep_ms: ms(86_400_000, 10 * 366 * 86_400_000, 366 * 86_400_000),
        /** Open complaints per account (bounded). */
        max_open_per_account: z.int().min(1).max(100_000).default(1_000),
      })
      .prefault({}),
  })
  .prefault({});
export type BillsConfig = z.output<typeof billsConfigSchema>;
