// Mobile recharge (prepaid, DTH, postpaid and the electricity boards' recharges) as the
// payments room registers it (service.ts, services.ts).
import type { ServiceModule } from '../service.js';
import { rechargeLookupDocs } from './openapi.js';
import { rechargeRouter } from './routes.js';
import { renderRecharge } from './views.js';

export const rechargeService: ServiceModule = {
  code: 'recharge',
  label: 'Mobile recharge',
  api: rechargeRouter,
  renderer: () => renderRecharge,
  route_docs: () => rechargeLookupDocs(),
};
