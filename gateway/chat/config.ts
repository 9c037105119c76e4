// The chat room's part of the gateway config. Every field has a default, so `{}` parses to
// the embedded default: five tiers, all answered by the built-in offline engine.
import { z } from 'zod';
import { engineSchema, type EngineConfig } from '../llm/engines/index.js';
import { type AmountError, unitsToMicros } from '../util/money.js';
import { defaultCachedPrice, FREE, type Price } from './pricing.js';

export const TIER_IDS = [
  'service-ai-free',
  'service-ai-lite',
  'service-ai-standard-6',
  'service-ai-pro-4',
  'service-ai-max',
] as const;
export type TierId = (typeof TIER_IDS)[number];
export type TierName = 'free' | 'lite' | 'standard' | 'pro' | 'max';

const ENGINE_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/i;

/** A price in currency units per million tokens (at most 6 decimals), kept as integer micro-units. */
const priceSchema = z
  .number()
  .min(0)
  .max(1_000_000)
  .transform((units, ctx) => {
    try {
      return unitsToMicros(units, 6);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as AmountError).message });
      return z.NEVER;
    }
  });

const targetPriceSchema = z
  .strictObject({
    input_per_million: priceSchema,
    cached_input_per_million: priceSchema.optional(),
    output_per_million: priceSchema,
  })
  .transform((p): Required<Price> => ({
    input_micros_per_million: p.input_per_million,
    cached_input_micros_per_million:
      p.cached_input_per_million ?? defaultCachedPrice(p.input_per_million),
    output_micros_per_million: p.output_per_million,
  }));

interface TierDefaults {
  tier: TierName;
  input_per_million: number;
  output_per_million: number;
  daily_token_allowance: number | null;
  context_window: number;
  max_output_tokens: number;
}

// Defaults in INR per million tokens; they rise with the tier. Only the free tier has a
// daily allowance (prompt + completion tokens per account per UTC day).
const TIER_DEFAULTS: Record<TierId, TierDefaults> = {
  'service-ai-free': {
    tier: 'free',
    input_per_million: 0,
    output_per_million: 0,
    daily_token_allowance: 100_000,
    context_window: 8_192,
    max_output_tokens: 1_024,
  },
  'service-ai-lite': {
    tier: 'lite',
    input_per_million: 15,
    output_per_million: 60,
    daily_token_allowance: null,
    context_window: 32_768,
    max_output_tokens: 4_096,
  },
  'service-ai-standard-6': {
    tier: 'standard',
    input_per_million: 100,
    output_per_million: 400,
    daily_token_allowance: null,
    context_window: 128_000,
    max_output_tokens: 8_192,
  },
  'service-ai-pro-4': {
    tier: 'pro',
    input_per_million: 250,
    output_per_million: 1_000,
    daily_token_allowance: null,
    context_window: 200_000,
    max_output_tokens: 16_384,
  },
  'service-ai-max': {
    tier: 'max',
    input_per_million: 1_250,
    output_per_million: 5_000,
    daily_token_allowance: null,
    context_window: 400_000,
    max_output_tokens: 32_768,
  },
};

function tierSchema(id: TierId) {
  const d = TIER_DEFAULTS[id];
  return z
    .strictObject({
      input_per_million: priceSchema.prefault(d.input_per_million),
      /** Prompt tokens an upstream reports as cached (`prompt_tokens_details.cached_tokens`); default a tenth of the input price. */
      cached_input_per_million: priceSchema.optional(),
      output_per_million: priceSchema.prefault(d.output_per_million),
      /**
       * Prices of particular targets: an answer is billed at the price of the target that
       * gave it. A target not listed bills at the tier's price, except `builtin` behind
       * another target (a fallback), which is free.
       */
      target_prices: z.record(z.string().regex(ENGINE_NAME), targetPriceSchema).default({}),
      daily_token_allowance: z
        .int()
        .min(1)
        .max(1_000_000_000)
        .nullable()
        .default(d.daily_token_allowance),
      context_window: z.int().min(256).max(10_000_000).default(d.context_window),
      max_output_tokens: z.int().min(1).max(1_000_000).default(d.max_output_tokens),
      /**
       * What the tier's models read, as GET /v1/models lists it (clients such as VS Code offer
       * image attachments only where `image` is listed). The built-in engine reads text only.
       */
      input_modalities: z
        .array(z.enum(['text', 'image']))
        .min(1)
        .max(2)
        .refine((list) => list.includes('text'), 'must include "text"')
        .default(['text']),
      /** Engine names, tried in order. */
      targets: z.array(z.string().regex(ENGINE_NAME)).min(1).max(8).default(['builtin']),
    })
    .prefault({})
    .transform((t) => ({
      id,
      tier: d.tier,
      input_micros_per_million: t.input_per_million,
      cached_input_micros_per_million:
        t.cached_input_per_million ?? defaultCachedPrice(t.input_per_million),
      output_micros_per_million: t.output_per_million,
      target_prices: t.target_prices,
      daily_token_allowance: t.daily_token_allowance,
      context_window: t.context_window,
      max_output_tokens: Math.min(t.max_output_tokens, t.context_window - 1),
      input_modalities: [...new Set(t.input_modalities)],
      targets: t.targets,
    }));
}

export const chatConfigSchema = z
  .strictObject({
    models: z
      .strictObject({
        'service-ai-free': tierSchema('service-ai-free'),
        'service-ai-lite': tierSchema('service-ai-lite'),
        'service-ai-standard-6': tierSchema('service-ai-standard-6'),
        'service-ai-pro-4': tierSchema('service-ai-pro-4'),
        'service-ai-max': tierSchema('service-ai-max'),
      })
      .prefault({}),
    /** `builtin` always exists; add upstreams here and name them in `models.<id>.targets`. */
    engines: z
      .record(
        z.string().regex(ENGINE_NAME, 'engine names are letters, digits, _ . -'),
        engineSchema,
      )
      .default({}),
    rate_limit: z
      .strictObject({
        requests_per_minute: z.int().min(1).max(10_000_000).default(600),
      })
      .prefault({}),
    body_limit_bytes: z
      .int()
      .min(1_024)
      .max(64 * 1024 * 1024)
      .default(4 * 1024 * 1024),
    breaker: z
      .strictObject({
        /** Consecutive failures that open a target's circuit. */
        failure_threshold: z.int().min(1).max(1_000).default(5),
        /** How long an open circuit skips its target before one probe request may try it. */
        cooldown_ms: z.int().min(100).max(3_600_000).default(30_000),
      })
      .prefault({}),
    /** Chat requests in flight at once; beyond it, 503 at once instead of an unbounded queue. */
    max_in_flight: z.int().min(1).max(100_000).default(4_096),
  })
  .transform((config, ctx) => {
    const engines: Record<string, EngineConfig> = {
      builtin: { type: 'builtin', token_interval_ms: 0 },
      ...config.engines,
    };
    for (const tier of Object.values(config.models)) {
      for (const name of Object.keys(tier.target_prices)) {
        if (!tier.targets.includes(name))
          ctx.addIssue({
            code: 'custom',
            path: ['models', tier.id, 'target_prices', name],
            message: `"${name}" is not one of this tier's targets`,
          });
      }
      tier.targets.forEach((target, index) => {
        if (!Object.hasOwn(engines, target)) {
          ctx.addIssue({
            code: 'custom',
            path: ['models', tier.id, 'targets', index],
            message: `unknown engine "${target}"; define it under chat.engines`,
          });
        }
      });
    }
    return { ...config, engines };
  });

export type ChatConfig = z.output<typeof chatConfigSchema>;
export type TierConfig = ChatConfig['models'][TierId];

/** The price an answer from `target` is billed at (see `target_prices`). */
export function targetPrice(tier: TierConfig, target: string | null): Required<Price> {
  if (target !== null && Object.hasOwn(tier.target_prices, target))
    return tier.target_prices[target]!;
  if (target === 'builtin' && tier.targets[0] !== 'builtin') return FREE;
  return tier;
}

export function isTierId(model: string): model is TierId {
  return (TIER_IDS as readonly string[]).includes(model);
}
