// PaySprint's recharge lookups (its "HLR API"): a mobile number's operator and circle
// (`hlrapi/hlrcheck` {number, type: "mobile"} → info {operator, circle}), an operator's plans
// in a circle (`hlrapi/browseplan` {circle, op} → info {<category>: [{rs, desc, validity}]})
// and a DTH subscriber's account (`hlrapi/dthinfo` {canumber, op} → info [{customerName,
// Balance, MonthlyRecharge, NextRechargeDate, planname, status}]). PaySprint names operators
// and circles by name, not id: ours are translated through the entry's `lookup_operators`
// and `circles` (else the operator's brand and the circle's name) and read back the same way.
import { CIRCLES } from '../sample/telecom.js';
import { getPath } from '../transport.js';
import { ProviderUnavailableError, type LookupRequest, type LookupResult } from '../types.js';
import type { PaysprintProviderConfig } from './config.js';

export type Answer = { http_status: number; body: unknown };
type Call = (path: string, fields: Record<string, unknown>, signal: AbortSignal) => Promise<Answer>;

/** At most this many plans are read from one answer. */
const MAX_PLANS = 500;

export class PaysprintLookups {
  constructor(
    private readonly name: string,
    private readonly config: PaysprintProviderConfig,
    private readonly call: Call,
  ) {}

  async hlr(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    const answer = await this.call(
      this.config.paths.hlr_check,
      { number: request.subject, type: 'mobile' },
      signal,
    );
    const info = this.found(answer, 'operator lookup', false);
    if (!info) return { outcome: 'not_found', message: messageOf(answer.body) || 'no such number' };
    const operator = text(getPath(info, 'operator'));
    const circle = text(getPath(info, 'circle'));
    if (!operator)
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} answered the operator lookup without an operator`,
      );
    const data: Record<string, string | number> = { operator };
    const ours = Object.entries(this.config.lookup_operators).find(
      ([, name]) => name.toLowerCase() === operator.toLowerCase(),
    )?.[0];
    if (ours !== undefined) data.operator_id = ours;
    if (circle) data.circle = this.circleCode(circle) ?? circle;
    return { outcome: 'found', data, message: messageOf(answer.body) || 'operator found' };
  }

  async plans(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    const circle = request.params.circle === undefined ? '' : String(request.params.circle);
    const answer = await this.call(
      this.config.paths.browse_plan,
      { circle: this.circleName(circle), op: this.operatorName(request) },
      signal,
    );
    // "No plans" from PaySprint is as likely its lookup switched off as a real empty list:
    // the next provider is asked (a plan check never refuses on a guess).
    const info = this.found(answer, 'plan list', true);
    const items: Array<Record<string, string | number>> = [];
    if (info && typeof info === 'object' && !Array.isArray(info))
      for (const [category, list] of Object.entries(info)) {
        if (!Array.isArray(list)) continue;
        for (const plan of list) {
          if (items.length >= MAX_PLANS) break;
          const amount = getPath(plan, 'rs') ?? getPath(plan, 'price') ?? getPath(plan, 'amount');
          if (typeof amount !== 'number' && typeof amount !== 'string') continue;
          const item: Record<string, string | number> = {
            amount,
            category: category.slice(0, 40),
          };
          const description = text(getPath(plan, 'desc') ?? getPath(plan, 'description'));
          if (description) item.description = description.slice(0, 500);
          const validity = text(getPath(plan, 'validity'));
          if (validity) item.validity = validity.slice(0, 120);
          items.push(item);
        }
      }
    if (items.length === 0)
      throw new ProviderUnavailableError(
        'bad_response',
        `provider ${this.name} listed no plans for ${this.operatorName(request)} in ${circle || '(no circle)'}`,
      );
    return {
      outcome: 'found',
      data: { operator_id: String(request.params.operator_id), circle },
      items,
      message: messageOf(answer.body) || 'plans listed',
    };
  }

  async dthInfo(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    const answer = await this.call(
      this.config.paths.dth_info,
      { canumber: request.subject, op: this.operatorName(request) },
      signal,
    );
    const info = this.found(answer, 'DTH lookup', false);
    const record = Array.isArray(info) ? info[0] : info;
    if (!record || typeof record !== 'object')
      return {
        outcome: 'not_found',
        message: messageOf(answer.body) || 'no such subscriber',
      };
    const data: Record<string, string | number> = {};
    const put = (ours: string, ...names: string[]) => {
      for (const name of names) {
        const value = text(getPath(record, name));
        if (value) {
          data[ours] = value.slice(0, 120);
          return;
        }
      }
    };
    put('customer_name', 'customerName', 'customer_name');
    put('balance', 'Balance', 'balance');
    put('monthly_recharge', 'MonthlyRecharge', 'monthly_recharge');
    put('next_recharge_date', 'NextRechargeDate', 'next_recharge_date');
    put('plan_name', 'planname', 'plan_name');
    put('status', 'status');
    put('registered_mobile', 'RMN', 'rmn', 'registered_mobile');
    return { outcome: 'found', data, message: messageOf(answer.body) || 'subscriber found' };
  }

  /**
   * The answer's `info` when PaySprint says success; null for its "not found" (`failed`
   * codes); a refusal or a code in no list cannot be read as an answer: the next provider.
   */
  private found(answer: Answer, what: string, none_is_unavailable: boolean): unknown {
    const raw = getPath(answer.body, 'response_code');
    const code = typeof raw === 'number' || typeof raw === 'string' ? String(raw) : null;
    const { codes } = this.config;
    if (answer.http_status < 400 && code !== null && codes.success.includes(code))
      return getPath(answer.body, 'info') ?? getPath(answer.body, 'data');
    if (
      answer.http_status < 400 &&
      code !== null &&
      codes.failed.includes(code) &&
      !none_is_unavailable
    )
      return null;
    throw new ProviderUnavailableError(
      'bad_response',
      `provider ${this.name} could not answer the ${what} (HTTP ${answer.http_status}, ${messageOf(answer.body) || code || 'no response_code'})`,
    );
  }

  /** PaySprint's name of the request's operator. */
  private operatorName(request: LookupRequest): string {
    const id = String(request.params.operator_id ?? '');
    const map = this.config.lookup_operators;
    if (Object.hasOwn(map, id)) return map[id]!;
    const brand = request.params.brand;
    if (typeof brand !== 'string' || brand === '')
      throw new ProviderUnavailableError(
        'misconfigured',
        `provider ${this.name}: no PaySprint name for operator ${id || '(none)'}`,
      );
    return brand;
  }

  private circleName(code: string): string {
    const { circles } = this.config;
    if (Object.hasOwn(circles, code)) return circles[code]!;
    return Object.hasOwn(CIRCLES, code) ? CIRCLES[code]! : code;
  }

  /** Our circle code of PaySprint's circle name (the entry's `circles`, else our names), or null. */
  private circleCode(name: string): string | null {
    const wanted = name.trim().toLowerCase();
    const match = (map: Readonly<Record<string, string>>) =>
      Object.entries(map).find(([, value]) => value.toLowerCase() === wanted)?.[0] ?? null;
    return match(this.config.circles) ?? match(CIRCLES);
  }
}

function text(value: unknown): string | null {
  if (typeof value === 'number') return String(value);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

function messageOf(body: unknown): string {
  const value = getPath(body, 'message');
  return typeof value === 'string' ? value.slice(0, 500) : '';
}
