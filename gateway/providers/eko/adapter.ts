// Eko as a payment provider (developers.eko.in, eps.eko.in). Recharge (prepaid, postpaid,
// DTH) and BBPS bills are both Eko's "Pay BBPS Bill" (recharges are BBPS operators at Eko);
// money transfer is Eko's Fund Transfer to an account and IFSC (the gateway runs its own
// remitter OTP, KYC and limits), a beneficiary's penny drop is Eko's; PAN is PAN Basic (a
// lookup) or PAN Lite (name and date of birth); an operator's plans in a circle are Eko's Get
// Recharge Plans. Every call is signed (auth.ts); each money
// call carries our transaction id as Eko's `client_ref_id`, so a retry after a timeout is the
// same transaction at Eko and the Transaction Inquiry finds it by that reference. Eko's
// transaction status (`tx_status`) decides: 0 success, 1 failed, 2 awaited (pending), 3
// refund pending and 4 refunded (failed: the money comes back), 5 hold (an enquiry is needed).
import { randomBytes } from 'node:crypto';
import { microsToUnits } from '../../util/money.js';
import { decodeJson, envSecret, send } from '../transport.js';
import {
  CallbackRefusedError,
  ProviderUnavailableError,
  type LookupKind,
  type LookupRequest,
  type LookupResult,
  type PaymentProvider,
  type ProviderCallbacks,
  type ProviderRefunds,
  type ProviderRemitters,
  type ProviderEvent,
  type ProviderRequest,
  type ProviderResult,
  type StatusQuery,
  type StatusResult,
} from '../types.js';
import { ekoHeaders, ekoRequestHash } from './auth.js';
import type { EkoProviderConfig } from './config.js';

/** Eko's answer envelope: `status` 0 is success, else the error code; `data` per API. */
interface EkoAnswer {
  http_status: number;
  status: number | null;
  response_status_id: number | null;
  /** Which answer of the API this is (Get Recharge Plans: 1804 plans, 1805 none, both `status` 0). */
  response_type_id: number | null;
  message: string;
  data: Record<string, unknown>;
}

/** Parameters of ours that are not a BBPS biller's own (the rest go to Eko by their names). */
const OUR_BILL_PARAMS = new Set([
  'biller_id',
  'category',
  'customer_mobile',
  'bill_number',
  'bill_id',
  'customer_pan',
]);

/** How long a fetched bill's `billfetchresponse` is kept for its payment, and how many. */
const FETCH_TOKEN_TTL_MS = 30 * 60_000;
const FETCH_TOKEN_MAX = 5_000;

/**
 * Our transaction id as Eko's `client_ref_id`: Eko's Fund Transfer takes fewer than 20
 * characters, so `txn_` + 24 hex digits is written as 19 base-36 digits (one-to-one, read
 * back by `txnOfClientRef` when a callback names it).
 */
export function clientRefOf(txn_id: string): string {
  const hex = /^txn_([0-9a-f]{24})$/.exec(txn_id)?.[1];
  if (hex) return BigInt(`0x${hex}`).toString(36).padStart(19, '0');
  throw new ProviderUnavailableError(
    'misconfigured',
    `no Eko reference for ${txn_id.slice(0, 40)}`,
  );
}

export function txnOfClientRef(ref: string): string | null {
  if (!/^[0-9a-z]{19}$/.test(ref)) return null;
  let value = 0n;
  for (const char of ref) value = value * 36n + BigInt(Number.parseInt(char, 36));
  const hex = value.toString(16);
  return hex.length > 24 ? null : `txn_${hex.padStart(24, '0')}`;
}

export class EkoProvider implements PaymentProvider {
  readonly name: string;
  readonly timeout_ms: number;
  readonly lookup_kinds: readonly LookupKind[] = ['bill', 'hlr', 'plans', 'remitter_kyc'];
  readonly callbacks?: ProviderCallbacks;
  /** With `dmt_refunds: "eko"`: a failed transfer is refunded at Eko with Eko's refund OTP. */
  readonly refunds?: ProviderRefunds;
  /** With `dmt_remitter_otp: "eko"`: a remitter is registered as Eko's customer, with Eko's OTP. */
  readonly remitters?: ProviderRemitters;
  /** A fetched bill's token for its payment (Eko wants it back when the biller asks for a fetch). */
  private readonly fetch_tokens = new Map<string, { token: string; until_ms: number }>();

  constructor(
    private readonly config: EkoProviderConfig,
    private readonly env: NodeJS.ProcessEnv,
    private readonly now: () => Date,
  ) {
    this.name = config.name;
    this.timeout_ms = config.timeout_ms;
    if (config.callbacks) this.callbacks = new EkoCallbacks(this);
    if (config.dmt_refunds === 'eko')
      this.refunds = {
        requestOtp: (query, signal) => this.refundStep(query, null, signal),
        claim: (query, otp, signal) => this.refundStep(query, otp, signal),
      };
    if (config.dmt_remitter_otp === 'eko')
      this.remitters = {
        requestOtp: (remitter, signal) => this.customerOtp(remitter, signal),
        verifyOtp: (remitter, otp, signal) => this.verifyCustomer(remitter.mobile, otp, signal),
      };
  }

  /**
   * Eko sends the remitter its customer OTP: a customer Eko knows (Get Customer answers
   * `status` 0) is sent a new one (Resend OTP); one it does not know is created (Create
   * Customer), which sends it. Eko's `status` 0 is done.
   */
  private async customerOtp(
    remitter: { mobile: string; name: string },
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }> {
    const { initiator_id, user_code } = this.config;
    const path = `/customers/mobile_number:${encodeURIComponent(remitter.mobile)}`;
    const known = await this.call(
      { method: 'GET', path, query: { initiator_id, user_code } },
      signal,
    );
    const answer =
      known.http_status < 400 && known.status === 0
        ? await this.call(
            { method: 'POST', path: `${path}/otp`, body: { initiator_id, user_code } },
            signal,
          )
        : await this.call(
            { method: 'PUT', path, body: { initiator_id, user_code, name: remitter.name } },
            signal,
          );
    return { done: answer.http_status < 400 && answer.status === 0, message: answer.message };
  }

  /** Eko's Verify Customer with the OTP the remitter gave; `status` 0 is verified. */
  private async verifyCustomer(
    mobile: string,
    otp: string,
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }> {
    const { initiator_id, user_code } = this.config;
    const answer = await this.call(
      {
        method: 'PUT',
        path: `/customers/verification/otp:${encodeURIComponent(otp)}`,
        body: { initiator_id, user_code, id_type: 'mobile_number', id: mobile },
      },
      signal,
    );
    return { done: answer.http_status < 400 && answer.status === 0, message: answer.message };
  }

  /**
   * Eko's refund of a failed transfer, by Eko's TID (the transfer's provider_ref): without an
   * OTP Eko sends the remitter its refund OTP; with one, the refund is claimed (`state` 1).
   * Eko's `status` 0 is done; any other answer is Eko's refusal, with its message.
   */
  private async refundStep(
    query: StatusQuery,
    otp: string | null,
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }> {
    const tid = query.provider_ref;
    if (tid === null || !/^[0-9A-Za-z]{1,64}$/.test(tid))
      return { done: false, message: `${this.name} gave no transaction id (TID) to refund` };
    const { initiator_id, user_code } = this.config;
    const path = `/transactions/${encodeURIComponent(tid)}/refund${otp === null ? '/otp' : ''}`;
    const answer = await this.call(
      {
        method: 'POST',
        path,
        body:
          otp === null ? { initiator_id, user_code } : { initiator_id, user_code, otp, state: 1 },
      },
      signal,
    );
    return {
      done: answer.http_status < 400 && answer.status === 0,
      message: answer.message,
    };
  }

  async submit(request: ProviderRequest, signal: AbortSignal): Promise<ProviderResult> {
    const spec =
      request.service === 'dmt' &&
      request.params.kind !== 'penny_drop' &&
      this.config.dmt_product === 'dmt'
        ? await this.dmtTransaction(request, signal)
        : this.submission(request);
    return this.interpret(await this.call(spec, signal), request.service);
  }

  /**
   * A transfer by Eko's sender/recipient product: the account registered as the remitter's
   * recipient (Eko answers its `recipient_id`; registering it again answers the same), then
   * Eko's Initiate Transaction with our `client_ref_id`. A recipient Eko refuses moves no
   * money: the provider is unavailable for the transfer, never a decline on a guess.
   */
  private async dmtTransaction(request: ProviderRequest, signal: AbortSignal): Promise<EkoCall> {
    const { config } = this;
    const p = request.params;
    const mobile = typeof p.mobile === 'string' ? p.mobile : '';
    const ifsc = String(p.ifsc ?? '');
    const recipient = await this.call(
      {
        method: 'PUT',
        path: `/customers/mobile_number:${encodeURIComponent(mobile)}/recipients/acc_ifsc:${encodeURIComponent(`${request.subject}_${ifsc}`)}`,
        body: {
          initiator_id: config.initiator_id,
          user_code: config.user_code,
          recipient_name: String(p.name ?? ''),
          recipient_mobile: mobile,
          recipient_type: 3,
        },
      },
      signal,
    );
    const recipient_id = text(recipient.data.recipient_id, 32);
    if (recipient.status !== 0 || recipient_id === null)
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} did not register the recipient: ${recipient.message || `HTTP ${recipient.http_status}`}`,
      );
    return {
      method: 'POST',
      path: '/transactions',
      body: {
        initiator_id: config.initiator_id,
        user_code: config.user_code,
        client_ref_id: clientRefOf(request.txn_id),
        customer_id: mobile,
        recipient_id,
        amount: String(microsToUnits(request.amount_micros)),
        // Eko's channel: 1 NEFT, 2 IMPS.
        channel: p.txn_type === 'NEFT' ? 1 : 2,
        state: 1,
        timestamp: this.now().toISOString(),
        currency: 'INR',
        latlong: config.latlong,
      },
    };
  }

  /** Eko's Transaction Inquiry by our reference (Eko's TID is not needed: a timeout never gave one). */
  async status(query: StatusQuery, signal: AbortSignal): Promise<StatusResult> {
    return this.inquire(query.txn_id, query.service, signal);
  }

  async inquire(txn_id: string, service: string, signal: AbortSignal): Promise<StatusResult> {
    const answer = await this.call(
      {
        method: 'GET',
        path: `/tools/reference/transaction/${encodeURIComponent(clientRefOf(txn_id))}`,
        query: { initiator_id: this.config.initiator_id, user_code: this.config.user_code },
      },
      signal,
    );
    // Only a tx_status settles a transaction: an answer without one is "not found" or no answer.
    if (answer.data.tx_status === undefined || answer.data.tx_status === null) {
      if (
        answer.http_status === 404 ||
        answer.status === 168 ||
        /not (found|exist)/i.test(answer.message)
      )
        return {
          outcome: 'not_found',
          message: answer.message || `Eko has no transaction ${txn_id}`,
        };
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name}: the inquiry answered status ${answer.status} (${answer.message.slice(0, 200)})`,
      );
    }
    return this.interpret(answer, service);
  }

  async lookup(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    if (request.kind === 'hlr') return this.operatorOf(request.subject, signal);
    if (request.kind === 'remitter_kyc') return this.voterId(request, signal);
    if (request.kind === 'plans') return this.plans(request, signal);
    if (request.kind !== 'bill')
      throw new ProviderUnavailableError(
        'misconfigured',
        `provider ${this.name} does not answer ${request.kind} lookups`,
      );
    const operator_id = this.code('biller_id', request.params.biller_id);
    const answer = await this.call(
      {
        method: 'GET',
        path: '/customer/payment/bbps/bill',
        query: {
          ...this.billerParams(request.params),
          initiator_id: this.config.initiator_id,
          user_code: this.config.user_code,
          client_ref_id: `F${randomBytes(9).toString('hex')}`,
          utility_acc_no: request.subject,
          confirmation_mobile_no: this.mobileFor(request.subject, request.params),
          sender_name: this.config.sender_name,
          operator_id,
          source_ip: this.config.source_ip,
          latlong: this.config.latlong,
        },
      },
      signal,
    );
    if (answer.status !== 0) {
      if (answer.http_status >= 400)
        throw new ProviderUnavailableError(
          'bad_response',
          `provider ${this.name} refused the bill fetch with HTTP ${answer.http_status}`,
        );
      return { outcome: 'not_found', message: answer.message || 'no bill found at Eko' };
    }
    const d = answer.data;
    const token = text(d.billfetchresponse, 8_192);
    if (token) this.keepToken(operator_id, request.subject, token);
    const data: Record<string, string | number> = {};
    const amount = Number(d.amount);
    if (Number.isFinite(amount)) data.amount = amount;
    for (const [ours, theirs] of [
      ['customer_name', 'utilitycustomername'],
      ['customer_name', 'customer_name'],
      ['due_date', 'duedate'],
      ['due_date', 'due_date'],
      ['bill_date', 'billdate'],
      ['bill_number', 'billnumber'],
      ['bill_period', 'billperiod'],
    ] as const) {
      const value = text(d[theirs], 120);
      if (value !== null && data[ours] === undefined) data[ours] = value;
    }
    return { outcome: 'found', data, message: answer.message || 'bill fetched' };
  }

  /** A remitter's voter ID (EPIC) checked by Eko's Voter ID API; Eko's other documents are not wired. */
  private async voterId(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    if (request.params.document_type !== 'voter_id')
      throw new ProviderUnavailableError(
        'misconfigured',
        `provider ${this.name} verifies a remitter's voter ID only, not a ${String(request.params.document_type).slice(0, 32)}`,
      );
    const answer = await this.call(
      {
        method: 'POST',
        path: '/tools/kyc/voter-id',
        body: {
          initiator_id: this.config.initiator_id,
          client_ref_id: `K${randomBytes(9).toString('hex')}`,
          epic_number: request.subject,
          ...(typeof request.params.name === 'string' ? { name: request.params.name } : {}),
        },
      },
      signal,
    );
    const name = text(answer.data.name, 120);
    if (answer.status !== 0 || !name)
      return { outcome: 'not_found', message: answer.message || 'Eko found no such voter ID' };
    return {
      outcome: 'found',
      data: { name_on_document: name },
      message: answer.message || 'found',
    };
  }

  /** Eko's operator and circle of a mobile number, read back to our operator id where we map it. */
  private async operatorOf(mobile: string, signal: AbortSignal): Promise<LookupResult> {
    const answer = await this.call(
      {
        method: 'GET',
        path: `/customer/payment/bbps/recharge/${encodeURIComponent(mobile)}/operator`,
        query: { initiator_id: this.config.initiator_id, user_code: this.config.user_code },
      },
      signal,
    );
    if (answer.status !== 0)
      return { outcome: 'not_found', message: answer.message || 'unknown number' };
    const pairs = (answer.data.dependent_params ?? answer.raw_dependent) as unknown;
    const found: Record<string, string> = {};
    if (Array.isArray(pairs))
      for (const pair of pairs.slice(0, 20)) {
        const name = text((pair as Record<string, unknown>)?.name, 64);
        const value = text((pair as Record<string, unknown>)?.value, 64);
        if (name && value) found[name] = value;
      }
    const theirs = found.phone_operator_code;
    const ours = theirs
      ? Object.entries(this.config.codes.operator_id).find(([, code]) => code === theirs)?.[0]
      : undefined;
    if (!ours)
      return {
        outcome: 'not_found',
        message: `Eko's operator ${theirs ?? '(none)'} is not mapped`,
      };
    const data: Record<string, string | number> = { operator_id: ours };
    if (found.circle_area)
      // Our circle code where `codes.circle` maps Eko's, else Eko's own.
      data.circle =
        Object.entries(this.config.codes.circle).find(
          ([, code]) => code === found.circle_area,
        )?.[0] ?? found.circle_area;
    return { outcome: 'found', data, message: answer.message || 'found' };
  }

  /**
   * An operator's plans in a circle: Eko's Get Recharge Plans, by its `phone_operator_code`
   * (our operator through `codes.operator_id`) and `circleid` (our circle through
   * `codes.circle`, or Eko's own `circle_area` as its operator lookup gave it).
   */
  private async plans(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    const phone_operator_code = this.code('operator_id', request.params.operator_id);
    const circle = request.params.circle === undefined ? '' : String(request.params.circle);
    const circleid = Object.hasOwn(this.config.codes.circle, circle)
      ? this.config.codes.circle[circle]!
      : /^[0-9]{1,3}$/.test(circle)
        ? circle
        : null;
    if (circleid === null)
      throw new ProviderUnavailableError(
        'misconfigured',
        `provider ${this.name} has no Eko circleid for circle ${circle.slice(0, 60) || '(none)'}`,
      );
    const mobile = this.config.plans_mobile ?? this.config.initiator_id;
    const answer = await this.call(
      {
        method: 'GET',
        path: `/customer/payment/bbps/recharge/${encodeURIComponent(mobile)}/operator/plans`,
        query: {
          initiator_id: this.config.initiator_id,
          user_code: this.config.user_code,
          phone_operator_code,
          circleid,
        },
      },
      signal,
    );
    // Eko answers "plans could not be fetched" with status 0 and response_type_id 1805: no answer, not "none".
    if (answer.status !== 0 || answer.response_type_id === 1805) {
      if (answer.http_status >= 400 || answer.response_type_id === 1805)
        throw new ProviderUnavailableError(
          'bad_response',
          `provider ${this.name} could not list the plans (HTTP ${answer.http_status}, ${answer.message.slice(0, 200)})`,
        );
      return { outcome: 'not_found', message: answer.message || 'Eko lists no plans' };
    }
    const items = ekoPlans(answer.raw_dependent);
    if (items.length === 0)
      return { outcome: 'not_found', message: answer.message || 'Eko lists no plans' };
    return {
      outcome: 'found',
      data: { operator_id: String(request.params.operator_id), circle },
      items,
      message: answer.message || 'plans',
    };
  }

  /** The Eko call a submission is. */
  private submission(request: ProviderRequest): EkoCall {
    switch (request.service) {
      case 'recharge':
      case 'bills':
        return this.bbpsPayment(request);
      case 'dmt':
        return this.transfer(request);
      case 'pan':
        return this.panCheck(request);
    }
  }

  /** A recharge or a bill: Eko's Pay BBPS Bill (recharge operators are BBPS operators at Eko). */
  private bbpsPayment(request: ProviderRequest): EkoCall {
    const { config } = this;
    const p = request.params;
    const amount = String(microsToUnits(request.amount_micros));
    const operator_id =
      request.service === 'recharge'
        ? this.code('operator_id', p.operator_id)
        : this.code('biller_id', p.biller_id);
    const token = request.service === 'bills' ? this.takeToken(operator_id, request.subject) : null;
    return {
      method: 'POST',
      path: '/customer/payment/bbps',
      body: {
        ...(request.service === 'bills' ? this.billerParams(p) : {}),
        initiator_id: config.initiator_id,
        user_code: config.user_code,
        client_ref_id: clientRefOf(request.txn_id),
        utility_acc_no: request.subject,
        confirmation_mobile_no: this.mobileFor(request.subject, p),
        sender_name: config.sender_name,
        operator_id,
        amount,
        source_ip: config.source_ip,
        latlong: config.latlong,
        ...(token ? { billfetchresponse: token } : {}),
      },
      // Eko's documented order: timestamp, utility_acc_no, amount, user_code.
      hash: [request.subject, amount, config.user_code],
    };
  }

  /** A transfer (Eko's Fund Transfer, IMPS or NEFT) or a beneficiary's penny drop. */
  private transfer(request: ProviderRequest): EkoCall {
    const { config } = this;
    const p = request.params;
    const client_ref_id = clientRefOf(request.txn_id);
    if (p.kind === 'penny_drop')
      return {
        method: 'POST',
        path: '/tools/kyc/bank-account/penny-drop',
        body: {
          initiator_id: config.initiator_id,
          user_code: config.user_code,
          client_ref_id,
          customer_id: typeof p.mobile === 'string' ? p.mobile : config.initiator_id,
          id_type: 'ifsc',
          id: String(p.ifsc ?? ''),
          acc_num: request.subject,
        },
      };
    return {
      method: 'POST',
      path: '/user/payment/fund-transfer',
      body: {
        initiator_id: config.initiator_id,
        user_code: config.user_code,
        client_ref_id,
        service_code: 45,
        // Eko's payment_mode: 4 NEFT, 5 IMPS.
        payment_mode: p.txn_type === 'NEFT' ? 4 : 5,
        recipient_name: String(p.name ?? ''),
        account: request.subject,
        ifsc: String(p.ifsc ?? ''),
        amount: String(microsToUnits(request.amount_micros)),
        sender_name: typeof p.remitter_name === 'string' ? p.remitter_name : config.sender_name,
        latlong: config.latlong,
      },
    };
  }

  /** PAN Lite when a name and date of birth are to be matched, else PAN Basic. */
  private panCheck(request: ProviderRequest): EkoCall {
    const { config } = this;
    const p = request.params;
    const client_ref_id = clientRefOf(request.txn_id);
    if (p.variant !== undefined && typeof p.name === 'string' && typeof p.dob === 'string')
      return {
        method: 'POST',
        path: '/tools/kyc/pan-lite',
        body: {
          initiator_id: config.initiator_id,
          client_ref_id,
          pan: request.subject,
          name: p.name,
          dob: p.dob,
        },
      };
    return {
      method: 'POST',
      path: '/tools/kyc/pan-basic',
      body: {
        initiator_id: config.initiator_id,
        client_ref_id,
        pan_number: request.subject,
        purpose: 1,
        purpose_desc: config.pan_purpose,
      },
    };
  }

  /** Eko's answer as ours. */
  private interpret(answer: EkoAnswer, service: string): ProviderResult {
    const d = answer.data;
    const provider_ref = text(d.tid, 64);
    const message = answer.message.slice(0, 500);
    const tx_status =
      d.tx_status === undefined || d.tx_status === null ? null : Number(d.tx_status);
    if (tx_status === null && answer.status !== 0) {
      if (this.isDuplicate(answer))
        // The reference was used: Eko has the transaction. Its status is what counts.
        return {
          outcome: 'pending',
          provider_ref,
          message: `Eko already has this reference; asking its status (${message})`,
        };
      if (answer.http_status >= 400)
        throw new ProviderUnavailableError(
          'bad_response',
          `provider ${this.name} refused the request with HTTP ${answer.http_status} (status ${answer.status})`,
        );
      return {
        outcome: 'failed',
        provider_ref,
        message: message || `declined by ${this.name}`,
        // A PAN Eko has no record of is "not found", as the PAN service tells its customer.
        code:
          service === 'pan' && /invalid pan|not found|does not exist/i.test(message)
            ? 'not_found'
            : String(answer.status ?? 'declined'),
      };
    }
    switch (
      tx_status ??
      (answer.response_status_id === 2 ? 2 : answer.response_status_id === 5 ? 5 : 0)
    ) {
      case 0:
        return {
          outcome: 'success',
          provider_ref,
          message: message || 'success',
          data: this.dataOf(d, service),
        };
      case 1:
        return {
          outcome: 'failed',
          provider_ref,
          message: message || 'failed at Eko',
          code: 'declined',
        };
      case 3:
        return {
          outcome: 'failed',
          provider_ref,
          message: message || 'failed: refund pending at Eko',
          code: 'refund_pending',
        };
      case 4:
        return {
          outcome: 'failed',
          provider_ref,
          message: message || 'refunded by Eko',
          code: 'reversed',
        };
      case 5:
        return { outcome: 'on_hold', provider_ref, message: message || 'on hold at Eko' };
      default:
        return { outcome: 'pending', provider_ref, message: message || 'awaited at Eko' };
    }
  }

  private isDuplicate(answer: EkoAnswer): boolean {
    return (
      (answer.status !== null && this.config.duplicate_statuses.includes(answer.status)) ||
      /duplicate|already (used|exists?|processed)/i.test(answer.message)
    );
  }

  /** What a success tells us, in our names. */
  private dataOf(d: Record<string, unknown>, service: string): Record<string, string | number> {
    const data: Record<string, string | number> = {};
    const put = (ours: string, value: unknown, max = 128) => {
      const t = text(value, max);
      if (t !== null && t !== '') data[ours] = t;
    };
    // A callback's inquiry does not know the service ('' ): what Eko tells is kept.
    if (service === 'dmt' || service === '') {
      put('utr', d.bank_ref_num ?? d.utrnumber);
      put('registered_name', d.recipient_name);
    }
    if (service === 'bills' || service === 'recharge' || service === '') {
      put('operator_ref', d.operator_ref ?? d.operatorref);
      put('bbps_ref', d.bbps_ref ?? d.bbpstrxnrefid);
    }
    switch (service) {
      case 'pan': {
        const status = text(d.pan_status, 4);
        if (status !== null) {
          data.pan_status = PAN_STATUS[status] ?? 'unknown';
          put('name_match', d.name_match, 1);
          put('dob_match', d.dob_match, 1);
          put('aadhaar_seeding', d.aadhaar_seeding_status, 4);
          put('name', d.name);
        } else {
          put('name', d.pan_returned_name);
          data.pan_status = 'valid';
        }
        break;
      }
    }
    return data;
  }

  /** A BBPS biller's own parameters (Eko takes them by their names). */
  private billerParams(params: Record<string, string | number>): Record<string, string> {
    const own: Record<string, string> = {};
    for (const [name, value] of Object.entries(params))
      if (!OUR_BILL_PARAMS.has(name) && /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(name))
        own[name] = String(value);
    return own;
  }

  private mobileFor(subject: string, params: Record<string, string | number>): string {
    if (typeof params.customer_mobile === 'string') return params.customer_mobile;
    return /^[6-9][0-9]{9}$/.test(subject) ? subject : this.config.initiator_id;
  }

  private code(kind: 'operator_id' | 'biller_id', ours: string | number | undefined): string {
    const theirs = ours === undefined ? undefined : this.config.codes[kind][String(ours)];
    if (theirs === undefined || !Object.hasOwn(this.config.codes[kind], String(ours)))
      throw new ProviderUnavailableError(
        'misconfigured',
        `provider ${this.name} has no Eko code for ${kind} ${String(ours).slice(0, 64)}`,
      );
    return theirs;
  }

  private keepToken(operator_id: string, account: string, token: string): void {
    const now_ms = this.now().getTime();
    if (this.fetch_tokens.size >= FETCH_TOKEN_MAX)
      for (const [key, kept] of this.fetch_tokens)
        if (kept.until_ms <= now_ms || this.fetch_tokens.size >= FETCH_TOKEN_MAX)
          this.fetch_tokens.delete(key);
        else break;
    const key = `${operator_id}:${account}`;
    this.fetch_tokens.delete(key); // re-inserted last, so the oldest go first
    this.fetch_tokens.set(key, {
      token,
      until_ms: now_ms + FETCH_TOKEN_TTL_MS,
    });
  }

  private takeToken(operator_id: string, account: string): string | null {
    const kept = this.fetch_tokens.get(`${operator_id}:${account}`);
    return kept && kept.until_ms > this.now().getTime() ? kept.token : null;
  }

  /** One signed call to Eko; transport failures, timeouts and 5xx are ProviderUnavailableError. */
  private async call(
    spec: EkoCall,
    signal: AbortSignal,
  ): Promise<EkoAnswer & { raw_dependent?: unknown }> {
    const who = `provider ${this.name}`;
    const developer_key = envSecret(this.env, this.config.developer_key_env, who);
    const access_key = envSecret(this.env, this.config.access_key_env, who);
    // Fresh per call: Eko refuses a stale timestamp.
    const timestamp = String(Date.now());
    const headers = ekoHeaders(developer_key, access_key, timestamp);
    if (spec.hash) headers.request_hash = ekoRequestHash(access_key, [timestamp, ...spec.hash]);
    const url = new URL(`${this.config.base_url.replace(/\/+$/, '')}${spec.path}`);
    let body: string | undefined;
    if (spec.method === 'GET') {
      for (const [name, value] of Object.entries(spec.query ?? {}))
        url.searchParams.set(name, value);
    } else {
      body = JSON.stringify(spec.body ?? {});
      headers['content-type'] = 'application/json';
    }
    const { status, text: raw } = await send(
      this.name,
      url.toString(),
      { method: spec.method, headers, body },
      { timeout_ms: this.timeout_ms, max_bytes: this.config.max_response_bytes, signal },
    );
    if (status === 403)
      throw new ProviderUnavailableError(
        'misconfigured',
        `${who} refused our signature (HTTP 403): check the keys and the clock`,
      );
    const { http_status, body: parsed } = decodeJson(this.name, status, raw);
    const document = (parsed !== null && typeof parsed === 'object' ? parsed : {}) as Record<
      string,
      unknown
    >;
    const data = document.data;
    const number = (value: unknown) =>
      value === undefined || value === null || value === '' || !Number.isFinite(Number(value))
        ? null
        : Number(value);
    return {
      http_status,
      status: number(document.status),
      response_status_id: number(document.response_status_id),
      response_type_id: number(document.response_type_id),
      message: text(document.message, 500) ?? '',
      data:
        data !== null && typeof data === 'object' && !Array.isArray(data)
          ? (data as Record<string, unknown>)
          : {},
      raw_dependent: document.dependent_params,
    };
  }
}

interface EkoCall {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  query?: Record<string, string>;
  body?: Record<string, unknown>;
  /** The request_hash's fields after the timestamp, in Eko's order (calls that debit). */
  hash?: string[];
}

/** At most this many plans are read from one answer of Eko's Get Recharge Plans. */
const MAX_PLANS = 500;

/**
 * The plans in an answer of Eko's Get Recharge Plans, as our plan items (`amount` in rupees,
 * `validity`, `description`): its top-level `dependent_params` entry named `req_list` holds
 * them in `value`, and its `type_metadata[].headers` say which field is the `price`, the
 * `validity` and the `plan_description` (by default the fields `amount`, `validity` and
 * `plan_description`).
 */
export function ekoPlans(dependent_params: unknown): Array<Record<string, string | number>> {
  if (!Array.isArray(dependent_params)) return [];
  const list = dependent_params
    .slice(0, 20)
    .find((entry) => (entry as Record<string, unknown> | null)?.name === 'req_list') as
    Record<string, unknown> | undefined;
  if (!list || !Array.isArray(list.value)) return [];
  const field = { price: 'amount', validity: 'validity', plan_description: 'plan_description' };
  const metadata = Array.isArray(list.type_metadata) ? list.type_metadata.slice(0, 5) : [];
  for (const meta of metadata) {
    const headers = (meta as Record<string, unknown> | null)?.headers;
    if (!Array.isArray(headers)) continue;
    for (const header of headers.slice(0, 20)) {
      const name = text((header as Record<string, unknown> | null)?.name, 64);
      const role = text((header as Record<string, unknown> | null)?.value, 64);
      if (name && role && Object.hasOwn(field, role)) field[role as keyof typeof field] = name;
    }
  }
  const items: Array<Record<string, string | number>> = [];
  for (const raw of list.value.slice(0, MAX_PLANS)) {
    if (raw === null || typeof raw !== 'object') continue;
    const plan = raw as Record<string, unknown>;
    const amount = Number(plan[field.price]);
    if (!Number.isFinite(amount) || amount <= 0) continue;
    const item: Record<string, string | number> = { amount };
    const validity = text(plan[field.validity], 120);
    if (validity) item.validity = validity;
    item.description = text(plan[field.plan_description], 500) ?? '';
    items.push(item);
  }
  return items;
}

/** Eko's PAN Lite `pan_status` as ours. */
const PAN_STATUS: Record<string, string> = {
  E: 'valid',
  EC: 'valid',
  EA: 'valid',
  ED: 'valid',
  EI: 'valid',
  EL: 'valid',
  EM: 'valid',
  EP: 'valid',
  ES: 'valid',
  EU: 'valid',
  N: 'fake',
  F: 'fake',
  X: 'deactivated',
  D: 'deleted',
};

function text(value: unknown, max: number): string | null {
  return typeof value === 'string' || typeof value === 'number'
    ? String(value).slice(0, max)
    : null;
}

/**
 * Eko's transaction status callbacks. Eko's references publish no signature for them (a
 * static URL registered with Eko by email), so a callback is only news: the transaction it
 * names is asked of Eko's Transaction Inquiry, signed with our keys, and the event is what
 * Eko's own record says. A forged callback can at most cause an inquiry; it moves no money.
 */
class EkoCallbacks implements ProviderCallbacks {
  readonly max_body_bytes = 16 * 1024;
  constructor(private readonly provider: EkoProvider) {}

  checkHead(headers: Readonly<Record<string, string | string[] | undefined>>): void {
    const type = headers['content-type'];
    if (typeof type === 'string' && !/json/i.test(type))
      throw new CallbackRefusedError('invalid', 'an Eko callback is JSON');
  }

  async read(
    _headers: Readonly<Record<string, string | string[] | undefined>>,
    raw: Buffer,
  ): Promise<ProviderEvent | null> {
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new CallbackRefusedError('invalid', 'the callback body is not JSON');
    }
    const ref = text((body as Record<string, unknown> | null)?.client_ref_id, 64);
    const txn_id = ref === null ? null : txnOfClientRef(ref);
    if (!txn_id)
      throw new CallbackRefusedError('invalid', 'the callback names no client_ref_id of ours');
    let result: StatusResult;
    try {
      result = await this.provider.inquire(
        txn_id,
        '',
        AbortSignal.timeout(this.provider.timeout_ms),
      );
    } catch (error) {
      throw new CallbackRefusedError(
        'unauthenticated',
        `the callback could not be confirmed by Eko's inquiry: ${(error as Error).message.slice(0, 200)}`,
      );
    }
    if (result.outcome === 'not_found')
      throw new CallbackRefusedError('unauthenticated', `Eko has no transaction ${ref}`);
    const event: ProviderEvent = {
      provider: this.provider.name,
      txn_id,
      outcome: result.outcome,
      provider_ref: result.provider_ref,
      message: `${result.message} (callback, confirmed by inquiry)`,
    };
    if (result.outcome === 'failed') {
      event.code = result.code ?? 'declined';
      // A success undone later (refunded at Eko) is a reversal.
      if (result.code === 'reversed') event.outcome = 'reversed';
    }
    if (result.outcome === 'success' && result.data) event.data = result.data;
    return event;
  }
}
