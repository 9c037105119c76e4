// PAN verification's route for GET /openapi.json.
import type { RouteDoc } from '../../http/openapi.js';
import { panVerifyBody } from './schemas.js';

const api = { auth: 'api_key' } as const;

/** PAN verification by variant. */
export function panVerifyRouteDoc(): RouteDoc {
  return {
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
  };
}
