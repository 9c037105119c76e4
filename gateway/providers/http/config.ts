// Configuration of the generic HTTP adapter: a real aggregator configured rather than coded
// (URL per action, field mappings, a status map, a credential header from the environment).
import { z } from 'zod';
import {
  ENV_NAME,
  HEADER_NAME,
  JSON_PATH,
  nameSchema,
  upstreamAuthSchema,
  upstreamHeadersSchema,
} from '../config-parts.js';

/**
 * Where an outgoing field takes its value from: `txn_id`, `amount` (currency units),
 * `amount_micros`, `amount_paise`, `subject`, `provider_ref`, `param:<name>`, or `const:<text>`.
 */
const FIELD_SOURCE =
  /^(txn_id|amount|amount_micros|amount_paise|subject|provider_ref|submitted_at|param:[A-Za-z0-9_]{1,64}|const:.{0,256})$/s;

const fieldsSchema = z
  .record(
    z.string().regex(JSON_PATH, 'must be a dotted field path'),
    z.string().regex(FIELD_SOURCE, 'must be a field source'),
  )
  .refine((fields) => Object.keys(fields).length <= 64, 'at most 64 fields');

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
export type HttpProviderConfig = z.output<typeof httpProviderSchema>;
