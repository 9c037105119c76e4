// Recharge's rules, as a command the /api route (and any other surface) calls: the operator
// must exist, the number must match the operator's pattern (a mobile number normalized
// first), the amount must be within the operator's range, and the commission is the
// operator's rate of the amount. The payment itself goes through the engine (hold,
// idempotency, duplicate window, provider chain).
import type { z } from 'zod';
import { badRequest } from '../../http/errors.js';
import type { Account } from '../../store/state.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsContext } from '../context.js';
import type { Answer } from '../engine/engine.js';
import { requestHash } from '../engine/intent.js';
import type { rechargeBody } from './schemas.js';
import { normalizeMobile } from '../validators.js';

type Ctx = Pick<PaymentsContext, 'settings' | 'engine' | 'pricing' | 'store'>;
type Operator = PaymentsContext['settings']['operators'][number];

/** The operator and the number as it is sent on: a 400 naming the field when either is wrong. */
export function checkRecharge(
  operators: ReadonlyMap<Operator['operator_id'], Operator>,
  body: z.output<typeof rechargeBody>,
): { operator: Operator; number: string } {
  const operator = operators.get(body.operator_id);
  if (!operator)
    throw badRequest(
      `operator_id: no operator ${body.operator_id}; GET /api/operators lists them`,
      'operator_id',
      'unknown_operator',
    );
  const number = operator.mobile ? normalizeMobile(body.number) : body.number.replace(/\s/g, '');
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

export function rechargeCommands(ctx: Ctx): RechargeCommands {
  const operators = new Map(ctx.settings.operators.map((o) => [o.operator_id, o]));
  return {
    recharge(account, body, idempotency_key) {
      const { operator, number } = checkRecharge(operators, body);
      const allow_duplicate = body.allow_duplicate ?? false;
      const client_ref = body.client_ref ?? null;
      const quote = ctx.pricing.quote(ctx.store, {
        account_id: account.id,
        service: 'recharge',
        operator: String(operator.operator_id),
        amount_micros: body.amount,
        fee_micros: 0,
      });
      return ctx.engine.submit({
        account,
        service: 'recharge',
        idempotency_key,
        client_ref,
        request_hash: requestHash('recharge', {
          operator_id: operator.operator_id,
          number,
          amount_micros: body.amount,
          client_ref,
          allow_duplicate,
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
        },
        provider_params: { operator_id: operator.operator_id, operator_type: operator.type },
      });
    },
  };
}
