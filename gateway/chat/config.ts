// The chat room's part of the gateway config. Every field has a default, so `{}` parses to
// the embedded default: five tiers, all answered by the built-in offline engine.
import { z } from 'zod';
import { cataloguePrice } from '../catalogue/catalogue.js';
import { providerChainSchema } from '../catalogue/chain.js';
import { PROVIDER_KIND_IDS } from '../catalogue/kinds.js';
import { TIER_IDS, type TierId } from '../catalogue/tiers.js';
import { engineSchema, type EngineConfig } from '../llm/engines/index.js';
import { type AmountError, microsToUnits, unitsToMicros } from '../util/money.js';
import { defaultCachedPrice, FREE, type Price } from './pricing.js';

export { isTierId, TIER_IDS, type TierId } from '../catalogue/tiers.js';
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

const fixedPriceSchema = z
  .strictObject({
    input_per_million: priceSchema,
    cached_input_per_million: priceSchema.optional(),
    output_per_million: priceSchema,
    /** Reasoning tokens (part of the output), where they are priced apart from the rest of the output. */
    reasoning_per_million: priceSchema.optional(),
    /** Prompt tokens written to the upstream's cache (Anthropic's cache writes), where they cost more than input. */
    cache_write_per_million: priceSchema.optional(),
  })
  .transform((p): TargetPrice => ({
    input_micros_per_million: p.input_per_million,
    cached_input_micros_per_million:
      p.cached_input_per_million ?? defaultCachedPrice(p.input_per_million),
    output_micros_per_million: p.output_per_million,
    ...(p.reasoning_per_million !== undefined
      ? { reasoning_micros_per_million: p.reasoning_per_million }
      : {}),
    ...(p.cache_write_per_million !== undefined
      ? { cache_write_micros_per_million: p.cache_write_per_million }
      : {}),
  }));

/**
 * A target's price: given in the wallet's currency per million tokens; or the model catalogue's
 * (catalogue/), converted at `chat.pricing.exchange_rate` when the config loads; or none known,
 * so its answers cost nothing and say `x_aihub.unpriced: true`.
 */
const targetPriceSchema = z.union([
  fixedPriceSchema,
  z.strictObject({
    catalogue: z.strictObject({
      provider: z.enum(PROVIDER_KIND_IDS),
      model: z.string().min(1).max(256),
    }),
  }),
  z.strictObject({ unpriced: z.literal(true) }),
]);

/** A price as billing reads it; `unpriced` marks a target whose real price nobody gave. */
type OptionalPrices = 'reasoning_micros_per_million' | 'cache_write_micros_per_million';
export type TargetPrice = Required<Omit<Price, OptionalPrices>> &
  Pick<Price, OptionalPrices> & { unpriced?: true };

const UNPRICED: TargetPrice = { ...FREE, unpriced: true };

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
    /**
     * The model providers `aihub-gateway providers add` (or the extension) made the engines
     * and tiers' targets from, in failover order: kept so that they can be listed, edited and
     * removed. Serving reads `engines` and `models` only.
     */
    providers: providerChainSchema.prefault({}),
    pricing: z
      .strictObject({
        /**
         * Wallet currency units per US dollar, for targets priced from the model catalogue
         * (whose prices are in US dollars); at most 6 decimals.
         */
        exchange_rate: z
          .number()
          .positive()
          .max(1_000_000)
          .refine((rate) => /^\d+(\.\d{1,6})?$/.test(String(rate)), 'must have at most 6 decimals')
          .nullable()
          .default(null),
      })
      .prefault({}),
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
    const models = resolvePrices(config.models, config.pricing.exchange_rate, ctx);
    return { ...config, models, engines };
  });

type TargetPriceInput = z.output<typeof targetPriceSchema>;

/** Every tier's target prices in micro-units: the catalogue's converted, an unpriced one free and marked. */
function resolvePrices<T extends { id: TierId; target_prices: Record<string, TargetPriceInput> }>(
  tiers: Record<TierId, T>,
  exchange_rate: number | null,
  ctx: z.RefinementCtx,
): Record<TierId, T & { target_prices: Record<string, TargetPrice> }> {
  const resolved = {} as Record<TierId, T & { target_prices: Record<string, TargetPrice> }>;
  for (const id of TIER_IDS) {
    const tier = tiers[id];
    const prices: Record<string, TargetPrice> = {};
    for (const [name, price] of Object.entries(tier.target_prices)) {
      const path = ['models', id, 'target_prices', name];
      if ('unpriced' in price) prices[name] = UNPRICED;
      else if (!('catalogue' in price)) prices[name] = price;
      else if (exchange_rate === null)
        ctx.addIssue({
          code: 'custom',
          path,
          message:
            'a catalogue price needs chat.pricing.exchange_rate (wallet currency units per US dollar)',
        });
      else {
        const { provider, model } = price.catalogue;
        const converted = cataloguePrice(provider, model, exchange_rate);
        if (converted) prices[name] = converted;
        else
          ctx.addIssue({
            code: 'custom',
            path,
            message: `${provider} model "${model}" is not in this gateway's model catalogue; give its prices or mark it {"unpriced": true}`,
          });
      }
    }
    resolved[id] = { ...tier, target_prices: prices };
  }
  return resolved;
}

export type ChatConfig = z.output<typeof chatConfigSchema>;
export type TierConfig = ChatConfig['models'][TierId];

/** The price a tier is listed at (GET /v1/models): its first target's, which answers when nothing fails. */
export function listedPricing(tier: TierConfig, currency: string) {
  const price = targetPrice(tier, tier.targets[0]!);
  return {
    input_per_million: microsToUnits(price.input_micros_per_million),
    cached_input_per_million: microsToUnits(price.cached_input_micros_per_million),
    output_per_million: microsToUnits(price.output_micros_per_million),
    currency,
    ...(price.unpriced ? { unpriced: true } : {}),
  };
}

/** The price an answer from `target` is billed at (see `target_prices`). */
export function targetPrice(tier: TierConfig, target: string | null): TargetPrice {
  if (target !== null && Object.hasOwn(tier.target_prices, target))
    return tier.target_prices[target]!;
  if (target === 'builtin' && tier.targets[0] !== 'builtin') return FREE;
  return tier;
}
