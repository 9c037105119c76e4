// The top-ups room's one interface to a payment gateway (Razorpay, Cashfree): every provider
// is a folder under topups/providers/ implementing `TopupProvider`, registered once in
// topups/providers/index.ts; nothing else in the gateway spells a provider's name.
//
// How money comes in (docs/deploy.md, "Top-ups"):
//   1. POST /api/wallet/topups {amount} (or the /wallet form) → the room records a `Topup`
//      (status `created`) and asks the provider for an order (`createOrder`), whose
//      `checkout` the browser opens (the provider's script or page).
//   2. The provider calls POST /webhooks/<provider>: `readWebhook` checks the signature over
//      the RAW body and reads it into `TopupEvent`s (provider units already turned into
//      micro-units). Nothing is believed from a webhook alone: before a credit the room asks the
//      provider itself (`fetchOrder` / `fetchPayment`) and credits only when amount, currency,
//      order and status agree.
//   3. A credit is once per provider payment id (table `topup_payments`, a row written in the
//      commit that credits): a webhook that comes twice, twenty at once, or on another account
//      credits nothing more. A lost webhook is caught by the reconciliation pass, which polls
//      pending top-ups with `fetchOrder`.
//   4. `refund.processed` / `dispute.created` debit the wallet (never below zero; the rest is
//      owed, `receivable:<account>`, as AI usage past the wallet is).
// Virtual accounts (bank transfers / UPI to an account number that credits the wallet by
// itself) are optional methods of the same interface; their credits are `virtual_account
// .credited` events, credited once by payment id like any other.
import type { IncomingHttpHeaders } from 'node:http';

/** The providers config `topups.provider` may name. */
export const TOPUP_PROVIDERS = ['razorpay', 'cashfree'] as const;
export type TopupProviderName = (typeof TOPUP_PROVIDERS)[number];

/** Payment methods a convenience fee may be set for (`topups.fees`); `default` for any other. */
export const TOPUP_METHODS = ['upi', 'card', 'netbanking', 'wallet', 'bank_transfer'] as const;
export type TopupMethod = (typeof TOPUP_METHODS)[number];

export interface CreateOrderInput {
  /** Our top-up id: the provider's receipt / order reference, so that its dashboard finds ours. */
  topup_id: string;
  account_id: string;
  /** What the customer pays: the amount plus the convenience fee with its GST. */
  amount_micros: number;
  currency: string;
  customer: { name: string; email: string; phone?: string | undefined };
  /** Where the provider's checkout sends the browser when done (`<public url>/wallet?topup=<id>`). */
  return_url: string;
  /** The webhook URL (`<public url>/webhooks/<provider>`), for providers that take it per order. */
  notify_url: string;
}

/**
 * What the browser needs to pay: public values only, never a secret. The /wallet page loads
 * `script_url` and opens it with `options` (Razorpay Standard Checkout: key, order_id, amount,
 * currency, name, prefill, callback_url; Cashfree: paymentSessionId, mode, returnUrl), or sends
 * the browser to `redirect_url` when the provider hosts a page of its own.
 */
export interface Checkout {
  provider: TopupProviderName;
  script_url: string | null;
  options: Record<string, unknown>;
  redirect_url: string | null;
}

export interface CreatedOrder {
  order_id: string;
  checkout: Checkout;
}

export type ProviderPaymentStatus = 'created' | 'authorized' | 'captured' | 'failed' | 'refunded';

/** A payment as the provider itself answers for it (the fetch a credit is checked against). */
export interface ProviderPayment {
  payment_id: string;
  order_id: string | null;
  amount_micros: number;
  currency: string;
  status: ProviderPaymentStatus;
  /** Normalized method (upi, card...) or null when the provider's is none of ours. */
  method: TopupMethod | null;
  /** Refunded so far (micro-units). */
  refunded_micros: number;
  /** Why it failed, in the provider's words (bounded). */
  error: string | null;
  /** A credit to a virtual account: which account, and who paid. */
  virtual_account_id?: string | undefined;
  payer?: PayerDetails | undefined;
}

export interface ProviderOrder {
  order_id: string;
  amount_micros: number;
  currency: string;
  /** `paid`: the provider counts the order paid in full. */
  status: 'created' | 'attempted' | 'paid' | 'expired';
  /** The order's payments (at most the first page the provider gives). */
  payments: ProviderPayment[];
}

export interface PayerDetails {
  name: string | null;
  /** The remitter's bank account (masked as the provider gives it) and IFSC, or UPI VPA. */
  account_number: string | null;
  ifsc: string | null;
  vpa: string | null;
}

/** What a verified webhook says, in the room's words (amounts in micro-units). */
export type TopupEvent =
  | {
      type: 'payment.captured';
      /** The provider's event id (`x-razorpay-event-id`) when it sends one: for the log. */
      event_id: string | null;
      order_id: string;
      payment_id: string;
      amount_micros: number;
      currency: string;
    }
  | {
      type: 'payment.failed';
      event_id: string | null;
      order_id: string;
      payment_id: string;
      reason: string;
    }
  | {
      type: 'refund.processed';
      event_id: string | null;
      payment_id: string;
      refund_id: string;
      amount_micros: number;
      currency: string;
    }
  | {
      type: 'dispute.created';
      event_id: string | null;
      payment_id: string;
      dispute_id: string;
      amount_micros: number;
      currency: string;
    }
  | {
      /** The operator won a dispute: what it took from the wallet comes back, once per dispute. */
      type: 'dispute.won';
      event_id: string | null;
      payment_id: string;
      dispute_id: string;
      currency: string;
    }
  | {
      type: 'virtual_account.credited';
      event_id: string | null;
      virtual_account_id: string;
      payment_id: string;
      amount_micros: number;
      currency: string;
      payer: PayerDetails;
    }
  /** A verified event the room does not act on (logged only). */
  | { type: 'ignored'; event_id: string | null; name: string };

/** A webhook refused before it is read: bad or missing signature, or a body that is not the provider's shape. */
export class WebhookRejected extends Error {
  override name = 'WebhookRejected';
  constructor(
    readonly reason: 'bad_signature' | 'malformed',
    message: string,
  ) {
    super(message);
  }
}

/** A provider that answered with an error or not at all (the room retries later; nothing is credited). */
export class ProviderCallError extends Error {
  override name = 'ProviderCallError';
  constructor(
    message: string,
    /** The provider's HTTP status, or null when it could not be reached. */
    readonly status: number | null,
  ) {
    super(message);
  }
}

export interface VirtualAccount {
  virtual_account_id: string;
  account_number: string;
  ifsc: string;
  bank_name: string | null;
  /** A UPI ID that credits the same account, when the provider gives one. */
  upi_id: string | null;
  status: 'active' | 'closed';
}

export interface CreateVirtualAccountInput {
  account_id: string;
  name: string;
  email: string;
  phone?: string | undefined;
}

export interface TopupProvider {
  readonly name: TopupProviderName;
  /** Creates the provider's order for a top-up. Throws ProviderCallError. */
  createOrder(input: CreateOrderInput, signal?: AbortSignal): Promise<CreatedOrder>;
  /** The provider's view of an order and its payments (reconciliation; the check before a credit). */
  fetchOrder(order_id: string, signal?: AbortSignal): Promise<ProviderOrder>;
  /** One payment as the provider knows it; null when it knows none by that id. */
  fetchPayment(payment_id: string, signal?: AbortSignal): Promise<ProviderPayment | null>;
  /**
   * Verifies a webhook's signature over the raw body (timing-safe) and reads its events.
   * Throws WebhookRejected; never anything else for a caller's bad input.
   */
  readWebhook(headers: IncomingHttpHeaders, raw_body: Buffer): TopupEvent[];
  /** Virtual accounts, for providers that have them (Razorpay Smart Collect, Cashfree Auto Collect). */
  createVirtualAccount?(
    input: CreateVirtualAccountInput,
    signal?: AbortSignal,
  ): Promise<VirtualAccount>;
  fetchVirtualAccount?(virtual_account_id: string, signal?: AbortSignal): Promise<VirtualAccount>;
}

/** The secrets a provider reads from the environment (never the config file), by provider. */
export const TOPUP_ENV: Readonly<Record<TopupProviderName, readonly string[]>> = {
  razorpay: ['AIHUB_RAZORPAY_KEY_ID', 'AIHUB_RAZORPAY_KEY_SECRET', 'AIHUB_RAZORPAY_WEBHOOK_SECRET'],
  cashfree: ['AIHUB_CASHFREE_CLIENT_ID', 'AIHUB_CASHFREE_CLIENT_SECRET'],
};
