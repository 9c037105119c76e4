// The accounts room as the app mounts it: the JSON admin API (accounts, keys, credits)
// behind the admin token, and its part of the OpenAPI document.
import type { RequestHandler, Router } from 'express';
import type { RoomDeps } from '../deps.js';
import type { RouteDoc } from '../http/openapi.js';
import { adminAuth, adminRouter, type FailureLock } from './admin-routes.js';
import { catchUpForUnknownKey } from './auth.js';
import { accountRouteDocs } from './openapi.js';

export interface Accounts {
  /**
   * Refuses a request without the admin token (mount before every /admin JSON route); wrong
   * tokens count against the address in `lock`, shared with the console's login.
   */
  auth(lock: FailureLock): RequestHandler;
  /** The JSON admin API, mounted at /admin. */
  admin: Router;
  /**
   * Mounted before /api: with the PostgreSQL store, a key another gateway created a moment
   * ago is looked for in the shared log once before the request is refused (a no-op otherwise).
   */
  knownKeys: RequestHandler;
  docs: RouteDoc[];
}

/** `payment_services`: the payments room's service codes, off on the accounts the admin API creates. */
export function createAccounts(
  deps: RoomDeps,
  options: { payment_services?: readonly string[] } = {},
): Accounts {
  // An account's keys (the keys page, the admin's account view, the 50-key rule) are read through this index.
  // Read inside transactions: the 50-active-keys rule counts an account's keys as it adds one.
  deps.store.indexBy('keys', 'account_id', { in_transactions: true });
  return {
    auth: (lock) => adminAuth(deps.admin_token_hash, lock, () => deps.clock.now().getTime()),
    admin: adminRouter(deps, options.payment_services ?? []),
    knownKeys: catchUpForUnknownKey(deps.store),
    docs: accountRouteDocs,
  };
}
