// Eko as a registered provider type.
import type { ProviderKind } from '../kind.js';
import { EkoProvider } from './adapter.js';
import { ekoProviderSchema } from './config.js';

export const ekoKind: ProviderKind<typeof ekoProviderSchema> = {
  type: 'eko',
  schema: ekoProviderSchema,
  build: (config, { env, now }) => new EkoProvider(config, env, now),
};
