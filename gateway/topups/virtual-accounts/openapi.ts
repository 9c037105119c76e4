// The virtual accounts' routes for GET /openapi.json, with the schemas the routes parse with.
import type { RouteDoc } from '../../http/openapi.js';
import { reviewBody } from './routes.js';

const REVIEWED = '{topup_id, account_id, status, note, payer: {name, account_number, ifsc, vpa}}';

export const virtualAccountRouteDocs: RouteDoc[] = [
  {
    auth: 'api_key',
    tag: 'wallet',
    method: 'get',
    path: '/api/wallet/load-details',
    summary:
      "The account's virtual account at the payment gateway (made on the first ask): transfers to it credit the wallet",
    success: {
      status: 200,
      description:
        '{provider, virtual_account_id, account_number, ifsc, bank_name, upi_id, status, created_at}',
    },
    errors: {
      409: 'no payment gateway (topups_not_configured), or one without virtual accounts (virtual_accounts_unavailable)',
      502: 'the payment gateway did not make one (provider_error); nothing stored',
      503: 'another gateway is making it; ask again shortly',
    },
  },
  {
    auth: 'admin',
    tag: 'admin',
    method: 'post',
    path: '/admin/topups/:topup_id/release',
    summary: 'Credit a transfer held for review (a payer other than the account holder)',
    body: reviewBody,
    success: { status: 200, description: REVIEWED },
    errors: { 404: 'no such top-up', 409: 'the top-up is not held (topup_not_held)' },
  },
  {
    auth: 'admin',
    tag: 'admin',
    method: 'post',
    path: '/admin/topups/:topup_id/return',
    summary: 'Refuse a held transfer: never credited, to be returned to the payer at the provider',
    body: reviewBody,
    success: { status: 200, description: REVIEWED },
    errors: { 404: 'no such top-up', 409: 'the top-up is not held (topup_not_held)' },
  },
];
