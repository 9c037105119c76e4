// The built-in sandbox provider as a registered provider type: sandbox mode only.
import type { ProviderKind } from '../kind.js';
import { SandboxProvider } from './adapter.js';
import { sandboxProviderSchema } from './config.js';

export const sandboxKind: ProviderKind<typeof sandboxProviderSchema> = {
  type: 'sandbox',
  schema: sandboxProviderSchema,
  build(config, { mode, now, warn }) {
    if (mode === 'live') {
      warn(`payment provider ${config.name} is a sandbox provider and is skipped in live mode`);
      return null;
    }
    return new SandboxProvider(config, now);
  },
};
