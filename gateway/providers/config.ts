// Configuration of payment providers: the built-in sandbox and the HTTP adapter for a real
// aggregator. Every field is bounded; secrets come from the environment, never the file.
import { z } from 'zod';

export const PROVIDER_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/i;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;

/** Fixed headers sent to an upstream (a provider or the SMS gateway). */
const upstreamHeadersSchema = z
  .record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), z.string().max(4_096))
  .default({});

/** How an upstream is authenticated: a header whose value comes from an environment variable. */
const upstreamAuthSchema = z
  .strictObject({
    header: z.string().regex(HEADER_NAME).default('Authorization'),
    /** Environment variable holding the credential. */
    value_env: z.string().regex(ENV_NAME, 'must be an environment variable name'),
    prefix: z.string().max(64).default(''),
  })
  .optional();
/** A dotted path into a JSON document, e.g. `data.status` or `result.items.0.ref`. */
const JSON_PATH = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+){0,15}$/;
/**
 * Where an outgoing field takes its value from: `txn_id`, `amount` (currency units),
 * `amount_micros`, `amount_paise`, `subject`, `provider_ref`, `param:<name>`, or `const:<text>`.
 */
const FIELD_SOURCE =
  /^(txn_id|amount|amount_micros|amount_paise|subject|provider_ref|submitted_at|param:[A-Za-z0-9_]{1,64}|const:.{0,256})$/s;

const nameSchema = z
  .string()
  .regex(PROVIDER_NAME, 'must be a provider name of letters, digits, _ . -');
const fieldsSchema = z
  .record(
    z.string().regex(JSON_PATH, 'must be a dotted field path'),
    z.string().regex(FIELD_SOURCE, 'must be a field source'),
  )
  .refine((fields) => Object.keys(fields).length <= 64, 'at most 64 fields');

export const sandboxProviderSchema = z.strictObject({
  type: z.literal('sandbox'),
  name: nameSchema,
  timeout_ms: z.int().min(10).max(120_000).default(2_000),
  /** Last four digits on which this provider does not answer (CONTRACT's `0004`: the first provider times out). */
  hang_on: z
    .array(z.string().regex(/^\d{4}$/))
    .max(20)
    .default([]),
  /** How long a sandbox transaction that goes pending (`0002`, `0003`) stays pending before its status settles. */
  pending_ms: z.int().min(0).max(3_600_000).default(2_000),
  /** Requests whose parameter has one of these values are accepted pending and settle after `pending_ms` (NEFT batches). */
  pending_params: z
    .record(z.string().regex(/^[a-z_]{1,32}$/), z.array(z.string().max(64)).max(20))
    .refine((record) => Object.keys(record).length <= 10, 'at most 10 parameters')
    .default({ txn_type: ['NEFT'] }),
});

const requestSpec = z.strictObject({
  /** May hold `{txn_id}` and `{provider_ref}`, replaced URL-encoded. */
  url: z.url({ protocol: /^https?$/ }).max(2_048),
  method: z.enum(['GET', 'POST']).default('POST'),
  /** Outgoing field → source; JSON body for POST, query string for GET. */
  fields: fieldsSchema.default({}),
});

const lookupSpec = requestSpec.extend({
  status_field: z.string().regex(JSON_PATH),
  found: z.array(z.string().max(64)).min(1).max(20),
  not_found: z.array(z.string().max(64)).max(20).default([]),
  message_field: z.string().regex(JSON_PATH).optional(),
  /** Our name → path in the answer (bills: customer_name, amount in units, due_date, bill_number...). */
  data_fields: z
    .record(z.string().regex(/^[a-z_]{1,32}$/), z.string().regex(JSON_PATH))
    .default({}),
  /** Where a list answer's items are (plans, offers), and each item's fields: our name → path in the item. */
  list_field: z.string().regex(JSON_PATH).optional(),
  item_fields: z
    .record(z.string().regex(/^[a-z_]{1,32}$/), z.string().regex(JSON_PATH))
    .default({}),
  /** At most this many items are read. */
  max_items: z.int().min(1).max(2_000).default(500),
});

export const httpProviderSchema = z.strictObject({
  type: z.literal('http'),
  name: nameSchema,
  timeout_ms: z.int().min(100).max(120_000).default(15_000),
  submit: requestSpec,
  status: requestSpec.optional(),
  headers: upstreamHeadersSchema,
  auth: upstreamAuthSchema,
  /** Our parameter values translated to the provider's codes: `{operator_id: {"1": "AT"}}`. */
  codes: z
    .record(z.string().max(64), z.record(z.string().max(64), z.string().max(256)))
    .default({}),
  response: z.strictObject({
    status_field: z.string().regex(JSON_PATH),
    ref_field: z.string().regex(JSON_PATH).optional(),
    message_field: z.string().regex(JSON_PATH).optional(),
    /** Extra answer fields kept on the transaction: our name → path in the answer. */
    data_fields: z
      .record(z.string().regex(/^[a-z_]{1,32}$/), z.string().regex(JSON_PATH))
      .default({}),
  }),
  /** The provider's status values (compared as strings, case-insensitive). Unknown values count as pending. */
  status_map: z.strictObject({
    success: z.array(z.string().max(64)).min(1).max(20),
    pending: z.array(z.string().max(64)).max(20).default([]),
    failed: z.array(z.string().max(64)).max(20).default([]),
    not_found: z.array(z.string().max(64)).max(20).default([]),
    /** Held at the provider for a review (an enquiry is needed): the money stays held, checks go on. */
    on_hold: z.array(z.string().max(64)).max(20).default([]),
    /** A success undone by the operator or bank (a callback; a status check reads it as failed). */
    reversed: z.array(z.string().max(64)).max(20).default([]),
  }),
  /**
   * Status callbacks the provider POSTs to `/api/callbacks/<service>/<name>` (JSON): where our
   * transaction id and its status are, read with `status_map` (a reversal days after a
   * success arrives this way), and how the call proves it is the provider's: an HMAC-SHA256
   * of the raw body keyed with a secret from the environment, or a fixed token header.
   */
  callback: z
    .strictObject({
      auth: z.discriminatedUnion('type', [
        z.strictObject({
          type: z.literal('hmac_sha256'),
          header: z.string().regex(HEADER_NAME).default('X-Signature'),
          secret_env: z.string().regex(ENV_NAME, 'must be an environment variable name'),
          encoding: z.enum(['hex', 'base64']).default('hex'),
        }),
        z.strictObject({
          type: z.literal('token'),
          header: z.string().regex(HEADER_NAME).default('Authorization'),
          value_env: z.string().regex(ENV_NAME, 'must be an environment variable name'),
          prefix: z.string().max(64).default(''),
        }),
      ]),
      txn_field: z.string().regex(JSON_PATH),
      status_field: z.string().regex(JSON_PATH),
      ref_field: z.string().regex(JSON_PATH).optional(),
      message_field: z.string().regex(JSON_PATH).optional(),
      data_fields: z
        .record(z.string().regex(/^[a-z_]{1,32}$/), z.string().regex(JSON_PATH))
        .default({}),
      max_body_bytes: z
        .int()
        .min(256)
        .max(1024 * 1024)
        .default(64 * 1024),
    })
    .optional(),
  /** Bill fetch, a lookup that moves no money: the request, and how to read a found record. */
  lookup: lookupSpec.optional(),
  /**
   * The other lookups (each its own endpoint): `hlr` (a mobile number's operator, circle and
   * type: data `operator` or `operator_id`, `circle`, `type`, `ported`), `plans` (an
   * operator's plans in a circle: a list), `offers` (a number's special offers: a list),
   * `dth_info` (a DTH subscriber: customer_name, balance, monthly_recharge, next_recharge_date,
   * plan_name, status), `validate` (a BBPS biller's check of a customer: customer_name...),
   * `complaint` (a BBPS complaint registered: complaint_ref, status, assigned_to) and
   * `complaint_status` (its status now: status, assigned_to, resolution), `remitter_kyc` (a
   * DMT remitter's document checked: name_on_document).
   * A data field named like a `codes` parameter is read back through it (`AT` → `1`).
   */
  lookups: z
    .strictObject({
      hlr: lookupSpec.optional(),
      plans: lookupSpec.optional(),
      offers: lookupSpec.optional(),
      dth_info: lookupSpec.optional(),
      validate: lookupSpec.optional(),
      complaint: lookupSpec.optional(),
      complaint_status: lookupSpec.optional(),
      remitter_kyc: lookupSpec.optional(),
    })
    .default({}),
  max_response_bytes: z
    .int()
    .min(256)
    .max(4 * 1024 * 1024)
    .default(64 * 1024),
});

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

export const providerSchema = z.discriminatedUnion('type', [
  sandboxProviderSchema,
  httpProviderSchema,
]);
export type ProviderConfig = z.output<typeof providerSchema>;
export type SandboxProviderConfig = z.output<typeof sandboxProviderSchema>;
export type HttpProviderConfig = z.output<typeof httpProviderSchema>;

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
