// Razorpay Smart Collect (virtual accounts) for the scripted Razorpay server, built from
// Razorpay's published API reference: a route handler the Razorpay script calls first
// (`handle` answers what it knows and returns true), and the signed webhooks a test posts.
//
// - `POST /v1/virtual_accounts` (basic auth key_id:key_secret) {receivers: {types:
//   ["bank_account", "vpa"]}, description, notes, customer_id?} → the virtual account:
//   {id: "va_...", entity: "virtual_account", status: "active", receivers: [{entity:
//   "bank_account", account_number, ifsc, bank_name, name}, {entity: "vpa", address,
//   username, handle}], amount_paid, notes, created_at}.
// - `GET /v1/virtual_accounts/:id`; `GET /v1/payments/:id` (a payment into one:
//   method "bank_transfer" or "upi", status "captured"); `GET /v1/payments/:id/bank_transfer`
//   and `/upi_transfer` (the payer's details), what a receiver fetches to verify a webhook.
// - The webhook `virtual_account.credited` {entity: "event", event, contains: ["payment",
//   "virtual_account", "bank_transfer" | "upi_transfer"], payload: {payment: {entity},
//   virtual_account: {entity}, bank_transfer: {entity: {payer_bank_account: {name,
//   account_number, ifsc}...}} | upi_transfer: {entity: {payer_vpa, payer_bank,
//   payer_account, payer_ifsc}}}}, signed in `X-Razorpay-Signature` = hex(HMAC-SHA256(raw body, webhook
//   secret)).
import { createHmac } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { json, startUpstream, type Seen } from './payments-upstream.js';

export interface RazorpayVirtualAccount {
  id: string;
  name: string;
  entity: 'virtual_account';
  status: 'active' | 'closed';
  description: string | null;
  amount_expected: null;
  notes: Record<string, string>;
  amount_paid: number;
  customer_id: string | null;
  receivers: Array<Record<string, unknown>>;
  close_by: number | null;
  closed_at: number | null;
  created_at: number;
}

export interface PayerBank {
  name: string;
  account_number: string;
  ifsc: string;
}

export interface SmartCollect {
  accounts: Map<string, RazorpayVirtualAccount>;
  payments: Map<string, Record<string, any>>;
  /** Answers a Smart Collect request; false when the path is not one of its own. */
  handle(request: Seen, res: ServerResponse): boolean;
  /** A NEFT/IMPS transfer (paise) into a virtual account: its signed `virtual_account.credited`. */
  bankTransfer(
    va_id: string,
    amount_paise: number,
    payer: PayerBank,
  ): { headers: Record<string, string>; raw: string; payment_id: string };
  /** A UPI payment (paise) to the virtual account's VPA: its signed webhook. */
  upiTransfer(
    va_id: string,
    amount_paise: number,
    payer: { vpa: string; account_number: string; ifsc: string },
  ): { headers: Record<string, string>; raw: string; payment_id: string };
}

const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function razorpayId(prefix: string, n: number): string {
  let id = '';
  let x = n * 7919 + 104_729;
  for (let i = 0; i < 14; i++) {
    id += letters[x % letters.length];
    x = Math.floor(x / letters.length) + (i + 1) * 31 + n;
  }
  return `${prefix}_${id}`;
}

export function razorpaySignature(secret: string, raw: string): string {
  return createHmac('sha256', secret).update(raw).digest('hex');
}

export function createSmartCollect(keys: {
  key_id: string;
  key_secret: string;
  webhook_secret: string;
}): SmartCollect {
  const accounts = new Map<string, RazorpayVirtualAccount>();
  const payments = new Map<string, Record<string, any>>();
  const transfers = new Map<
    string,
    { kind: 'bank_transfer' | 'upi_transfer'; entity: Record<string, any> }
  >();
  let serial = 0;
  const authorized = (request: Seen) =>
    request.headers.authorization ===
    `Basic ${Buffer.from(`${keys.key_id}:${keys.key_secret}`).toString('base64')}`;
  const notFound = (res: ServerResponse, what: string) =>
    json(res, 400, {
      error: {
        code: 'BAD_REQUEST_ERROR',
        description: `The id provided does not exist`,
        field: what,
      },
    });

  const create = (request: Seen, res: ServerResponse) => {
    const types = request.json?.receivers?.types;
    if (
      !Array.isArray(types) ||
      types.length === 0 ||
      types.some((t) => t !== 'bank_account' && t !== 'vpa')
    ) {
      json(res, 400, {
        error: {
          code: 'BAD_REQUEST_ERROR',
          description: 'The receivers field is invalid',
          field: 'receivers',
        },
      });
      return;
    }
    const n = ++serial;
    const id = razorpayId('va', n);
    const name = String(request.json?.name ?? 'Acme Corp');
    const receivers: Array<Record<string, unknown>> = [];
    if (types.includes('bank_account'))
      receivers.push({
        id: razorpayId('ba', n),
        entity: 'bank_account',
        ifsc: 'RATN0VAAPIS',
        bank_name: 'RBL Bank',
        name,
        notes: [],
        account_number: `222333${String(n).padStart(10, '0')}`,
      });
    if (types.includes('vpa')) {
      const username = `rpy.payto00000${String(n).padStart(6, '0')}`;
      receivers.push({
        id: razorpayId('vpa', n),
        entity: 'vpa',
        username,
        handle: 'icici',
        address: `${username}@icici`,
      });
    }
    const account: RazorpayVirtualAccount = {
      id,
      name,
      entity: 'virtual_account',
      status: 'active',
      description: request.json?.description ?? null,
      amount_expected: null,
      notes: request.json?.notes ?? {},
      amount_paid: 0,
      customer_id: request.json?.customer_id ?? null,
      receivers,
      close_by: null,
      closed_at: null,
      created_at: Math.floor(Date.now() / 1000),
    };
    accounts.set(id, account);
    json(res, 200, account);
  };

  const handle = (request: Seen, res: ServerResponse): boolean => {
    const path = new URL(request.url, 'http://razorpay').pathname;
    const parts = path.split('/').filter(Boolean);
    const mine =
      parts[1] === 'virtual_accounts' ||
      (parts[1] === 'payments' && parts.length >= 3 && payments.has(parts[2]!));
    if (parts[0] !== 'v1' || !mine) return false;
    if (!authorized(request)) {
      json(res, 401, {
        error: { code: 'BAD_REQUEST_ERROR', description: 'Authentication failed' },
      });
      return true;
    }
    if (request.method === 'POST' && parts.length === 2 && parts[1] === 'virtual_accounts') {
      create(request, res);
      return true;
    }
    if (request.method === 'GET' && parts[1] === 'virtual_accounts' && parts.length === 3) {
      const account = accounts.get(parts[2]!);
      if (account) json(res, 200, account);
      else notFound(res, 'id');
      return true;
    }
    if (request.method === 'GET' && parts[1] === 'payments') {
      const payment = payments.get(parts[2]!)!;
      if (parts.length === 3) {
        json(res, 200, payment);
        return true;
      }
      const transfer = transfers.get(parts[2]!);
      if (parts.length === 4 && transfer && transfer.kind === parts[3]) {
        json(res, 200, transfer.entity);
        return true;
      }
    }
    notFound(res, 'id');
    return true;
  };

  const credited = (
    va: RazorpayVirtualAccount,
    amount: number,
    method: 'bank_transfer' | 'upi',
    payer_vpa: string | null,
  ) => {
    const n = ++serial;
    const payment_id = razorpayId('pay', n);
    const payment = {
      id: payment_id,
      entity: 'payment',
      amount,
      currency: 'INR',
      status: 'captured',
      order_id: null,
      invoice_id: null,
      international: false,
      method,
      amount_refunded: 0,
      refund_status: null,
      captured: true,
      description: method === 'upi' ? 'QRv2 Payment' : 'NA',
      vpa: payer_vpa,
      email: null,
      contact: null,
      customer_id: va.customer_id,
      notes: [],
      fee: 0,
      tax: 0,
      error_code: null,
      error_description: null,
      created_at: Math.floor(Date.now() / 1000),
    };
    payments.set(payment_id, payment);
    va.amount_paid += amount;
    return { n, payment_id, payment };
  };

  const signed = (event: Record<string, unknown>, payment_id: string) => {
    const raw = JSON.stringify(event);
    return {
      raw,
      payment_id,
      headers: {
        'content-type': 'application/json',
        'x-razorpay-signature': razorpaySignature(keys.webhook_secret, raw),
        'x-razorpay-event-id': razorpayId('evt', 50_000 + serial),
      },
    };
  };

  /** The signed `virtual_account.credited` of a transfer, kept for its fetch. */
  const creditedEvent = (
    kind: 'bank_transfer' | 'upi_transfer',
    va: RazorpayVirtualAccount,
    payment: Record<string, any>,
    entity: Record<string, any>,
  ) => {
    transfers.set(payment.id, { kind, entity });
    return signed(
      {
        entity: 'event',
        account_id: 'acc_ScriptedAcct01',
        event: 'virtual_account.credited',
        contains: ['payment', 'virtual_account', kind],
        payload: {
          payment: { entity: payment },
          virtual_account: { entity: va },
          [kind]: { entity },
        },
        created_at: Math.floor(Date.now() / 1000),
      },
      payment.id,
    );
  };

  const requireVa = (va_id: string) => {
    const va = accounts.get(va_id);
    if (!va) throw new Error(`the scripted Razorpay has no virtual account ${va_id}`);
    return va;
  };

  return {
    accounts,
    payments,
    handle,
    bankTransfer(va_id, amount, payer) {
      const va = requireVa(va_id);
      const { n, payment_id, payment } = credited(va, amount, 'bank_transfer', null);
      const entity = {
        id: razorpayId('bt', n),
        entity: 'bank_transfer',
        payment_id,
        mode: 'NEFT',
        bank_reference: `${157_414_364_471 + n}`,
        amount,
        payer_bank_account: {
          id: razorpayId('ba', n + 1_000),
          entity: 'bank_account',
          ifsc: payer.ifsc,
          bank_name: 'Payer Bank',
          name: payer.name,
          notes: [],
          account_number: payer.account_number,
        },
        virtual_account_id: va.id,
        virtual_account: va,
      };
      return creditedEvent('bank_transfer', va, payment, entity);
    },
    upiTransfer(va_id, amount, payer) {
      const va = requireVa(va_id);
      const { n, payment_id, payment } = credited(va, amount, 'upi', payer.vpa);
      const entity = {
        id: razorpayId('ut', n),
        entity: 'upi_transfer',
        amount,
        payer_vpa: payer.vpa,
        payer_bank: 'Payer Bank',
        payer_account: payer.account_number,
        payer_ifsc: payer.ifsc,
        payment_id,
        npci_reference_id: `${100_000_000_000 + n}`,
        virtual_account_id: va.id,
      };
      return creditedEvent('upi_transfer', va, payment, entity);
    },
  };
}

/** Smart Collect alone on loopback (until it is mounted in the scripted Razorpay server). */
export async function startSmartCollect(keys: {
  key_id: string;
  key_secret: string;
  webhook_secret: string;
}) {
  const collect = createSmartCollect(keys);
  const upstream = await startUpstream((request, res) => {
    if (!collect.handle(request, res))
      json(res, 404, { error: { code: 'BAD_REQUEST_ERROR', description: 'not found' } });
  });
  return { ...collect, url: upstream.url, seen: upstream.seen, close: () => upstream.close() };
}
