// The one list of top-up providers: each is a folder here (razorpay/, cashfree/) exporting a
// factory; `topups.provider` names one. Adding a provider is adding a folder and a line below.
import type { Logger } from '../../log.js';
import type { TopupsConfig } from '../config.js';
import type { TopupProvider, TopupProviderName } from '../types.js';
import { cashfreeProvider } from './cashfree/index.js';
import { TopupConfigError } from './env.js';

export { TopupConfigError, requireEnv } from './env.js';

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

const FACTORIES: Partial<Record<TopupProviderName, ProviderFactory>> = {
  cashfree: cashfreeProvider,
};

/** The configured provider, or null when `topups.provider` is null. */
export function createTopupProvider(deps: ProviderDeps): TopupProvider | null {
  const name = deps.config.provider;
  if (name === null) return null;
  const factory = FACTORIES[name];
  if (!factory) throw new TopupConfigError(`topups.provider: ${name} is not built in yet`);
  return factory(deps);
}
