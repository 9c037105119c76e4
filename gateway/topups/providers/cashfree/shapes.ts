// The shapes Cashfree Payments speaks (PG API version 2023-08-01: orders, payments, refunds,
// disputes, virtual bank accounts, webhooks), read with zod at the edge and turned into the
// room's words (types.ts) here, so nothing of Cashfree's leaks past this folder. Amounts are
// rupees as decimal numbers (up to 2 places) on Cashfree's side, micro-units on ours.
import { z } from 'zod';
import { unitsToMicros } from '../../../util/money.js';
import type {
  PayerDetails,
  ProviderOrder,
  ProviderPayment,
  ProviderPaymentStatus,
  TopupEvent,
  TopupMethod,
  VirtualAccount,
} from '../../types.js';

export const CASHFREE_API_VERSION = '2023-08-01';

/** A short bounded string: what Cashfree sends as an id, a name or a message. */
const text = (max = 200) => z.string().max(max);
const rupees = z.number().nonnegative().max(1e9);
const idText = z
  .union([z.string().min(1).max(64), z.number().int().nonnegative()])
  .transform(String);

export const cashfreeOrder = z.object({
  order_id: text(64),
  cf_order_id: idText.optional(),
  order_amount: rupees,
  order_currency: text(8),
  order_status: text(32),
  payment_session_id: text(1_000).nullish(),
});
export type CashfreeOrder = z.output<typeof cashfreeOrder>;

export const vbaTransfer = z.object({
  utr: text(64).nullish(),
  remitter_account: text(64).nullish(),
  remitter_name: text(200).nullish(),
  remitter_ifsc: text(16).nullish(),
  virtual_account_id: text(64).nullish(),
});

export const cashfreePayment = z.object({
  cf_payment_id: idText,
  order_id: text(64).optional(),
  payment_amount: rupees,
  payment_currency: text(8),
  payment_status: text(32),
  payment_message: text(500).nullish(),
  payment_group: text(64).nullish(),
  payment_method: z.object({ vba_transfer: vbaTransfer.optional() }).loose().nullish(),
});
export type CashfreePayment = z.output<typeof cashfreePayment>;

export const cashfreePayments = z.array(cashfreePayment).max(1_000);

/** GET /pg/orders/{order_id}/refunds: the order's refunds (what a refund webhook is checked against). */
export const cashfreeRefunds = z
  .array(
    z
      .object({
        cf_payment_id: idText.nullish(),
        refund_amount: rupees,
        refund_status: text(32),
      })
      .loose(),
  )
  .max(1_000);

/** What Cashfree has refunded of one payment (micro-units): its refunds that succeeded. */
export function refundedMicros(
  refunds: z.output<typeof cashfreeRefunds>,
  cf_payment_id: string,
): number {
  return refunds
    .filter((r) => r.refund_status === 'SUCCESS' && r.cf_payment_id === cf_payment_id)
    .reduce((sum, r) => sum + micros(r.refund_amount), 0);
}

export const cashfreeVbaList = z.object({
  virtual_bank_accounts: z
    .array(
      z.object({
        vba_account_number: idText,
        vba_ifsc: text(16),
        vba_bank_code: text(16).nullish(),
        vba_status: text(16),
        virtual_account_details: z.object({ virtual_account_id: text(64) }),
      }),
    )
    .min(1)
    .max(10),
});

export const cashfreeError = z.object({ message: text(500), code: text(100).optional() }).loose();

/** The webhook body: `type` and `data`, whose shape depends on the type. */
export const cashfreeWebhook = z.object({
  type: text(64),
  event_time: text(64).optional(),
  data: z.object({}).loose(),
});

const paymentWebhookData = z.object({
  order: z.object({ order_id: text(64) }).loose(),
  payment: cashfreePayment.omit({ order_id: true }),
});

const refundWebhookData = z.object({
  refund: z
    .object({
      cf_refund_id: idText,
      refund_id: text(64).nullish(),
      cf_payment_id: idText,
      order_id: text(64),
      refund_amount: rupees,
      refund_currency: text(8),
      refund_status: text(32),
    })
    .loose(),
});

const disputeWebhookData = z.object({
  dispute: z.object({ dispute_id: idText, dispute_amount: rupees }).loose(),
  order_details: z
    .object({ order_id: text(64), cf_payment_id: idText, order_currency: text(8) })
    .loose(),
});

/**
 * Cashfree has no "payment by id" without its order (GET /pg/orders/{order}/payments/{id}),
 * so the room's payment id of a Cashfree payment carries both: `<cf_payment_id>@<order_id>`.
 * Cashfree's ids are digits and its order ids letters, digits, `_` and `-`, never `@`.
 */
export function paymentKey(cf_payment_id: string, order_id: string): string {
  return `${cf_payment_id}@${order_id}`;
}

export function splitPaymentKey(
  payment_id: string,
): { cf_payment_id: string; order_id: string } | null {
  const at = payment_id.indexOf('@');
  if (at <= 0 || at === payment_id.length - 1) return null;
  return { cf_payment_id: payment_id.slice(0, at), order_id: payment_id.slice(at + 1) };
}

const micros = (amount: number) => unitsToMicros(amount, 2);

function paymentStatus(status: string): ProviderPaymentStatus {
  switch (status) {
    case 'SUCCESS':
      return 'captured';
    case 'FAILED':
    case 'USER_DROPPED':
    case 'CANCELLED':
    case 'VOID':
      return 'failed';
    default:
      return 'created';
  }
}

function paymentMethod(group: string | null | undefined): TopupMethod | null {
  switch (group) {
    case 'upi':
      return 'upi';
    case 'credit_card':
    case 'debit_card':
    case 'prepaid_card':
    case 'card':
    case 'credit_card_emi':
    case 'debit_card_emi':
      return 'card';
    case 'net_banking':
      return 'netbanking';
    case 'wallet':
      return 'wallet';
    case 'vba_transfer':
    case 'bank_transfer':
      return 'bank_transfer';
    default:
      return null;
  }
}

function payerOf(payment: Pick<CashfreePayment, 'payment_method'>): PayerDetails | undefined {
  const transfer = payment.payment_method?.vba_transfer;
  if (!transfer) return undefined;
  return {
    name: transfer.remitter_name ?? null,
    account_number: transfer.remitter_account ?? null,
    ifsc: transfer.remitter_ifsc ?? null,
    vpa: null,
  };
}

export function toProviderPayment(payment: CashfreePayment, order_id: string): ProviderPayment {
  return {
    payment_id: paymentKey(payment.cf_payment_id, order_id),
    order_id,
    amount_micros: micros(payment.payment_amount),
    currency: payment.payment_currency,
    status: paymentStatus(payment.payment_status),
    method: paymentMethod(payment.payment_group),
    refunded_micros: 0,
    error:
      paymentStatus(payment.payment_status) === 'failed'
        ? (payment.payment_message ?? payment.payment_status).slice(0, 200)
        : null,
    virtual_account_id: payment.payment_method?.vba_transfer?.virtual_account_id ?? undefined,
    payer: payerOf(payment),
  };
}

export function toProviderOrder(order: CashfreeOrder, payments: CashfreePayment[]): ProviderOrder {
  const status: ProviderOrder['status'] =
    order.order_status === 'PAID'
      ? 'paid'
      : order.order_status === 'EXPIRED' || order.order_status === 'TERMINATED'
        ? 'expired'
        : payments.length > 0
          ? 'attempted'
          : 'created';
  return {
    order_id: order.order_id,
    amount_micros: micros(order.order_amount),
    currency: order.order_currency,
    status,
    payments: payments.map((p) => toProviderPayment(p, order.order_id)),
  };
}

export function toVirtualAccount(list: z.output<typeof cashfreeVbaList>): VirtualAccount {
  const vba = list.virtual_bank_accounts[0]!;
  return {
    virtual_account_id: vba.virtual_account_details.virtual_account_id,
    account_number: vba.vba_account_number,
    ifsc: vba.vba_ifsc,
    bank_name: vba.vba_bank_code ?? null,
    // Cashfree's PG virtual bank accounts take bank transfers (IMPS, NEFT, RTGS) only.
    upi_id: null,
    status: vba.vba_status === 'ACTIVE' ? 'active' : 'closed',
  };
}

/** A verified webhook body in the room's words; throws a zod error for a shape not Cashfree's. */
export function toEvents(body: z.output<typeof cashfreeWebhook>): TopupEvent[] {
  switch (body.type) {
    case 'PAYMENT_SUCCESS_WEBHOOK':
      return [successEvent(paymentWebhookData.parse(body.data))];
    case 'PAYMENT_FAILED_WEBHOOK':
    case 'PAYMENT_USER_DROPPED_WEBHOOK': {
      const { order, payment } = paymentWebhookData.parse(body.data);
      return [
        {
          type: 'payment.failed',
          event_id: null,
          order_id: order.order_id,
          payment_id: paymentKey(payment.cf_payment_id, order.order_id),
          reason: (payment.payment_message ?? payment.payment_status).slice(0, 200),
        },
      ];
    }
    case 'REFUND_STATUS_WEBHOOK': {
      const { refund } = refundWebhookData.parse(body.data);
      if (refund.refund_status !== 'SUCCESS')
        return [{ type: 'ignored', event_id: null, name: `${body.type}:${refund.refund_status}` }];
      return [
        {
          type: 'refund.processed',
          event_id: null,
          payment_id: paymentKey(refund.cf_payment_id, refund.order_id),
          refund_id: refund.cf_refund_id,
          amount_micros: micros(refund.refund_amount),
          currency: refund.refund_currency,
        },
      ];
    }
    case 'DISPUTE_CREATED': {
      const { dispute, order_details } = disputeWebhookData.parse(body.data);
      return [
        {
          type: 'dispute.created',
          event_id: null,
          payment_id: paymentKey(order_details.cf_payment_id, order_details.order_id),
          dispute_id: dispute.dispute_id,
          amount_micros: micros(dispute.dispute_amount),
          currency: order_details.order_currency,
        },
      ];
    }
    case 'DISPUTE_CLOSED': {
      // Closed in the merchant's favour (DISPUTE_MERCHANT_WON, CHARGEBACK_MERCHANT_WON, and the
      // pre-arbitration and arbitration stages' own): what the dispute took comes back.
      const { dispute, order_details } = disputeWebhookData.parse(body.data);
      const status = typeof dispute.dispute_status === 'string' ? dispute.dispute_status : '';
      if (!/MERCHANT_WON$/.test(status))
        return [{ type: 'ignored', event_id: null, name: `${body.type} ${status.slice(0, 40)}` }];
      return [
        {
          type: 'dispute.won',
          event_id: null,
          payment_id: paymentKey(order_details.cf_payment_id, order_details.order_id),
          dispute_id: dispute.dispute_id,
          currency: order_details.order_currency,
        },
      ];
    }
    default:
      return [{ type: 'ignored', event_id: null, name: body.type }];
  }
}

/** A payment's success: a top-up's order paid, or a bank transfer into a virtual account. */
function successEvent({ order, payment }: z.output<typeof paymentWebhookData>): TopupEvent {
  const transfer = payment.payment_method?.vba_transfer;
  const payment_id = paymentKey(payment.cf_payment_id, order.order_id);
  if (transfer?.virtual_account_id)
    return {
      type: 'virtual_account.credited',
      event_id: null,
      virtual_account_id: transfer.virtual_account_id,
      payment_id,
      amount_micros: micros(payment.payment_amount),
      currency: payment.payment_currency,
      payer: payerOf(payment)!,
    };
  return {
    type: 'payment.captured',
    event_id: null,
    order_id: order.order_id,
    payment_id,
    amount_micros: micros(payment.payment_amount),
    currency: payment.payment_currency,
  };
}
