// What every top-up provider is built with (providers/index.ts builds the configured one).
import type { Logger } from '../../log.js';
import type { TopupsConfig } from '../config.js';
import type { TopupProvider } from '../types.js';

export interface ProviderDeps {
  config: TopupsConfig;
  /** Where the provider's secrets come from (types.ts TOPUP_ENV): process.env, or a test's. */
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** The gateway's currency (`currency`): a provider refuses one it cannot take. */
  currency: string;
}

/** Builds a provider; throws TopupConfigError naming the missing variable when a secret is absent. */
export type ProviderFactory = (deps: ProviderDeps) => TopupProvider;

export class TopupConfigError extends Error {
  override name = 'TopupConfigError';
}

/** A secret from the environment, or a TopupConfigError naming it. */
export function requireEnv(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (!value)
    throw new TopupConfigError(`topups: ${name} is not set (secrets come from the environment)`);
  return value;
}
