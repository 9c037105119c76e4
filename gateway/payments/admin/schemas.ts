// The payments admin API's requests: eKYC review, services, IP whitelists, the audit log.
import { z } from 'zod';
import { MAX_WHITELIST_ENTRIES } from '../../accounts/ip-whitelist.js';
import { page } from '../schemas.js';

export const kycListQuery = z.object({
  status: z.enum(['submitted', 'approved', 'rejected']).optional(),
  ...page,
});
export const approveBody = z.strictObject({ reason: z.string().trim().max(500).optional() });
export const rejectBody = z.strictObject({
  reason: z.string().trim().min(1, 'a rejection needs a reason').max(500),
});
/** Turns the room's payment services (their codes, services.ts) on or off, one or more at a time. */
export const servicesBody = (codes: readonly string[]) =>
  z
    .strictObject(Object.fromEntries(codes.map((code) => [code, z.boolean().optional()])))
    .refine((body) => Object.keys(body).length > 0, `name at least one of ${codes.join(', ')}`);
export type ServicesBody = Partial<Record<string, boolean>>;
export const whitelistBody = z.strictObject({
  ips: z
    .array(z.string().max(64))
    .max(MAX_WHITELIST_ENTRIES, `at most ${MAX_WHITELIST_ENTRIES} entries`),
  /** Accept ranges wider than payments.ip_whitelist.min_prefix_* (a /0 lets every address in). */
  force: z.boolean().optional(),
});
export const auditQuery = z.object({
  account_id: z.string().max(100).optional(),
  action: z.string().max(200).optional(),
  ...page,
});
/** A hold, a refund or a reversal by hand says why (kept in the transaction's history and the audit log). */
export const reasonBody = z.strictObject({
  reason: z.string().trim().min(1, 'say why').max(500),
});
export const recheckBody = z.strictObject({ reason: z.string().trim().min(1).max(500).optional() });
