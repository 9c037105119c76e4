// Razorpay: Orders API for a top-up (POST /v1/orders), the fetches a credit is checked against
// (GET /v1/orders/:id, /v1/orders/:id/payments, /v1/payments/:id), Standard Checkout for the
// browser, and the webhooks signed in X-Razorpay-Signature (hex HMAC-SHA256 of the raw body
// with the webhook secret). Basic auth key_id:key_secret, from the environment only.
//
// Not the official `razorpay` npm SDK: its constructor fixes the host to
// https://api.razorpay.com (no base URL for a scripted server or a proxy), it brings axios,
// and its calls take no AbortSignal; the five calls below are plain fetches.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { z } from 'zod';
import {
  ProviderCallError,
  WebhookRejected,
  type Checkout,
  type CreateOrderInput,
  type CreateVirtualAccountInput,
  type CreatedOrder,
  type PayerDetails,
  type ProviderOrder,
  type ProviderPayment,
  type ProviderPaymentStatus,
  type TopupEvent,
  type TopupMethod,
  type TopupProvider,
} from '../../types.js';
import { requireEnv, type ProviderDeps } from '../deps.js';
import {
  errorShape,
  orderShape,
  paymentShape,
  paymentsPage,
  webhookShape,
  type RazorpayPayment,
  type RazorpayWebhook,
} from './shapes.js';
import { razorpayVirtualAccounts } from './virtual-accounts.js';

/** Razorpay counts in the currency's subunit (paise): 1 paisa is 10,000 micro-units. */
const MICROS_PER_SUBUNIT = 10_000;
const toMicros = (subunits: number) => subunits * MICROS_PER_SUBUNIT;
function toSubunits(micros: number): number {
  if (micros % MICROS_PER_SUBUNIT !== 0)
    throw new Error(`invariant: ${micros} micro-units is not a whole number of paise`);
  return micros / MICROS_PER_SUBUNIT;
}

const METHODS: Readonly<Record<string, TopupMethod>> = {
  upi: 'upi',
  card: 'card',
  netbanking: 'netbanking',
  wallet: 'wallet',
  bank_transfer: 'bank_transfer',
};

const STATUSES: ReadonlySet<string> = new Set([
  'created',
  'authorized',
  'captured',
  'failed',
  'refunded',
]);

export function createRazorpay(deps: ProviderDeps): TopupProvider {
  return new Razorpay(deps);
}

class Razorpay implements TopupProvider {
  readonly name = 'razorpay' as const;
  private readonly key_id: string;
  private readonly webhook_secret: string;
  private readonly authorization: string;

  constructor(private readonly deps: ProviderDeps) {
    this.key_id = requireEnv(deps.env, 'AIHUB_RAZORPAY_KEY_ID');
    const key_secret = requireEnv(deps.env, 'AIHUB_RAZORPAY_KEY_SECRET');
    this.webhook_secret = requireEnv(deps.env, 'AIHUB_RAZORPAY_WEBHOOK_SECRET');
    this.authorization = `Basic ${Buffer.from(`${this.key_id}:${key_secret}`).toString('base64')}`;
  }

  /** One API call: its answer read with `shape`, null for an id Razorpay does not know; ProviderCallError otherwise. */
  private async call<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    shape: S,
    options: { body?: unknown; signal?: AbortSignal | undefined } = {},
  ): Promise<z.output<S> | null> {
    const deadline = AbortSignal.timeout(this.deps.config.timeout_ms);
    let response: Response;
    try {
      response = await fetch(`${this.deps.config.razorpay.base_url}${path}`, {
        method,
        headers: {
          authorization: this.authorization,
          accept: 'application/json',
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
        signal: options.signal ? AbortSignal.any([options.signal, deadline]) : deadline,
      });
    } catch (error) {
      throw new ProviderCallError(`razorpay ${method} ${path}: ${(error as Error).message}`, null);
    }
    const text = await response.text().catch(() => '');
    const json = parseJson(text);
    if (!response.ok) {
      const described = errorShape.safeParse(json);
      const reason = described.success
        ? `${described.data.error.code ?? ''} ${described.data.error.description ?? ''}`.trim()
        : text.slice(0, 200);
      // Razorpay answers an unknown id with 400 BAD_REQUEST_ERROR ("does not exist"), or 404.
      if (response.status === 404 || (response.status === 400 && /does not exist/i.test(reason)))
        return null;
      throw new ProviderCallError(
        `razorpay ${method} ${path}: ${response.status} ${reason.slice(0, 200)}`,
        response.status,
      );
    }
    const parsed = shape.safeParse(json);
    if (!parsed.success)
      throw new ProviderCallError(
        `razorpay ${method} ${path}: an answer not in Razorpay's shape`,
        response.status,
      );
    return parsed.data;
  }

  /** Smart Collect (virtual-accounts.ts), through this provider's one call. */
  private readonly smart_collect = razorpayVirtualAccounts(
    <S extends z.ZodType>(
      method: 'GET' | 'POST',
      path: string,
      shape: S,
      body?: unknown,
      signal?: AbortSignal,
    ) => this.call(method, path, shape, { body, signal }),
  );

  createVirtualAccount(input: CreateVirtualAccountInput, signal?: AbortSignal) {
    return this.smart_collect.createVirtualAccount(input, signal);
  }

  fetchVirtualAccount(virtual_account_id: string, signal?: AbortSignal) {
    return this.smart_collect.fetchVirtualAccount(virtual_account_id, signal);
  }

  async createOrder(input: CreateOrderInput, signal?: AbortSignal): Promise<CreatedOrder> {
    const amount = toSubunits(input.amount_micros);
    const order = await this.call('POST', '/v1/orders', orderShape, {
      body: {
        amount,
        currency: input.currency,
        receipt: input.topup_id.slice(0, 40),
        notes: { topup_id: input.topup_id, account_id: input.account_id },
      },
      signal,
    });
    if (!order) throw new ProviderCallError('razorpay refused the order (404)', 404);
    if (order.amount !== amount || order.currency !== input.currency)
      throw new ProviderCallError(
        `razorpay made order ${order.id} for ${order.amount} ${order.currency}, not ${amount} ${input.currency}`,
        null,
      );
    return { order_id: order.id, checkout: this.checkout(input, order.id, amount) };
  }

  /** Standard Checkout's options: public values only (the key id, never its secret). */
  private checkout(input: CreateOrderInput, order_id: string, amount: number): Checkout {
    const settings = this.deps.config.razorpay;
    return {
      provider: 'razorpay',
      script_url: settings.checkout_script_url,
      options: {
        key: this.key_id,
        order_id,
        amount,
        currency: input.currency,
        name: settings.display_name,
        description: `Wallet top-up ${input.topup_id}`,
        prefill: {
          name: input.customer.name,
          email: input.customer.email,
          ...(input.customer.phone ? { contact: input.customer.phone } : {}),
        },
        notes: { topup_id: input.topup_id },
        callback_url: input.return_url,
        redirect: true,
      },
      redirect_url: null,
    };
  }

  async fetchOrder(order_id: string, signal?: AbortSignal): Promise<ProviderOrder> {
    const path = `/v1/orders/${encodeURIComponent(order_id)}`;
    const [order, page] = await Promise.all([
      this.call('GET', path, orderShape, { signal }),
      this.call('GET', `${path}/payments`, paymentsPage, { signal }),
    ]);
    if (!order) throw new ProviderCallError(`razorpay knows no order ${order_id}`, 404);
    const payments: ProviderPayment[] = [];
    for (const item of page?.items ?? []) {
      const payment = paymentShape.safeParse(item);
      if (payment.success) payments.push(paymentOf(payment.data));
    }
    return {
      order_id: order.id,
      amount_micros: toMicros(order.amount),
      currency: order.currency,
      status: order.status,
      payments,
    };
  }

  async fetchPayment(payment_id: string, signal?: AbortSignal): Promise<ProviderPayment | null> {
    const path = `/v1/payments/${encodeURIComponent(payment_id)}`;
    const payment = await this.call('GET', path, paymentShape, { signal });
    return payment ? paymentOf(payment) : null;
  }

  readWebhook(headers: IncomingHttpHeaders, raw_body: Buffer): TopupEvent[] {
    const signature = headers['x-razorpay-signature'];
    if (
      typeof signature !== 'string' ||
      !signatureMatches(raw_body, signature, this.webhook_secret)
    )
      throw new WebhookRejected('bad_signature', 'X-Razorpay-Signature does not match the body');
    const parsed = webhookShape.safeParse(parseJson(raw_body.toString('utf8')));
    if (!parsed.success)
      throw new WebhookRejected('malformed', 'the body is not a Razorpay webhook event');
    const event_id = headers['x-razorpay-event-id'];
    return [eventOf(parsed.data, typeof event_id === 'string' ? event_id.slice(0, 64) : null)];
  }
}

/** Hex HMAC-SHA256 of the raw body, compared in constant time (a wrong length is a plain no). */
export function signatureMatches(raw_body: Buffer, signature: string, secret: string): boolean {
  const expected = createHmac('sha256', secret).update(raw_body).digest();
  const given = /^[0-9a-f]{64}$/i.test(signature) ? Buffer.from(signature, 'hex') : null;
  return given !== null && timingSafeEqual(expected, given);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function paymentOf(payment: RazorpayPayment): ProviderPayment {
  return {
    payment_id: payment.id,
    order_id: payment.order_id ?? null,
    amount_micros: toMicros(payment.amount),
    currency: payment.currency,
    status: STATUSES.has(payment.status) ? (payment.status as ProviderPaymentStatus) : 'created',
    method: (payment.method && METHODS[payment.method]) || null,
    refunded_micros: toMicros(payment.amount_refunded ?? 0),
    error: payment.error_description ? payment.error_description.slice(0, 200) : null,
    ...(payment.virtual_account_id ? { virtual_account_id: payment.virtual_account_id } : {}),
  };
}

function payerOf(payload: RazorpayWebhook['payload']): PayerDetails {
  const bank = payload.bank_transfer?.entity.payer_bank_account;
  const upi = payload.upi_transfer?.entity;
  return {
    name: bank?.name ?? null,
    account_number: bank?.account_number ?? upi?.payer_account ?? null,
    ifsc: bank?.ifsc ?? upi?.payer_ifsc ?? null,
    vpa: upi?.payer_vpa ?? payload.payment?.entity.vpa ?? null,
  };
}

/** One verified webhook in the room's words; an event the room does not act on is `ignored`. */
/** A dispute opened (it debits the wallet) or won (what it took comes back). */
function disputeEvent(webhook: RazorpayWebhook, event_id: string | null): TopupEvent | null {
  const dispute = webhook.payload.dispute?.entity;
  if (!dispute) return null;
  const common = { event_id, payment_id: dispute.payment_id, dispute_id: dispute.id };
  return webhook.event === 'payment.dispute.won'
    ? { type: 'dispute.won', ...common, currency: dispute.currency }
    : {
        type: 'dispute.created',
        ...common,
        amount_micros: toMicros(dispute.amount),
        currency: dispute.currency,
      };
}

function eventOf(webhook: RazorpayWebhook, event_id: string | null): TopupEvent {
  const { payload } = webhook;
  const payment = payload.payment?.entity;
  const ignored: TopupEvent = { type: 'ignored', event_id, name: webhook.event };
  switch (webhook.event) {
    case 'payment.captured':
    case 'order.paid': {
      const order_id = payment?.order_id ?? payload.order?.entity.id;
      if (!payment || !order_id) return ignored; // a virtual account's payment: virtual_account.credited
      return {
        type: 'payment.captured',
        event_id,
        order_id,
        payment_id: payment.id,
        amount_micros: toMicros(payment.amount),
        currency: payment.currency,
      };
    }
    case 'payment.failed':
      if (!payment?.order_id) return ignored;
      return {
        type: 'payment.failed',
        event_id,
        order_id: payment.order_id,
        payment_id: payment.id,
        reason: (payment.error_description ?? 'the payment failed').slice(0, 200),
      };
    case 'refund.processed': {
      const refund = payload.refund?.entity;
      if (!refund) return ignored;
      return {
        type: 'refund.processed',
        event_id,
        payment_id: refund.payment_id,
        refund_id: refund.id,
        amount_micros: toMicros(refund.amount),
        currency: refund.currency,
      };
    }
    case 'payment.dispute.created':
    case 'payment.dispute.won':
      return disputeEvent(webhook, event_id) ?? ignored;
    case 'virtual_account.credited': {
      const account = payload.virtual_account?.entity;
      if (!payment || !account) return ignored;
      return {
        type: 'virtual_account.credited',
        event_id,
        virtual_account_id: account.id,
        payment_id: payment.id,
        amount_micros: toMicros(payment.amount),
        currency: payment.currency,
        payer: payerOf(payload),
      };
    }
    default:
      return ignored;
  }
}
