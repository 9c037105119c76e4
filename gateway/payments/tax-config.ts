// The payments room's tax settings (`payments.tax`): the operator's identity on statements,
// the GST rate of its fees, the TDS rates of the commissions it pays. The rules that use them
// are in engine/tax.ts.
import { z } from 'zod';
import { percentBpSchema } from '../util/amount-schema.js';
import { gstinSchema } from './identity/gstin.js';

const percentSchema = percentBpSchema;

/** A document series' prefix: 1–3 letters or digits, so that a number stays within 16 characters. */
const documentPrefix = z
  .string()
  .regex(/^[A-Z0-9]{1,3}$/, 'must be 1 to 3 capital letters or digits');

/** A GST state code (01–38, 97 other territory), as the first two digits of a GSTIN. */
export const gstStateSchema = z
  .string()
  .regex(/^(0[1-9]|[12]\d|3[0-8]|97)$/, 'must be a GST state code, 01 to 38 (or 97)');

/**
 * Taxes on the platform's fees and on the commissions it pays (docs/payments-api.md, "Tax"):
 * GST split out of every fee, TDS withheld from every commission.
 */
export const taxSchema = z
  .strictObject({
    /** The business that runs this gateway, as it appears on statements and invoices. */
    operator: z
      .strictObject({
        name: z.string().min(1).max(200).default('AIHub Payments'),
        /**
         * Its GSTIN, checked in full (state, PAN, check character). Without one the operator
         * is not registered for GST: its fees carry no GST and its documents are bills of
         * supply (CGST Rules, rule 49), not tax invoices.
         */
        gstin: gstinSchema.optional(),
        /** Its GST state code (default: the GSTIN's, else 29, Karnataka: set it; with a GSTIN, the GSTIN's). */
        state: gstStateSchema.optional(),
        pan: z.string().length(10).optional(),
        /** Its TAN (the deductor's number on a TDS statement). */
        tan: z
          .string()
          .regex(/^[A-Z]{4}\d{5}[A-Z]$/, 'must be a TAN: 4 letters, 5 digits, a letter')
          .optional(),
        address: z.string().min(1).max(300).optional(),
      })
      .superRefine((operator, ctx) => {
        if (!operator.gstin) return;
        if (operator.pan !== undefined && operator.gstin.slice(2, 12) !== operator.pan)
          ctx.addIssue({ code: 'custom', path: ['gstin'], message: 'does not contain `pan`' });
        if (operator.state !== undefined && operator.state !== operator.gstin.slice(0, 2))
          ctx.addIssue({
            code: 'custom',
            path: ['state'],
            message: `must be the GSTIN's state (${operator.gstin.slice(0, 2)})`,
          });
      })
      .prefault({}),
    gst: z
      .strictObject({
        /** The GST rate of the platform's fees (SAC 9971, financial services: 18 %). Fees are GST-inclusive. */
        rate: percentSchema(40).default(1_800),
        /** The services code printed on invoices. */
        sac: z
          .string()
          .regex(/^\d{6}$/)
          .default('997158'),
      })
      .prefault({}),
    /** GST documents' numbering (docs/payments-api.md, "GST invoices"). */
    invoices: z
      .strictObject({
        /** Tax invoices and bills of supply: `<prefix>/<yy-yy>/<serial>` (at most 16 characters). */
        prefix: documentPrefix.default('AH'),
        /** Credit notes, a series of their own. */
        credit_prefix: documentPrefix.default('AHC'),
        /** The first month documents are issued for (default: the month the store was made). */
        from_month: z
          .string()
          .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'must be YYYY-MM')
          .optional(),
      })
      .refine((i) => i.prefix !== i.credit_prefix, {
        path: ['credit_prefix'],
        message: 'must differ from prefix (a series of its own)',
      })
      .prefault({}),
    tds: z
      .strictObject({
        /** Section 194H (commission or brokerage): 2 % since 1 October 2024 (5 % before). */
        rate: percentSchema(30).default(200),
        /** Section 206AA: a payee without a PAN on record: the higher of the rate and 20 %. */
        rate_without_pan: percentSchema(40).default(2_000),
      })
      .prefault({}),
  })
  .prefault({});
