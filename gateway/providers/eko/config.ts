// Configuration of an Eko provider (developers.eko.in, eps.eko.in): where Eko is, who we are
// at Eko (initiator_id, user_code), our operator and biller ids in Eko's numbering, and the
// names of the environment variables that hold the developer key and the access key. The keys
// themselves are never in the file.
import { z } from 'zod';
import { ENV_NAME, nameSchema } from '../config-parts.js';

const envName = z.string().regex(ENV_NAME, 'must be an environment variable name');

export const ekoProviderSchema = z.strictObject({
  type: z.literal('eko'),
  name: nameSchema,
  /** Eko's API root: https://api.eko.in:25002/ekoicici/v3 (production), https://staging.eko.in/ekoapi/v3 (UAT). */
  base_url: z.url({ protocol: /^https?$/ }).max(512),
  /** The mobile number the API user is registered with at Eko. */
  initiator_id: z.string().regex(/^[0-9]{10}$/, 'must be the 10-digit registered mobile number'),
  /** The user code of the retailer the services run for (activated at Eko for each service). */
  user_code: z.string().regex(/^[0-9A-Za-z]{1,20}$/, 'must be an Eko user code'),
  timeout_ms: z.int().min(100).max(120_000).default(15_000),
  /** Where the developer key (the `developer_key` header) and the access key (signs) are. */
  developer_key_env: envName.default('AIHUB_EKO_DEVELOPER_KEY'),
  access_key_env: envName.default('AIHUB_EKO_ACCESS_KEY'),
  /** What Eko's BBPS and transfer calls require of the agent: its location and IP. */
  latlong: z
    .string()
    .regex(/^-?[0-9]{1,2}(\.[0-9]{1,8})?,-?[0-9]{1,3}(\.[0-9]{1,8})?$/, 'must be "lat,long"'),
  source_ip: z.ipv4().default('127.0.0.1'),
  /** The customer's name where Eko requires one and our request has none (BBPS `sender_name`). */
  sender_name: z
    .string()
    .regex(/^[A-Za-z][A-Za-z .]{0,49}$/)
    .default('Customer'),
  /** Why PAN is verified (PAN Basic's `purpose_desc`). */
  pan_purpose: z.string().min(1).max(100).default('KYC of a customer'),
  /**
   * Our ids in Eko's numbering: `operator_id` (a recharge operator → Eko's BBPS operator_id
   * for prepaid, postpaid or DTH, also its `phone_operator_code`), `biller_id` (a BBPS biller →
   * Eko's operator_id), `circle` (our circle code, `KA` → Eko's `circle_area`, the `circleid`
   * of Get Recharge Plans).
   */
  codes: z
    .strictObject({
      operator_id: z.record(z.string().max(64), z.string().regex(/^[0-9]{1,10}$/)).default({}),
      biller_id: z.record(z.string().max(64), z.string().regex(/^[0-9]{1,10}$/)).default({}),
      circle: z.record(z.string().max(8), z.string().regex(/^[0-9A-Za-z]{1,10}$/)).default({}),
    })
    .default({ operator_id: {}, biller_id: {}, circle: {} }),
  /**
   * The mobile number in the path of Eko's Get Recharge Plans
   * (`/customer/payment/bbps/recharge/{customer_mobile}/operator/plans`). The plans are the
   * operator's in a circle (the gateway lists them per operator and circle, not per number),
   * and Eko's reference does not say whether the number matters: the registered initiator_id
   * unless set.
   */
  plans_mobile: z
    .string()
    .regex(/^[6-9][0-9]{9}$/, 'must be a 10-digit mobile number')
    .optional(),
  /**
   * Eko publishes no code for a reused client_ref_id; answers with one of these `status`
   * values (or whose message names a duplicate reference) are read as "ask the status".
   */
  duplicate_statuses: z.array(z.int()).max(20).default([]),
  /**
   * Who asks the remitter's consent to refund a failed transfer (`refund_pending`): `gateway`
   * (our OTP by our SMS sender, the hold released here) or `eko` (Eko's refund OTP: Eko sends
   * it to the remitter, `POST /transactions/{tid}/refund/otp`, and the OTP the customer gives
   * claims the refund at Eko, `POST /transactions/{tid}/refund` with `state` 1; only Eko's
   * success releases the hold). `eko` is for accounts whose transfers Eko refunds only with
   * that OTP (Eko's DMT products); the gateway's own refund otherwise.
   */
  dmt_refunds: z.enum(['gateway', 'eko']).default('gateway'),
  /**
   * Who verifies a new remitter's mobile: `gateway` (our OTP by our SMS sender) or `eko` (the
   * remitter registered as Eko's customer: Eko sends its OTP, Create Customer or Resend OTP,
   * and checks the code, Verify Customer; our SMS sender is not used), for accounts whose
   * transfers Eko takes only for customers it has verified itself.
   */
  dmt_remitter_otp: z.enum(['gateway', 'eko']).default('gateway'),
  /**
   * How a transfer is paid: `fund_transfer` (Eko's Fund Transfer to the account and IFSC) or
   * `dmt` (Eko's sender/recipient product: the account registered as the remitter's recipient
   * at Eko, `PUT /customers/mobile_number:{mobile}/recipients/acc_ifsc:{account}_{ifsc}`, then
   * `POST /transactions` with its `recipient_id`; the remitter must be Eko's verified customer,
   * so use it with `dmt_remitter_otp: "eko"`).
   */
  dmt_product: z.enum(['fund_transfer', 'dmt']).default('fund_transfer'),
  /** Eko's transaction status callbacks taken at /api/callbacks/<service>/<name>, each confirmed by an inquiry. */
  callbacks: z.boolean().default(true),
  max_response_bytes: z
    .int()
    .min(256)
    .max(4 * 1024 * 1024)
    .default(64 * 1024),
});
export type EkoProviderConfig = z.output<typeof ekoProviderSchema>;
