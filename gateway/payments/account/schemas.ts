// The account's own requests: its wallet history and its webhook URL.
import { z } from 'zod';
import { dateBound } from '../engine/txn-filter.js';
import { page } from '../schemas.js';

export const historyQuery = z.object({
  from: dateBound(false).optional(),
  to: dateBound(true).optional(),
  txn_id: z.string().max(64).optional(),
  order: z.enum(['asc', 'desc']).default('desc'),
  ...page,
});

export const webhookBody = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2_048),
});
