// The five tiers a client asks for by name. Pure data: the chat room's config builds each
// tier's schema from it, and the provider chain (chain.ts) maps a provider's models onto it.
export const TIER_IDS = [
  'service-ai-free',
  'service-ai-lite',
  'service-ai-standard-6',
  'service-ai-pro-4',
  'service-ai-max',
] as const;
export type TierId = (typeof TIER_IDS)[number];

export function isTierId(model: string): model is TierId {
  return (TIER_IDS as readonly string[]).includes(model);
}
