// The top-ups room's routes, in one place (the dashboard and the 402 remedy link to them).
import type { TopupProviderName } from './types.js';

export const TOPUP_PATHS = {
  /** Inside /api: POST {amount, method?} creates a top-up; GET lists the account's latest. */
  api_collection: '/wallet/topups',
  /** Inside /api: GET one of the account's own top-ups. */
  api_item: '/wallet/topups/:topup_id',
  /** Inside /admin: GET the top-ups (?status=), and the alerts for the operator. */
  admin_collection: '/topups',
  admin_alerts: '/topups/alerts',
  /** The dashboard page a checkout returns to (with ?topup=<id>). */
  wallet_page: '/wallet',
} as const;

/** Where a provider's webhooks are POSTed (at the root, outside /api). */
export function webhookPath(provider: TopupProviderName): string {
  return `/webhooks/${provider}`;
}
