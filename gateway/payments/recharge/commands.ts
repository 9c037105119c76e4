// Recharge's rules, as a command the /api route (and any other surface) calls: the operator
// must exist, the number must match the operator's pattern (a mobile number normalized
// first), the amount must be within the operator's range, and the commission is the
// operator's rate of the amount. The payment itself goes through the engine (hold,
// idempotency, duplicate window, provider chain).
import type { z } from 'zod';
import { ApiError, badRequest } from '../../http/errors.js';
import type { Account } from '../../store/state.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsContext } from '../context.js';
import type { Answer } from '../engine/engine.js';
import { requestHash } from '../engine/intent.js';
import type { rechargeBody } from './schemas.js';
import { mobileError, normalizeMobile } from '../identity/mobile.js';
import type { NumberLookup, Plan, RechargeLookups } from './lookup.js';

type Ctx = Pick<PaymentsContext, 'settings' | 'engine' | 'pricing' | 'store' | 'providers'>;
type Operator = PaymentsContext['settings']['operators'][number];

/** The operator and the number as it is sent on: a 400 naming the field when either is wrong. */
export function checkRecharge(
  operators: ReadonlyMap<Operator['operator_id'], Operator>,
  body: { operator_id: number; number: string; amount: number },
): { operator: Operator; number: string } {
  const operator = operators.get(body.operator_id);
  if (!operator)
    throw badRequest(
      `operator_id: no operator ${body.operator_id}; GET /api/operators lists them`,
      'operator_id',
      'unknown_operator',
    );
  const number = operator.mobile ? normalizeMobile(body.number) : body.number.replace(/\s/g, '');
  const not_mobile = operator.mobile ? mobileError(number) : null;
  if (not_mobile)
    throw badRequest(
      `number: ${operator.name} recharges mobile numbers: the number ${not_mobile}`,
      'number',
      'invalid_number',
    );
  if (!new RegExp(operator.number_pattern).test(number)) {
    throw badRequest(
      `number: not a valid ${operator.number_label} for ${operator.name}`,
      'number',
      'invalid_number',
    );
  }
  if (body.amount < operator.min_amount_micros || body.amount > operator.max_amount_micros) {
    throw badRequest(
      `amount: must be between ${microsToUnits(operator.min_amount_micros)} and ${microsToUnits(operator.max_amount_micros)} for ${operator.name}`,
      'amount',
      'amount_out_of_range',
    );
  }
  return { operator, number };
}

export interface RechargeCommands {
  recharge(
    account: Account,
    body: z.output<typeof rechargeBody>,
    idempotency_key: string | null,
  ): Promise<Answer>;
}

/** What the plan check found: the amount is a plan or an offer, is not, or could not be checked. */
interface PlanCheck {
  result: 'listed' | 'not_listed' | 'unverified';
  circle: string | null;
  plan: Plan | null;
  note: string;
}

/**
 * What recharge asks of bill payment: an electricity board's recharge is a bill payment of its
 * biller. The room hands recharge bills' commands (payments/index.ts), so neither service
 * folder imports the other.
 */
export interface BillPayment {
  pay(
    account: Account,
    body: {
      biller_id: string;
      consumer_number?: string;
      amount: number;
      bill_id?: string;
      customer_mobile?: string;
      customer_pan?: string;
      client_ref?: string;
      allow_duplicate?: boolean;
    },
    idempotency_key: string | null,
    via?: Record<string, string | number>,
  ): Promise<Answer>;
}

export function rechargeCommands(
  ctx: Ctx,
  lookups: RechargeLookups,
  bills: BillPayment,
): RechargeCommands {
  return new Recharge(ctx, lookups, bills);
}

class Recharge implements RechargeCommands {
  private readonly operators: ReadonlyMap<number, Operator>;
  private readonly mode: Ctx['settings']['recharge']['plan_check'];
  constructor(
    private readonly ctx: Ctx,
    private readonly lookups: RechargeLookups,
    private readonly bills: BillPayment,
  ) {
    this.operators = new Map(ctx.settings.operators.map((o) => [o.operator_id, o]));
    this.mode = ctx.settings.recharge.plan_check;
  }

  /** Synchronous refusals (operator, number, amount) throw before anything is asked or held. */
  recharge(
    account: Account,
    body: z.output<typeof rechargeBody>,
    idempotency_key: string | null,
  ): Promise<Answer> {
    const checked =
      body.operator_id === undefined
        ? null
        : checkRecharge(this.operators, { ...body, operator_id: body.operator_id });
    if (checked?.operator.type === 'electricity')
      return this.billPayment(account, body, idempotency_key, checked);
    for (const field of ['bill_id', 'customer_mobile', 'customer_pan'] as const)
      if (body[field] !== undefined)
        throw badRequest(
          `${field}: only an electricity board's recharge (a BBPS bill payment) takes it`,
          field,
          'invalid_value',
        );
    if (!checked) return this.lookedUpThenSubmit(account, body, idempotency_key, null);
    if (this.modeFor(checked.operator) === 'off' || checked.operator.type !== 'prepaid')
      return this.submit(account, body, idempotency_key, checked, { looked: null, plan: null });
    return this.lookedUpThenSubmit(account, body, idempotency_key, checked);
  }
  /**
   * How an operator's amounts are checked against its plans: an operator that sells plans only
   * always enforces; the others follow `payments.recharge.plan_check`.
   */
  private modeFor(operator: Operator): Ctx['settings']['recharge']['plan_check'] {
    return operator.plans_only ? 'enforce' : this.mode;
  }

  private submit(
    account: Account,
    body: z.output<typeof rechargeBody>,
    idempotency_key: string | null,
    checked: { operator: Operator; number: string },
    extra: { looked: NumberLookup | null; plan: PlanCheck | null },
  ): Promise<Answer> {
    const { operator, number } = checked;
    const { looked, plan } = extra;
    const allow_duplicate = body.allow_duplicate ?? false;
    const client_ref = body.client_ref ?? null;
    const quote = this.ctx.pricing.quote(this.ctx.store, {
      account_id: account.id,
      service: 'recharge',
      operator: String(operator.operator_id),
      amount_micros: body.amount,
      fee_micros: 0,
    });
    const circle = looked?.circle ?? plan?.circle ?? null;
    return this.ctx.engine.submit({
      account,
      service: 'recharge',
      idempotency_key,
      client_ref,
      // The request as sent: a retry without operator_id is the same request whatever a
      // later lookup would say.
      request_hash: requestHash('recharge', {
        operator_id: body.operator_id ?? null,
        number,
        amount_micros: body.amount,
        client_ref,
        allow_duplicate,
        ...(body.circle ? { circle: body.circle } : {}),
      }),
      allow_duplicate,
      amount_micros: body.amount,
      charges_micros: 0,
      ...quote,
      pay_to: 'provider:recharge',
      subject: number,
      details: {
        operator: operator.name,
        operator_id: operator.operator_id,
        operator_type: operator.type,
        ...(circle ? { circle } : {}),
        ...(looked
          ? {
              looked_up: 'operator',
              lookup_provider: looked.provider,
              lookup_source: looked.source,
            }
          : {}),
        ...(plan
          ? {
              plan_check: plan.result,
              plan_check_mode: this.modeFor(operator),
              plan_note: plan.note,
              ...(plan.plan?.plan_id ? { plan_id: plan.plan.plan_id } : {}),
              ...(plan.plan ? { plan_description: plan.plan.description } : {}),
            }
          : {}),
      },
      provider_params: {
        operator_id: operator.operator_id,
        operator_type: operator.type,
        ...(circle ? { circle } : {}),
      },
    });
  }

  /**
   * An electricity board's recharge is a payment of its BBPS biller (service bills): one path
   * with /api/bills/pay, so one duplicate window (the same consumer number and amount within
   * it, through either door, is a duplicate) and the biller's commission; the answer keeps the
   * recharge's fields (operator, operator_id, number).
   */
  private billPayment(
    account: Account,
    body: z.output<typeof rechargeBody>,
    idempotency_key: string | null,
    checked: { operator: Operator; number: string },
  ): Promise<Answer> {
    const { operator, number } = checked;
    return this.bills.pay(
      account,
      {
        biller_id: operator.biller_id!,
        consumer_number: number,
        amount: body.amount,
        ...(body.client_ref !== undefined ? { client_ref: body.client_ref } : {}),
        ...(body.allow_duplicate !== undefined ? { allow_duplicate: body.allow_duplicate } : {}),
        ...(body.bill_id !== undefined ? { bill_id: body.bill_id } : {}),
        ...(body.customer_mobile !== undefined ? { customer_mobile: body.customer_mobile } : {}),
        ...(body.customer_pan !== undefined ? { customer_pan: body.customer_pan } : {}),
      },
      idempotency_key,
      { operator: operator.name, operator_id: operator.operator_id, via: 'recharge' },
    );
  }

  /** The operator looked up from the number, then (for a prepaid mobile) the amount checked against the plans. */
  private async lookedUpThenSubmit(
    account: Account,
    body: z.output<typeof rechargeBody>,
    idempotency_key: string | null,
    given: { operator: Operator; number: string } | null,
  ): Promise<Answer> {
    let looked: NumberLookup | null = null;
    let checked = given;
    if (!checked) {
      const mobile = normalizeMobile(body.number);
      if (mobileError(mobile))
        throw badRequest(
          'number: without operator_id the number must be a mobile number (10 digits, starting 6 to 9), whose operator is looked up',
          'number',
          'invalid_number',
        );
      looked = await this.lookups.number(mobile);
      checked = checkRecharge(this.operators, {
        ...body,
        operator_id: looked.operator.operator_id,
      });
    }
    const plan =
      this.modeFor(checked.operator) !== 'off' && checked.operator.type === 'prepaid'
        ? await this.planCheck(checked.operator, checked.number, body, looked)
        : null;
    return this.submit(account, body, idempotency_key, checked, { looked, plan });
  }

  /** Is the amount a plan of the operator in the number's circle, or one of the number's offers? */
  private async planCheck(
    operator: Operator,
    number: string,
    body: z.output<typeof rechargeBody>,
    looked: NumberLookup | null,
  ): Promise<PlanCheck> {
    let circle = body.circle ? this.lookups.circleCode(body.circle) : (looked?.circle ?? null);
    let check: PlanCheck;
    try {
      circle ??= (await this.lookups.number(number)).circle;
      const { plans } = await this.lookups.plans(operator, circle);
      let plan = plans.find((p) => p.amount_micros === body.amount) ?? null;
      // A number's offers are asked only of providers that list them (Eko, for one, does not).
      const offered = this.ctx.providers.recharge.some(
        (p) => p.lookup !== undefined && (!p.lookup_kinds || p.lookup_kinds.includes('offers')),
      );
      if (!plan && offered) {
        const offers = await this.lookups.offers(operator, number).catch((error: unknown) => {
          if (error instanceof ApiError && error.status === 404) return { plans: [] };
          throw error;
        });
        plan = offers.plans.find((p) => p.amount_micros === body.amount) ?? null;
      }
      const where = `${operator.name} in ${circle}`;
      check = plan
        ? { result: 'listed', circle, plan, note: `a plan of ${where}: ${plan.description}` }
        : {
            result: 'not_listed',
            circle,
            plan: null,
            note: `${microsToUnits(body.amount)} is not a plan of ${where} nor an offer of ${number}; listed amounts: ${nearAmounts(plans, body.amount)}`,
          };
    } catch (error) {
      if (!(error instanceof ApiError) || error.status < 500) throw error;
      check = {
        result: 'unverified',
        circle,
        plan: null,
        note: `the plans could not be listed: ${error.message}`,
      };
    }
    const mode = this.modeFor(operator);
    if (mode === 'enforce' && check.result === 'not_listed')
      throw new ApiError(
        422,
        'amount_not_a_plan',
        `amount: ${operator.plans_only ? `${operator.name} sells plans only: ` : ''}${check.note}`,
        'amount',
      );
    if (mode === 'enforce' && check.result === 'unverified')
      throw new ApiError(503, 'plans_unavailable', `amount: ${check.note}`, 'amount', null, {
        'Retry-After': '30',
      });
    return check;
  }
}

/** The listed amounts nearest the one asked, for the refusal's message. */
function nearAmounts(plans: readonly Plan[], amount_micros: number): string {
  return [...new Set(plans.map((p) => p.amount_micros))]
    .sort((a, b) => Math.abs(a - amount_micros) - Math.abs(b - amount_micros))
    .slice(0, 5)
    .sort((a, b) => a - b)
    .map(microsToUnits)
    .join(', ');
}
