// GET /api/operators and POST /api/recharge.
import { Router } from 'express';
import { jsonBody } from '../http/body.js';
import { badRequest, parseWith } from '../http/errors.js';
import { commissionMicros, idempotencyKey, requestHash } from './intent.js';
import { microsToUnits } from '../util/money.js';
import { authorize } from './auth.js';
import type { PaymentsContext } from './context.js';
import { operatorView } from './recharge-views.js';
import { operatorsQuery, rechargeBody } from './schemas.js';
import { normalizeMobile } from './validators.js';

export function rechargeRouter(ctx: PaymentsContext): Router {
  const { store, logger, settings, engine } = ctx;
  const router = Router();
  const operators = new Map(settings.operators.map((o) => [o.operator_id, o]));

  router.get('/operators', (req, res) => {
    authorize(store.state, req, res, logger);
    const query = parseWith(operatorsQuery, req.query);
    const list = settings.operators.filter((o) => !query.type || o.type === query.type).map(operatorView);
    res.json({ status: true, data: list });
  });

  router.post('/recharge', jsonBody(ctx.config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'recharge');
    const body = parseWith(rechargeBody, req.body ?? {});
    const operator = operators.get(body.operator_id);
    if (!operator) throw badRequest(`operator_id: no operator ${body.operator_id}; GET /api/operators lists them`, 'operator_id', 'unknown_operator');
    const number = operator.mobile ? normalizeMobile(body.number) : body.number.replace(/\s/g, '');
    if (!new RegExp(operator.number_pattern).test(number)) {
      throw badRequest(`number: not a valid ${operator.number_label} for ${operator.name}`, 'number', 'invalid_number');
    }
    if (body.amount < operator.min_amount_micros || body.amount > operator.max_amount_micros) {
      throw badRequest(
        `amount: must be between ${microsToUnits(operator.min_amount_micros)} and ${microsToUnits(operator.max_amount_micros)} for ${operator.name}`,
        'amount',
        'amount_out_of_range',
      );
    }
    const key = idempotencyKey(req, body.client_ref);
    const answer = await engine.submit({
      account,
      service: 'recharge',
      idempotency_key: key,
      client_ref: body.client_ref ?? null,
      request_hash: requestHash('recharge', {
        operator_id: operator.operator_id,
        number,
        amount_micros: body.amount,
        client_ref: body.client_ref ?? null,
        allow_duplicate: body.allow_duplicate ?? false,
      }),
      allow_duplicate: body.allow_duplicate ?? false,
      amount_micros: body.amount,
      charges_micros: 0,
      commission_micros: commissionMicros(body.amount, operator.commission_bp),
      pay_to: 'provider:recharge',
      subject: number,
      details: { operator: operator.name, operator_id: operator.operator_id, operator_type: operator.type },
      provider_params: { operator_id: operator.operator_id, operator_type: operator.type },
    });
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  return router;
}
