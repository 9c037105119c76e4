// What every provider's configuration shares: names, environment-variable names, header
// names, fixed headers and a credential header, dotted JSON paths. Every field is bounded;
// secrets come from the environment, never the file.
import { z } from 'zod';

export const PROVIDER_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/i;
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;

/** Fixed headers sent to an upstream (a provider or the SMS gateway). */
export const upstreamHeadersSchema = z
  .record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), z.string().max(4_096))
  .default({});

/** How an upstream is authenticated: a header whose value comes from an environment variable. */
export const upstreamAuthSchema = z
  .strictObject({
    header: z.string().regex(HEADER_NAME).default('Authorization'),
    /** Environment variable holding the credential. */
    value_env: z.string().regex(ENV_NAME, 'must be an environment variable name'),
    prefix: z.string().max(64).default(''),
  })
  .optional();
/** A dotted path into a JSON document, e.g. `data.status` or `result.items.0.ref`. */
export const JSON_PATH = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+){0,15}$/;
export const nameSchema = z
  .string()
  .regex(PROVIDER_NAME, 'must be a provider name of letters, digits, _ . -');
