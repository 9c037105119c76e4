// A provider's secrets come from the environment, never the config file (types.ts TOPUP_ENV).
// Apart from the list (providers/index.ts) so that a provider's folder imports it without a cycle.

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
