// Configuration of the built-in sandbox provider (sandbox mode only).
import { z } from 'zod';
import { nameSchema } from '../config-parts.js';

export const sandboxProviderSchema = z.strictObject({
  type: z.literal('sandbox'),
  name: nameSchema,
  timeout_ms: z.int().min(10).max(120_000).default(2_000),
  /** Last four digits on which this provider does not answer (CONTRACT's `0004`: the first provider times out). */
  hang_on: z
    .array(z.string().regex(/^\d{4}$/))
    .max(20)
    .default([]),
  /** How long a sandbox transaction that goes pending (`0002`, `0003`) stays pending before its status settles. */
  pending_ms: z.int().min(0).max(3_600_000).default(2_000),
  /** Requests whose parameter has one of these values are accepted pending and settle after `pending_ms` (NEFT batches). */
  pending_params: z
    .record(z.string().regex(/^[a-z_]{1,32}$/), z.array(z.string().max(64)).max(20))
    .refine((record) => Object.keys(record).length <= 10, 'at most 10 parameters')
    .default({ txn_type: ['NEFT'] }),
});
export type SandboxProviderConfig = z.output<typeof sandboxProviderSchema>;
