// The one list of payment provider types. A provider is a folder (`<type>/`: its
// configuration, its adapter, its kind entry in `index.ts`); adding one is adding its folder
// and its two lines here. The configuration's provider entries are validated by the union of
// the registered schemas, and each entry is built by its own type.
import { z } from 'zod';
import { ekoKind } from './eko/index.js';
import { httpKind } from './http/index.js';
import type { ProviderBuildContext } from './kind.js';
import { paysprintKind } from './paysprint/index.js';
import { sandboxKind } from './sandbox/index.js';
import type { PaymentProvider } from './types.js';

export const providerSchema = z.discriminatedUnion('type', [
  sandboxKind.schema,
  httpKind.schema,
  ekoKind.schema,
  paysprintKind.schema,
]);
export type ProviderConfig = z.output<typeof providerSchema>;

type Builders = {
  [Type in ProviderConfig['type']]: (
    config: Extract<ProviderConfig, { type: Type }>,
    context: ProviderBuildContext,
  ) => PaymentProvider | null;
};

const BUILDERS: Builders = {
  sandbox: (config, context) => sandboxKind.build(config, context),
  http: (config, context) => httpKind.build(config, context),
  eko: (config, context) => ekoKind.build(config, context),
  paysprint: (config, context) => paysprintKind.build(config, context),
};

/** The provider an entry describes, or null when its type is not used in this mode. */
export function buildProvider(
  config: ProviderConfig,
  context: ProviderBuildContext,
): PaymentProvider | null {
  const build = BUILDERS[config.type] as (
    config: ProviderConfig,
    context: ProviderBuildContext,
  ) => PaymentProvider | null;
  return build(config, context);
}
