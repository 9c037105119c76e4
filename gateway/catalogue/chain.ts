// An ordered list of model providers, made into the gateway config's `chat.engines` and the
// tiers' `targets` and `target_prices`: the first provider that maps a tier answers it, the
// next ones are its failover, and the built-in offline engine comes last only when asked for.
// Keys appear only as environment-variable names. Pure: it takes and returns the config
// file's JSON, so the gateway's CLI and the extension write the same thing.
import { z } from 'zod';
import { catalogueModel } from './catalogue.js';
import { PROVIDER_KIND_IDS, providerKind, type ProviderKindId } from './kinds.js';
import { TIER_IDS, type TierId } from './tiers.js';

const NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/i;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const ENGINE_NAME_MAX = 64;
/** A tier has at most 8 targets (chat/config.ts). */
export const MAX_TARGETS = 8;
export const MAX_PROVIDERS = 16;
export const BUILTIN = 'builtin';

/** A price the user gives for a model the catalogue does not have: wallet currency units per million tokens. */
const userPriceSchema = z.strictObject({
  input_per_million: z.number().min(0).max(1_000_000),
  cached_input_per_million: z.number().min(0).max(1_000_000).optional(),
  output_per_million: z.number().min(0).max(1_000_000),
});

export const providerEntrySchema = z
  .strictObject({
    kind: z.enum(PROVIDER_KIND_IDS),
    /** Names the provider's engines (`<name>-<model>`); letters, digits, _ and -. */
    name: z
      .string()
      .regex(NAME, 'must be 1-32 letters, digits, _ or -, starting with a letter or digit'),
    /** The chat-completions API root; the kind's default when absent (required for a custom URL). */
    base_url: z
      .url({ protocol: /^https?$/ })
      .max(2_048)
      .optional(),
    /** The environment variable holding the key (never the key); the kind's default when absent. */
    api_key_env: z.string().regex(ENV_NAME, 'must be an environment variable name').optional(),
    /** Which of the provider's models answers each tier. */
    models: z
      .partialRecord(z.enum(TIER_IDS), z.string().min(1).max(256))
      .refine((models) => Object.keys(models).length > 0, 'map at least one tier to a model'),
    /** Prices of models the catalogue does not have; a model with neither is billed as unpriced. */
    prices: z.record(z.string().min(1).max(256), userPriceSchema).optional(),
  })
  .superRefine((entry, ctx) => {
    if (entry.kind === 'openai-compatible' && !entry.base_url)
      ctx.addIssue({
        code: 'custom',
        path: ['base_url'],
        message: 'an OpenAI-compatible provider needs its URL',
      });
  });
export type ProviderEntry = z.output<typeof providerEntrySchema>;

export const providerChainSchema = z.strictObject({
  chain: z
    .array(providerEntrySchema)
    .max(MAX_PROVIDERS)
    .superRefine((chain, ctx) => {
      const seen = new Set<string>();
      chain.forEach((entry, index) => {
        if (seen.has(entry.name.toLowerCase()))
          ctx.addIssue({
            code: 'custom',
            path: [index, 'name'],
            message: `"${entry.name}" is named twice`,
          });
        seen.add(entry.name.toLowerCase());
      });
    })
    .default([]),
  /** The built-in offline engine answers when every provider failed. */
  offline_last_resort: z.boolean().default(false),
});
export type ProviderChain = z.output<typeof providerChainSchema>;

/** How a target is priced in the config file (chat/config.ts reads each form). */
export type TargetPriceJson =
  | { catalogue: { provider: ProviderKindId; model: string } }
  | { input_per_million: number; cached_input_per_million?: number; output_per_million: number }
  | { unpriced: true };

export interface EngineJson {
  type: 'openai-compatible';
  base_url: string;
  api_key_env?: string;
  model: string;
  protocols: string[];
  max_tokens_field: 'max_tokens' | 'max_completion_tokens';
}

export interface ProviderTarget {
  engine: string;
  provider: ProviderEntry;
  model: string;
  config: EngineJson;
  price: TargetPriceJson;
}

/** The provider's API root, its key's variable (null: none), after the kind's defaults. */
export function resolvedProvider(entry: ProviderEntry): {
  base_url: string;
  api_key_env: string | null;
} {
  const kind = providerKind(entry.kind);
  return {
    base_url: (entry.base_url ?? kind.base_url)!,
    api_key_env: entry.api_key_env ?? (kind.key === 'none' ? null : kind.default_key_env),
  };
}

function slug(model: string): string {
  return (
    model
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'model'
  );
}

/** How an answer from this model is billed: the user's price, free (a local server), the catalogue's, or unpriced. */
export function targetPriceOf(entry: ProviderEntry, model: string): TargetPriceJson {
  if (entry.prices && Object.hasOwn(entry.prices, model)) return { ...entry.prices[model]! };
  if (providerKind(entry.kind).local_port !== null && !entry.base_url?.startsWith('https:'))
    return { input_per_million: 0, output_per_million: 0 };
  if (catalogueModel(entry.kind, model)) return { catalogue: { provider: entry.kind, model } };
  return { unpriced: true };
}

/** Every (provider, model) target of the chain, with its engine name (`<provider>-<model>`, unique). */
export function providerTargets(chain: readonly ProviderEntry[]): ProviderTarget[] {
  const targets: ProviderTarget[] = [];
  const names = new Set<string>([BUILTIN]);
  for (const entry of chain) {
    const kind = providerKind(entry.kind);
    const { base_url, api_key_env } = resolvedProvider(entry);
    for (const model of new Set(Object.values(entry.models))) {
      const base = `${entry.name}-${slug(model)}`.slice(0, ENGINE_NAME_MAX);
      let engine = base;
      for (let n = 2; names.has(engine.toLowerCase()); n++)
        engine = `${base.slice(0, ENGINE_NAME_MAX - String(n).length - 1)}-${n}`;
      names.add(engine.toLowerCase());
      targets.push({
        engine,
        provider: entry,
        model,
        config: {
          type: 'openai-compatible',
          base_url,
          ...(api_key_env ? { api_key_env } : {}),
          model,
          protocols: [...kind.protocols],
          max_tokens_field: kind.max_tokens_field,
        },
        price: targetPriceOf(entry, model),
      });
    }
  }
  return targets;
}

type Json = Record<string, unknown>;
const obj = (value: unknown): Json =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};

/** The provider chain a config file holds (`chat.providers`), validated; the empty chain when none. */
export function chainOf(config: Json): ProviderChain {
  return providerChainSchema.parse(obj(obj(config).chat).providers ?? {});
}

/**
 * The config file with `chat.providers` set to `chain` and the engines and tiers made from it:
 * the engines the previous chain made are replaced, each tier's targets become its providers'
 * models in chain order, then the targets a person added by hand (kept as later fallbacks),
 * then `builtin` when `offline_last_resort` (or when nothing else is left). A tier's context
 * window and output cap become the smallest of its models' known ones. Every other field of
 * the file is kept as it was. Throws a ZodError on an invalid chain, and an Error when a tier
 * would have more targets than the gateway takes.
 */
export function withProviderChain(config: Json, chain_input: unknown): Json {
  const chain = providerChainSchema.parse(chain_input);
  const chat = obj(config.chat);
  const previous = providerTargets(chainOf(config).chain).map((t) => t.engine);
  const targets = providerTargets(chain.chain);
  const engines: Json = { ...obj(chat.engines) };
  for (const name of previous) delete engines[name];
  for (const target of targets) engines[target.engine] = target.config;
  const models: Json = { ...obj(chat.models) };
  for (const tier of TIER_IDS)
    models[tier] = tierJson(tier, obj(models[tier]), chain, targets, new Set(previous));
  return { ...config, chat: { ...chat, providers: chain, engines, models } };
}

/**
 * The file with `chat.pricing.exchange_rate` (wallet currency units per US dollar, what the
 * catalogue's prices are converted at) set to `rate`; with null, left as it was, except that
 * a wallet in US dollars (`currency: "USD"`) without one gets 1.
 */
export function withExchangeRate(config: Json, rate: number | null): Json {
  const chat = obj(config.chat);
  const pricing = obj(chat.pricing);
  const next =
    rate ?? (pricing.exchange_rate === undefined && config.currency === 'USD' ? 1 : null);
  if (next === null) return config;
  return { ...config, chat: { ...chat, pricing: { ...pricing, exchange_rate: next } } };
}

function tierJson(
  tier: TierId,
  old: Json,
  chain: ProviderChain,
  targets: ProviderTarget[],
  previous: Set<string>,
): Json {
  const mine = targets.filter((t) => t.provider.models[tier] === t.model);
  const old_targets = Array.isArray(old.targets)
    ? (old.targets as unknown[]).filter((t): t is string => typeof t === 'string')
    : [];
  const by_hand = old_targets.filter((t) => t !== BUILTIN && !previous.has(t));
  const list = [...mine.map((t) => t.engine), ...by_hand];
  if (chain.offline_last_resort || list.length === 0) list.push(BUILTIN);
  if (list.length > MAX_TARGETS)
    throw new Error(
      `${tier} would have ${list.length} targets; the gateway takes at most ${MAX_TARGETS}`,
    );
  const prices: Json = {};
  for (const [name, price] of Object.entries(obj(old.target_prices)))
    if (by_hand.includes(name)) prices[name] = price;
  for (const t of mine) prices[t.engine] = t.price;
  const { targets: _t, target_prices: _p, ...rest } = old;
  // The limits follow the tier's provider models; with none left, the ones a chain set go too.
  if (mine.length || old_targets.some((t) => previous.has(t))) {
    delete rest.context_window;
    delete rest.max_output_tokens;
  }
  return { ...rest, ...tierLimits(mine), targets: list, target_prices: prices };
}

/** The smallest known context window and output cap among a tier's provider models. */
function tierLimits(targets: ProviderTarget[]): {
  context_window?: number;
  max_output_tokens?: number;
} {
  const known = targets
    .map((t) => catalogueModel(t.provider.kind, t.model))
    .filter((m) => m !== null);
  const windows = known.map((m) => m.context_window).filter((n): n is number => n !== null);
  const caps = known.map((m) => m.max_output_tokens).filter((n): n is number => n !== null);
  return {
    ...(windows.length ? { context_window: Math.min(10_000_000, ...windows) } : {}),
    ...(caps.length ? { max_output_tokens: Math.min(1_000_000, ...caps) } : {}),
  };
}
