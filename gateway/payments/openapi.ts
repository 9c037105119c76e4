// The payments room's routes for GET /openapi.json: each service documents its own paths in
// its folder's openapi.ts, with the same zod schemas its routes parse with (bodies and
// queries), so the document cannot drift from what /api accepts; this composes them.
import type { RouteDoc } from '../http/openapi.js';
import type { PaymentsConfig } from './config.js';
import { accountRouteDocs } from './account/openapi.js';
import { adminRouteDocs } from './admin/openapi.js';
import { billsRouteDocs } from './bills/openapi.js';
import { callbackRouteDocs } from './callbacks/openapi.js';
import { dmtRouteDocs } from './dmt/openapi.js';
import { invoiceRouteDocs } from './invoices/openapi.js';
import { networkRouteDocs } from './network/openapi.js';
import { onboardingRouteDocs } from './onboarding/openapi.js';
import { panRouteDocs } from './pan/openapi.js';
import { rechargeRouteDocs } from './recharge/openapi.js';
import { reportRouteDocs } from './reports/openapi.js';
import { statementRouteDocs } from './statements/openapi.js';

export function paymentsRouteDocs(settings: PaymentsConfig): RouteDoc[] {
  return [
    ...onboardingRouteDocs(),
    ...accountRouteDocs(),
    ...rechargeRouteDocs(),
    ...dmtRouteDocs(settings),
    ...panRouteDocs(),
    ...billsRouteDocs(),
    ...reportRouteDocs(),
    ...statementRouteDocs(),
    ...invoiceRouteDocs(),
    ...networkRouteDocs(),
    ...adminRouteDocs(),
    ...callbackRouteDocs(),
  ];
}
