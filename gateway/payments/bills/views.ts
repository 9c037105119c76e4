// How bill payment is presented: a biller, a fetched bill, the receipt's address and the
// answer of a payment (the engine's renderer, stored as the idempotent reply). No rules here.
import { microsToUnits } from '../../util/money.js';
import { BILL_CATEGORIES, BILL_CATEGORY_NAMES, type Biller } from './config.js';
import { txnAnswer, type Answer } from '../engine/engine.js';
import { settledText } from '../engine/transactions.js';
import type { FetchedBill, PaymentTxn } from '../engine/tables.js';
import { taxView } from '../engine/tax.js';

export function billerView(biller: Biller) {
  return {
    biller_id: biller.biller_id,
    name: biller.name,
    category: biller.category,
    category_name: BILL_CATEGORY_NAMES[biller.category],
    coverage: biller.coverage,
    consumer_label: biller.consumer_label,
    consumer_pattern: biller.consumer_pattern,
    params: biller.params.map((param) => ({
      name: param.name,
      label: param.label,
      regex: param.regex,
      optional: param.optional,
    })),
    mode: biller.mode,
    fetch_required: biller.fetch_required,
    amount_rule: biller.amount_rule,
    partial_pay: biller.partial_pay,
    min_amount: microsToUnits(biller.min_amount),
    max_amount: microsToUnits(biller.max_amount),
    fee: microsToUnits(biller.fee),
    commission_pct: biller.commission_pct / 100,
    exact_amount: biller.exact_amount,
  };
}

/** The categories with their names and how many billers of each the catalogue has. */
export function categoriesView(billers: readonly Biller[]) {
  return BILL_CATEGORIES.map((category) => ({
    category,
    name: BILL_CATEGORY_NAMES[category],
    billers: billers.filter((b) => b.category === category).length,
  }));
}

export function billView(bill: FetchedBill, biller: Biller | undefined) {
  const validation = bill.kind === 'validation';
  return {
    bill_id: bill.id,
    ...(validation ? { validation_id: bill.id } : {}),
    kind: bill.kind ?? 'bill',
    biller_id: bill.biller_id,
    biller: biller?.name ?? bill.biller_id,
    consumer_number: bill.consumer_number,
    params: bill.params ?? { consumer_number: bill.consumer_number },
    customer_name: bill.customer_name,
    amount: validation ? null : microsToUnits(bill.amount_micros),
    ...(biller && !validation
      ? { amount_rule: biller.amount_rule, partial_pay: biller.partial_pay }
      : {}),
    due_date: bill.due_date,
    bill_date: bill.bill_date,
    bill_number: bill.bill_number,
    bill_period: bill.bill_period,
    fetched_at: bill.fetched_at,
    expires_at: bill.expires_at,
  };
}

/** The receipt's address, with a token so that it opens in a browser without the API key. */
export function receiptUrl(base: string, txn: PaymentTxn): string {
  return `${base}/api/bills/receipt/${txn.id}?token=${String(txn.details.receipt_token)}`;
}

/** `base_url` is asked per answer: the port is known only once the server listens. */
export function renderBillFactory(base_url: () => string) {
  return (txn: PaymentTxn, balance_micros: number): Answer => {
    const amount = microsToUnits(txn.amount_micros);
    const message =
      txn.status === 'success'
        ? `payment of ${amount} to ${String(txn.details.biller)} for ${txn.subject} successful`
        : txn.status === 'pending'
          ? `payment of ${amount} to ${String(txn.details.biller)} for ${txn.subject} is pending; the final status follows by status check and webhook`
          : settledText(txn, 'bill payment');
    return txnAnswer(txn, message, {
      txn_id: txn.id,
      status: txn.status,
      receipt_url: receiptUrl(base_url(), txn),
      biller_id: txn.details.biller_id,
      biller: txn.details.biller,
      consumer_number: txn.subject,
      amount,
      charges: microsToUnits(txn.charges_micros),
      ...(txn.tax ? { tax: taxView(txn.tax) } : {}),
      commission: txn.status === 'success' ? microsToUnits(txn.commission_micros) : 0,
      ...(txn.status === 'success' && txn.earning
        ? {
            tds: microsToUnits(txn.earning.tds_micros),
            // As a recharge answers it (an electricity board's recharge answers in this shape).
            commission_credited: microsToUnits(txn.commission_micros - txn.earning.tds_micros),
          }
        : {}),
      balance: microsToUnits(balance_micros),
      ...(txn.details.bill_id !== undefined ? { bill_id: txn.details.bill_id } : {}),
      ...(txn.result.biller_ref !== undefined ? { biller_ref: txn.result.biller_ref } : {}),
      ...(txn.result.bbps_ref !== undefined ? { bbps_ref: txn.result.bbps_ref } : {}),
      ...(txn.details.customer_mobile !== undefined
        ? { customer_mobile: txn.details.customer_mobile }
        : {}),
      // Asked through /api/recharge (an electricity board): the recharge answer's fields too.
      ...(txn.details.operator_id !== undefined
        ? {
            operator: txn.details.operator,
            operator_id: txn.details.operator_id,
            number: txn.subject,
          }
        : {}),
      ...(txn.client_ref ? { client_ref: txn.client_ref } : {}),
      ...(txn.refund
        ? {
            refund: {
              posting_id: txn.refund.posting_id,
              amount: microsToUnits(txn.refund.amount_micros),
            },
          }
        : {}),
    });
  };
}
