// The default mapping of a provider's models onto AIHub's tiers, offered for the user to change:
// the fastest (cheapest) chat model on the lite tier, which inline completions and the codebase
// index use by default, the strongest on pro and max. Pure, unit-tested.

import { catalogueModel } from '../../gateway/catalogue/catalogue.js';
import type { ProviderKindId } from '../../gateway/catalogue/kinds.js';
import type { TierId } from '../../gateway/catalogue/tiers.js';

export type TierMap = Partial<Record<TierId, string>>;

export const TIER_LABELS: Record<TierId, string> = {
  'service-ai-free': 'Free',
  'service-ai-lite': 'Lite (also inline completions)',
  'service-ai-standard-6': 'Standard',
  'service-ai-pro-4': 'Pro',
  'service-ai-max': 'Max',
};

export interface ModelInfo {
  id: string;
  /** USD (or any one currency) per million tokens, when a catalogue knows the model. */
  input_per_million?: number;
  output_per_million?: number;
}

/** The models with the catalogue's US dollar prices where it has them. */
export function withCataloguePrices(kind: ProviderKindId, ids: readonly string[]): ModelInfo[] {
  return ids.map((id) => {
    const known = catalogueModel(kind, id);
    return known
      ? { id, input_per_million: Number(known.input), output_per_million: Number(known.output) }
      : { id };
  });
}

// Models a chat tier cannot use: embeddings, speech, images, moderation, rerankers.
const NOT_CHAT =
  /(embed|whisper|tts|dall-e|image|moderation|audio|realtime|transcri|rerank|guard|speech|search-preview|computer-use|^text-|davinci|babbage)/i;
// Words in a model's name that say fast and small, or strong and large, when no price is known.
const FAST =
  /(nano|mini|flash|haiku|small|lite|tiny|instant|(^|[^0-9])[0-9](\.[0-9])?b\b|:[0-9]b\b)/i;
const STRONG =
  /(opus|[^a-z]pro\b|large|sonnet|reasoner|max\b|o3\b|gpt-5(?!-mini|-nano)|70b|405b|235b)/i;

export function chatModels(models: readonly ModelInfo[]): ModelInfo[] {
  return models.filter((m) => !NOT_CHAT.test(m.id));
}

/** A model's weight: its catalogue price when known, else a guess from its name. Higher is stronger. */
function weight(model: ModelInfo): number {
  if (model.input_per_million !== undefined && model.output_per_million !== undefined)
    return 1_000 + model.input_per_million + model.output_per_million * 4;
  if (FAST.test(model.id)) return 0;
  if (STRONG.test(model.id)) return 500;
  return 250;
}

/**
 * The suggested tier map: the models ranked by weight (ties by name, newest-looking last), the
 * lightest on free and lite, the middle on standard, the heaviest on pro and max. Priced models
 * rank above unpriced ones only among themselves: mixing the two compares guesses with prices,
 * so when some are priced only those are ranked.
 */
export function defaultTiers(models: readonly ModelInfo[]): TierMap {
  const usable = chatModels(models);
  if (usable.length === 0) return {};
  const priced = usable.filter((m) => m.input_per_million !== undefined);
  const ranked = (priced.length >= 2 ? priced : usable)
    .slice()
    .sort((a, b) => weight(a) - weight(b) || a.id.localeCompare(b.id));
  const fast = ranked[0]!.id;
  const strong = ranked[ranked.length - 1]!.id;
  const middle = ranked[Math.floor((ranked.length - 1) / 2)]!.id;
  return {
    'service-ai-free': fast,
    'service-ai-lite': fast,
    'service-ai-standard-6': middle,
    'service-ai-pro-4': strong,
    'service-ai-max': strong,
  };
}
