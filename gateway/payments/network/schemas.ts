// The distribution network's requests: commission schemes (admin's and distributors'),
// an account's place in the network (admin), a distributor's retailers and its transfers to them.
import { z } from 'zod';
import { unitsToMicros, type AmountError } from '../../util/money.js';
import { unitsAmountSchema, unitsMicrosSchema } from '../../util/amount-schema.js';
import { page } from '../schemas.js';
import type { CommissionSlab } from './schemes.js';

const SERVICES = ['recharge', 'dmt', 'pan', 'bills'] as const;
const name = /^[A-Za-z0-9_-]{1,32}$/;

/** An amount ≥ 0 in units with at most 2 decimals, in micro-units. */
const units = unitsMicrosSchema(10_000_000);

export const slabBody = z
  .strictObject({
    id: z.string().regex(name, 'must be 1–32 letters, digits, _ or -'),
    service: z.enum(SERVICES),
    /** Recharge: the operator_id; bills: the biller_id; DMT: IMPS, NEFT or penny_drop; PAN: the variant; absent: any. */
    operator: z
      .union([z.int().min(0).transform(String), z.string().regex(name)])
      .nullable()
      .optional(),
    min_amount: units.default(0),
    max_amount: units.nullable().optional(),
    type: z.enum(['percent', 'flat']),
    /** percent: 0–100 with at most 2 decimals; flat: an amount. */
    value: z.number().min(0).max(100_000),
    /** The most a percent slab pays. */
    cap: units.nullable().optional(),
  })
  .transform((slab, ctx): CommissionSlab => {
    let value = 0;
    try {
      value = unitsToMicros(slab.value, 2);
    } catch (error) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: (error as AmountError).message });
      return z.NEVER;
    }
    if (slab.type === 'percent' && slab.value > 100) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'a percent is at most 100' });
      return z.NEVER;
    }
    if (slab.max_amount != null && slab.max_amount < slab.min_amount) {
      ctx.addIssue({
        code: 'custom',
        path: ['max_amount'],
        message: 'must be at least min_amount',
      });
      return z.NEVER;
    }
    if (slab.type === 'flat' && slab.cap != null) {
      ctx.addIssue({ code: 'custom', path: ['cap'], message: 'applies to percent slabs only' });
      return z.NEVER;
    }
    return {
      id: slab.id,
      service: slab.service,
      operator: slab.operator ?? null,
      min_micros: slab.min_amount,
      max_micros: slab.max_amount ?? null,
      kind: slab.type,
      value: slab.type === 'percent' ? value / 10_000 : value,
      cap_micros: slab.cap ?? null,
    };
  });

export const schemeBody = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    slabs: z.array(slabBody).min(1).max(500),
  })
  .superRefine((scheme, ctx) => {
    const seen = new Set<string>();
    for (const [i, slab] of scheme.slabs.entries()) {
      if (seen.has(slab.id))
        ctx.addIssue({
          code: 'custom',
          path: ['slabs', i, 'id'],
          message: 'slab ids must be unique',
        });
      seen.add(slab.id);
    }
  });

export const schemeIdParam = z.string().regex(/^sch_[0-9a-f]{24}$|^default$/, 'is not a scheme id');
export const accountIdParam = z.string().regex(/^acc_[0-9a-f]{24}$/, 'is not an account id');

export const networkBody = z.strictObject({
  role: z.enum(['retailer', 'distributor']).optional(),
  /** The retailer's distributor (null: none). */
  parent_id: accountIdParam.nullable().optional(),
  /** null: the default scheme. */
  scheme_id: schemeIdParam.nullable().optional(),
});

export const retailerBody = z.strictObject({
  email: z.email('must be an email address').max(254),
  password: z.string().min(8, 'must be at least 8 characters').max(256),
  name: z.string().trim().min(1, 'must not be empty').max(200),
});

export const assignBody = z.strictObject({ scheme_id: schemeIdParam.nullable() });

export const fundBody = z.strictObject({
  retailer_id: accountIdParam,
  amount: unitsAmountSchema(2, 10_000_000),
  /** Once per reference: the same reference again moves nothing (a retry). */
  reference: z.string().regex(/^[\x21-\x7e]{1,64}$/, 'must be 1–64 printable characters'),
});

export const retailersQuery = z.object(page);
