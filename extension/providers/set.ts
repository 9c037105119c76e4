// The model providers' list as the extension keeps it (no keys), and its validation when it is
// read back from global state. Pure: no vscode import, unit-tested.
import { isProviderKindId, type ProviderKindId } from '../../gateway/catalogue/kinds.js';
import { TIER_IDS, type TierId } from '../../gateway/catalogue/tiers.js';
import type { TierMap } from './tiers.js';

/** A tier takes 8 targets at most (the gateway's limit): 7 providers and the offline engine. */
export const MAX_PROVIDERS = 7;
const PROVIDER_ID = /^[a-z][a-z0-9-]{0,31}$/;

export interface ProviderEntry {
  /** Unique, `[a-z][a-z0-9-]*`: names its engines and its key's environment variable. */
  id: string;
  kind: ProviderKindId;
  label: string;
  /** The chat-completions API root (the kind's own, a local server's port, or the URL typed). */
  baseUrl: string;
  /** Whether a key is kept for it in SecretStorage (never the key itself). */
  hasKey: boolean;
  tiers: TierMap;
  /** Prices the user gave for models the catalogue lacks (wallet currency per million tokens). */
  prices?: Record<string, UserPrice>;
}

export interface UserPrice {
  input_per_million: number;
  output_per_million: number;
}

export interface ProviderSet {
  /** In failover order: a tier tries the first provider's model first. */
  providers: ProviderEntry[];
  /** The built-in offline engine answers when every provider failed; only when the user said so. */
  offlineFallback: boolean;
}

/** The stored set, with anything malformed left out (global state is ours, but it outlives versions). */
export function parseProviderSet(raw: unknown): ProviderSet {
  const value = (raw ?? {}) as { providers?: unknown; offlineFallback?: unknown };
  const providers: ProviderEntry[] = [];
  const seen = new Set<string>();
  for (const item of Array.isArray(value.providers) ? value.providers : []) {
    const entry = parseEntry(item);
    if (entry && !seen.has(entry.id) && providers.length < MAX_PROVIDERS) {
      seen.add(entry.id);
      providers.push(entry);
    }
  }
  return { providers, offlineFallback: value.offlineFallback === true };
}

function parseEntry(item: unknown): ProviderEntry | undefined {
  const e = (item ?? {}) as Record<string, unknown>;
  if (typeof e.id !== 'string' || !PROVIDER_ID.test(e.id) || !isProviderKindId(String(e.kind)))
    return undefined;
  if (typeof e.baseUrl !== 'string' || !/^https?:\/\//.test(e.baseUrl)) return undefined;
  const tiers: TierMap = {};
  const rawTiers = (e.tiers ?? {}) as Record<string, unknown>;
  for (const tier of TIER_IDS) {
    const model = Object.hasOwn(rawTiers, tier) ? rawTiers[tier] : undefined;
    if (typeof model === 'string' && model.length > 0 && model.length <= 256)
      tiers[tier as TierId] = model;
  }
  const prices = parsePrices(e.prices, tiers);
  return {
    ...(prices ? { prices } : {}),
    id: e.id,
    kind: e.kind as ProviderKindId,
    label: typeof e.label === 'string' ? e.label.slice(0, 100) : e.id,
    baseUrl: e.baseUrl,
    hasKey: e.hasKey === true,
    tiers,
  };
}

/** The prices of the entry's mapped models only, each a non-negative finite number. */
function parsePrices(raw: unknown, tiers: TierMap): Record<string, UserPrice> | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const prices: Record<string, UserPrice> = {};
  for (const model of new Set(Object.values(tiers))) {
    const price = Object.hasOwn(raw, model) ? (raw as Record<string, unknown>)[model] : undefined;
    const { input_per_million: input, output_per_million: output } = (price ?? {}) as Record<
      string,
      unknown
    >;
    if (isPrice(input) && isPrice(output))
      prices[model] = { input_per_million: input, output_per_million: output };
  }
  return Object.keys(prices).length ? prices : undefined;
}

function isPrice(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && value <= 1_000_000;
}
