// The generic HTTP adapter as a registered provider type.
import type { ProviderKind } from '../kind.js';
import { HttpProvider } from './adapter.js';
import { httpProviderSchema } from './config.js';

export const httpKind: ProviderKind<typeof httpProviderSchema> = {
  type: 'http',
  schema: httpProviderSchema,
  build: (config, { env }) => new HttpProvider(config, env),
};
