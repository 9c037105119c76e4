// Mobile recharge (prepaid, DTH, postpaid and the electricity boards' recharges) as the
// payments room registers it (service.ts, services.ts).
import type { PaymentsContext } from '../context.js';
import type { ServiceModule } from '../service.js';
import type { BillPayment } from './commands.js';
import { rechargeRouteDocs } from './openapi.js';
import { rechargeRouter } from './routes.js';
import { renderRecharge } from './views.js';

/**
 * Recharge pays the boards' recharges as bills: the list (services.ts) hands it the bill
 * payment it uses, so that this folder imports no other service's.
 */
export const rechargeService = (bills: (ctx: PaymentsContext) => BillPayment): ServiceModule => ({
  code: 'recharge',
  label: 'Mobile recharge',
  api: (ctx) => rechargeRouter(ctx, bills(ctx)),
  renderer: () => renderRecharge,
  route_docs: () => rechargeRouteDocs(),
});
