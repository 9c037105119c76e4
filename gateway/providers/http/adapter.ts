// The HTTP adapter for a real aggregator, configured rather than coded: URL, auth header,
// request field mapping, response field paths and status mapping (http/config.ts).
// Transport errors, timeouts, 429 and 5xx are "unavailable" (the chain fails over); an
// answer whose status maps to `failed` is a decline; a status it does not know is `pending`,
// so money is never released on a guess.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { microsToUnits } from '../../util/money.js';
import {
  callbackSecret,
  decodeJson,
  getPath,
  send,
  setPath,
  upstreamHeaders,
} from '../transport.js';
import type { HttpProviderConfig } from './config.js';
import {
  CallbackRefusedError,
  ProviderUnavailableError,
  type ProviderCallbacks,
  type ProviderEvent,
  type LookupKind,
  type LookupRequest,
  type LookupResult,
  type PaymentProvider,
  type ProviderRequest,
  type ProviderResult,
  type StatusQuery,
  type StatusResult,
} from '../types.js';

type Spec = Pick<HttpProviderConfig['submit'], 'url' | 'method' | 'fields'>;
type LookupSpec = NonNullable<HttpProviderConfig['lookup']>;

export class HttpProvider implements PaymentProvider {
  readonly name: string;
  readonly timeout_ms: number;
  /** Present only when the provider has a lookup endpoint, so the lookup chain skips it otherwise. */
  readonly lookup?: (request: LookupRequest, signal: AbortSignal) => Promise<LookupResult>;
  readonly lookup_kinds?: readonly LookupKind[];
  readonly callbacks?: ProviderCallbacks;

  constructor(
    private readonly config: HttpProviderConfig,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.name = config.name;
    this.timeout_ms = config.timeout_ms;
    const specs: Partial<Record<LookupKind, LookupSpec>> = { ...config.lookups };
    if (config.lookup) specs.bill = config.lookup;
    const kinds = Object.keys(specs) as LookupKind[];
    if (kinds.length > 0) {
      this.lookup_kinds = kinds;
      this.lookup = (request, signal) => {
        const spec = specs[request.kind];
        if (!spec)
          throw new ProviderUnavailableError(
            'misconfigured',
            `provider ${this.name} has no ${request.kind} lookup configured`,
          );
        return this.runLookup(spec, request, signal);
      };
    }
    if (config.callback) this.callbacks = new HttpCallbacks(config, config.callback, env);
  }

  private async runLookup(
    spec: LookupSpec,
    request: LookupRequest,
    signal: AbortSignal,
  ): Promise<LookupResult> {
    const query: StatusQuery = {
      txn_id: '',
      service: request.service,
      amount_micros: 0,
      subject: request.subject,
      params: request.params,
      submitted_at: new Date().toISOString(),
      provider_ref: null,
    };
    const { http_status, body } = await this.call(spec, query, signal);
    const raw = getPath(body, spec.status_field);
    const status = raw === undefined || raw === null ? null : String(raw).toLowerCase();
    const is = (list: string[]) =>
      status !== null && list.some((value) => value.toLowerCase() === status);
    const message_value = spec.message_field ? getPath(body, spec.message_field) : undefined;
    const message = typeof message_value === 'string' ? message_value.slice(0, 500) : '';
    if (is(spec.not_found))
      return {
        outcome: 'not_found',
        message: message || `${this.name} found nothing for ${request.subject}`,
      };
    if (http_status >= 400 || !is(spec.found)) {
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} answered the lookup with HTTP ${http_status} and status ${status ?? '(none)'}`,
      );
    }
    const data = this.readFields(body, spec.data_fields);
    if (spec.list_field === undefined)
      return { outcome: 'found', data, message: message || 'found' };
    const list = getPath(body, spec.list_field);
    const items = Array.isArray(list)
      ? list.slice(0, spec.max_items).map((item) => this.readFields(item, spec.item_fields))
      : [];
    return { outcome: 'found', data, items, message: message || 'found' };
  }

  /** Our names → scalar values at their paths; a field named like a `codes` parameter is read back through it. */
  private readFields(
    document: unknown,
    fields: Record<string, string>,
  ): Record<string, string | number> {
    const data: Record<string, string | number> = {};
    for (const [name, path] of Object.entries(fields)) {
      const value = getPath(document, path);
      if (typeof value !== 'string' && typeof value !== 'number') continue;
      const codes = this.config.codes[name];
      const ours = codes
        ? Object.entries(codes).find(
            ([, theirs]) => theirs.toLowerCase() === String(value).toLowerCase(),
          )?.[0]
        : undefined;
      data[name] = ours ?? (typeof value === 'string' ? value.slice(0, 256) : value);
    }
    return data;
  }

  async submit(request: ProviderRequest, signal: AbortSignal): Promise<ProviderResult> {
    const answer = await this.call(this.config.submit, { ...request, provider_ref: null }, signal);
    const result = this.interpret(answer);
    if (result.outcome === 'not_found')
      return { outcome: 'failed', provider_ref: null, message: result.message, code: 'not_found' };
    return result;
  }

  async status(query: StatusQuery, signal: AbortSignal): Promise<StatusResult> {
    if (!this.config.status)
      throw new ProviderUnavailableError(
        'misconfigured',
        `provider ${this.name} has no status endpoint configured`,
      );
    return this.interpret(await this.call(this.config.status, query, signal));
  }

  private async call(
    spec: Spec,
    query: StatusQuery,
    signal: AbortSignal,
  ): Promise<{ http_status: number; body: unknown }> {
    const values: Record<string, string | number> = {};
    for (const [field, source] of Object.entries(spec.fields))
      values[field] = this.source(source, query);
    let url = spec.url.replace(/\{(txn_id|provider_ref)\}/g, (_, name: 'txn_id' | 'provider_ref') =>
      encodeURIComponent(query[name] ?? ''),
    );
    const headers = upstreamHeaders(this.config, this.env, `provider ${this.name}`);
    let body: string | undefined;
    if (spec.method === 'GET') {
      const target = new URL(url);
      for (const [field, value] of Object.entries(values))
        target.searchParams.set(field, String(value));
      url = target.toString();
    } else {
      const document: Record<string, unknown> = Object.create(null);
      for (const [field, value] of Object.entries(values)) setPath(document, field, value);
      body = JSON.stringify(document);
      headers['content-type'] = 'application/json';
    }
    const { status, text } = await send(
      this.name,
      url,
      { method: spec.method, headers, body },
      { timeout_ms: this.timeout_ms, max_bytes: this.config.max_response_bytes, signal },
    );
    return decodeJson(this.name, status, text);
  }

  private source(source: string, query: StatusQuery): string | number {
    if (source.startsWith('const:')) return source.slice(6);
    if (source.startsWith('param:')) {
      const name = source.slice(6);
      const value = query.params[name];
      if (value === undefined)
        throw new ProviderUnavailableError(
          'misconfigured',
          `provider ${this.name}: the request has no parameter ${name}`,
        );
      return this.config.codes[name]?.[String(value)] ?? value;
    }
    switch (source) {
      case 'txn_id':
        return query.txn_id;
      case 'amount':
        return microsToUnits(query.amount_micros);
      case 'amount_micros':
        return query.amount_micros;
      case 'amount_paise':
        return Math.round(query.amount_micros / 10_000);
      case 'subject':
        return query.subject;
      case 'provider_ref':
        return query.provider_ref ?? '';
      case 'submitted_at':
        return query.submitted_at;
      default:
        throw new ProviderUnavailableError(
          'misconfigured',
          `provider ${this.name}: unknown field source ${source}`,
        );
    }
  }

  private interpret({ http_status, body }: { http_status: number; body: unknown }): StatusResult {
    const { response, status_map } = this.config;
    const raw_status = getPath(body, response.status_field);
    const message_value = response.message_field
      ? getPath(body, response.message_field)
      : undefined;
    const message = typeof message_value === 'string' ? message_value.slice(0, 500) : '';
    const ref_value = response.ref_field ? getPath(body, response.ref_field) : undefined;
    const provider_ref =
      typeof ref_value === 'string' || typeof ref_value === 'number'
        ? String(ref_value).slice(0, 128)
        : null;
    const status =
      raw_status === undefined || raw_status === null ? null : String(raw_status).toLowerCase();
    const is = (list: string[]) =>
      status !== null && list.some((value) => value.toLowerCase() === status);
    if (status === null) {
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} answered HTTP ${http_status} without ${response.status_field}`,
      );
    }
    if (http_status >= 400 && !is(status_map.failed) && !is(status_map.not_found)) {
      // A 4xx that is not a stated decline is our request or credentials being refused: not the customer's fault.
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} refused the request with HTTP ${http_status} (status ${status})`,
      );
    }
    if (is(status_map.success)) {
      const data: Record<string, string | number> = {};
      for (const [name, path] of Object.entries(response.data_fields)) {
        const value = getPath(body, path);
        if (typeof value === 'string' || typeof value === 'number')
          data[name] = typeof value === 'string' ? value.slice(0, 256) : value;
      }
      return { outcome: 'success', provider_ref, message: message || 'success', data };
    }
    if (is(status_map.failed))
      return {
        outcome: 'failed',
        provider_ref,
        message: message || `declined by ${this.name}`,
        code: 'declined',
      };
    if (is(status_map.reversed))
      // Asked about a transaction still pending, a reversal is a failure (the money came back).
      return {
        outcome: 'failed',
        provider_ref,
        message: message || `reversed by ${this.name}`,
        code: 'reversed',
      };
    if (is(status_map.on_hold))
      return { outcome: 'on_hold', provider_ref, message: message || `on hold at ${this.name}` };
    if (is(status_map.not_found))
      return { outcome: 'not_found', message: message || `${this.name} has no such transaction` };
    return {
      outcome: 'pending',
      provider_ref,
      message: message || `pending at ${this.name} (status ${status})`,
    };
  }
}

/**
 * A provider's status callbacks, read with its configuration: the call must prove it is the
 * provider's (an HMAC-SHA256 of the raw body with a secret from the environment, compared in
 * constant time, or a fixed token header), then our transaction id and the status are read
 * from the JSON body and the status mapped by the provider's `status_map`.
 */
class HttpCallbacks implements ProviderCallbacks {
  readonly max_body_bytes: number;
  constructor(
    private readonly config: HttpProviderConfig,
    private readonly spec: NonNullable<HttpProviderConfig['callback']>,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    this.max_body_bytes = spec.max_body_bytes;
  }

  private secret(name: string): string {
    return callbackSecret(this.env, name, this.config.name);
  }

  checkHead(headers: Readonly<Record<string, string | string[] | undefined>>): void {
    const auth = this.spec.auth;
    const given = headers[auth.header.toLowerCase()];
    if (typeof given !== 'string' || given.length === 0)
      throw new CallbackRefusedError('unauthenticated', `the ${auth.header} header is missing`);
    if (auth.type === 'token' && !sameText(given, `${auth.prefix}${this.secret(auth.value_env)}`))
      throw new CallbackRefusedError('unauthenticated', `the ${auth.header} header is wrong`);
  }

  read(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    raw: Buffer,
  ): ProviderEvent | null {
    this.checkHead(headers);
    const auth = this.spec.auth;
    if (auth.type === 'hmac_sha256') {
      const expected = createHmac('sha256', this.secret(auth.secret_env))
        .update(raw)
        .digest(auth.encoding);
      const given = String(headers[auth.header.toLowerCase()]).trim();
      if (!sameText(auth.encoding === 'hex' ? given.toLowerCase() : given, expected))
        throw new CallbackRefusedError(
          'unauthenticated',
          `the ${auth.header} signature does not match the body`,
        );
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new CallbackRefusedError('invalid', 'the callback body is not JSON');
    }
    const text = (path: string | undefined, max: number): string | null => {
      const value = path ? getPath(body, path) : undefined;
      return typeof value === 'string' || typeof value === 'number'
        ? String(value).slice(0, max)
        : null;
    };
    const txn_id = text(this.spec.txn_field, 64);
    const status = text(this.spec.status_field, 64)?.toLowerCase() ?? null;
    if (!txn_id || status === null)
      throw new CallbackRefusedError(
        'invalid',
        `the callback has no ${txn_id ? this.spec.status_field : this.spec.txn_field}`,
      );
    const map = this.config.status_map;
    const is = (list: string[]) => list.some((value) => value.toLowerCase() === status);
    const outcome: ProviderEvent['outcome'] | null = is(map.success)
      ? 'success'
      : is(map.failed)
        ? 'failed'
        : is(map.reversed)
          ? 'reversed'
          : is(map.on_hold)
            ? 'on_hold'
            : is(map.pending)
              ? 'pending'
              : null;
    if (outcome === null) return null;
    const data: Record<string, string | number> = {};
    for (const [name, path] of Object.entries(this.spec.data_fields)) {
      const value = getPath(body, path);
      if (typeof value === 'string' || typeof value === 'number')
        data[name] = typeof value === 'string' ? value.slice(0, 256) : value;
    }
    return {
      provider: this.config.name,
      txn_id,
      outcome,
      provider_ref: text(this.spec.ref_field, 128),
      message: text(this.spec.message_field, 500) ?? `${status} (callback)`,
      ...(outcome === 'failed' || outcome === 'reversed'
        ? { code: outcome === 'failed' ? 'declined' : 'reversed' }
        : {}),
      data,
    };
  }
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
