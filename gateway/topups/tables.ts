// The top-ups room's tables in the store document (declaration merging on Tables).
import type { Tx } from '../store/types.js';
import type { TaxSplit } from '../payments/engine/tax.js';
import type { Checkout, PayerDetails, TopupMethod, TopupProviderName } from './types.js';

/**
 * A top-up's life: `created` (order made, waiting for the payment) → `credited` (paid, checked
 * with the provider, the wallet credited) or `failed` (the provider said so) or `expired`
 * (never paid); a credited one may become `refunded` / `disputed` (debited back, in part or
 * whole). `flagged`: the provider's answer disagreed (amount, currency, order): nothing was
 * credited and an operator looks (GET /admin/topups?status=flagged).
 */
export const TOPUP_STATUSES = [
  'created',
  'credited',
  'failed',
  'expired',
  'flagged',
  'refunded',
  'disputed',
  // A transfer into a virtual account from someone other than the holder
  // (topups.virtual_accounts.hold_third_party): `held` until an operator releases it
  // (`credited`) or refuses it (`returned`: never credited, sent back at the provider).
  'held',
  'returned',
] as const;
export type TopupStatus = (typeof TOPUP_STATUSES)[number];

export interface Topup {
  id: string;
  account_id: string;
  provider: TopupProviderName;
  /** The provider's order id (null for a virtual-account credit, which has no order). */
  order_id: string | null;
  /** What reaches the wallet. */
  amount_micros: number;
  /** The convenience fee with its GST (0 without one); the customer pays amount + fee. */
  fee_micros: number;
  /** Of fee_micros, the GST. */
  fee_gst_micros: number;
  /** The fee's GST split, posted as priced when the top-up is credited (null without a fee). */
  fee_tax: TaxSplit | null;
  /** The method the fee was priced for (null: `default` or no fee). */
  method: TopupMethod | null;
  currency: string;
  status: TopupStatus;
  /** The provider's payment that paid it (set once, in the commit that credits). */
  payment_id: string | null;
  /** Taken back by refunds and disputes (at most amount + fee), and of that what the wallet could not pay (owed). */
  reversed_micros: number;
  owed_micros: number;
  /** What the browser opens to pay (public values only), kept while the top-up is payable. */
  checkout: Checkout | null;
  /** Who paid, for a virtual-account credit. */
  payer?: PayerDetails;
  /** The last thing that happened, in words (bounded): shown on /wallet and to the operator. */
  note: string;
  created_at: string;
  updated_at: string;
  /** The reconciliation pass: when to ask the provider next, and how often it asked. */
  checks: { count: number; next_at: string | null };
  /**
   * `'check'` while a `failed` top-up still has a check due (a retry on its order may pay);
   * absent otherwise (set by `withChecks`). The pass lists failed top-ups by this field, so
   * it reads the few still open, not every top-up that ever failed.
   */
  awaiting?: 'check';
  history: Array<{ status: TopupStatus; at: string; note: string }>;
}

/**
 * One row per provider payment credited (`<provider>:<payment id>`), written in the commit
 * that credits: the uniqueness that makes a credit once, whichever top-up, account or gateway
 * the webhook reached. Refunds and disputes are once per their own id the same way
 * (`<provider>:refund:<id>`, `<provider>:dispute:<id>`).
 */
export interface TopupPaymentRow {
  key: string;
  topup_id: string;
  account_id: string;
  amount_micros: number;
  /** A reversal's: what it took (at most what the top-up brought), and of that what was owed. */
  taken_micros?: number;
  owed_micros?: number;
  at: string;
}

/** Something an operator must look at: a verified event that did not match (nothing credited). */
export interface TopupAlert {
  id: string;
  provider: TopupProviderName;
  /** unknown_order, amount_mismatch, currency_mismatch, order_mismatch, status_mismatch, replayed_payment, unknown_payment, second_payment, fee_method_mismatch (credited as shown; the method paid by has another fee) */
  reason: string;
  topup_id: string | null;
  account_id: string | null;
  order_id: string | null;
  payment_id: string | null;
  detail: string;
  at: string;
}

/** How many of an account's latest top-ups are listed (GET /api/wallet/topups' largest `limit`). */
export const RECENT_TOPUPS = 100;

/** How many top-ups the operator's list by status keeps per status (the latest to enter it). */
export const STATUS_WINDOW = 500;

/** Records that a top-up entered `status`, newest first (the operator's list reads these rows only). */
export function rememberStatus(tx: Tx, status: TopupStatus, topup_id: string): void {
  const ids = tx.get('topup_by_status', status) ?? [];
  tx.set(
    'topup_by_status',
    status,
    [topup_id, ...ids.filter((id) => id !== topup_id)].slice(0, STATUS_WINDOW),
  );
}

/**
 * The top-up with `awaiting` matching its status and checks: the one rule for the index the
 * reconciliation pass reads failed top-ups by (created ones it reads by status: they leave
 * that status when they expire).
 */
export function withChecks(topup: Topup): Topup {
  const { awaiting: _was, ...rest } = topup;
  return topup.status === 'failed' && topup.checks.next_at !== null
    ? { ...rest, awaiting: 'check' }
    : rest;
}

/** Records a new top-up as the account's newest and as `created`, in the commit that makes it (the lists stay bounded). */
export function rememberRecent(tx: Tx, account_id: string, topup_id: string): void {
  rememberStatus(tx, 'created', topup_id);
  const ids = tx.get('topup_recent', account_id) ?? [];
  tx.set(
    'topup_recent',
    account_id,
    [topup_id, ...ids.filter((id) => id !== topup_id)].slice(0, RECENT_TOPUPS),
  );
}

declare module '../store/state.js' {
  interface Tables {
    /** `<account id>:<India date>` → micro-units of top-ups started that day and not failed (the daily cap). */
    topup_daily: Record<string, number>;
    topups: Record<string, Topup>;
    /** Account id → its latest top-up ids, newest first (at most RECENT_TOPUPS): /wallet's list and GET /api/wallet/topups read these rows only. */
    topup_recent: Record<string, string[]>;
    /** Status → the latest top-up ids to enter it, newest first (at most STATUS_WINDOW): GET /admin/topups?status=. */
    topup_by_status: Record<string, string[]>;
    /** `<provider>:<order id>` → top-up id. */
    topup_orders: Record<string, string>;
    topup_payments: Record<string, TopupPaymentRow>;
    topup_alerts: Record<string, TopupAlert>;
  }
}
