// PAN lookup's answer (the engine's renderer, stored as the idempotent reply); the PAN's own
// rules are identity/pan.ts.
import { microsToUnits } from '../../util/money.js';
import type { Answer } from '../engine/engine.js';
import type { PaymentTxn } from '../engine/tables.js';
import { taxView } from '../engine/tax.js';

export function renderPan(txn: PaymentTxn, balance_micros: number): Answer {
  const pan = txn.subject;
  const extra = {
    txn_id: txn.id,
    fee: txn.status === 'success' ? microsToUnits(txn.amount_micros) : 0,
    ...(txn.status === 'success' && txn.tax ? { tax: taxView(txn.tax) } : {}),
    balance: microsToUnits(balance_micros),
  };
  if (txn.details.kind === 'pan_verification' && txn.status === 'success')
    return { http_status: 200, body: { status: true, data: verificationData(txn), ...extra } };
  if (txn.status === 'success') {
    // The seed's shape: no message on success; the transaction and the fee ride beside `data`.
    return {
      http_status: 200,
      body: {
        status: true,
        data: { pan, name: txn.result.name ?? null, type: txn.details.pan_type },
        ...extra,
      },
    };
  }
  if (txn.status === 'pending') {
    return {
      http_status: 200,
      body: {
        status: true,
        message: `the lookup of ${pan} is pending at the provider; GET /api/transactions/${txn.id} gives the holder once it settles (the fee is held, and refunded if it fails)`,
        data: { pan, status: 'pending' },
        ...extra,
      },
    };
  }
  const not_found = txn.result.decline_code === 'not_found';
  return {
    http_status: 200,
    body: {
      status: false,
      message: not_found
        ? `no PAN record found for ${pan}; nothing was charged`
        : `the PAN lookup failed: ${txn.message}; nothing was charged`,
      error: { code: not_found ? 'pan_not_found' : 'lookup_failed' },
      data: { pan, status: 'failed' },
      ...extra,
    },
  };
}

const flag = (value: unknown): boolean | null =>
  value === 'Y' ? true : value === 'N' ? false : null;

/** A verification's answer: the PAN's status and what its variant asks, never more. */
function verificationData(txn: PaymentTxn) {
  const r = txn.result;
  const variant = String(txn.details.variant);
  const status = String(r.pan_status ?? 'unknown');
  const matches = variant === 'name_dob' || variant === 'comprehensive';
  const seeding = variant === 'aadhaar_seeding' || variant === 'comprehensive';
  return {
    pan: txn.subject,
    variant,
    pan_status: status,
    valid: status === 'valid',
    type: txn.details.pan_type,
    ...(matches ? { name_match: flag(r.name_match), dob_match: flag(r.dob_match) } : {}),
    ...(seeding
      ? { aadhaar_seeding: r.aadhaar_seeding === undefined ? null : String(r.aadhaar_seeding) }
      : {}),
    ...(variant === 'comprehensive' && r.name !== undefined ? { name: String(r.name) } : {}),
  };
}
