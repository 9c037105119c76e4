// How recharge is presented: an operator, and the answer of a recharge (the engine's
// renderer, stored as the idempotent reply). No rules here.
import { microsToUnits } from '../../util/money.js';
import type { Operator } from '../config.js';
import { txnAnswer, type Answer } from '../engine/engine.js';
import { settledText } from '../engine/transactions.js';
import type { PaymentTxn } from '../engine/tables.js';
import type { NumberLookup, Plan } from './lookup.js';

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
    ...(operator.type === 'prepaid' ? { plans_only: operator.plans_only } : {}),
    ...(operator.biller_id ? { biller_id: operator.biller_id } : {}),
  };
}

export function numberLookupView(looked: NumberLookup) {
  return {
    number: looked.number,
    operator_id: looked.operator.operator_id,
    operator: looked.operator.name,
    type: looked.type,
    circle: looked.circle,
    circle_name: looked.circle_name,
    ported: looked.ported,
    source: looked.source,
    provider: looked.provider,
  };
}

export function planView(plan: Plan) {
  return {
    plan_id: plan.plan_id,
    amount: microsToUnits(plan.amount_micros),
    validity: plan.validity,
    data: plan.data,
    talktime: plan.talktime,
    sms: plan.sms,
    description: plan.description,
    category: plan.category,
  };
}

/** What the recharge's answer says of its lookup and plan check, from the transaction's details. */
function lookupAndPlan(txn: PaymentTxn) {
  const d = txn.details;
  return {
    ...(d.looked_up !== undefined
      ? {
          lookup: {
            operator_id: d.operator_id,
            operator: d.operator,
            circle: d.circle ?? null,
            source: d.lookup_source,
            provider: d.lookup_provider,
          },
        }
      : {}),
    ...(d.plan_check !== undefined
      ? {
          plan_check: {
            mode: d.plan_check_mode,
            result: d.plan_check,
            plan_id: d.plan_id ?? null,
            description: d.plan_description ?? null,
            note: d.plan_note,
          },
        }
      : {}),
  };
}

export function renderRecharge(txn: PaymentTxn, balance_micros: number): Answer {
  const amount = microsToUnits(txn.amount_micros);
  const looked =
    txn.details.looked_up !== undefined
      ? ` (${String(txn.details.operator)}, looked up from the number)`
      : '';
  const message =
    txn.status === 'success'
      ? `recharge of ${amount} to ${txn.subject}${looked} successful`
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
    ...lookupAndPlan(txn),
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
