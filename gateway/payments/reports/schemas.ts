// The reports' query (GET /api/reports/:report and GET /admin/reports/:report), and the
// wallet history's (GET /api/wallet/history).
import { z } from 'zod';
import { SERVICES, dateBound } from '../engine/txn-filter.js';
import { page } from '../schemas.js';

export const reportsQuery = z.strictObject({
  service: z.enum(SERVICES).optional(),
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  txn_id: z.string().trim().max(64).optional(),
  number: z.string().trim().max(40).optional(),
  /** Another name for `number` (a remitter's or a recharge's mobile). */
  mobile: z.string().trim().max(40).optional(),
  page: z.coerce.number().int().min(1).max(1_000_000).optional(),
  limit: z.coerce.number().int().min(1).max(1_000_000).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
  format: z.enum(['json', 'csv']).default('json'),
  /** Admin only: one account (omitted: every account). */
  account_id: z.string().max(100).optional(),
});

export const historyQuery = z.object({
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  txn_id: z.string().max(64).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
  ...page,
});
