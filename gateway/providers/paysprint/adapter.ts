// The PaySprint adapter: recharge, BBPS (fetch and pay), DMT (beneficiary, penny drop,
// transfer) and PAN verification against PaySprint's API, each request signed with a fresh
// JWT and, for the services configured in `encrypt`, its body AES-encrypted (auth.ts). Our
// transaction id is PaySprint's `referenceid`, so a retry after a timeout names the same
// transaction and never pays twice; PaySprint's "duplicate reference" answer, a 5xx on a
// money-moving call, and a pending answer all lead to PaySprint's own status enquiry.
import { microsToUnits } from '../../util/money.js';
import { decodeJson, envSecret, getPath, send } from '../transport.js';
import {
  ProviderUnavailableError,
  type LookupKind,
  type LookupRequest,
  type LookupResult,
  type PaymentProvider,
  type PaymentService,
  type ProviderCallbacks,
  type ProviderRefunds,
  type ProviderRequest,
  type ProviderResult,
  type StatusQuery,
  type StatusResult,
} from '../types.js';
import { decryptBody, encryptBody, newReqid, signJwt } from './auth.js';
import { PaysprintCallbacks } from './callbacks.js';
import type { PaysprintProviderConfig } from './config.js';
import { PaysprintLookups, type Answer } from './lookups.js';

type Codes = PaysprintProviderConfig['codes'];

export class PaysprintProvider implements PaymentProvider {
  readonly name: string;
  readonly timeout_ms: number;
  readonly lookup_kinds: readonly LookupKind[] = [
    'bill',
    'remitter_kyc',
    'hlr',
    'plans',
    'dth_info',
  ];
  readonly callbacks: ProviderCallbacks;
  private readonly lookups: PaysprintLookups;
  /** A failed transfer's refund is claimed at PaySprint with the OTP PaySprint sends the remitter. */
  readonly refunds: ProviderRefunds = {
    requestOtp: (query, signal) => this.refundOtp(query, signal),
    claim: (query, otp, signal) => this.claimRefund(query, otp, signal),
  };

  constructor(
    private readonly config: PaysprintProviderConfig,
    private readonly env: NodeJS.ProcessEnv,
    private readonly now: () => Date,
  ) {
    this.name = config.name;
    this.timeout_ms = config.timeout_ms;
    this.callbacks = new PaysprintCallbacks(config, env, now);
    this.lookups = new PaysprintLookups(config.name, config, (path, fields, signal) =>
      this.call('recharge', path, fields, signal),
    );
  }

  private secret(name: string): string {
    return envSecret(this.env, name, `provider ${this.name}`);
  }

  /** One signed call to PaySprint: a fresh JWT and reqid, the body encrypted where configured. */
  private async call(
    service: PaymentService,
    path: string,
    fields: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<Answer> {
    const { config } = this;
    const claims = {
      timestamp: Math.floor(this.now().getTime() / 1000),
      partnerId: this.secret(config.partner_id_env),
      reqid: newReqid(this.now()),
    };
    const headers: Record<string, string> = {
      accept: 'application/json',
      'content-type': 'application/json',
      Token: signJwt(claims, this.secret(config.jwt_secret_env)),
      Authorisedkey: this.secret(config.authorised_key_env),
    };
    const json = JSON.stringify(fields);
    const body = config.encrypt.includes(service)
      ? JSON.stringify({
          body: encryptBody(json, this.secret(config.aes_key_env), this.secret(config.aes_iv_env)),
        })
      : json;
    const url = `${config.base_url.replace(/\/+$/, '')}${path}`;
    const { status, text } = await send(
      this.name,
      url,
      { method: 'POST', headers, body },
      { timeout_ms: this.timeout_ms, max_bytes: config.max_response_bytes, signal },
    );
    const answer = decodeJson(this.name, status, text);
    return config.decrypt.includes(service) ? this.decrypted(answer) : answer;
  }

  /**
   * An answer PaySprint sent encrypted (`{"body": base64}`) as its JSON; a plain answer (a
   * refusal, an error) as it came. One that does not decrypt is no answer: unavailable.
   */
  private decrypted(answer: Answer): Answer {
    const { body } = answer;
    if (
      !body ||
      typeof body !== 'object' ||
      typeof (body as { body?: unknown }).body !== 'string' ||
      getPath(body, 'response_code') !== undefined
    )
      return answer;
    try {
      const plain = decryptBody(
        (body as { body: string }).body,
        this.secret(this.config.aes_key_env),
        this.secret(this.config.aes_iv_env),
      );
      return { http_status: answer.http_status, body: JSON.parse(plain) };
    } catch (error) {
      if (error instanceof ProviderUnavailableError) throw error;
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} answered HTTP ${answer.http_status} with a body that does not decrypt to JSON`,
      );
    }
  }

  async submit(request: ProviderRequest, signal: AbortSignal): Promise<ProviderResult> {
    const [path, fields] = await this.submission(request, signal);
    let answer: Answer;
    try {
      answer = await this.call(request.service, path, fields, signal);
    } catch (error) {
      // A 5xx may come after PaySprint took the money: ask before anyone tries again.
      if (error instanceof ProviderUnavailableError && error.kind === 'http_5xx')
        return this.enquireOr(request, error, signal);
      throw error;
    }
    const code = responseCode(answer.body);
    if (code !== null && this.config.codes.duplicate.includes(code))
      return this.enquireOr(request, null, signal);
    return this.interpret(request, answer);
  }

  /** The status enquiry's answer; with no record there, `unavailable` rethrown (nothing moved) or pending. */
  private async enquireOr(
    request: ProviderRequest,
    unavailable: ProviderUnavailableError | null,
    signal: AbortSignal,
  ): Promise<ProviderResult> {
    const status = await this.status({ ...request, provider_ref: null }, signal);
    if (status.outcome !== 'not_found') return status;
    if (unavailable) throw unavailable;
    return {
      outcome: 'pending',
      provider_ref: null,
      message: `${this.name} called the reference a duplicate but has no record of it yet`,
    };
  }

  /** The endpoint and PaySprint's fields for a request of each service. */
  private async submission(
    request: ProviderRequest,
    signal: AbortSignal,
  ): Promise<[string, Record<string, unknown>]> {
    const { config } = this;
    const { params } = request;
    const amount = microsToUnits(request.amount_micros);
    switch (request.service) {
      case 'recharge':
        return [
          config.paths.recharge,
          {
            operator: this.mapped(config.operators, 'operator_id', params.operator_id),
            canumber: request.subject,
            amount,
            referenceid: request.txn_id,
          },
        ];
      case 'bills': {
        const operator = this.mapped(config.billers, 'biller_id', params.biller_id);
        // PaySprint's pay carries the fetched bill (`bill_fetch`): fetched again here, so a
        // payment never depends on a fetch this process may not have seen.
        const extra = this.adParams(params, request.subject);
        const fetched =
          params.bill_number !== undefined || params.bill_id !== undefined
            ? await this.fetchBill(operator, request.subject, extra, signal)
            : null;
        return [
          config.paths.bill_pay,
          {
            operator,
            canumber: request.subject,
            amount,
            referenceid: request.txn_id,
            latitude: config.latitude,
            longitude: config.longitude,
            mode: 'online',
            ...extra,
            ...(fetched && typeof getPath(fetched.body, 'bill_fetch') === 'object'
              ? { bill_fetch: getPath(fetched.body, 'bill_fetch') }
              : {}),
          },
        ];
      }
      case 'dmt':
        return this.dmtSubmission(request, signal);
      case 'pan':
        return [
          config.paths.pan_verify,
          {
            referenceid: request.txn_id,
            pannumber: request.subject,
            ...pick(params, ['name', 'dob']),
          },
        ];
    }
  }

  /** A penny drop, or a transfer to PaySprint's beneficiary id for the account. */
  private async dmtSubmission(
    request: ProviderRequest,
    signal: AbortSignal,
  ): Promise<[string, Record<string, unknown>]> {
    const { config } = this;
    const { params } = request;
    const amount = microsToUnits(request.amount_micros);
    if (params.kind === 'penny_drop')
      return [
        config.paths.dmt_penny_drop,
        {
          referenceid: request.txn_id,
          accno: request.subject,
          ifsccode: params.ifsc,
          benename: params.name,
          latitude: config.latitude,
          longitude: config.longitude,
        },
      ];
    return [
      config.paths.dmt_transact,
      {
        mobile: params.mobile,
        referenceid: request.txn_id,
        pipe: config.dmt_pipe,
        bene_id: await this.beneficiary(request, signal),
        txntype: params.txn_type === 'NEFT' ? 'NEFT' : 'IMPS',
        amount,
        latitude: config.latitude,
        longitude: config.longitude,
        ...pick(params, ['pincode', 'address', 'dob', 'gst_state']),
      },
    ];
  }

  /** PaySprint's beneficiary id for the transfer's account, registered under the remitter. */
  private async beneficiary(request: ProviderRequest, signal: AbortSignal): Promise<string> {
    const { params } = request;
    const answer = await this.call(
      'dmt',
      this.config.paths.dmt_beneficiary,
      {
        mobile: params.mobile,
        benename: params.name,
        accno: request.subject,
        ifsccode: params.ifsc,
        verified: '0',
      },
      signal,
    );
    const id = getPath(answer.body, 'data.bene_id') ?? getPath(answer.body, 'bene_id');
    if (typeof id !== 'string' && typeof id !== 'number')
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} registered no beneficiary: ${messageOf(answer.body) || `HTTP ${answer.http_status}`}`,
      );
    return String(id);
  }

  private mapped(
    map: Record<string, string>,
    name: string,
    value: string | number | undefined,
  ): string {
    if (value === undefined)
      throw new ProviderUnavailableError(
        'misconfigured',
        `provider ${this.name}: the request has no ${name}`,
      );
    const key = String(value);
    return Object.hasOwn(map, key) ? map[key]! : key;
  }

  private interpret(request: ProviderRequest, { http_status, body }: Answer): ProviderResult {
    const codes = this.config.codes;
    const code = responseCode(body);
    const message = messageOf(body);
    const provider_ref = refOf(body);
    if (code === null)
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} answered HTTP ${http_status} without a response_code`,
      );
    if (codes.failed.includes(code))
      return {
        outcome: 'failed',
        provider_ref,
        message: message || `declined by ${this.name}`,
        code: 'declined',
      };
    if (http_status >= 400)
      // Our credentials or request refused: not the customer's fault, and nothing moved.
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} refused the request with HTTP ${http_status} (${message || code})`,
      );
    if (codes.success.includes(code))
      return {
        outcome: 'success',
        provider_ref,
        message: message || 'success',
        data: this.dataOf(request.service, body, request.params),
      };
    return {
      outcome: 'pending',
      provider_ref,
      message: message || `pending at ${this.name} (response_code ${code})`,
    };
  }

  /** What a success keeps on the transaction, by service. */
  private dataOf(
    service: PaymentService,
    body: unknown,
    params: Record<string, string | number>,
  ): Record<string, string | number> {
    const data: Record<string, string | number> = {};
    const put = (name: string, ...paths: string[]) => {
      for (const path of paths) {
        const value = getPath(body, path);
        if (typeof value === 'string' || typeof value === 'number') {
          data[name] = typeof value === 'string' ? value.slice(0, 256) : value;
          return;
        }
      }
    };
    switch (service) {
      case 'recharge':
        put('operator_ref', 'operatorid', 'data.operatorid');
        break;
      case 'bills':
        put('biller_ref', 'operatorid', 'data.operatorid');
        put('bbps_ref', 'bbps_ref', 'data.bbps_ref');
        break;
      case 'dmt':
        put('utr', 'utr', 'data.utr');
        put('registered_name', 'benename', 'data.benename');
        break;
      case 'pan':
        put('name', 'data.full_name', 'full_name', 'data.name');
        put('pan_status', 'data.pan_status', 'pan_status');
        if (typeof data.pan_status === 'string') data.pan_status = data.pan_status.toLowerCase();
        Object.assign(data, panMatches(body, params));
        break;
    }
    return data;
  }

  async status(query: StatusQuery, signal: AbortSignal): Promise<StatusResult> {
    const { paths, codes } = this.config;
    const path = {
      recharge: paths.recharge_status,
      bills: paths.bill_status,
      dmt: paths.dmt_status,
      pan: paths.pan_status,
    }[query.service];
    const answer = await this.call(query.service, path, { referenceid: query.txn_id }, signal);
    return readEnquiry(
      this.name,
      codes,
      answer,
      this.dataOf(query.service, answer.body, query.params),
    );
  }

  /**
   * PaySprint's refund of a transfer it failed: it sends the remitter an OTP
   * (`refund/refund/resendotp`), and the OTP the customer gives claims the refund
   * (`refund/refund/`) into our PaySprint balance. Not yet called by the DMT room, whose
   * refund uses the gateway's own OTP (docs/payments-api.md, "PaySprint").
   */
  async refundOtp(
    query: StatusQuery,
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }> {
    const fields = { referenceid: query.txn_id, ackno: query.provider_ref ?? '' };
    return this.ask(this.config.paths.dmt_refund_otp, fields, signal);
  }

  async claimRefund(
    query: StatusQuery,
    otp: string,
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }> {
    const fields = { referenceid: query.txn_id, ackno: query.provider_ref ?? '', otp };
    return this.ask(this.config.paths.dmt_refund, fields, signal);
  }

  /** A DMT call whose answer is only done or not, with PaySprint's message. */
  private async ask(
    path: string,
    fields: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }> {
    const answer = await this.call('dmt', path, fields, signal);
    const code = responseCode(answer.body);
    return {
      done: code !== null && this.config.codes.success.includes(code) && answer.http_status < 400,
      message: messageOf(answer.body),
    };
  }

  async lookup(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    if (request.kind === 'remitter_kyc') return this.remitter(request, signal);
    if (request.kind === 'hlr') return this.lookups.hlr(request, signal);
    if (request.kind === 'plans') return this.lookups.plans(request, signal);
    if (request.kind === 'dth_info') return this.lookups.dthInfo(request, signal);
    if (request.kind !== 'bill')
      throw new ProviderUnavailableError(
        'misconfigured',
        `provider ${this.name} answers no ${request.kind} lookup`,
      );
    const operator = this.mapped(this.config.billers, 'biller_id', request.params.biller_id);
    const answer = await this.fetchBill(
      operator,
      request.subject,
      this.adParams(request.params, request.subject),
      signal,
    );
    const code = responseCode(answer.body);
    if (code === null || !this.config.codes.success.includes(code)) {
      if (answer.http_status >= 400)
        throw new ProviderUnavailableError(
          'bad_response',
          `provider ${this.name} refused the bill fetch with HTTP ${answer.http_status}`,
        );
      return { outcome: 'not_found', message: messageOf(answer.body) || 'no bill found' };
    }
    const data: Record<string, string | number> = {};
    const put = (name: string, path: string, number = false) => {
      const value = getPath(answer.body, path);
      if (typeof value === 'number') data[name] = value;
      else if (typeof value === 'string' && value !== '')
        data[name] = number && Number.isFinite(Number(value)) ? Number(value) : value.slice(0, 256);
    };
    put('customer_name', 'name');
    put('amount', 'amount', true);
    put('due_date', 'duedate');
    put('bill_number', 'bill_fetch.billnumber');
    put('bill_date', 'bill_fetch.billdate');
    return { outcome: 'found', data, message: messageOf(answer.body) || 'bill fetched' };
  }

  /**
   * A remitter's document, as PaySprint knows the remitter: PaySprint onboards remitters itself
   * (its OTP and eKYC), so a remitter it has registered is a verified one, under its name there.
   */
  private async remitter(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    const answer = await this.call(
      'dmt',
      this.config.paths.dmt_remitter,
      { mobile: request.params.mobile },
      signal,
    );
    const code = responseCode(answer.body);
    if (answer.http_status >= 400 || code === null)
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} could not answer the remitter query (HTTP ${answer.http_status})`,
      );
    const names = ['data.fname', 'data.lname']
      .map((path) => getPath(answer.body, path))
      .filter((part): part is string => typeof part === 'string' && part !== '');
    if (!this.config.codes.success.includes(code) || names.length === 0)
      return {
        outcome: 'not_found',
        message: messageOf(answer.body) || `the remitter is not registered at ${this.name}`,
      };
    return {
      outcome: 'found',
      data: { name_on_document: names.join(' ').slice(0, 128) },
      message: messageOf(answer.body) || 'remitter registered',
    };
  }

  private fetchBill(
    operator: string,
    canumber: string,
    extra: Record<string, string>,
    signal: AbortSignal,
  ): Promise<Answer> {
    return this.call(
      'bills',
      this.config.paths.bill_fetch,
      { operator, canumber, mode: 'online', ...extra },
      signal,
    );
  }

  /**
   * A biller's further customer parameters (all but `subject`, the `canumber`) as PaySprint's
   * `ad1`..`ad3`, in the order the entry's `bill_params` names them. Without that list only a
   * single further parameter is sent (as `ad1`): the order of several is PaySprint's per
   * biller, never guessed, so such a biller is unavailable here until it is configured.
   */
  private adParams(
    params: Record<string, string | number>,
    subject: string,
  ): Record<string, string> {
    const biller = String(params.biller_id ?? '');
    const map = this.config.bill_params;
    let names: string[];
    if (Object.hasOwn(map, biller)) names = map[biller]!;
    else {
      const own = Object.keys(params).filter((name) => !NOT_CUSTOMER_PARAMS.has(name));
      const first = own.findIndex((name) => String(params[name]) === subject);
      names = own.filter((_, index) => index !== first);
      if (names.length > 1)
        throw new ProviderUnavailableError(
          'misconfigured',
          `provider ${this.name}: biller ${biller.slice(0, 64)} has ${names.length} further parameters; list their ad1..ad3 order in bill_params`,
        );
    }
    const out: Record<string, string> = {};
    names.forEach((name, index) => {
      if (Object.hasOwn(params, name)) out[`ad${index + 1}`] = String(params[name]);
    });
    return out;
  }
}

/** A bill's provider parameters that are not the customer's (bills/commands.ts adds them). */
const NOT_CUSTOMER_PARAMS = new Set([
  'biller_id',
  'category',
  'customer_mobile',
  'bill_number',
  'bill_id',
]);

/**
 * A PAN check's name and date-of-birth match (Y/N), when the request asked for them:
 * PaySprint's own flags where it gives them, else the name and date of birth it returned
 * compared with those asked (case, spacing and date format aside); neither: nothing said.
 */
function panMatches(
  body: unknown,
  params: Record<string, string | number>,
): Record<string, string> {
  const out: Record<string, string> = {};
  const flag = (value: unknown): string | null => {
    const text = String(value ?? '').toLowerCase();
    if (['y', 'yes', 'true', '1', 'match', 'matched'].includes(text)) return 'Y';
    if (['n', 'no', 'false', '0', 'mismatch', 'not matched'].includes(text)) return 'N';
    return null;
  };
  const first = (...paths: string[]) =>
    paths.map((path) => getPath(body, path)).find((value) => value !== undefined);
  const words = (value: unknown) =>
    String(value)
      .toUpperCase()
      .replace(/[^A-Z]+/g, ' ')
      .trim();
  if (typeof params.name === 'string') {
    const given = flag(first('data.name_match', 'name_match'));
    const name = first('data.full_name', 'full_name', 'data.name');
    const match =
      given ??
      (typeof name === 'string' && name !== ''
        ? words(name) === words(params.name)
          ? 'Y'
          : 'N'
        : null);
    if (match) out.name_match = match;
  }
  if (typeof params.dob === 'string') {
    const given = flag(first('data.dob_match', 'dob_match'));
    const dob = first('data.dob', 'dob');
    const match =
      given ?? (typeof dob === 'string' ? (isoDate(dob) === params.dob ? 'Y' : 'N') : null);
    if (match) out.dob_match = match;
  }
  return out;
}

/** YYYY-MM-DD of a date PaySprint writes as YYYY-MM-DD, DD-MM-YYYY or DD/MM/YYYY; else as given. */
function isoDate(text: string): string {
  const dmy = /^(\d{2})[-/](\d{2})[-/](\d{4})$/.exec(text.trim());
  return dmy ? `${dmy[3]}-${dmy[2]}-${dmy[1]}` : text.trim();
}

/** A status enquiry's answer read with PaySprint's codes. */
export function readEnquiry(
  name: string,
  codes: Codes,
  { http_status, body }: Answer,
  data: Record<string, string | number>,
): StatusResult {
  const code = responseCode(body);
  const message = messageOf(body);
  if (code !== null && codes.not_found.includes(code))
    return { outcome: 'not_found', message: message || `${name} has no such transaction` };
  if (code === null || !codes.success.includes(code) || http_status >= 400)
    throw new ProviderUnavailableError(
      'bad_response',
      `provider ${name} could not answer the status enquiry (HTTP ${http_status}, ${message || code})`,
    );
  const raw = getPath(body, 'data.status');
  const status = typeof raw === 'string' || typeof raw === 'number' ? String(raw) : null;
  const provider_ref = refOf(getPath(body, 'data')) ?? refOf(body);
  const text = message || `status ${status ?? '(none)'} at ${name}`;
  if (status !== null && codes.txn_success.includes(status))
    return { outcome: 'success', provider_ref, message: text, data };
  if (status !== null && codes.txn_failed.includes(status))
    return { outcome: 'failed', provider_ref, message: text, code: 'declined' };
  if (status !== null && codes.txn_reversed.includes(status))
    return { outcome: 'failed', provider_ref, message: text, code: 'reversed' };
  return { outcome: 'pending', provider_ref, message: text };
}

function responseCode(body: unknown): string | null {
  const value = getPath(body, 'response_code');
  return typeof value === 'number' || typeof value === 'string' ? String(value) : null;
}

function messageOf(body: unknown): string {
  const value = getPath(body, 'message');
  return typeof value === 'string' ? value.slice(0, 500) : '';
}

/** PaySprint's acknowledgement number for the transaction. */
function refOf(body: unknown): string | null {
  for (const path of ['ackno', 'refid']) {
    const value = getPath(body, path);
    if (typeof value === 'string' || typeof value === 'number')
      return String(value).slice(0, 128) || null;
  }
  return null;
}

function pick(
  params: Record<string, string | number>,
  names: string[],
): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const name of names) if (Object.hasOwn(params, name)) out[name] = params[name]!;
  return out;
}
