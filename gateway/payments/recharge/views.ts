// How recharge is presented: an operator, and the answer of a recharge (the engine's
// renderer, stored as the idempotent reply). No rules here.
import { microsToUnits } from '../../util/money.js';
import type { Operator } from '../config.js';
import { txnAnswer, type Answer } from '../engine/engine.js';
import { settledText } from '../engine/transactions.js';
import type { PaymentTxn } from '../engine/tables.js';

export function operatorView(operator: Operator) {
  return {
    operator_id: operator.operator_id,
    name: operator.name,
    type: operator.type,
    commission_pct: operator.commission_pct,
    min_amount: microsToUnits(operator.min_amount_micros),
    max_amount: microsToUnits(operator.max_amount_micros),
    number_label: operator.number_label,
    number_pattern: operator.number_pattern,
  };
}

export function renderRecharge(txn: PaymentTxn, balance_micros: number): Answer {
  const amount = microsToUnits(txn.amount_micros);
  const message =
    txn.status === 'success'
      ? `recharge of ${amount} to ${txn.subject} successful`
      : txn.status === 'pending'
        ? `recharge of ${amount} to ${txn.subject} is pending; the final status follows by status check and webhook`
        : settledText(txn, 'recharge');
  return txnAnswer(txn, message, {
    txn_id: txn.id,
    operator: txn.details.operator,
    operator_id: txn.details.operator_id,
    number: txn.subject,
    amount,
    status: txn.status,
    commission: txn.status === 'success' ? microsToUnits(txn.commission_micros) : 0,
    ...(txn.status === 'success' && txn.earning
      ? {
          tds: microsToUnits(txn.earning.tds_micros),
          commission_credited: microsToUnits(txn.commission_micros - txn.earning.tds_micros),
        }
      : {}),
    balance: microsToUnits(balance_micros),
    ...(txn.result.operator_ref !== undefined ? { operator_ref: txn.result.operator_ref } : {}),
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
}
