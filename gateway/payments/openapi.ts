// The payments room's routes for GET /openapi.json: each service documents its own paths in
// its folder's openapi.ts, with the same zod schemas its routes parse with (bodies and
// queries), so the document cannot drift from what /api accepts; this composes them.
import type { RouteDoc } from '../http/openapi.js';
import type { PaymentsConfig } from './config.js';
import { accountRouteDocs } from './account/openapi.js';
import { adminRouteDocs } from './admin/openapi.js';
import { callbackRouteDocs } from './callbacks/openapi.js';
import { invoiceRouteDocs } from './invoices/openapi.js';
import { networkRouteDocs } from './network/openapi.js';
import { onboardingRouteDocs } from './onboarding/openapi.js';
import { reportRouteDocs } from './reports/openapi.js';
import { statementRouteDocs } from './statements/openapi.js';
import type { ServiceModule } from './service.js';

/** The room's documents, each service's own (its `route_docs`, from the list) among them. */
export function paymentsRouteDocs(
  settings: PaymentsConfig,
  services: readonly ServiceModule[],
): RouteDoc[] {
  return [
    ...onboardingRouteDocs(),
    ...accountRouteDocs(),
    ...services.flatMap((service) => service.route_docs?.(settings) ?? []),
    ...reportRouteDocs(),
    ...statementRouteDocs(),
    ...invoiceRouteDocs(),
    ...networkRouteDocs(),
    ...adminRouteDocs(services.map((service) => service.code)),
    ...callbackRouteDocs(),
  ];
}
