// Recharge's lookups in GET /openapi.json (issue #27): a number's operator and circle, an
// operator's plans, a number's offers, a DTH subscriber's account. Recharge and the operator
// list themselves are documented in payments/openapi.ts.
import type { RouteDoc } from '../../http/openapi.js';
import { dthInfoQuery, lookupQuery, offersQuery, plansQuery } from './schemas.js';

const api = { tag: 'recharge', auth: 'api_key' } as const;
const LOOKUP = {
  403: 'service_inactive (recharge)',
  503: 'providers_unavailable: no provider could answer (Retry-After)',
};

export function rechargeLookupDocs(): RouteDoc[] {
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
