// PAN lookup as a command: the PAN must be well formed (its fourth character names the holder
// type); the lookup is a payment through the engine, so it has what every payment has (the
// fee held before any provider call, idempotency, failover, a transaction record). Looking
// the same PAN up again is an ordinary thing to do, not a double submission.
import type { z } from 'zod';
import { badRequest } from '../../http/errors.js';
import type { Account } from '../../store/state.js';
import type { PaymentsContext } from '../context.js';
import type { Answer } from '../engine/engine.js';
import { requestHash } from '../engine/intent.js';
import { parsePan } from '../identity/pan.js';
import { dateOfBirthError } from '../identity/person.js';
import { indiaTime } from '../../kernel/india-time.js';
import type { panBody, panVerifyBody } from './schemas.js';

type Ctx = Pick<PaymentsContext, 'settings' | 'engine' | 'pricing' | 'store'>;

export function findPan(
  ctx: Ctx,
  account: Account,
  body: z.output<typeof panBody>,
  idempotency_key: string | null,
): Promise<Answer> {
  const parsed = parsePan(body.pan_number);
  if ('error' in parsed)
    throw badRequest(`pan_number: ${parsed.error}`, 'pan_number', 'invalid_pan');
  const client_ref = body.client_ref ?? null;
  return ctx.engine.submit({
    account,
    service: 'pan',
    idempotency_key,
    client_ref,
    request_hash: requestHash('pan-find', { pan: parsed.pan, client_ref }),
    allow_duplicate: true,
    amount_micros: ctx.settings.pan.fee,
    charges_micros: 0,
    ...ctx.pricing.quote(ctx.store, {
      account_id: account.id,
      service: 'pan',
      operator: 'lookup',
      amount_micros: ctx.settings.pan.fee,
      fee_micros: ctx.settings.pan.fee,
    }),
    pay_to: 'revenue:pan',
    subject: parsed.pan,
    details: { kind: 'pan_lookup', pan_type: parsed.type },
    provider_params: { pan: parsed.pan },
  });
}

/** A PAN verification of one variant: a payment of that variant's fee, like a lookup. */
export function verifyPan(
  ctx: Ctx & Pick<PaymentsContext, 'clock'>,
  account: Account,
  body: z.output<typeof panVerifyBody>,
  idempotency_key: string | null,
): Promise<Answer> {
  const parsed = parsePan(body.pan_number);
  if ('error' in parsed)
    throw badRequest(`pan_number: ${parsed.error}`, 'pan_number', 'invalid_pan');
  if (body.dob !== undefined) {
    // Before the fee is held: a date of birth that cannot be one is refused, not charged.
    const error = dateOfBirthError(body.dob, indiaTime(ctx.clock.now()).date);
    if (error) throw badRequest(`dob: ${error}`, 'dob', 'invalid_date');
  }
  const client_ref = body.client_ref ?? null;
  const fee = ctx.settings.pan.variants[body.variant];
  const asked = {
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.dob !== undefined ? { dob: body.dob } : {}),
  };
  return ctx.engine.submit({
    account,
    service: 'pan',
    idempotency_key,
    client_ref,
    request_hash: requestHash('pan-verify', {
      pan: parsed.pan,
      variant: body.variant,
      ...asked,
      client_ref,
    }),
    allow_duplicate: true,
    amount_micros: fee,
    charges_micros: 0,
    ...ctx.pricing.quote(ctx.store, {
      account_id: account.id,
      service: 'pan',
      operator: body.variant,
      amount_micros: fee,
      fee_micros: fee,
    }),
    pay_to: 'revenue:pan',
    subject: parsed.pan,
    details: { kind: 'pan_verification', variant: body.variant, pan_type: parsed.type, ...asked },
    provider_params: { pan: parsed.pan, variant: body.variant, ...asked },
  });
}
