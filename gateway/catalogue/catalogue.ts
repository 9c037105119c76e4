// The model catalogue: each offered provider's chat models with their prices (US dollars per
// million tokens, exact decimal text), context window and output cap, from LiteLLM's
// model_prices_and_context_window.json (MIT; its notice is in the data file). The data is
// written by scripts/refresh-catalogue.ts, never by hand; here it is read and priced.
import data from './litellm-prices.json' with { type: 'json' };
import { convertedMicrosPerMillion } from './decimal.js';
import type { ProviderKindId } from './kinds.js';

export interface CatalogueModel {
  /** US dollars per million prompt tokens. */
  input: string;
  output: string;
  /** Per million prompt tokens read from the provider's cache; absent: not listed (billed as input). */
  cached_input?: string;
  /** Per million reasoning tokens, where the provider prices them apart from output. */
  reasoning?: string;
  /** Per million prompt tokens written to the provider's cache (Anthropic's cache writes). */
  cache_write?: string;
  context_window: number | null;
  max_output_tokens: number | null;
}

export interface CatalogueFile {
  source: string;
  retrieved_from: string;
  /** The source's own `last_updated`, when it has one. */
  source_updated: string | null;
  generated: string;
  licence: string;
  currency: 'USD';
  prices: 'per million tokens';
  models: Partial<Record<string, Record<string, CatalogueModel>>>;
}

const CATALOGUE = data as CatalogueFile;

/** Where the prices come from, for docs and answers (`aihub-gateway providers list`). */
export function catalogueInfo(): {
  source: string;
  retrieved_from: string;
  source_updated: string | null;
  generated: string;
  currency: 'USD';
} {
  const { source, retrieved_from, source_updated, generated, currency } = CATALOGUE;
  return { source, retrieved_from, source_updated, generated, currency };
}

/** The catalogue's entry for a provider's model, or null (never a prototype property). */
export function catalogueModel(kind: ProviderKindId, model: string): CatalogueModel | null {
  const models = Object.hasOwn(CATALOGUE.models, kind) ? CATALOGUE.models[kind] : undefined;
  return models && Object.hasOwn(models, model) ? models[model]! : null;
}

/** The catalogue's model names for a provider (empty for local servers and custom URLs). */
export function catalogueModels(kind: ProviderKindId): string[] {
  const models = Object.hasOwn(CATALOGUE.models, kind) ? CATALOGUE.models[kind] : undefined;
  return models ? Object.keys(models) : [];
}

/** A price in integer micro-units of the wallet's currency per million tokens (chat/pricing.ts's unit). */
export interface MicrosPrice {
  input_micros_per_million: number;
  cached_input_micros_per_million: number;
  output_micros_per_million: number;
  /** Only where the catalogue prices reasoning apart from output. */
  reasoning_micros_per_million?: number;
  /** Only where the catalogue prices cache writes. */
  cache_write_micros_per_million?: number;
}

/**
 * The catalogue's price of a model converted into the wallet's currency at `exchange_rate`
 * (wallet currency units per US dollar), each part rounded up to a micro-unit per million
 * tokens; null when the catalogue does not have the model. A cached-input price the
 * catalogue does not list is the input price (what a provider without a discount bills).
 */
export function cataloguePrice(
  kind: ProviderKindId,
  model: string,
  exchange_rate: number | string,
): MicrosPrice | null {
  const entry = catalogueModel(kind, model);
  if (!entry) return null;
  const convert = (usd: string) => convertedMicrosPerMillion(usd, exchange_rate);
  return {
    input_micros_per_million: convert(entry.input),
    cached_input_micros_per_million: convert(entry.cached_input ?? entry.input),
    output_micros_per_million: convert(entry.output),
    ...(entry.reasoning !== undefined
      ? { reasoning_micros_per_million: convert(entry.reasoning) }
      : {}),
    ...(entry.cache_write !== undefined
      ? { cache_write_micros_per_million: convert(entry.cache_write) }
      : {}),
  };
}
