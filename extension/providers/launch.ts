// Turns the stored providers into what the local gateway is started with: its config file (the
// gateway catalogue's provider chain, made into engines and tiers by the same module as
// `aihub-gateway providers add`), whose engines name their keys by environment variable only,
// and those variables' values (read from SecretStorage by the caller). Pure, unit-tested.
import { withProviderChain } from '../../gateway/catalogue/chain.js';
import type { ProviderSet } from './store.js';

/** The environment variable a provider's key reaches the gateway in (never the user's own OPENAI_API_KEY...). */
export function keyVariable(providerId: string): string {
  return `AIHUB_PROVIDER_${providerId.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_KEY`;
}

/** The gateway's provider chain for these providers, in their order. */
export function providerChain(set: ProviderSet) {
  return {
    chain: set.providers.map((p) => ({
      kind: p.kind,
      name: p.id,
      base_url: p.baseUrl,
      ...(p.hasKey ? { api_key_env: keyVariable(p.id) } : {}),
      models: p.tiers,
      ...(p.prices ? { prices: p.prices } : {}),
    })),
    offline_last_resort: set.offlineFallback,
  };
}

/**
 * The config file's JSON for these providers, their catalogue prices converted at
 * `exchangeRate` (wallet currency units per US dollar); undefined when there is no provider
 * (the gateway's defaults).
 */
export function gatewayConfig(
  set: ProviderSet,
  exchangeRate: number,
): Record<string, unknown> | undefined {
  if (set.providers.length === 0) return undefined;
  return withProviderChain(
    { chat: { pricing: { exchange_rate: exchangeRate } } },
    providerChain(set),
  );
}

/** The keys' variables for the gateway process's environment. */
export function launchEnvironment(
  set: ProviderSet,
  keys: Record<string, string | undefined>,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const provider of set.providers) {
    const key = Object.hasOwn(keys, provider.id) ? keys[provider.id] : undefined;
    if (provider.hasKey && key) env[keyVariable(provider.id)] = key;
  }
  return env;
}
