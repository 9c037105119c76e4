// GET /api/operators, POST /api/recharge, and recharge's lookups (a number's operator and
// circle, an operator's plans, a number's offers, a DTH subscriber): validate, call the
// command (recharge/commands.ts, recharge/lookup.ts, where the rules are), present.
import { Router } from 'express';
import { jsonBody } from '../../http/body.js';
import { badRequest, parseWith } from '../../http/errors.js';
import { idempotencyKey } from '../engine/intent.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { checkRecharge, rechargeCommands, type BillPayment } from './commands.js';
import { plansCircle, rechargeLookups, type RechargeLookups } from './lookup.js';
import type { Operator } from '../config.js';
import { numberLookupView, operatorView, planView } from './views.js';
import {
  dthInfoQuery,
  lookupQuery,
  offersQuery,
  operatorsQuery,
  plansQuery,
  rechargeBody,
} from './schemas.js';
import { mobileError, normalizeMobile } from '../identity/mobile.js';

/** `bills`: bill payment, which an electricity board's recharge is (the room hands it bills' commands). */
export function rechargeRouter(ctx: PaymentsContext, bills: BillPayment): Router {
  const { store, logger, settings } = ctx;
  const router = Router();
  const lookups = rechargeLookups(ctx);
  const commands = rechargeCommands(ctx, lookups, bills);
  const operators = new Map(settings.operators.map((o) => [o.operator_id, o]));
  const operatorFor = (operator_id: number) => {
    const operator = operators.get(operator_id);
    if (!operator)
      throw badRequest(
        `operator_id: no operator ${operator_id}; GET /api/operators lists them`,
        'operator_id',
        'unknown_operator',
      );
    return operator;
  };
  router.get('/operators', (req, res) => {
    authorize(store.state, req, res, logger);
    const query = parseWith(operatorsQuery, req.query);
    const list = settings.operators
      .filter((o) => !query.type || o.type === query.type)
      .map(operatorView);
    res.json({ status: true, data: list });
  });

  router.post('/recharge', jsonBody(ctx.config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'recharge');
    const body = parseWith(rechargeBody, req.body ?? {});
    const answer = await commands.recharge(account, body, idempotencyKey(req, body.client_ref));
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  lookupRoutes(router, ctx, lookups, operatorFor);
  dthRoutes(router, ctx, lookups, operatorFor);
  return router;
}

function mobileOf(raw: string): string {
  const mobile = normalizeMobile(raw);
  const error = mobileError(mobile);
  if (error) throw badRequest(`number: ${error}`, 'number', 'invalid_number');
  return mobile;
}

/** The lookups: a number's operator and circle, plans, offers, a DTH subscriber. */
function lookupRoutes(
  router: Router,
  ctx: PaymentsContext,
  lookups: RechargeLookups,
  operatorFor: (operator_id: number) => Operator,
): void {
  const { store, logger } = ctx;
  /** A mobile number's operator, circle and type (prepaid or postpaid). */
  router.get('/recharge/lookup', async (req, res) => {
    authorize(store.state, req, res, logger, 'recharge');
    const number = mobileOf(parseWith(lookupQuery, req.query).number);
    const looked = await lookups.number(number);
    res.json({ status: true, data: numberLookupView(looked) });
  });

  /** An operator's plans in a circle (DTH: its packs), optionally of one category. */
  router.get('/recharge/plans', async (req, res) => {
    authorize(store.state, req, res, logger, 'recharge');
    const query = parseWith(plansQuery, req.query);
    const operator = operatorFor(query.operator_id);
    const given = query.circle === undefined ? null : lookups.circleCode(query.circle);
    if (query.circle !== undefined && given === null)
      throw badRequest(`circle: no circle ${query.circle.slice(0, 60)}`, 'circle', 'invalid_value');
    const circle = plansCircle(operator, given);
    const list = await lookups.plans(operator, circle);
    const category = query.category?.toLowerCase();
    const plans = list.plans.filter((p) => !category || p.category === category);
    res.json({
      status: true,
      data: {
        operator_id: operator.operator_id,
        operator: operator.name,
        circle,
        categories: [...new Set(list.plans.map((p) => p.category))],
        plans: plans.map(planView),
        provider: list.provider,
        fetched_at: list.fetched_at,
      },
    });
  });

  /** A number's own offers (operator_id optional: looked up from the number). */
  router.get('/recharge/offers', async (req, res) => {
    authorize(store.state, req, res, logger, 'recharge');
    const query = parseWith(offersQuery, req.query);
    const number = mobileOf(query.number);
    const operator =
      query.operator_id !== undefined
        ? operatorFor(query.operator_id)
        : (await lookups.number(number)).operator;
    const list = await lookups.offers(operator, number);
    res.json({
      status: true,
      data: {
        operator_id: operator.operator_id,
        operator: operator.name,
        number,
        offers: list.plans.map(planView),
        provider: list.provider,
        fetched_at: list.fetched_at,
      },
    });
  });
}

/** A DTH subscriber's account: name, balance, monthly pack, next recharge date. */
function dthRoutes(
  router: Router,
  ctx: PaymentsContext,
  lookups: RechargeLookups,
  operatorFor: (operator_id: number) => Operator,
): void {
  const { store, logger, settings } = ctx;
  const operators = new Map(settings.operators.map((o) => [o.operator_id, o]));
  /** A DTH subscriber's account: name, balance, monthly pack, next recharge date. */
  router.get('/dth/info', async (req, res) => {
    authorize(store.state, req, res, logger, 'recharge');
    const query = parseWith(dthInfoQuery, req.query);
    const operator = operatorFor(query.operator_id);
    if (operator.type !== 'dth')
      throw badRequest(
        `operator_id: ${operator.name} is not a DTH operator`,
        'operator_id',
        'not_dth',
      );
    const { number } = checkRecharge(operators, {
      operator_id: operator.operator_id,
      number: query.number,
      amount: operator.min_amount_micros,
    });
    const info = await lookups.dthInfo(operator, number);
    res.json({
      status: true,
      data: { operator_id: operator.operator_id, operator: operator.name, number, ...info },
    });
  });
}
