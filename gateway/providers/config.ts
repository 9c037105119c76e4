// Configuration of payment providers: each service's ordered failover list of provider
// entries (every type registered in registry.ts) and the SMS sender of remitter OTPs. Every
// field is bounded; secrets come from the environment, never the file.
import { z } from 'zod';
import {
  JSON_PATH,
  nameSchema,
  upstreamAuthSchema,
  upstreamHeadersSchema,
} from './config-parts.js';
import { providerSchema } from './registry.js';

export { PROVIDER_NAME } from './config-parts.js';
export { httpProviderSchema, type HttpProviderConfig } from './http/config.js';
export { sandboxProviderSchema, type SandboxProviderConfig } from './sandbox/config.js';
export { providerSchema, type ProviderConfig } from './registry.js';

/**
 * An SMS gateway for remitter OTPs in live mode: a POST (JSON) or GET (query) with the
 * number and the text mapped to the gateway's field names; any 2xx is sent.
 */
export const smsSenderSchema = z.strictObject({
  type: z.literal('http'),
  name: nameSchema.default('sms'),
  url: z.url({ protocol: /^https?$/ }).max(2_048),
  method: z.enum(['GET', 'POST']).default('POST'),
  timeout_ms: z.int().min(100).max(60_000).default(10_000),
  /** Outgoing field → `mobile` (10 digits), `mobile_e164` (+91…), `message`, or `const:<text>`. */
  fields: z
    .record(
      z.string().regex(JSON_PATH, 'must be a dotted field path'),
      z
        .string()
        .regex(
          /^(mobile|mobile_e164|message|const:.{0,256})$/s,
          'must be mobile, mobile_e164, message or const:<text>',
        ),
    )
    .refine((fields) => Object.keys(fields).length <= 32, 'at most 32 fields')
    .refine(
      (fields) => Object.values(fields).includes('message'),
      'one field must carry the message',
    ),
  headers: upstreamHeadersSchema,
  auth: upstreamAuthSchema,
});
export type SmsSenderConfig = z.output<typeof smsSenderSchema>;

/** An ordered failover list; names unique within it. */
export function providerListSchema(defaults: z.input<typeof providerSchema>[]) {
  return z
    .array(providerSchema)
    .max(10)
    .refine(
      (list) => new Set(list.map((p) => p.name)).size === list.length,
      'provider names must be unique within a service',
    )
    .default(() => defaults.map((p) => providerSchema.parse(p)));
}
