// The statements' queries: a month (or a span of months) and a quarter of a financial year.
import { z } from 'zod';
import { monthsPeriod, quarterPeriod } from './statements.js';

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;
const FORMAT = z.enum(['json', 'csv', 'pdf']).default('json');

export const monthQuery = z
  .strictObject({
    month: z.string().regex(MONTH, 'must be YYYY-MM').optional(),
    from_month: z.string().regex(MONTH, 'must be YYYY-MM').optional(),
    to_month: z.string().regex(MONTH, 'must be YYYY-MM').optional(),
    format: FORMAT,
    account_id: z.string().max(100).optional(),
  })
  .transform((q, ctx) => {
    const from = q.month ?? q.from_month;
    const to = q.month ?? q.to_month ?? q.from_month;
    if (!from || !to || (q.month && (q.from_month || q.to_month))) {
      ctx.addIssue({
        code: 'custom',
        path: ['month'],
        message: 'give month=YYYY-MM, or from_month and to_month',
      });
      return z.NEVER;
    }
    const span =
      (Number(to.slice(0, 4)) - Number(from.slice(0, 4))) * 12 +
      Number(to.slice(5)) -
      Number(from.slice(5));
    if (span < 0 || span > 11) {
      ctx.addIssue({
        code: 'custom',
        path: ['to_month'],
        message: 'must be from_month or up to 11 months after it',
      });
      return z.NEVER;
    }
    return { period: monthsPeriod(from, to), format: q.format, account_id: q.account_id };
  });

export const quarterQuery = z
  .strictObject({
    fy: z
      .string()
      .regex(/^\d{4}-\d{2}$/, 'must be a financial year such as 2025-26')
      .refine(
        (fy) => (Number(fy.slice(0, 4)) + 1) % 100 === Number(fy.slice(5)),
        'the second year must follow the first (2025-26)',
      ),
    quarter: z.enum(['Q1', 'Q2', 'Q3', 'Q4']),
    format: FORMAT,
    account_id: z.string().max(100).optional(),
  })
  .transform((q) => ({
    period: quarterPeriod(q.fy, q.quarter),
    format: q.format,
    account_id: q.account_id,
  }));
