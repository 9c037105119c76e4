// Recharge's part of the payments config (`payments.recharge`).
import { z } from 'zod';

export const PLAN_CHECKS = ['off', 'warn', 'enforce'] as const;

export const rechargeConfigSchema = z
  .strictObject({
    /**
     * Whether a prepaid mobile recharge's amount must be one of the operator's plans in the
     * number's circle, or one of the number's own offers: `off` (not asked), `warn` (the
     * recharge goes ahead and its answer says the amount is not a listed plan), `enforce`
     * (422 `amount_not_a_plan`; 503 when no provider can list the plans). An operator whose
     * entry says `plans_only` is always held to `enforce`: this setting decides for the others.
     */
    plan_check: z.enum(PLAN_CHECKS).default('off'),
    /** An operator's plans in a circle are kept this long after they were listed (0: asked every time). */
    plans_ttl_ms: z
      .int()
      .min(0)
      .max(7 * 86_400_000)
      .default(3_600_000),
    /** At most this many operator × circle plan lists are kept (the oldest goes first). */
    plans_cache_entries: z.int().min(1).max(100_000).default(2_000),
  })
  .prefault({});
export type RechargeConfig = z.output<typeof rechargeConfigSchema>;
