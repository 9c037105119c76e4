// Domestic money transfer as the payments room registers it (service.ts, services.ts): a
// failed transfer's refund waits for the remitter's OTP, and its own tables (the month's
// usage, the transfer OTPs) are pruned once no rule reads them.
import { pruneTarget } from '../engine/prune.js';
import type { ServiceModule } from '../service.js';
import { dmtOnTransition, dmtRefundNeedsConsent } from './commands.js';
import { dmtRouteDocs } from './openapi.js';
import { transferOtpSpent } from './rbi.js';
import { dmtAdminRouter, dmtRouter } from './routes.js';
import { usageMonthOver } from './rules.js';
import { renderDmt } from './views.js';

export const dmtService: ServiceModule = {
  code: 'dmt',
  label: 'Money transfer (DMT)',
  api: dmtRouter,
  admin: dmtAdminRouter,
  renderer: () => renderDmt,
  onTransition: dmtOnTransition,
  refundNeedsConsent: dmtRefundNeedsConsent,
  // The month's usage by the routes' own month (room clock); an OTP once spent or expired.
  prune: ({ clock, settings }) => [
    pruneTarget({
      table: 'dmt_usage',
      expired: (id) => usageMonthOver(id, clock.now(), settings.dmt.utc_offset_minutes),
    }),
    pruneTarget({
      table: 'dmt_transfer_otps',
      expired: (_id, otp, tx) => transferOtpSpent(otp, tx.now.getTime()),
    }),
  ],
  route_docs: (settings) => dmtRouteDocs(settings),
};
