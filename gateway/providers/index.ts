// Builds each service's ordered provider list from the configuration.
import type { ProviderConfig } from './config.js';
import { HttpProvider } from './http.js';
import { SandboxProvider } from './sandbox.js';
import type { PaymentProvider } from './types.js';

export function buildProviders(
  configs: readonly ProviderConfig[],
  options: { mode: 'sandbox' | 'live'; now: () => Date; warn: (message: string) => void; env?: NodeJS.ProcessEnv },
): PaymentProvider[] {
  const providers: PaymentProvider[] = [];
  for (const config of configs) {
    if (config.type === 'sandbox') {
      if (options.mode === 'live') {
        options.warn(`payment provider ${config.name} is a sandbox provider and is skipped in live mode`);
        continue;
      }
      providers.push(new SandboxProvider(config, options.now));
    } else {
      providers.push(new HttpProvider(config, options.env));
    }
  }
  return providers;
}
