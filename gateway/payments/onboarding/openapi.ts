// Onboarding's routes in GET /openapi.json: registering an account, and its eKYC.
import type { RouteDoc } from '../../http/openapi.js';
import { kycBody } from './kyc.js';
import { registerBody } from './schemas.js';

const api = { auth: 'api_key' } as const;

/** The account itself: registering, eKYC. */
export function onboardingRouteDocs(): RouteDoc[] {
  return [
    {
      tag: 'onboarding',
      auth: 'none',
      method: 'post',
      path: '/api/register',
      summary: 'Register a developer account (AI on, payments off); the key is shown once',
      body: registerBody,
      success: {
        status: 201,
        description: '{account_id, api_key, key_prefix, services, kyc_status}',
      },
      errors: { 409: 'email taken', 429: 'too many sign-ups from this address' },
    },
    {
      ...api,
      tag: 'onboarding',
      method: 'post',
      path: '/api/kyc',
      summary: 'Submit eKYC (JSON, or multipart with documents)',
      body: kycBody,
      success: { status: 200, description: '{status: "submitted", ...}' },
      errors: {
        409: 'under review or approved already',
        413: 'document too large',
        415: 'document not PDF, PNG or JPEG',
      },
    },
    {
      ...api,
      tag: 'onboarding',
      method: 'get',
      path: '/api/kyc',
      summary: 'The eKYC status',
      success: { status: 200, description: '{status, reason?, ...}' },
    },
  ];
}
