// Recharge's routes in GET /openapi.json: the operator list, a recharge, and the lookups
// (issue #27): a number's operator and circle, an operator's plans, a number's offers, a DTH
// subscriber's account.
import type { RouteDoc } from '../../http/openapi.js';
import { PAYMENT_ERRORS } from '../shared/openapi.js';
import {
  dthInfoQuery,
  lookupQuery,
  offersQuery,
  operatorsQuery,
  plansQuery,
  rechargeBody,
} from './schemas.js';

const api = { tag: 'recharge', auth: 'api_key' } as const;
const LOOKUP = {
  403: 'service_inactive (recharge)',
  503: 'providers_unavailable: no provider could answer (Retry-After)',
};

/** The operator list and a recharge, then the lookups. */
export function rechargeRouteDocs(): RouteDoc[] {
  return [...rechargeDocs(), ...lookupDocs()];
}

/** The operator list and a recharge. */
function rechargeDocs(): RouteDoc[] {
  return [
    {
      ...api,
      method: 'get',
      path: '/api/operators',
      summary: 'Operators with commission and amount bounds',
      query: operatorsQuery,
      success: {
        status: 200,
        description: '[{operator_id, name, type, commission_pct, min_amount, max_amount}]',
      },
    },
    {
      ...api,
      method: 'post',
      path: '/api/recharge',
      summary:
        'Recharge (Idempotency-Key or client_ref makes retries safe); without operator_id the number is looked up',
      body: rechargeBody,
      success: {
        status: 200,
        description:
          '{status, message, txn_id, data: {txn_id, operator, amount, status, commission, balance}}; a decline is status false with the wallet refunded',
      },
      errors: {
        ...PAYMENT_ERRORS,
        422: 'amount_not_a_plan (an operator that sells plans only, or plan_check enforce)',
        503: 'no provider configured, shutting down, or plans_unavailable (Retry-After)',
      },
    },
  ];
}

/** A number's operator and circle, an operator's plans, a number's offers, a DTH subscriber. */
function lookupDocs(): RouteDoc[] {
  return [
    {
      ...api,
      method: 'get',
      path: '/api/recharge/lookup',
      summary: "A mobile number's operator, circle and type (prepaid or postpaid)",
      query: lookupQuery,
      success: {
        status: 200,
        description:
          '{status: true, data: {number, operator_id, operator, type, circle, circle_name, ported, source, provider}}',
      },
      errors: { ...LOOKUP, 400: 'not a mobile number', 404: 'number_not_found' },
    },
    {
      ...api,
      method: 'get',
      path: '/api/recharge/plans',
      summary: "An operator's plans in a circle (DTH: its packs), optionally of one category",
      query: plansQuery,
      success: {
        status: 200,
        description:
          '{status: true, data: {operator_id, operator, circle, categories, plans: [{plan_id, amount, validity, data, talktime, sms, description, category}], provider, fetched_at}}',
      },
      errors: { ...LOOKUP, 400: 'unknown operator_id or circle', 404: 'plans_not_found' },
    },
    {
      ...api,
      method: 'get',
      path: '/api/recharge/offers',
      summary: "A number's own special offers (operator_id optional: looked up from the number)",
      query: offersQuery,
      success: {
        status: 200,
        description:
          '{status: true, data: {operator_id, operator, number, offers: [plan...], provider, fetched_at}}',
      },
      errors: {
        ...LOOKUP,
        400: 'not a mobile number, or unknown operator_id',
        404: 'offers_not_found',
      },
    },
    {
      ...api,
      method: 'get',
      path: '/api/dth/info',
      summary: "A DTH subscriber's account: name, balance, monthly recharge, next due date",
      query: dthInfoQuery,
      success: {
        status: 200,
        description:
          '{status: true, data: {operator_id, operator, number, customer_name, balance, monthly_recharge, next_recharge_date, plan_name, status}}',
      },
      errors: {
        ...LOOKUP,
        400: 'not_dth (operator is not DTH), or a number the operator does not take',
        404: 'subscriber_not_found',
      },
    },
  ];
}
