// Configuration of a PaySprint provider entry. Secrets are never in the file: each is read
// from the environment variable named here (defaults: CONTRACT.md's AIHUB_PAYSPRINT_*), so a
// second PaySprint account names its own variables. Endpoint paths, PaySprint's codes and
// our operator/biller ids' PaySprint equivalents are configuration, with the reference's
// values as defaults (docs/payments-api.md, "PaySprint", says which were confirmed).
import { z } from 'zod';
import { ENV_NAME, nameSchema } from '../config-parts.js';

const envName = (fallback: string) =>
  z.string().regex(ENV_NAME, 'must be an environment variable name').default(fallback);

const PATH = /^\/[A-Za-z0-9/_.-]{1,200}$/;
const path = (fallback: string) => z.string().regex(PATH, 'must be a URL path').default(fallback);

const codeList = (fallback: string[]) => z.array(z.string().max(64)).max(20).default(fallback);

/** Our id → PaySprint's (operator ids, biller ids): bounded, plain strings. */
const idMap = z
  .record(z.string().max(64), z.string().max(64))
  .refine((map) => Object.keys(map).length <= 2_000, 'at most 2000 entries')
  .default({});

export const PAYSPRINT_SERVICES = ['recharge', 'bills', 'dmt', 'pan'] as const;

export const paysprintProviderSchema = z.strictObject({
  type: z.literal('paysprint'),
  name: nameSchema,
  /** e.g. https://api.paysprint.in (live) or https://sit.paysprint.in/service-api (UAT). */
  base_url: z.url({ protocol: /^https?$/ }).max(2_048),
  timeout_ms: z.int().min(100).max(120_000).default(15_000),
  partner_id_env: envName('AIHUB_PAYSPRINT_PARTNER_ID'),
  jwt_secret_env: envName('AIHUB_PAYSPRINT_JWT_SECRET'),
  authorised_key_env: envName('AIHUB_PAYSPRINT_AUTHORISED_KEY'),
  aes_key_env: envName('AIHUB_PAYSPRINT_AES_KEY'),
  aes_iv_env: envName('AIHUB_PAYSPRINT_AES_IV'),
  /** Services whose request bodies PaySprint wants AES-128-CBC encrypted (`{"body": base64}`). */
  encrypt: z.array(z.enum(PAYSPRINT_SERVICES)).max(4).default([]),
  /**
   * Services whose answers PaySprint sends AES-128-CBC encrypted (`{"body": base64}`, the same
   * key and IV); an answer that is plain JSON (an error, a refusal) is read as it is.
   */
  decrypt: z.array(z.enum(PAYSPRINT_SERVICES)).max(4).default([]),
  /** Our recharge operator_id → PaySprint's operator id (from its operator list). */
  operators: idMap,
  /** Our BBPS biller_id → PaySprint's bill-payment operator id. */
  billers: idMap,
  /**
   * A biller's further customer parameters (after the first, the `canumber`) → PaySprint's
   * `ad1`, `ad2`, `ad3`, by our biller_id: the parameter names in that order. A biller not
   * listed sends its further parameters in the catalogue's order.
   */
  bill_params: z
    .record(z.string().max(64), z.array(z.string().max(64)).max(3))
    .refine((map) => Object.keys(map).length <= 2_000, 'at most 2000 entries')
    .default({}),
  /**
   * Our recharge operator_id → the operator's name as PaySprint's HLR, plan and DTH-info
   * lookups take and give it (`op`: `Airtel`, `Jio`, `TataSky`...); not listed: the
   * operator's brand.
   */
  lookup_operators: idMap,
  /** Our circle code → PaySprint's circle name (`DL` → `Delhi NCR`); not listed: the circle's name. */
  circles: z
    .record(z.string().max(8), z.string().max(64))
    .refine((map) => Object.keys(map).length <= 100, 'at most 100 entries')
    .default({}),
  /** Where the agent is (PaySprint's bill payment and transfer ask for it). */
  latitude: z
    .string()
    .regex(/^-?\d{1,3}(\.\d{1,8})?$/)
    .default('0.0'),
  longitude: z
    .string()
    .regex(/^-?\d{1,3}(\.\d{1,8})?$/)
    .default('0.0'),
  /** PaySprint's DMT bank pipe for transfers. */
  dmt_pipe: z
    .string()
    .regex(/^[a-z0-9]{1,16}$/)
    .default('bank1'),
  paths: z
    .strictObject({
      recharge: path('/api/v1/service/recharge/recharge/dorecharge'),
      recharge_status: path('/api/v1/service/recharge/recharge/status'),
      bill_fetch: path('/api/v1/service/bill-payment/bill/fetchbill'),
      bill_pay: path('/api/v1/service/bill-payment/bill/paybill'),
      bill_status: path('/api/v1/service/bill-payment/bill/status'),
      dmt_remitter: path('/api/v1/service/dmt/remitter/queryremitter'),
      dmt_beneficiary: path('/api/v1/service/dmt/beneficiary/registerbeneficiary'),
      dmt_penny_drop: path('/api/v1/service/dmt/beneficiary/registerbeneficiary/benenameverify'),
      dmt_transact: path('/api/v1/service/dmt/transact/transact'),
      dmt_status: path('/api/v1/service/dmt/transact/transact/querytransaction'),
      dmt_refund_otp: path('/api/v1/service/dmt/refund/refund/resendotp'),
      dmt_refund: path('/api/v1/service/dmt/refund/refund/'),
      pan_verify: path('/api/v1/service/pan/verify'),
      pan_status: path('/api/v1/service/pan/status'),
      hlr_check: path('/api/v1/service/recharge/hlrapi/hlrcheck'),
      browse_plan: path('/api/v1/service/recharge/hlrapi/browseplan'),
      dth_info: path('/api/v1/service/recharge/hlrapi/dthinfo'),
    })
    .prefault({}),
  /**
   * PaySprint's `response_code` values (strings): of an answer to a request (`success`,
   * `pending`, `failed`, `duplicate`: the reference was used before, so the status is asked)
   * and, on a status enquiry, of the transaction's own status (`txn_*`; `not_found`: PaySprint
   * has no such reference). A code in no list is read as pending: money is never released on
   * a guess.
   */
  codes: z
    .strictObject({
      success: codeList(['1']),
      pending: codeList(['2', '3']),
      failed: codeList(['0']),
      duplicate: codeList(['12']),
      not_found: codeList(['13']),
      txn_success: codeList(['1']),
      txn_pending: codeList(['2', '3']),
      txn_failed: codeList(['0']),
      txn_reversed: codeList(['4']),
    })
    .prefault({}),
  /** Callbacks: at most this many bytes; their `Token` JWT at most this old. */
  callback_max_body_bytes: z
    .int()
    .min(256)
    .max(1024 * 1024)
    .default(64 * 1024),
  token_max_age_s: z.int().min(30).max(3_600).default(300),
  max_response_bytes: z
    .int()
    .min(256)
    .max(4 * 1024 * 1024)
    .default(64 * 1024),
});
export type PaysprintProviderConfig = z.output<typeof paysprintProviderSchema>;
