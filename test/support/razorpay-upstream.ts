// A scripted Razorpay on loopback, built from Razorpay's published API reference (Orders,
// Payments, Refunds, Disputes, webhooks): the calls the gateway makes (POST /v1/orders,
// GET /v1/orders/:id, GET /v1/orders/:id/payments, GET /v1/payments/:id) behind basic auth
// key_id:key_secret, answered in Razorpay's shapes and error shape; and what Razorpay's side
// does, as methods a test calls: a customer paying an order (captured, or failed), a refund,
// a dispute, each with its webhook payload signed as Razorpay signs it (X-Razorpay-Signature:
// hex HMAC-SHA256 of the raw body with the webhook secret). A browser test pays through
// /v1/checkout.js and /checkout (a stand-in for Standard Checkout's page): with `webhook_url`
// set, paying there delivers payment.captured and order.paid by itself.
import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createSmartCollect, type SmartCollect } from './razorpay-smart-collect.js';

export interface RazorpayOptions {
  key_id?: string;
  key_secret?: string;
  webhook_secret?: string;
  /** Where the /checkout page delivers its webhooks (the gateway's /webhooks/razorpay). */
  webhook_url?: string;
}

export interface SignedWebhook {
  body: string;
  headers: Record<string, string>;
}

type Entity = Record<string, any>;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function rzpId(prefix: string): string {
  const bytes = randomBytes(14);
  return `${prefix}_${[...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join('')}`;
}

export class ScriptedRazorpay {
  readonly key_id: string;
  readonly key_secret: string;
  readonly webhook_secret: string;
  webhook_url: string | undefined;
  url = '';
  readonly orders = new Map<string, Entity>();
  readonly payments = new Map<string, Entity>();
  /** Every API call, for asserting what the gateway asked (method, path, whether its auth was right). */
  readonly calls: Array<{ method: string; path: string; authorized: boolean }> = [];
  /** Answer every API call with this status (a provider that is down), when set. */
  failing: number | null = null;
  private readonly server = createServer((req, res) => void this.handle(req, res));
  /** Smart Collect (virtual accounts, razorpay-smart-collect.ts): its calls and its transfers. */
  readonly smart_collect: SmartCollect;

  constructor(options: RazorpayOptions = {}) {
    this.key_id = options.key_id ?? 'rzp_test_0123456789abcd';
    this.key_secret = options.key_secret ?? 'scripted-key-secret';
    this.webhook_secret = options.webhook_secret ?? 'scripted-webhook-secret';
    this.webhook_url = options.webhook_url;
    this.smart_collect = createSmartCollect(this);
  }

  static async start(options: RazorpayOptions = {}): Promise<ScriptedRazorpay> {
    const razorpay = new ScriptedRazorpay(options);
    razorpay.server.listen(0, '127.0.0.1');
    await once(razorpay.server, 'listening');
    const address = razorpay.server.address() as { port: number };
    razorpay.url = `http://127.0.0.1:${address.port}`;
    return razorpay;
  }

  /** The gateway's environment for this server's keys. */
  env(): Record<string, string> {
    return {
      AIHUB_RAZORPAY_KEY_ID: this.key_id,
      AIHUB_RAZORPAY_KEY_SECRET: this.key_secret,
      AIHUB_RAZORPAY_WEBHOOK_SECRET: this.webhook_secret,
    };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  // ---- what the customer and Razorpay do --------------------------------------------------

  /** The customer pays `order_id` (in full unless `amount` says otherwise): a captured payment, the order paid. */
  pay(
    order_id: string,
    options: { amount?: number; method?: string; currency?: string } = {},
  ): Entity {
    const order = this.orders.get(order_id);
    if (!order) throw new Error(`no order ${order_id}`);
    const payment = this.newPayment(order, 'captured', options);
    order.amount_paid = payment.amount;
    order.amount_due = Math.max(0, order.amount - payment.amount);
    order.status = 'paid';
    order.attempts += 1;
    return payment;
  }

  /** A failed attempt on `order_id` (the order stays payable). */
  fail(order_id: string): Entity {
    const order = this.orders.get(order_id);
    if (!order) throw new Error(`no order ${order_id}`);
    order.status = 'attempted';
    order.attempts += 1;
    return this.newPayment(order, 'failed', {
      error_description: 'Payment processing failed because of incorrect OTP',
    });
  }

  /** A processed refund of `amount` (paise) of a payment. */
  refund(payment_id: string, amount: number): Entity {
    const payment = this.payments.get(payment_id);
    if (!payment) throw new Error(`no payment ${payment_id}`);
    payment.amount_refunded += amount;
    payment.refund_status = payment.amount_refunded >= payment.amount ? 'full' : 'partial';
    if (payment.amount_refunded >= payment.amount) payment.status = 'refunded';
    return {
      id: rzpId('rfnd'),
      entity: 'refund',
      amount,
      currency: payment.currency,
      payment_id,
      notes: {},
      receipt: null,
      acquirer_data: { arn: null },
      created_at: now(),
      batch_id: null,
      status: 'processed',
      speed_processed: 'normal',
      speed_requested: 'normal',
    };
  }

  /** An open chargeback of `amount` (paise) of a payment. */
  dispute(payment_id: string, amount: number): Entity {
    const payment = this.payments.get(payment_id);
    if (!payment) throw new Error(`no payment ${payment_id}`);
    return {
      id: rzpId('disp'),
      entity: 'dispute',
      payment_id,
      amount,
      currency: payment.currency,
      amount_deducted: 0,
      reason_code: 'chargeback',
      respond_by: now() + 7 * 86_400,
      status: 'open',
      phase: 'chargeback',
      created_at: now(),
    };
  }

  // ---- webhooks -----------------------------------------------------------------------------

  /** A webhook as Razorpay sends it: the event envelope, signed with the webhook secret. */
  webhook(
    event: string,
    payload: Record<string, Entity>,
    secret = this.webhook_secret,
  ): SignedWebhook {
    const contains = Object.keys(payload);
    const body = JSON.stringify({
      entity: 'event',
      account_id: 'acc_ScriptedAccount1',
      event,
      contains,
      payload: Object.fromEntries(contains.map((name) => [name, { entity: payload[name] }])),
      created_at: now(),
    });
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-razorpay-signature': createHmac('sha256', secret).update(body).digest('hex'),
        'x-razorpay-event-id': rzpId('evt'),
      },
    };
  }

  captured(payment: Entity): SignedWebhook {
    return this.webhook('payment.captured', { payment });
  }

  orderPaid(payment: Entity): SignedWebhook {
    return this.webhook('order.paid', { payment, order: this.orders.get(payment.order_id)! });
  }

  refunded(refund: Entity): SignedWebhook {
    return this.webhook('refund.processed', {
      refund,
      payment: this.payments.get(refund.payment_id)!,
    });
  }

  /** The operator won `dispute`: Razorpay's payment.dispute.won (the deducted amount comes back). */
  disputeWon(dispute: Entity): SignedWebhook {
    return this.webhook('payment.dispute.won', {
      payment: this.payments.get(dispute.payment_id)!,
      dispute: { ...dispute, status: 'won', amount_deducted: 0 },
    });
  }

  disputed(dispute: Entity): SignedWebhook {
    return this.webhook('payment.dispute.created', {
      payment: this.payments.get(dispute.payment_id)!,
      dispute,
    });
  }

  /** POSTs a webhook to `url`; the gateway's status and body. */
  async deliver(url: string, webhook: SignedWebhook): Promise<{ status: number; body: unknown }> {
    const response = await fetch(url, {
      method: 'POST',
      headers: webhook.headers,
      body: webhook.body,
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: response.status, body };
  }

  // ---- the API ------------------------------------------------------------------------------

  private newPayment(order: Entity, status: string, options: Record<string, unknown>): Entity {
    const payment: Entity = {
      id: rzpId('pay'),
      entity: 'payment',
      amount: (options.amount as number | undefined) ?? order.amount,
      currency: (options.currency as string | undefined) ?? order.currency,
      status,
      order_id: order.id,
      invoice_id: null,
      international: false,
      method: (options.method as string | undefined) ?? 'upi',
      amount_refunded: 0,
      refund_status: null,
      captured: status === 'captured',
      description: order.notes?.topup_id ? `Wallet top-up ${order.notes.topup_id}` : null,
      bank: null,
      wallet: null,
      vpa: 'customer@okbank',
      email: 'customer@example.com',
      contact: '+919876543210',
      notes: [],
      fee: status === 'captured' ? Math.round(order.amount * 0.02) : null,
      tax: status === 'captured' ? Math.round(order.amount * 0.0036) : null,
      error_code: status === 'failed' ? 'BAD_REQUEST_ERROR' : null,
      error_description: (options.error_description as string | undefined) ?? null,
      error_source: null,
      error_step: null,
      error_reason: null,
      acquirer_data: { rrn: String(Math.floor(Math.random() * 1e12)) },
      created_at: now(),
    };
    this.payments.set(payment.id, payment);
    return payment;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    if (req.method === 'GET' && path === '/v1/checkout.js') return this.checkoutScript(res);
    if (path === '/checkout') return this.checkoutPage(req.method ?? 'GET', url, raw, res);
    const expected = `Basic ${Buffer.from(`${this.key_id}:${this.key_secret}`).toString('base64')}`;
    const authorized = req.headers.authorization === expected;
    this.calls.push({ method: req.method ?? '', path, authorized });
    if (!authorized) return error(res, 401, 'BAD_REQUEST_ERROR', 'Authentication failed');
    if (this.failing !== null)
      return error(
        res,
        this.failing,
        'SERVER_ERROR',
        'We are facing some trouble completing your request at the moment. Please try again shortly.',
      );
    const seen = { method: req.method ?? '', url: req.url ?? '/', headers: req.headers, raw };
    if (this.smart_collect.handle({ ...seen, json: parseOrNull(raw) }, res)) return;
    let match: RegExpExecArray | null;
    if (req.method === 'POST' && path === '/v1/orders') return this.createOrder(raw, res);
    if (req.method === 'GET' && (match = /^\/v1\/orders\/([^/]+)$/.exec(path))) {
      const order = this.orders.get(decodeURIComponent(match[1]!));
      return order ? send(res, 200, order) : notExist(res);
    }
    if (req.method === 'GET' && (match = /^\/v1\/orders\/([^/]+)\/payments$/.exec(path))) {
      const order_id = decodeURIComponent(match[1]!);
      if (!this.orders.has(order_id)) return notExist(res);
      const items = [...this.payments.values()].filter((p) => p.order_id === order_id).reverse();
      return send(res, 200, { entity: 'collection', count: items.length, items });
    }
    if (req.method === 'GET' && (match = /^\/v1\/payments\/([^/]+)$/.exec(path))) {
      const payment = this.payments.get(decodeURIComponent(match[1]!));
      return payment ? send(res, 200, payment) : notExist(res);
    }
    return error(res, 404, 'BAD_REQUEST_ERROR', 'The requested URL was not found on the server.');
  }

  private createOrder(raw: string, res: ServerResponse): void {
    let body: Entity;
    try {
      body = JSON.parse(raw) as Entity;
    } catch {
      return error(res, 400, 'BAD_REQUEST_ERROR', 'The request body is not valid JSON');
    }
    if (!Number.isInteger(body.amount) || body.amount < 100)
      return error(res, 400, 'BAD_REQUEST_ERROR', 'The amount must be atleast INR 1.00', 'amount');
    if (typeof body.currency !== 'string' || !/^[A-Z]{3}$/.test(body.currency))
      return error(res, 400, 'BAD_REQUEST_ERROR', 'The currency field is invalid', 'currency');
    if (
      body.receipt !== undefined &&
      (typeof body.receipt !== 'string' || body.receipt.length > 40)
    )
      return error(
        res,
        400,
        'BAD_REQUEST_ERROR',
        'The receipt may not be greater than 40 characters.',
        'receipt',
      );
    const order: Entity = {
      id: rzpId('order'),
      entity: 'order',
      amount: body.amount,
      amount_paid: 0,
      amount_due: body.amount,
      currency: body.currency,
      receipt: body.receipt ?? null,
      offer_id: null,
      status: 'created',
      attempts: 0,
      notes: body.notes ?? [],
      created_at: now(),
    };
    this.orders.set(order.id, order);
    send(res, 200, order);
  }

  /** Standard Checkout's script, reduced: `new Razorpay(options).open()` goes to /checkout. */
  private checkoutScript(res: ServerResponse): void {
    res.writeHead(200, { 'content-type': 'application/javascript' });
    res.end(`window.Razorpay = function (options) {
  this.open = function () {
    var q = new URLSearchParams({ order_id: options.order_id, callback_url: options.callback_url || '' });
    window.location.href = ${JSON.stringify(this.url)} + '/checkout?' + q.toString();
  };
};`);
  }

  /** The payment page: GET shows the order and a Pay button; POST pays it, delivers the webhooks and returns to callback_url. */
  private async checkoutPage(
    method: string,
    url: URL,
    raw: string,
    res: ServerResponse,
  ): Promise<void> {
    const form = method === 'POST' ? new URLSearchParams(raw) : url.searchParams;
    const order = this.orders.get(form.get('order_id') ?? '');
    if (!order) return error(res, 400, 'BAD_REQUEST_ERROR', 'The id provided does not exist');
    const callback = form.get('callback_url') ?? '';
    if (method !== 'POST') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>Scripted Razorpay checkout</title>
<h1>Pay ₹${(order.amount / 100).toFixed(2)}</h1>
<form method="post" action="/checkout">
<input type="hidden" name="order_id" value="${order.id}">
<input type="hidden" name="callback_url" value="${escapeHtml(callback)}">
<button type="submit">Pay</button></form>`);
      return;
    }
    const payment = this.pay(order.id);
    if (this.webhook_url) {
      await this.deliver(this.webhook_url, this.captured(payment));
      await this.deliver(this.webhook_url, this.orderPaid(payment));
    }
    const signature = createHmac('sha256', this.key_secret)
      .update(`${order.id}|${payment.id}`)
      .digest('hex');
    // Razorpay's redirect mode POSTs these to callback_url; a GET with them in the query here.
    const back = new URL(callback || 'about:blank');
    back.searchParams.set('razorpay_payment_id', payment.id);
    back.searchParams.set('razorpay_order_id', order.id);
    back.searchParams.set('razorpay_signature', signature);
    res.writeHead(303, { location: back.toString() });
    res.end();
  }
}

function now(): number {
  return Math.floor(Date.now() / 1000);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Razorpay's error shape. */
function error(
  res: ServerResponse,
  status: number,
  code: string,
  description: string,
  field?: string,
): void {
  send(res, status, {
    error: {
      code,
      description,
      source: 'business',
      step: 'payment_initiation',
      reason: 'input_validation_failed',
      metadata: {},
      ...(field ? { field } : {}),
    },
  });
}

function notExist(res: ServerResponse): void {
  error(res, 400, 'BAD_REQUEST_ERROR', 'The id provided does not exist');
}

function parseOrNull(raw: string): unknown {
  try {
    return raw ? JSON.parse(raw) : null;
  } catch {
    return null;
  }
}
