// Cashfree Payments as a top-up provider: PG orders (the checkout is Cashfree's JS SDK with the
// order's payment_session_id), the order and its payments fetched before any credit, PG virtual
// bank accounts for bank transfers, and webhooks signed with the client secret. The keys come
// from the environment only: AIHUB_CASHFREE_CLIENT_ID, AIHUB_CASHFREE_CLIENT_SECRET.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { z } from 'zod';
import { requireEnv, type ProviderFactory } from '../deps.js';
import {
  ProviderCallError,
  WebhookRejected,
  type CreateOrderInput,
  type CreateVirtualAccountInput,
  type CreatedOrder,
  type ProviderOrder,
  type ProviderPayment,
  type TopupEvent,
  type TopupProvider,
  type VirtualAccount,
} from '../../types.js';
import { microsToUnits } from '../../../util/money.js';
import { cashfreeCaller, type CashfreeCall } from './api.js';
import {
  cashfreeOrder,
  cashfreePayment,
  cashfreePayments,
  cashfreeRefunds,
  refundedMicros,
  cashfreeVbaList,
  cashfreeWebhook,
  splitPaymentKey,
  toEvents,
  toProviderOrder,
  toProviderPayment,
  toVirtualAccount,
} from './shapes.js';

/** A webhook whose timestamp is further than this from our clock is refused (a replay). */
export const WEBHOOK_TOLERANCE_MS = 5 * 60_000;

/** Cashfree's signature: base64(HMAC-SHA256(x-webhook-timestamp + raw body, client secret)). */
export function cashfreeWebhookSignature(secret: string, timestamp: string, raw: Buffer): string {
  return createHmac('sha256', secret).update(timestamp).update(raw).digest('base64');
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? undefined : value;
}

export const cashfreeProvider: ProviderFactory = (deps) =>
  new CashfreeProvider(
    deps.config.cashfree.base_url,
    deps.config.cashfree.checkout_script_url,
    requireEnv(deps.env, 'AIHUB_CASHFREE_CLIENT_ID'),
    requireEnv(deps.env, 'AIHUB_CASHFREE_CLIENT_SECRET'),
    deps.config.timeout_ms,
  );

const orderPath = (order_id: string) => `/pg/orders/${encodeURIComponent(order_id)}`;

class CashfreeProvider implements TopupProvider {
  readonly name = 'cashfree' as const;
  private readonly call: CashfreeCall;

  constructor(
    private readonly base_url: string,
    /** Cashfree's browser SDK (v3), which the pay page loads to open the checkout. */
    private readonly checkout_script_url: string,
    client_id: string,
    private readonly client_secret: string,
    timeout_ms: number,
  ) {
    this.call = cashfreeCaller({ base_url, client_id, client_secret, timeout_ms });
  }

  async createOrder(input: CreateOrderInput, signal?: AbortSignal): Promise<CreatedOrder> {
    const order = (await this.call('POST', '/pg/orders', cashfreeOrder, orderBody(input), signal))!;
    if (!order.payment_session_id)
      throw new ProviderCallError(
        'cashfree POST /pg/orders: no payment_session_id in the answer',
        200,
      );
    return {
      order_id: order.order_id,
      checkout: {
        provider: 'cashfree',
        script_url: this.checkout_script_url,
        options: {
          paymentSessionId: order.payment_session_id,
          mode: /sandbox/.test(this.base_url) ? 'sandbox' : 'production',
          returnUrl: input.return_url,
        },
        redirect_url: null,
      },
    };
  }

  async fetchOrder(order_id: string, signal?: AbortSignal): Promise<ProviderOrder> {
    const order = (await this.call('GET', orderPath(order_id), cashfreeOrder, undefined, signal))!;
    const payments = (await this.call(
      'GET',
      `${orderPath(order_id)}/payments`,
      cashfreePayments,
      undefined,
      signal,
    ))!;
    return toProviderOrder(order, payments);
  }

  async fetchPayment(payment_id: string, signal?: AbortSignal): Promise<ProviderPayment | null> {
    const key = splitPaymentKey(payment_id);
    if (!key) return null;
    const payment = await this.call(
      'GET',
      `${orderPath(key.order_id)}/payments/${encodeURIComponent(key.cf_payment_id)}`,
      cashfreePayment,
      undefined,
      signal,
      true,
    );
    if (!payment) return null;
    // Cashfree's payment carries no refunded amount: its order's refunds say it.
    const refunds = await this.call(
      'GET',
      `${orderPath(key.order_id)}/refunds`,
      cashfreeRefunds,
      undefined,
      signal,
    );
    return {
      ...toProviderPayment(payment, key.order_id),
      refunded_micros: refundedMicros(refunds ?? [], key.cf_payment_id),
    };
  }

  readWebhook(headers: IncomingHttpHeaders, raw_body: Buffer): TopupEvent[] {
    return readCashfreeWebhook(this.client_secret, headers, raw_body);
  }

  async createVirtualAccount(
    input: CreateVirtualAccountInput,
    signal?: AbortSignal,
  ): Promise<VirtualAccount> {
    const virtual_account_id = vbaId(input.account_id);
    const body = {
      virtual_account_details: {
        virtual_account_id,
        virtual_account_name: input.name.slice(0, 100),
        virtual_account_email: input.email,
        ...(input.phone ? { virtual_account_phone: input.phone } : {}),
      },
    };
    try {
      return toVirtualAccount((await this.call('POST', '/pg/vba', cashfreeVbaList, body, signal))!);
    } catch (error) {
      // Made before (a crash after Cashfree made it, before we stored it): fetch it.
      if (error instanceof ProviderCallError && error.status === 409)
        return this.fetchVirtualAccount(virtual_account_id, signal);
      throw error;
    }
  }

  async fetchVirtualAccount(
    virtual_account_id: string,
    signal?: AbortSignal,
  ): Promise<VirtualAccount> {
    const path = `/pg/vba/${encodeURIComponent(virtual_account_id)}`;
    return toVirtualAccount((await this.call('GET', path, cashfreeVbaList, undefined, signal))!);
  }
}

/** Cashfree's Create Order request for a top-up: our top-up id is the order id. */
function orderBody(input: CreateOrderInput) {
  return {
    order_id: input.topup_id,
    order_amount: microsToUnits(input.amount_micros),
    order_currency: input.currency,
    customer_details: {
      customer_id: input.account_id,
      customer_name: input.customer.name,
      customer_email: input.customer.email,
      // Cashfree requires a phone; an account without one lets the payer give it at checkout.
      customer_phone: input.customer.phone ?? '9999999999',
    },
    order_meta: { return_url: input.return_url, notify_url: input.notify_url },
    order_note: `wallet top-up ${input.topup_id}`,
    order_tags: { topup_id: input.topup_id, account_id: input.account_id },
  };
}

/**
 * The virtual account id Cashfree keeps for an account: derived from our account id, so that
 * asking twice (two gateways, a retry after a crash) names the same one and Cashfree's 409
 * tells us it exists. Letters and digits only, at most 20: the last 20 of the account id's
 * (its random part).
 */
export function vbaId(account_id: string): string {
  return account_id.replace(/[^A-Za-z0-9]/g, '').slice(-20);
}

/** Verifies a webhook (signature over timestamp + raw body, timing-safe; fresh) and reads it. */
export function readCashfreeWebhook(
  client_secret: string,
  headers: IncomingHttpHeaders,
  raw_body: Buffer,
): TopupEvent[] {
  const timestamp = header(headers, 'x-webhook-timestamp');
  const signature = header(headers, 'x-webhook-signature');
  if (!timestamp || !signature || !/^\d{10,16}$/.test(timestamp))
    throw new WebhookRejected(
      'bad_signature',
      'x-webhook-timestamp and x-webhook-signature are required',
    );
  const expected = Buffer.from(cashfreeWebhookSignature(client_secret, timestamp, raw_body));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given))
    throw new WebhookRejected('bad_signature', 'the signature does not match the body');
  // Cashfree's timestamp is in milliseconds (seconds accepted too): a signed body replayed
  // later is refused once its time is past the tolerance.
  const sent_ms = timestamp.length <= 11 ? Number(timestamp) * 1000 : Number(timestamp);
  if (Math.abs(Date.now() - sent_ms) > WEBHOOK_TOLERANCE_MS)
    throw new WebhookRejected(
      'bad_signature',
      'x-webhook-timestamp is stale (more than 5 minutes away)',
    );
  let body: z.output<typeof cashfreeWebhook>;
  let events: TopupEvent[];
  try {
    body = cashfreeWebhook.parse(JSON.parse(raw_body.toString('utf8')));
    events = toEvents(body);
  } catch {
    throw new WebhookRejected('malformed', 'the body is not a Cashfree webhook');
  }
  const event_id = header(headers, 'x-idempotency-key')?.slice(0, 100) ?? null;
  return events.map((event) => ({ ...event, event_id }));
}
