// POST /api/pan-find: a PAN lookup through the payment engine, so it has what every payment
// has (the fee held before any provider call, idempotency, failover, a transaction record).
// The holder type comes from the PAN's fourth character; a PAN that is not found costs nothing.
import { Router } from 'express';
import { jsonBody } from '../kernel/body.js';
import { badRequest, parseWith } from '../http/errors.js';
import { microsToUnits } from '../util/money.js';
import { authorize } from './auth.js';
import type { PaymentsContext } from './context.js';
import { panBody } from './schemas.js';
import type { Answer } from './engine.js';
import { idempotencyKey, requestHash } from './intent.js';
import type { PaymentTxn } from './tables.js';

/** The fourth character of a PAN names the holder's status. */
export const PAN_HOLDER_TYPES: Readonly<Record<string, string>> = {
  P: 'Individual',
  C: 'Company',
  H: 'HUF',
  F: 'Firm',
  A: 'AOP',
  T: 'Trust',
  B: 'BOI',
  L: 'Local Authority',
  J: 'Artificial Juridical Person',
  G: 'Government',
};

/** A PAN in canonical form (upper case, no spaces), or the reason it is not one. */
export function parsePan(input: string): { pan: string; type: string } | { error: string } {
  const pan = input.replace(/\s/g, '').toUpperCase();
  if (!/^[A-Z]{5}[0-9]{4}[A-Z]$/.test(pan)) return { error: 'must be 5 letters, 4 digits and a letter (e.g. ABCPE1234F)' };
  const type = PAN_HOLDER_TYPES[pan[3]!];
  if (!type) return { error: `the fourth character must be a holder status (${Object.keys(PAN_HOLDER_TYPES).join(', ')}), not ${pan[3]}` };
  return { pan, type };
}


export function renderPan(txn: PaymentTxn, balance_micros: number): Answer {
  const pan = txn.subject;
  const extra = { txn_id: txn.id, fee: txn.status === 'success' ? microsToUnits(txn.amount_micros) : 0, balance: microsToUnits(balance_micros) };
  if (txn.status === 'success') {
    // The seed's shape: no message on success; the transaction and the fee ride beside `data`.
    return { http_status: 200, body: { status: true, data: { pan, name: txn.result.name ?? null, type: txn.details.pan_type }, ...extra } };
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
      message: not_found ? `no PAN record found for ${pan}; nothing was charged` : `the PAN lookup failed: ${txn.message}; nothing was charged`,
      error: { code: not_found ? 'pan_not_found' : 'lookup_failed' },
      data: { pan, status: 'failed' },
      ...extra,
    },
  };
}

export function panRouter(ctx: PaymentsContext): Router {
  const { store, logger, settings, engine } = ctx;
  const router = Router();

  router.post('/pan-find', jsonBody(ctx.config), async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'pan');
    const body = parseWith(panBody, req.body ?? {});
    const parsed = parsePan(body.pan_number);
    if ('error' in parsed) throw badRequest(`pan_number: ${parsed.error}`, 'pan_number', 'invalid_pan');
    const answer = await engine.submit({
      account,
      service: 'pan',
      idempotency_key: idempotencyKey(req, body.client_ref),
      client_ref: body.client_ref ?? null,
      request_hash: requestHash('pan-find', { pan: parsed.pan, client_ref: body.client_ref ?? null }),
      // Looking the same PAN up again is an ordinary thing to do, not a double submission.
      allow_duplicate: true,
      amount_micros: settings.pan.fee,
      charges_micros: 0,
      commission_micros: 0,
      pay_to: 'revenue:pan',
      subject: parsed.pan,
      details: { kind: 'pan_lookup', pan_type: parsed.type },
      provider_params: { pan: parsed.pan },
    });
    res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
    res.status(answer.http_status).json(answer.body);
  });

  return router;
}
