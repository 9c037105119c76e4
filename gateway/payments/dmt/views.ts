// How DMT is presented: a remitter, a beneficiary, and the answer of a transfer or a penny
// drop (the engine stores it as the idempotent reply). Shared by the /api routes and the
// engine's renderers; no rules here.
import { microsToUnits } from '../../util/money.js';
import type { PaymentsConfig } from '../config.js';
import { maskAccountNumber } from '../identity/bank.js';
import { namesMatch } from './rules.js';
import { parentStatus, remitterLimits } from './rbi.js';
import type { SplitTransfer } from './tables.js';
import { txnAnswer, type Answer } from '../engine/engine.js';
import { settledText } from '../engine/transactions.js';
import { taxView } from '../engine/tax.js';
import type { Beneficiary, PaymentTxn, Remitter } from '../engine/tables.js';

export function remitterView(
  remitter: Remitter,
  settings: PaymentsConfig['dmt'],
  used_micros: number,
) {
  const limits = remitterLimits(settings, remitter);
  return {
    mobile: remitter.mobile,
    name: remitter.name,
    verified: remitter.verified,
    kyc: remitter.kyc
      ? {
          verified: true,
          document_type: remitter.kyc.document_type,
          document_number: remitter.kyc.document_masked,
          name: remitter.kyc.name,
          address: remitter.kyc.address,
          level: remitter.kyc.level,
          verified_at: remitter.kyc.verified_at,
        }
      : { verified: false },
    monthly_limit: microsToUnits(limits.monthly_limit),
    used: microsToUnits(used_micros),
    available: microsToUnits(Math.max(0, limits.monthly_limit - used_micros)),
    per_txn_limit: microsToUnits(limits.per_txn_limit),
    beneficiaries: remitter.beneficiary_ids.length,
    created_at: remitter.created_at,
    verified_at: remitter.verified_at,
  };
}

export function beneficiaryView(bene: Beneficiary) {
  return {
    bene_id: bene.id,
    mobile: bene.mobile,
    name: bene.name,
    account_number: bene.account_number,
    ifsc: bene.ifsc,
    bank: bene.bank,
    verified: bene.verified,
    registered_name: bene.registered_name,
    created_at: bene.created_at,
  };
}

/** The answer of a transfer or a penny drop (the engine stores it as the idempotent reply). */
export function renderDmt(txn: PaymentTxn, balance_micros: number): Answer {
  const amount = microsToUnits(txn.amount_micros);
  const refund = txn.refund
    ? {
        refund: {
          posting_id: txn.refund.posting_id,
          amount: microsToUnits(txn.refund.amount_micros),
        },
      }
    : {};
  if (txn.details.kind === 'beneficiary_verification') {
    const registered_name =
      typeof txn.result.registered_name === 'string' ? txn.result.registered_name : null;
    const message =
      txn.status === 'success'
        ? `account ${maskAccountNumber(txn.subject)} verified: registered to ${registered_name}`
        : txn.status === 'pending'
          ? 'the penny drop is pending at the bank; the beneficiary is marked verified when it settles'
          : settledText(txn, 'verification');
    return txnAnswer(txn, message, {
      bene_id: txn.details.bene_id,
      registered_name,
      name_match:
        registered_name === null
          ? null
          : namesMatch(registered_name, String(txn.details.beneficiary_name)),
      verified: txn.status === 'success',
      status: txn.status,
      fee: amount,
      ...(txn.tax ? { tax: taxView(txn.tax) } : {}),
      txn_id: txn.id,
      balance: microsToUnits(balance_micros),
      ...refund,
    });
  }
  const type = String(txn.details.txn_type);
  const to = `${String(txn.details.beneficiary_name)} (A/c ${maskAccountNumber(txn.subject)})`;
  const message =
    txn.status === 'success'
      ? `${type} transfer of ${amount} to ${to} successful`
      : txn.status === 'pending'
        ? `${type} transfer of ${amount} to ${to} accepted; it settles ${type === 'NEFT' ? 'in the next NEFT batch' : 'when the bank confirms'}, and the final status follows by status check and webhook`
        : settledText(txn, 'transfer');
  return txnAnswer(txn, message, {
    reference_id: txn.id,
    utr: txn.status === 'success' && txn.result.utr !== undefined ? String(txn.result.utr) : null,
    amount,
    charges: microsToUnits(txn.charges_micros),
    ...(txn.tax ? { tax: taxView(txn.tax) } : {}),
    status: txn.status,
    txn_type: type,
    mobile: txn.details.mobile,
    bene_id: txn.details.bene_id,
    account_number: txn.subject,
    ifsc: txn.details.ifsc,
    balance: microsToUnits(balance_micros),
    ...(txn.client_ref ? { client_ref: txn.client_ref } : {}),
    ...refund,
  });
}

/**
 * A transfer split into legs: the seed's fields for the whole (reference_id is the parent's
 * id; `utr` null, each leg has its own), its status from its legs', and every leg.
 */
export function renderSplit(
  parent: SplitTransfer,
  legs: readonly PaymentTxn[],
  balance_micros: number,
): Answer {
  const status = parentStatus(legs);
  const charges = legs.reduce((sum, leg) => sum + leg.charges_micros, 0);
  const refunded = legs.reduce((sum, leg) => sum + (leg.refund?.amount_micros ?? 0), 0);
  const sent = legs
    .filter((leg) => leg.status === 'success')
    .reduce((sum, leg) => sum + leg.amount_micros, 0);
  const first = legs[0]!;
  const amount = microsToUnits(parent.amount_micros);
  const message =
    status === 'success'
      ? `${parent.txn_type} transfer of ${amount} sent in ${legs.length} parts`
      : status === 'partial'
        ? `${parent.txn_type} transfer of ${amount}: ${microsToUnits(sent)} sent; the parts that failed were refunded (${microsToUnits(refunded)})`
        : status === 'failed' || status === 'refunded'
          ? `transfer failed; every part was refunded (${microsToUnits(refunded)})`
          : `${parent.txn_type} transfer of ${amount} in ${legs.length} parts: ${status}; the final status follows by status check and webhook`;
  return {
    http_status: 200,
    body: {
      status: status !== 'failed' && status !== 'refunded',
      message,
      txn_id: parent.id,
      data: {
        reference_id: parent.id,
        utr: null,
        amount,
        charges: microsToUnits(charges),
        status,
        txn_type: parent.txn_type,
        mobile: parent.mobile,
        bene_id: parent.bene_id,
        account_number: first.subject,
        ifsc: first.details.ifsc,
        sent: microsToUnits(sent),
        refunded: microsToUnits(refunded),
        balance: microsToUnits(balance_micros),
        legs: legs.map((leg) => ({
          txn_id: leg.id,
          leg: leg.details.leg,
          amount: microsToUnits(leg.amount_micros),
          charges: microsToUnits(leg.charges_micros),
          status: leg.status,
          utr:
            leg.status === 'success' && leg.result.utr !== undefined
              ? String(leg.result.utr)
              : null,
          message: leg.message,
          ...(leg.refund
            ? {
                refund: {
                  posting_id: leg.refund.posting_id,
                  amount: microsToUnits(leg.refund.amount_micros),
                },
              }
            : {}),
        })),
      },
    },
  };
}
