// Recharge's lookups, which move no money, through the recharge providers: a mobile number's
// operator, circle and type (an HLR/MNP lookup; the sandbox answers from its sample number
// series), an operator's plans in a circle (kept `plans_ttl_ms`, a bounded number of lists),
// a number's own offers, and a DTH subscriber's account. Answers are read into our terms: the
// operator of our catalogue (by the id a provider's codes give back, else by brand and type),
// circle codes, amounts in micro-units.
import { badRequest, notFound } from '../../http/errors.js';
import { CIRCLES } from '../../providers/sample/telecom.js';
import { unitsToMicros } from '../../util/money.js';
import type { Operator } from '../config.js';
import type { PaymentsContext } from '../context.js';
import { lookup, lookupSignal, type Found } from '../lookups.js';

type Ctx = Pick<PaymentsContext, 'providers' | 'clock' | 'settings' | 'onStop'>;

export interface NumberLookup {
  number: string;
  operator: Operator;
  circle: string;
  circle_name: string;
  type: 'prepaid' | 'postpaid';
  ported: boolean | null;
  provider: string;
  /** How the provider knew: `hlr` (asked the network), `series` (the number's series), `sample` (sandbox, made up). */
  source: string;
}

export interface Plan {
  plan_id: string | null;
  amount_micros: number;
  validity: string | null;
  data: string | null;
  talktime: string | null;
  sms: string | null;
  description: string;
  category: string;
}

export interface PlanList {
  plans: Plan[];
  provider: string;
  fetched_at: string;
}

export interface RechargeLookups {
  number(number: string): Promise<NumberLookup>;
  plans(operator: Operator, circle: string | null): Promise<PlanList>;
  offers(operator: Operator, number: string): Promise<PlanList>;
  dthInfo(operator: Operator, number: string): Promise<Record<string, string | number | null>>;
  /** The circle code of a code or a name (`DL`, `delhi ncr`), or null. */
  circleCode(text: string): string | null;
}

export function rechargeLookups(ctx: Ctx): RechargeLookups {
  return new Lookups(ctx);
}

class Lookups implements RechargeLookups {
  private readonly signal: AbortSignal;
  private readonly cache = new Map<string, { at_ms: number; list: PlanList }>();
  constructor(private readonly ctx: Ctx) {
    this.signal = lookupSignal(ctx);
  }

  circleCode(text: string): string | null {
    const upper = text.trim().toUpperCase();
    if (Object.hasOwn(CIRCLES, upper)) return upper;
    const found = Object.entries(CIRCLES).find(([, name]) => name.toUpperCase() === upper);
    return found ? found[0] : null;
  }

  /** Our operator for a lookup's answer: by the id a provider's codes gave back, else by brand and type. */
  private operatorOf(data: Found['data'], type: 'prepaid' | 'postpaid'): Operator | null {
    const operators = this.ctx.settings.operators;
    const id = Number(data.operator_id);
    const by_id = operators.find((o) => o.operator_id === id && o.type === type);
    if (by_id) return by_id;
    const brand = String(data.operator ?? data.operator_id ?? '')
      .trim()
      .toLowerCase();
    const same_type = operators.filter((o) => o.type === type);
    return (
      same_type.find((o) => o.brand.toLowerCase() === brand) ??
      same_type.find((o) => o.name.toLowerCase() === brand) ??
      null
    );
  }

  private listOf(found: Found): PlanList {
    return {
      plans: (found.items ?? []).flatMap((item) => planOf(item)),
      provider: found.provider,
      fetched_at: this.ctx.clock.now().toISOString(),
    };
  }

  async number(number: string): Promise<NumberLookup> {
    const found = await lookup(
      this.ctx,
      this.signal,
      { service: 'recharge', kind: 'hlr', subject: number, params: {} },
      {
        not_found_code: 'number_not_found',
        unavailable: "no recharge provider could look up the number's operator",
      },
    );
    const type =
      String(found.data.type ?? '').toLowerCase() === 'postpaid' ? 'postpaid' : 'prepaid';
    const operator = this.operatorOf(found.data, type);
    if (!operator)
      throw notFound(
        `${found.provider} says ${number} is a ${type} number of ${String(found.data.operator ?? found.data.operator_id ?? 'an unnamed operator')}, which is not in the operator catalogue`,
        'operator_not_supported',
      );
    const circle_text = String(found.data.circle ?? '');
    const circle = this.circleCode(circle_text) ?? circle_text.slice(0, 60);
    return {
      number,
      operator,
      circle,
      circle_name: CIRCLES[circle] ?? circle,
      type,
      ported: yesNo(found.data.ported),
      provider: found.provider,
      source: String(found.data.match ?? 'hlr'),
    };
  }

  async plans(operator: Operator, circle: string | null): Promise<PlanList> {
    const settings = this.ctx.settings.recharge;
    const key = `${operator.operator_id}:${circle ?? ''}`;
    const now_ms = this.ctx.clock.now().getTime();
    const kept = this.cache.get(key);
    if (kept && now_ms - kept.at_ms < settings.plans_ttl_ms) return kept.list;
    const found = await lookup(
      this.ctx,
      this.signal,
      {
        service: 'recharge',
        kind: 'plans',
        subject: '',
        params: {
          operator_id: operator.operator_id,
          brand: operator.brand,
          operator_type: operator.type,
          ...(circle ? { circle } : {}),
        },
      },
      {
        not_found_code: 'plans_not_found',
        prefix: `${operator.name}: `,
        unavailable: `no recharge provider could list the plans of ${operator.name}`,
      },
    );
    const list = this.listOf(found);
    this.cache.delete(key);
    this.cache.set(key, { at_ms: now_ms, list });
    while (this.cache.size > settings.plans_cache_entries)
      this.cache.delete(this.cache.keys().next().value!);
    return list;
  }

  async offers(operator: Operator, number: string): Promise<PlanList> {
    const found = await lookup(
      this.ctx,
      this.signal,
      {
        service: 'recharge',
        kind: 'offers',
        subject: number,
        params: { operator_id: operator.operator_id, brand: operator.brand },
      },
      {
        not_found_code: 'offers_not_found',
        prefix: `${operator.name}: `,
        unavailable: `no recharge provider could list the offers of ${number}`,
      },
    );
    return this.listOf(found);
  }

  async dthInfo(
    operator: Operator,
    number: string,
  ): Promise<Record<string, string | number | null>> {
    const found = await lookup(
      this.ctx,
      this.signal,
      {
        service: 'recharge',
        kind: 'dth_info',
        subject: number,
        params: { operator_id: operator.operator_id, brand: operator.brand },
      },
      {
        not_found_code: 'subscriber_not_found',
        prefix: `${operator.name}: `,
        unavailable: `no recharge provider could look up the ${operator.name} subscriber`,
      },
    );
    const text = (name: string) =>
      found.data[name] === undefined ? null : String(found.data[name]).slice(0, 120);
    const units = (name: string) => {
      const micros = amountMicros(found.data[name]);
      return micros === null ? null : micros / 1_000_000;
    };
    return {
      customer_name: text('customer_name'),
      balance: units('balance'),
      monthly_recharge: units('monthly_recharge'),
      plan_name: text('plan_name'),
      next_recharge_date: text('next_recharge_date'),
      status: text('status'),
      registered_mobile: text('registered_mobile'),
      provider: found.provider,
    };
  }
}

/** A provider's yes/no (yes, true, 1, y...) as a boolean; null when it said neither. */
function yesNo(value: unknown): boolean | null {
  const text = String(value ?? '').toLowerCase();
  if (['yes', 'true', '1', 'y'].includes(text)) return true;
  if (['no', 'false', '0', 'n'].includes(text)) return false;
  return null;
}

/** An amount in currency units (a number or numeric text, at most 2 decimals) as micro-units; null when it is none. */
export function amountMicros(value: unknown): number | null {
  const units = typeof value === 'string' ? Number(value.replace(/[₹,\s]|Rs\.?/gi, '')) : value;
  if (typeof units !== 'number' || !Number.isFinite(units) || units < 0 || units > 1_000_000)
    return null;
  try {
    return unitsToMicros(units, 2);
  } catch {
    return null;
  }
}

/** A list item as a plan; none when it has no usable amount. */
function planOf(item: Record<string, string | number>): Plan[] {
  const amount_micros = amountMicros(item.amount);
  if (amount_micros === null || amount_micros === 0) return [];
  const text = (name: string, max = 120) =>
    item[name] === undefined || item[name] === '' ? null : String(item[name]).slice(0, max);
  return [
    {
      plan_id: text('plan_id', 64) ?? text('offer_id', 64),
      amount_micros,
      validity: text('validity'),
      data: text('data'),
      talktime: text('talktime'),
      sms: text('sms'),
      description: text('description', 500) ?? '',
      category: text('category', 40)?.toLowerCase() ?? 'other',
    },
  ];
}

/** A mobile operator's plans need a circle; DTH packs do not; electricity has none. */
export function plansCircle(operator: Operator, circle: string | null): string | null {
  if (operator.type === 'electricity')
    throw badRequest(
      `operator_id: ${operator.name} is an electricity board: it has bills, not plans (POST /api/bills/fetch)`,
      'operator_id',
      'no_plans',
    );
  if (!operator.mobile) return null;
  if (!circle)
    throw badRequest(
      `circle: the plans of ${operator.name} depend on the circle; give one of ${Object.keys(CIRCLES).join(', ')} (GET /api/recharge/lookup?number= tells a number's circle)`,
      'circle',
      'invalid_value',
    );
  return circle;
}
