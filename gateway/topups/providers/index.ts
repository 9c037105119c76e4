// The one list of top-up providers: each is a folder here (razorpay/, cashfree/) exporting a
// factory (deps.ts); `topups.provider` names one. Adding a provider is adding a folder and a
// line below.
import type { TopupProvider, TopupProviderName } from '../types.js';
import { cashfreeProvider } from './cashfree/index.js';
import { TopupConfigError, type ProviderDeps, type ProviderFactory } from './deps.js';
import { createRazorpay } from './razorpay/index.js';

const FACTORIES: Partial<Record<TopupProviderName, ProviderFactory>> = {
  razorpay: createRazorpay,
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
