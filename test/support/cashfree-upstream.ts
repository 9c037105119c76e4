// A scripted Cashfree Payments server on loopback, built from Cashfree's published API
// reference (PG API version 2023-08-01 and later): a third party the tests cannot reach.
//
// - `POST /pg/orders` (headers x-client-id, x-client-secret, x-api-version) makes an order:
//   {cf_order_id, order_id, order_amount, order_currency, order_status: "ACTIVE",
//   payment_session_id, order_expiry_time, ...}; an order id seen before is 409
//   `order_already_exists`; wrong keys are 401 `authentication_error`.
// - `GET /pg/orders/{order_id}` answers the order ("PAID" once a payment succeeded);
//   `GET /pg/orders/{order_id}/payments` its payments (cf_payment_id, payment_status...).
// - `POST /pg/orders/{order_id}/refunds` {refund_id, refund_amount} makes a refund;
//   `GET /pg/orders/{order_id}/refunds` lists the order's refunds.
// - PG virtual bank accounts: `POST /pg/vba` {virtual_account_details: {virtual_account_id,
//   virtual_account_name, ...}} → {virtual_bank_accounts: [{vba_account_number, vba_ifsc,
//   vba_status, virtual_account_details...}]}; `GET /pg/vba/{virtual_account_id}`;
//   `GET /pg/vba/payments/{utr}` a transfer into one.
// - Webhooks are signed as Cashfree signs them: `x-webhook-timestamp` (milliseconds) and
//   `x-webhook-signature` = base64(HMAC-SHA256(timestamp + raw body, client secret)), with
//   `x-webhook-version`; types PAYMENT_SUCCESS_WEBHOOK, PAYMENT_FAILED_WEBHOOK,
//   REFUND_STATUS_WEBHOOK, DISPUTE_CREATED. A transfer into a virtual account is a
//   PAYMENT_SUCCESS_WEBHOOK whose payment_method is `vba_transfer` (utr, remitter_account,
//   remitter_name, remitter_ifsc), as Cashfree's VBA documentation says for new integrations.
//
// The test decides what happens: `pay` marks an order paid (the customer paid on Cashfree's
// page) and returns the webhook, which the test posts (once, twice, or never); `transfer`
// makes a bank transfer into a virtual account. Every request is recorded in `seen`.
import { createHmac } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { json, startUpstream, type Seen, type Upstream } from './payments-upstream.js';

export interface CashfreeOrder {
  cf_order_id: string;
  order_id: string;
  entity: 'order';
  order_amount: number;
  order_currency: string;
  order_status: 'ACTIVE' | 'PAID' | 'EXPIRED' | 'TERMINATED';
  payment_session_id: string;
  order_expiry_time: string;
  created_at: string;
  customer_details: Record<string, unknown>;
  order_meta: Record<string, unknown>;
  order_note: string | null;
  order_tags: Record<string, string> | null;
}

export interface CashfreePayment {
  cf_payment_id: string;
  order_id: string;
  entity: 'payment';
  payment_amount: number;
  payment_currency: string;
  payment_status: 'SUCCESS' | 'FAILED' | 'PENDING' | 'USER_DROPPED';
  payment_message: string;
  payment_time: string;
  payment_completion_time: string;
  bank_reference: string;
  payment_group: string;
  payment_method: Record<string, unknown>;
}

export interface CashfreeVba {
  vba_bank_code: string;
  vba_account_number: string;
  vba_ifsc: string;
  vba_status: 'ACTIVE' | 'INACTIVE';
  vba_created_on: string;
  vba_last_updated_on: string;
  virtual_account_details: {
    virtual_account_id: string;
    virtual_account_name: string;
    virtual_account_email?: string;
    virtual_account_phone?: string;
  };
}

export interface VbaTransferPayment extends CashfreePayment {
  payment_method: {
    vba_transfer: {
      utr: string;
      credit_ref_no: string;
      remitter_account: string;
      remitter_name: string;
      remitter_ifsc: string;
      virtual_account_id: string;
      virtual_account_number: string;
    };
  };
}

export interface SignedWebhook {
  headers: Record<string, string>;
  raw: string;
}

export interface Cashfree {
  url: string;
  seen: Seen[];
  orders: Map<string, CashfreeOrder>;
  payments: Map<string, CashfreePayment[]>;
  vbas: Map<string, CashfreeVba>;
  /** Answers the next requests matching `match` with this status and body instead. */
  fail(match: (request: Seen) => boolean, status: number, body: unknown, times?: number): void;
  /**
   * The customer pays the order (all of it, or `amount` when the test wants a payment that
   * differs): the order becomes PAID and the signed PAYMENT_SUCCESS_WEBHOOK is returned.
   */
  pay(order_id: string, options?: { amount?: number; currency?: string }): SignedWebhook;
  /** A failed attempt: the order stays ACTIVE; returns the PAYMENT_FAILED_WEBHOOK. */
  payFailed(order_id: string): SignedWebhook;
  /** A refund of a paid order: the REFUND_STATUS_WEBHOOK (refund_status SUCCESS). */
  refund(order_id: string, amount: number): SignedWebhook;
  /**
   * A chargeback on an order's payment: DISPUTE_CREATED by default; with `closed`, the
   * DISPUTE_CLOSED of that dispute id with its final `dispute_status` (e.g. CHARGEBACK_MERCHANT_WON).
   */
  dispute(
    order_id: string,
    amount: number,
    closed?: { dispute_id: string; dispute_status: string },
  ): SignedWebhook;
  /** A bank transfer into a virtual account: the PAYMENT_SUCCESS_WEBHOOK of a vba_transfer. */
  transfer(
    virtual_account_id: string,
    transfer: {
      amount: number;
      remitter_name: string;
      remitter_account: string;
      remitter_ifsc: string;
    },
  ): { webhook: SignedWebhook; payment: VbaTransferPayment };
  /** Signs any body as Cashfree would (timestamp in milliseconds, `now` by default). */
  sign(body: unknown, timestamp_ms?: number): SignedWebhook;
  /**
   * The browser checkout, reduced: `/js/v3/cashfree.js` (`Cashfree({mode}).checkout({paymentSessionId,
   * returnUrl})` goes to `/checkout`), whose Pay button pays the order, delivers the signed
   * PAYMENT_SUCCESS_WEBHOOK to `webhook_url` and returns the browser to `returnUrl`.
   */
  checkout: { webhook_url: string | null };
  close(): Promise<void>;
}

export const CASHFREE_API_VERSION = '2023-08-01';

/** Cashfree's webhook signature: base64(HMAC-SHA256(timestamp + raw body, client secret)). */
export function cashfreeSignature(secret: string, timestamp: string, raw: string): string {
  return createHmac('sha256', secret)
    .update(timestamp + raw)
    .digest('base64');
}

function error(res: ServerResponse, status: number, code: string, message: string, type: string) {
  json(res, status, { message, code, type });
}

const istTime = (date: Date) =>
  new Date(date.getTime() + 5.5 * 3_600_000).toISOString().slice(0, 19) + '+05:30';

export async function startCashfree(keys: {
  client_id: string;
  client_secret: string;
}): Promise<Cashfree> {
  const orders = new Map<string, CashfreeOrder>();
  const payments = new Map<string, CashfreePayment[]>();
  const vbas = new Map<string, CashfreeVba>();
  const vbaPayments = new Map<string, VbaTransferPayment>();
  const refunds = new Map<string, Array<Record<string, unknown>>>();
  const failures: Array<{
    match: (r: Seen) => boolean;
    status: number;
    body: unknown;
    left: number;
  }> = [];
  let serial = 0;
  const next = () => String(++serial).padStart(6, '0');

  const checkout: { webhook_url: string | null } = { webhook_url: null };
  const browserPages = async (request: Seen, res: ServerResponse): Promise<boolean> => {
    const url = new URL(request.url, 'http://cashfree');
    if (request.method === 'GET' && url.pathname === '/js/v3/cashfree.js') {
      res.writeHead(200, { 'content-type': 'application/javascript' });
      res.end(`window.Cashfree = function (init) {
  return { checkout: function (options) {
    var q = new URLSearchParams({ session: options.paymentSessionId, mode: init.mode, return_url: options.returnUrl || '' });
    window.location.href = ${JSON.stringify(upstream.url)} + '/checkout?' + q.toString();
    return Promise.resolve({});
  } };
};`);
      return true;
    }
    if (url.pathname !== '/checkout') return false;
    const form = request.method === 'POST' ? new URLSearchParams(request.raw) : url.searchParams;
    const order = [...orders.values()].find((o) => o.payment_session_id === form.get('session'));
    if (!order) {
      error(
        res,
        400,
        'payment_session_id_invalid',
        'payment_session_id is not valid',
        'invalid_request_error',
      );
      return true;
    }
    const back = form.get('return_url') ?? '';
    if (request.method !== 'POST') {
      const attr = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>Scripted Cashfree checkout</title>
<h1>Pay ₹${order.order_amount.toFixed(2)}</h1>
<form method="post" action="/checkout">
<input type="hidden" name="session" value="${attr(order.payment_session_id)}">
<input type="hidden" name="return_url" value="${attr(back)}">
<button type="submit">Pay</button></form>`);
      return true;
    }
    const webhook = api.pay(order.order_id);
    if (checkout.webhook_url)
      await fetch(checkout.webhook_url, {
        method: 'POST',
        headers: webhook.headers,
        body: webhook.raw,
      });
    res.writeHead(303, { location: back || 'about:blank' });
    res.end();
    return true;
  };

  const route = async (request: Seen, res: ServerResponse): Promise<void> => {
    if (await browserPages(request, res)) return;
    const failure = failures.find((f) => f.left > 0 && f.match(request));
    if (failure) {
      failure.left -= 1;
      json(res, failure.status, failure.body);
      return;
    }
    const headers = request.headers;
    if (
      headers['x-client-id'] !== keys.client_id ||
      headers['x-client-secret'] !== keys.client_secret
    ) {
      error(res, 401, 'request_failed', 'authentication Failed', 'authentication_error');
      return;
    }
    if (typeof headers['x-api-version'] !== 'string') {
      error(
        res,
        400,
        'x-api-version_missing',
        'x-api-version is missing in the request',
        'invalid_request_error',
      );
      return;
    }
    const path = new URL(request.url, 'http://cashfree').pathname;
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== 'pg')
      return error(
        res,
        404,
        'request_failed',
        'bad URL, please check API documentation',
        'invalid_request_error',
      );
    if (request.method === 'POST' && path === '/pg/orders') return createOrder(request, res);
    if (parts[1] === 'orders' && parts.length >= 3) {
      const order = orders.get(parts[2]!);
      if (!order)
        return error(res, 404, 'order_not_found', 'order not found', 'invalid_request_error');
      if (request.method === 'GET' && parts.length === 3) return json(res, 200, order);
      if (request.method === 'GET' && parts[3] === 'payments' && parts.length === 4)
        return json(res, 200, payments.get(order.order_id) ?? []);
      if (request.method === 'GET' && parts[3] === 'payments' && parts.length === 5) {
        const payment = (payments.get(order.order_id) ?? []).find(
          (p) => p.cf_payment_id === parts[4],
        );
        return payment
          ? json(res, 200, payment)
          : error(res, 404, 'payment_not_found', 'payment not found', 'invalid_request_error');
      }
      if (request.method === 'GET' && parts[3] === 'refunds' && parts.length === 4)
        return json(res, 200, refunds.get(order.order_id) ?? []);
      if (request.method === 'POST' && parts[3] === 'refunds' && parts.length === 4) {
        const body = request.json ?? {};
        return json(
          res,
          200,
          refundEntity(
            order,
            String(body.refund_id ?? `refund_${next()}`),
            Number(body.refund_amount),
          ),
        );
      }
    }
    if (request.method === 'POST' && path === '/pg/vba') return createVba(request, res);
    if (
      request.method === 'GET' &&
      parts[1] === 'vba' &&
      parts[2] === 'payments' &&
      parts.length === 4
    ) {
      const payment = vbaPayments.get(parts[3]!);
      return payment
        ? json(res, 200, payment)
        : error(res, 404, 'payment_not_found', 'no payment with this utr', 'invalid_request_error');
    }
    if (request.method === 'GET' && parts[1] === 'vba' && parts.length === 3) {
      const vba = vbas.get(parts[2]!);
      return vba
        ? json(res, 200, { virtual_bank_accounts: [vba] })
        : error(res, 404, 'vba_not_found', 'virtual account not found', 'invalid_request_error');
    }
    error(
      res,
      404,
      'request_failed',
      'bad URL, please check API documentation',
      'invalid_request_error',
    );
  };

  function createOrder(request: Seen, res: ServerResponse): void {
    const body = request.json;
    const amount = body?.order_amount;
    if (typeof amount !== 'number' || !(amount >= 1)) {
      return error(
        res,
        400,
        'order_amount_invalid',
        'order_amount : must be at least 1',
        'invalid_request_error',
      );
    }
    if (
      typeof body.customer_details?.customer_id !== 'string' ||
      typeof body.customer_details?.customer_phone !== 'string'
    ) {
      return error(
        res,
        400,
        'customer_details_missing',
        'customer_details.customer_phone : is missing in the request',
        'invalid_request_error',
      );
    }
    const order_id = typeof body.order_id === 'string' ? body.order_id : `order_${next()}`;
    if (orders.has(order_id)) {
      return error(
        res,
        409,
        'order_already_exists',
        'order with same id is already present',
        'invalid_request_error',
      );
    }
    const now = new Date();
    const order: CashfreeOrder = {
      cf_order_id: String(2_149_460_000 + ++serial),
      order_id,
      entity: 'order',
      order_amount: amount,
      order_currency: String(body.order_currency ?? 'INR'),
      order_status: 'ACTIVE',
      payment_session_id: `session_${order_id}_${serial}`,
      order_expiry_time: istTime(new Date(now.getTime() + 30 * 86_400_000)),
      created_at: istTime(now),
      customer_details: body.customer_details,
      order_meta: body.order_meta ?? {},
      order_note: body.order_note ?? null,
      order_tags: body.order_tags ?? null,
    };
    orders.set(order_id, order);
    json(res, 200, order);
  }

  function createVba(request: Seen, res: ServerResponse): void {
    const details = request.json?.virtual_account_details;
    const id = details?.virtual_account_id;
    if (
      typeof id !== 'string' ||
      !/^[A-Za-z0-9]{3,20}$/.test(id) ||
      typeof details.virtual_account_name !== 'string'
    ) {
      return error(
        res,
        400,
        'virtual_account_details_invalid',
        'virtual_account_details : invalid',
        'invalid_request_error',
      );
    }
    if (vbas.has(id)) {
      return error(
        res,
        409,
        'vba_already_exists',
        'Virtual account Id already exists.',
        'invalid_request_error',
      );
    }
    const now = new Date().toISOString();
    const vba: CashfreeVba = {
      vba_bank_code: 'UTIB',
      vba_account_number: `94351020${next()}`,
      vba_ifsc: 'UTIB0CCH274',
      vba_status: 'ACTIVE',
      vba_created_on: now,
      vba_last_updated_on: now,
      virtual_account_details: details,
    };
    vbas.set(id, vba);
    json(res, 200, { virtual_bank_accounts: [vba] });
  }

  /** A refund of the order's successful payment, kept for `GET /pg/orders/{order_id}/refunds`. */
  function refundEntity(order: CashfreeOrder, refund_id: string, amount: number) {
    const refund = {
      cf_payment_id:
        (payments.get(order.order_id) ?? []).find((p) => p.payment_status === 'SUCCESS')
          ?.cf_payment_id ?? null,
      cf_refund_id: `${next()}`,
      refund_id,
      order_id: order.order_id,
      entity: 'refund',
      refund_amount: amount,
      refund_currency: order.order_currency,
      refund_note: null,
      refund_status: 'SUCCESS',
      refund_arn: `ARN${serial}`,
      refund_charge: 0,
      status_description: 'Refund processed successfully',
      refund_type: 'MERCHANT_INITIATED',
      created_at: istTime(new Date()),
      processed_at: istTime(new Date()),
    };
    refunds.set(order.order_id, [...(refunds.get(order.order_id) ?? []), refund]);
    return refund;
  }

  const upstream: Upstream = await startUpstream((request, res) => route(request, res));

  const sign = (body: unknown, timestamp_ms = Date.now()): SignedWebhook => {
    const raw = JSON.stringify(body);
    const timestamp = String(timestamp_ms);
    return {
      raw,
      headers: {
        'content-type': 'application/json',
        'x-webhook-timestamp': timestamp,
        'x-webhook-signature': cashfreeSignature(keys.client_secret, timestamp, raw),
        'x-webhook-version': CASHFREE_API_VERSION,
        'x-webhook-attempt': '1',
      },
    };
  };

  const paymentWebhook = (type: string, order: CashfreeOrder, payment: CashfreePayment) =>
    sign({
      data: {
        order: {
          order_id: order.order_id,
          order_amount: order.order_amount,
          order_currency: order.order_currency,
          order_tags: order.order_tags,
        },
        payment: {
          cf_payment_id: payment.cf_payment_id,
          payment_status: payment.payment_status,
          payment_amount: payment.payment_amount,
          payment_currency: payment.payment_currency,
          payment_message: payment.payment_message,
          payment_time: payment.payment_time,
          bank_reference: payment.bank_reference,
          auth_id: null,
          payment_method: payment.payment_method,
          payment_group: payment.payment_group,
        },
        customer_details: order.customer_details,
        payment_gateway_details: { gateway_name: 'CASHFREE', gateway_order_id: order.cf_order_id },
      },
      event_time: istTime(new Date()),
      type,
    });

  const requireOrder = (order_id: string): CashfreeOrder => {
    const order = orders.get(order_id);
    if (!order) throw new Error(`the scripted Cashfree has no order ${order_id}`);
    return order;
  };

  const addPayment = (
    order: CashfreeOrder,
    status: CashfreePayment['payment_status'],
    amount: number,
    currency: string,
  ) => {
    const now = istTime(new Date());
    const payment: CashfreePayment = {
      cf_payment_id: String(5_114_925_000_000 + ++serial),
      order_id: order.order_id,
      entity: 'payment',
      payment_amount: amount,
      payment_currency: currency,
      payment_status: status,
      payment_message: status === 'SUCCESS' ? '00::Transaction success' : 'Insufficient funds',
      payment_time: now,
      payment_completion_time: now,
      bank_reference: String(234_928_698_000 + serial),
      payment_group: 'upi',
      payment_method: { upi: { channel: 'collect', upi_id: 'payer@ybl' } },
    };
    const list = payments.get(order.order_id) ?? [];
    list.push(payment);
    payments.set(order.order_id, list);
    return payment;
  };

  const api: Cashfree = {
    checkout,
    get url() {
      return upstream.url;
    },
    seen: upstream.seen,
    orders,
    payments,
    vbas,
    fail(match, status, body, times = 1) {
      failures.push({ match, status, body, left: times });
    },
    pay(order_id, options = {}) {
      const order = requireOrder(order_id);
      const payment = addPayment(
        order,
        'SUCCESS',
        options.amount ?? order.order_amount,
        options.currency ?? order.order_currency,
      );
      order.order_status = 'PAID';
      return paymentWebhook('PAYMENT_SUCCESS_WEBHOOK', order, payment);
    },
    payFailed(order_id) {
      const order = requireOrder(order_id);
      const payment = addPayment(order, 'FAILED', order.order_amount, order.order_currency);
      return paymentWebhook('PAYMENT_FAILED_WEBHOOK', order, payment);
    },
    refund(order_id, amount) {
      const order = requireOrder(order_id);
      return sign({
        data: { refund: refundEntity(order, `refund_${next()}`, amount) },
        event_time: istTime(new Date()),
        type: 'REFUND_STATUS_WEBHOOK',
      });
    },
    dispute(order_id, amount, closed) {
      const order = requireOrder(order_id);
      const paid = (payments.get(order_id) ?? []).find((p) => p.payment_status === 'SUCCESS');
      return sign({
        data: {
          dispute: {
            dispute_id: closed?.dispute_id ?? `dispute_${next()}`,
            dispute_type: 'CHARGEBACK',
            reason_code: '4855',
            reason_description: 'Goods or services not provided',
            dispute_amount: amount,
            created_at: istTime(new Date()),
            respond_by: istTime(new Date(Date.now() + 7 * 86_400_000)),
            dispute_status: closed?.dispute_status ?? 'DISPUTE_CREATED',
          },
          order_details: {
            order_id,
            order_currency: order.order_currency,
            order_amount: order.order_amount,
            cf_payment_id: paid?.cf_payment_id ?? null,
            payment_amount: paid?.payment_amount ?? null,
          },
        },
        event_time: istTime(new Date()),
        type: closed ? 'DISPUTE_CLOSED' : 'DISPUTE_CREATED',
      });
    },
    transfer(virtual_account_id, transfer) {
      const vba = vbas.get(virtual_account_id);
      if (!vba)
        throw new Error(`the scripted Cashfree has no virtual account ${virtual_account_id}`);
      const now = istTime(new Date());
      const utr = `CFUTR${next()}`;
      const order_id = `vba_${virtual_account_id}_${serial}`;
      const payment: VbaTransferPayment = {
        cf_payment_id: String(5_114_925_000_000 + ++serial),
        order_id,
        entity: 'payment',
        payment_amount: transfer.amount,
        payment_currency: 'INR',
        payment_status: 'SUCCESS',
        payment_message: 'NA',
        payment_time: now,
        payment_completion_time: now,
        bank_reference: utr,
        payment_group: 'vba_transfer',
        payment_method: {
          vba_transfer: {
            utr,
            credit_ref_no: 'NA',
            remitter_account: transfer.remitter_account,
            remitter_name: transfer.remitter_name,
            remitter_ifsc: transfer.remitter_ifsc,
            virtual_account_id,
            virtual_account_number: vba.vba_account_number,
          },
        },
      };
      vbaPayments.set(utr, payment);
      const order: CashfreeOrder = {
        cf_order_id: String(2_149_460_000 + serial),
        order_id,
        entity: 'order',
        order_amount: transfer.amount,
        order_currency: 'INR',
        order_status: 'PAID',
        payment_session_id: '',
        order_expiry_time: now,
        created_at: now,
        customer_details: { customer_id: virtual_account_id },
        order_meta: {},
        order_note: null,
        order_tags: null,
      };
      // Cashfree's PG keeps a transfer as a payment of an order it makes for it, so the order
      // and its payments answer for it too.
      orders.set(order_id, order);
      payments.set(order_id, [payment]);
      return { webhook: paymentWebhook('PAYMENT_SUCCESS_WEBHOOK', order, payment), payment };
    },
    sign,
    close: () => upstream.close(),
  };
  return api;
}
