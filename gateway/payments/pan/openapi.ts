// PAN's routes in GET /openapi.json: the PAN lookup (find), and verification by variant.
import type { RouteDoc } from '../../http/openapi.js';
import { PAYMENT_ERRORS } from '../shared/openapi.js';
import { panBody, panVerifyBody } from './schemas.js';

const api = { auth: 'api_key' } as const;

/** The PAN lookup, then verification. */
export function panRouteDocs(): RouteDoc[] {
  return [
    {
      ...api,
      tag: 'pan',
      method: 'post',
      path: '/api/pan-find',
      summary: 'PAN lookup: holder name and type; the fee is charged only when found',
      body: panBody,
      success: {
        status: 200,
        description:
          '{status: true, data: {pan, name, type}, txn_id, fee, balance} (no message); not found: status false, error.code pan_not_found, nothing charged',
      },
      errors: PAYMENT_ERRORS,
    },
    {
      ...api,
      tag: 'pan',
      method: 'post',
      path: '/api/pan/verify',
      summary:
        'PAN verification by variant: status (valid, deactivated, deleted, fake), name and date-of-birth match flags, Aadhaar seeding; one fee per variant',
      body: panVerifyBody,
      success: {
        status: 200,
        description:
          '{status: true, data: {pan, variant, pan_status, valid, type, name_match?, dob_match?, aadhaar_seeding?, name?}, txn_id, fee, tax}',
      },
    },
  ];
}
