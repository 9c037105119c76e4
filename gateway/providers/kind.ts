// What a provider type registers (registry.ts holds the one list): its configuration schema
// and how an entry of that configuration becomes a PaymentProvider.
import type { z } from 'zod';
import type { PaymentProvider } from './types.js';

/** What building a provider may use besides its own configuration entry. */
export interface ProviderBuildContext {
  mode: 'sandbox' | 'live';
  now: () => Date;
  warn: (message: string) => void;
  /** Where secrets are read (process.env unless a test gives its own). */
  env: NodeJS.ProcessEnv;
}

export interface ProviderKind<Schema extends z.ZodType<{ type: string; name: string }>> {
  readonly type: z.output<Schema>['type'];
  readonly schema: Schema;
  /** The provider, or null when this entry is not used in this mode (said through `warn`). */
  build(config: z.output<Schema>, context: ProviderBuildContext): PaymentProvider | null;
}
