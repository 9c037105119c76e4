// PaySprint as a registered provider type (live mode: a real aggregator).
import type { ProviderKind } from '../kind.js';
import { PaysprintProvider } from './adapter.js';
import { paysprintProviderSchema } from './config.js';

export const paysprintKind: ProviderKind<typeof paysprintProviderSchema> = {
  type: 'paysprint',
  schema: paysprintProviderSchema,
  build: (config, { env, now }) => new PaysprintProvider(config, env, now),
};
