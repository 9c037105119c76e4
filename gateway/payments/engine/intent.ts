// What every payment route needs to build an engine intent: the idempotency key (header or
// client_ref), the hash of the canonical request, and the money rules shared by services
// (commission rounded down and charges from slabs, both to the paisa).
import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { badRequest } from '../../http/errors.js';
import type { ChargeSlab } from '../config.js';

/** Idempotency keys and client references: printable ASCII without spaces. */
export const KEY_TEXT = /^[\x21-\x7e]{1,128}$/;

const PAISA_MICROS = 10_000n;

export function idempotencyKey(req: Request, client_ref: string | undefined): string | null {
  const header = req.headers['idempotency-key'];
  if (header === undefined) return client_ref ?? null;
  if (typeof header !== 'string' || !KEY_TEXT.test(header)) {
    throw badRequest(
      'Idempotency-Key must be 1–128 printable characters without spaces',
      'Idempotency-Key',
      'invalid_value',
    );
  }
  return header;
}

export function requestHash(route: string, canonical: Record<string, unknown>): string {
  const sorted = Object.fromEntries(
    Object.entries(canonical).sort(([a], [b]) => a.localeCompare(b)),
  );
  return createHash('sha256')
    .update(`${route}\n${JSON.stringify(sorted)}`)
    .digest('hex');
}

/** Commission in micro-units, rounded down to the paisa (10,000 micro-units). */
export function commissionMicros(amount_micros: number, commission_bp: number): number {
  const exact = (BigInt(amount_micros) * BigInt(commission_bp)) / 10_000n;
  return Number(exact - (exact % PAISA_MICROS));
}

/**
 * Charges for an amount from a slab table: the first slab whose `up_to` reaches the amount;
 * `flat` plus `pct` of the amount rounded half up to the paisa, then kept within min..max.
 * null when no slab covers the amount.
 */
export function slabChargesMicros(
  amount_micros: number,
  slabs: readonly ChargeSlab[],
): number | null {
  const slab = slabs.find((s) => amount_micros <= s.up_to);
  if (!slab) return null;
  const scaled = BigInt(amount_micros) * BigInt(slab.pct); // micro-units × basis points
  const paise = (scaled + 5_000n * PAISA_MICROS) / (10_000n * PAISA_MICROS); // half up
  let charges = slab.flat + Number(paise * PAISA_MICROS);
  if (slab.min !== undefined) charges = Math.max(charges, slab.min);
  if (slab.max !== undefined) charges = Math.min(charges, slab.max);
  return charges;
}
