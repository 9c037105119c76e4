// What the top-ups room gives the rest of the gateway (main.ts builds it with createTopups and
// hands its routers to the payments /api, the /admin API and the root; the dashboard's /wallet
// calls its methods).
import type { Router } from 'express';
import type { RouteDoc } from '../http/openapi.js';
import type { PruneTarget } from '../payments/engine/prune.js';
import type { Topup, TopupAlert } from './tables.js';
import type { LoadDetailsView } from './virtual-accounts/routes.js';
import type { Checkout, TopupEvent, TopupMethod, TopupProviderName } from './types.js';

/** A top-up as the API answers it (amounts in currency units). */
export interface TopupView {
  topup_id: string;
  provider: TopupProviderName;
  order_id: string | null;
  /** What reaches the wallet. */
  amount: number;
  /** The convenience fee with its GST, and what the customer pays (amount + fee). */
  fee: number;
  fee_gst: number;
  total: number;
  currency: string;
  status: Topup['status'];
  /** Taken back from the wallet by refunds and disputes, and of it what the wallet could not pay (owed). */
  reversed: number;
  owed: number;
  note: string;
  /** What the browser opens to pay; null once the top-up is no longer payable. */
  checkout: Checkout | null;
  created_at: string;
  updated_at: string;
}

export interface FeeQuote {
  amount_micros: number;
  /** The fee with its GST, and of it the GST. */
  fee_micros: number;
  fee_gst_micros: number;
  total_micros: number;
}

export interface Topups {
  /** The configured provider, or null (sandbox's simulated payment / live's bank-transfer text). */
  readonly provider: TopupProviderName | null;
  /** Mounted inside /api (after its key auth, signing and log): POST/GET /wallet/topups[/:id]. */
  readonly api: Router;
  /** Mounted at the root before any JSON body parser (reads the raw body itself): POST /webhooks/<provider>. */
  readonly webhooks: Router;
  /** Mounted inside /admin (admin bearer): GET /topups?status=, GET /topups/alerts. */
  readonly admin: Router;
  /** Its tables' rows that expire (a day's cap count once the day is over), for the payments room's pruning pass. */
  readonly prune: readonly PruneTarget[];
  /** Its routes for GET /openapi.json. */
  readonly route_docs: RouteDoc[];
  /** The fee a top-up would carry (shown before paying); throws ApiError 400 outside the limits. */
  quote(amount_micros: number, method: TopupMethod | null): FeeQuote;
  /**
   * Starts a top-up for an account (the API's and the /wallet form's one path): limits, daily
   * cap, the provider's order. Throws ApiError (400 limits, 409 no provider, 502 provider).
   */
  create(
    account_id: string,
    input: { amount_micros: number; method: TopupMethod | null },
  ): Promise<TopupView>;
  /** One of the account's own top-ups (null: none by that id for that account). */
  get(account_id: string, topup_id: string): Promise<TopupView | null>;
  /** The account's latest top-ups, newest first (at most `limit`, ≤ 100): /wallet's pending and failed list. */
  recent(account_id: string, limit: number): Promise<TopupView[]>;
  /** Applies one verified event of the configured provider (the webhook route's and a virtual account's one path). */
  apply(event: TopupEvent): Promise<void>;
  /** The operator's list: alerts, newest first (bounded). */
  alerts(limit: number): Promise<TopupAlert[]>;
  /**
   * The account's virtual account (GET /api/wallet/load-details; /wallet shows it): made at the
   * provider on the first ask, then from the store. Throws ApiError (409 no provider or none
   * with virtual accounts, 502 the provider refused, 503 another gateway is making it).
   */
  loadDetails(account_id: string): Promise<LoadDetailsView>;
  /** Whether the configured provider gives virtual accounts (/wallet offers bank-transfer details). */
  readonly virtual_accounts: boolean;
  /** The account's virtual account if it has one already (null: none yet); never calls the provider. */
  storedLoadDetails(account_id: string): Promise<LoadDetailsView | null>;
  /** Starts the reconciliation pass; stop() waits for a pass in flight. */
  start(): void;
  stop(): Promise<void>;
}
