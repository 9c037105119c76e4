// The one list of payment services (issue #38). Adding a service is adding its folder (with
// its service.ts: routes, renderer, hooks, tables' bounds, documents) and one line here; the
// room (index.ts) registers each the same way, and the other rooms read the list through
// `Payments.services`, never a service's folder (scripts/doors.mjs).
import { billsCommands } from './bills/commands.js';
import { billsService } from './bills/service.js';
import { dmtService } from './dmt/service.js';
import { panService } from './pan/service.js';
import { rechargeService } from './recharge/service.js';
import type { ServiceModule } from './service.js';

/** In the order their routes are mounted and their switches shown. */
export const PAYMENT_SERVICES: readonly ServiceModule[] = [
  rechargeService(billsCommands),
  dmtService,
  panService,
  billsService,
];
