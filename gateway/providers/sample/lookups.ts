// The sandbox's answers to the recharge lookups, from the bundled sample data (telecom.ts):
// a number's operator and circle by its series (a number whose series is not in the sample
// gets a stable made-up one, said so in `match`), an operator's plans in a circle, a number's
// special offers, a DTH subscriber's account. Deterministic: the same question, the same answer.
import type { LookupRequest, LookupResult } from '../types.js';
import { digitsOf, hashOf, personName, pick } from './seeded.js';
import {
  CIRCLES,
  DTH_BRANDS,
  DTH_PACKS,
  MOBILE_BRANDS,
  MOBILE_PLANS,
  NUMBER_SERIES,
  type DthBrand,
  type MobileBrand,
  type SamplePlan,
} from './telecom.js';

/** Sandbox: numbers ending in this are postpaid (any other is prepaid). */
export const SANDBOX_POSTPAID = '0008';

const CIRCLE_CODES = Object.keys(CIRCLES);
/** Made-up operators for series the sample lacks, weighted roughly by market share. */
const WEIGHTED: readonly MobileBrand[] = [
  'Jio',
  'Jio',
  'Jio',
  'Jio',
  'Airtel',
  'Airtel',
  'Airtel',
  'Vi',
  'Vi',
  'BSNL',
];

export function sandboxHlr(number: string): LookupResult {
  const digits = number.replace(/\D/g, '').slice(-10);
  const series = NUMBER_SERIES.get(digits.slice(0, 4));
  const [brand, circle] = series ?? [
    pick(WEIGHTED, `hlr:${digits}`),
    pick(CIRCLE_CODES, `circle:${digits}`),
  ];
  return {
    outcome: 'found',
    message: series
      ? 'operator and circle from the number series (sandbox sample)'
      : 'sandbox: a made-up operator for a series not in the sample',
    data: {
      operator: brand,
      circle,
      circle_name: CIRCLES[circle]!,
      type: digits.endsWith(SANDBOX_POSTPAID) ? 'postpaid' : 'prepaid',
      ported: 'no',
      match: series ? 'series' : 'sample',
    },
  };
}

function planItem(brand: string, plan: SamplePlan, index: number): Record<string, string | number> {
  return {
    plan_id: `${brand.replace(/\W/g, '').toUpperCase()}-${plan.amount}-${index}`,
    amount: plan.amount,
    validity: plan.validity,
    data: plan.data,
    talktime: plan.talktime,
    sms: plan.sms,
    description: plan.description,
    category: plan.category,
  };
}

function plansOf(brand: string): readonly SamplePlan[] | null {
  if ((MOBILE_BRANDS as readonly string[]).includes(brand))
    return MOBILE_PLANS[brand as MobileBrand];
  if ((DTH_BRANDS as readonly string[]).includes(brand)) return DTH_PACKS[brand as DthBrand];
  return null;
}

/** An operator's plans (params `brand`, `circle`): the sample's, those of other circles left out. */
export function sandboxPlans(request: LookupRequest): LookupResult {
  const brand = String(request.params.brand ?? '');
  const circle = String(request.params.circle ?? '');
  const plans = plansOf(brand);
  if (!plans) return { outcome: 'not_found', message: `the sandbox has no plans of ${brand}` };
  return {
    outcome: 'found',
    message: 'plans (sandbox sample)',
    data: { operator: brand, circle },
    items: plans
      .map((plan, index) => ({ plan, index }))
      .filter(({ plan }) => !plan.circles || plan.circles.includes(circle))
      .map(({ plan, index }) => planItem(brand, plan, index)),
  };
}

/** A number's special offers (params `brand`): two or three of its operator's plans, cheaper or with more data, for this number only. */
export function sandboxOffers(request: LookupRequest): LookupResult {
  const brand = String(request.params.brand ?? '');
  const plans = (plansOf(brand) ?? []).filter((p) => p.category === 'unlimited' && !p.circles);
  const seed = `offers:${brand}:${request.subject}`;
  const count = plans.length === 0 ? 0 : 2 + Number(hashOf(seed) % 2n);
  const items: Array<Record<string, string | number>> = [];
  for (let k = 0; k < count; k++) {
    const plan = plans[Number(hashOf(`${seed}:${k}`) % BigInt(plans.length))]!;
    if (items.some((item) => item.base_amount === plan.amount)) continue;
    const discount = k % 2 === 0;
    const amount = discount
      ? plan.amount - 10 * (1 + Number(hashOf(`${seed}:d${k}`) % 3n))
      : plan.amount;
    items.push({
      offer_id: `OFR${digitsOf(`${seed}:${k}`, 8)}`,
      amount,
      base_amount: plan.amount,
      validity: plan.validity,
      data: discount ? plan.data : `${plan.data} + 10 GB extra`,
      talktime: plan.talktime,
      description: discount
        ? `Special price for this number: ${plan.description}`
        : `Extra 10 GB for this number: ${plan.description}`,
      category: 'offer',
    });
  }
  return {
    outcome: 'found',
    message: 'offers for this number (sandbox)',
    data: { operator: brand },
    items,
  };
}

/** A DTH subscriber's account (params `brand`): name, balance, the monthly pack, the next recharge date. */
export function sandboxDthInfo(request: LookupRequest, now: Date): LookupResult {
  const brand = String(request.params.brand ?? '');
  const packs = (DTH_BRANDS as readonly string[]).includes(brand)
    ? DTH_PACKS[brand as DthBrand]
    : [];
  const monthly = packs.filter((p) => p.validity === '1 month');
  if (monthly.length === 0)
    return { outcome: 'not_found', message: `the sandbox has no DTH operator ${brand}` };
  const seed = `dth:${brand}:${request.subject}`;
  const pack = pick(monthly, seed);
  const balance_paise = Number(hashOf(`${seed}:balance`) % BigInt(pack.amount * 150));
  const days_left = Math.floor((balance_paise / 100 / pack.amount) * 30);
  const next = new Date(now.getTime() + days_left * 86_400_000).toISOString().slice(0, 10);
  return {
    outcome: 'found',
    message: 'subscriber found (sandbox)',
    data: {
      customer_name: personName(seed),
      balance: balance_paise / 100,
      monthly_recharge: pack.amount,
      plan_name: pack.description,
      next_recharge_date: next,
      status: days_left > 0 ? 'Active' : 'Deactive',
      registered_mobile: `XXXXXX${digitsOf(`${seed}:mobile`, 4)}`,
    },
  };
}

/**
 * A BBPS complaint at the sandbox: registered and assigned (to the biller for a transaction
 * complaint, to the agent institution for a service one) with a complaint reference; then, as
 * time passes since `registered_at` (param), in progress after `pending_ms` and resolved
 * after twice that, except a "double payment" complaint, which is rejected (none is found).
 */
export function sandboxComplaint(
  request: LookupRequest,
  now: Date,
  pending_ms: number,
): LookupResult {
  const complaint_id = String(request.params.complaint_id ?? '');
  const registered_ms = Date.parse(String(request.params.registered_at ?? now.toISOString()));
  const elapsed_ms = now.getTime() - registered_ms;
  const assigned_to = request.params.type === 'service' ? 'agent institution' : 'biller';
  const reason = String(request.params.reason ?? '');
  const rejected = reason === 'double_payment_updated';
  const status =
    request.kind === 'complaint' || elapsed_ms < pending_ms
      ? 'ASSIGNED'
      : elapsed_ms < 2 * pending_ms
        ? 'IN_PROGRESS'
        : rejected
          ? 'REJECTED'
          : 'RESOLVED';
  return {
    outcome: 'found',
    message: `complaint ${status.toLowerCase()} (sandbox)`,
    data: {
      complaint_ref: `CC0${digitsOf(`complaint:${complaint_id}`, 12)}`,
      status,
      assigned_to,
      ...(status === 'RESOLVED'
        ? { resolution: 'The biller has updated the payment to the customer account (sandbox).' }
        : status === 'REJECTED'
          ? { resolution: 'No second payment was found for this transaction (sandbox).' }
          : {}),
    },
  };
}
