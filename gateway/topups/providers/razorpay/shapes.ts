// What Razorpay speaks (its API reference: Orders, Payments, Refunds, Disputes, Smart Collect,
// and the webhook payloads), read with zod at the edge: only the fields the room uses, every
// other field let through unread. Amounts are in the currency's subunit (paise).
import { z } from 'zod';

const id = z.string().min(1).max(64);
const subunits = z
  .int()
  .min(0)
  .max(Number.MAX_SAFE_INTEGER / 10_000);
const currency = z.string().regex(/^[A-Z]{3}$/);

export const orderShape = z.object({
  id,
  amount: subunits,
  currency,
  status: z.enum(['created', 'attempted', 'paid']).catch('created'),
});

export const paymentShape = z.object({
  id,
  amount: subunits,
  currency,
  status: z.string().max(40),
  order_id: id.nullish(),
  method: z.string().max(40).nullish(),
  amount_refunded: subunits.nullish(),
  error_description: z.string().nullish(),
  virtual_account_id: id.nullish(),
  vpa: z.string().max(255).nullish(),
});
export type RazorpayPayment = z.output<typeof paymentShape>;

export const paymentsPage = z.object({ items: z.array(z.unknown()).max(100) });

export const errorShape = z.object({
  error: z.object({ code: z.string().max(100).optional(), description: z.string().optional() }),
});

const refundShape = z.object({ id, payment_id: id, amount: subunits, currency });
const disputeShape = z.object({ id, payment_id: id, amount: subunits, currency });
const virtualAccountShape = z.object({ id });
const bankTransferShape = z.object({
  payer_bank_account: z
    .object({
      name: z.string().max(200).nullish(),
      account_number: z.string().max(40).nullish(),
      ifsc: z.string().max(20).nullish(),
    })
    .nullish(),
});
const upiTransferShape = z.object({
  payer_vpa: z.string().max(255).nullish(),
  payer_account: z.string().max(40).nullish(),
  payer_ifsc: z.string().max(20).nullish(),
});

const entity = <S extends z.ZodType>(shape: S) => z.object({ entity: shape });

/** A webhook's envelope: `{entity: "event", event, contains, payload: {<entity>: {entity: {...}}}}`. */
export const webhookShape = z.object({
  event: z.string().min(1).max(100),
  payload: z
    .object({
      payment: entity(paymentShape).optional(),
      order: entity(orderShape).optional(),
      refund: entity(refundShape).optional(),
      dispute: entity(disputeShape).optional(),
      virtual_account: entity(virtualAccountShape).optional(),
      bank_transfer: entity(bankTransferShape).optional(),
      upi_transfer: entity(upiTransferShape).optional(),
    })
    .prefault({}),
});
export type RazorpayWebhook = z.output<typeof webhookShape>;
