// A remitter registered with the provider's own OTP (`PaymentProvider.remitters`: Eko's
// customer OTP). The provider sends the code and checks it; the gateway keeps the same rules
// as for its own OTP: the account's remitter limit, the resend interval and hourly sends
// (counted in the commit that records the send, uncounted when the provider does not send),
// the OTP's lifetime, and wrong tries counted in their own commit before the 422 (the OTP
// given up after `dmt.otp.max_attempts`). Nothing is sent by our SMS sender.
import type { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import type { PaymentProvider, ProviderRemitters } from '../../providers/types.js';
import type { Account } from '../../store/state.js';
import type { PaymentsContext } from '../context.js';
import type { Remitter } from '../engine/tables.js';
import { recordOtpSend, requireRemitter, type RemitterOtp } from './commands.js';
import { otpRefusal, uncountOtpSend } from './otp.js';
import { askProvider, providerSendsOtp } from './refund.js';
import { remitterKey } from './rules.js';
import type { otpBody, remitterBody } from './schemas.js';

type Ctx = Pick<
  PaymentsContext,
  'store' | 'logger' | 'settings' | 'engine' | 'config' | 'clock' | 'sms' | 'pricing' | 'providers'
>;
type Registering = PaymentProvider & { remitters: ProviderRemitters };

/** The DMT provider that registers remitters itself (the first that does), or null: our own OTP. */
export function remitterProvider(ctx: Pick<PaymentsContext, 'providers'>): Registering | null {
  const provider = ctx.providers.dmt.find((candidate) => candidate.remitters !== undefined);
  return (provider as Registering | undefined) ?? null;
}

/** The provider sends the remitter its OTP; the send is counted here first, uncounted if it fails. */
export async function requestRemitterAtProvider(
  ctx: Ctx,
  account: Account,
  body: z.output<typeof remitterBody>,
  provider: Registering,
): Promise<RemitterOtp> {
  const key = remitterKey(account.id, body.mobile);
  const recorded = await ctx.store.transact((tx) =>
    recordOtpSend(ctx, tx, account, body, null, provider.name),
  );
  if (!recorded)
    return { remitter: requireRemitter(ctx.store, account.id, body.mobile), otp: null };
  const uncount = () =>
    ctx.store.transact((tx) => {
      const current = tx.get('dmt_remitters', key);
      if (current && !current.verified)
        tx.set('dmt_remitters', key, {
          ...current,
          otp_at: undefined,
          sends: uncountOtpSend(current.sends),
        });
    });
  await providerSendsOtp(
    ctx,
    provider,
    "the remitter's OTP",
    (signal) => provider.remitters.requestOtp({ mobile: body.mobile, name: body.name }, signal),
    uncount,
    'remitter_refused',
    'mobile',
  );
  return { remitter: recorded, otp: '' };
}

/**
 * The remitter's code, checked at the provider: its "done" verifies the remitter (one
 * commit); its refusal is a wrong try, counted before the 422.
 */
export async function verifyRemitterAtProvider(
  ctx: Ctx,
  account: Account,
  body: z.output<ReturnType<typeof otpBody>>,
  provider: Registering,
): Promise<Remitter> {
  const { store, settings } = ctx;
  const request = 'POST /api/dmt/remitter';
  const key = remitterKey(account.id, body.mobile);
  const remitter = await store.transact((tx) => {
    const remitter = requireRemitter(tx, account.id, body.mobile);
    if (remitter.verified) return remitter;
    const pending = remitter.otp_at;
    if (!pending || pending.provider !== provider.name)
      throw otpRefusal(
        { ok: false, code: 'otp_not_requested', left: 0, attempts: 0, keep: null },
        request,
      );
    if (tx.now.getTime() >= Date.parse(pending.expires_at)) {
      tx.set('dmt_remitters', key, { ...remitter, otp_at: undefined });
      return null;
    }
    return remitter;
  });
  if (remitter === null)
    throw otpRefusal({ ok: false, code: 'otp_expired', left: 0, attempts: 0, keep: null }, request);
  if (remitter.verified) return remitter;
  const answer = await askProvider(ctx, provider, "the remitter's OTP", (signal) =>
    provider.remitters.verifyOtp(
      { mobile: remitter.mobile, name: remitter.name },
      body.otp,
      signal,
    ),
  );
  const outcome = await store.transact((tx): Remitter | ApiError => {
    const current = requireRemitter(tx, account.id, body.mobile);
    if (current.verified) return current;
    if (answer.done) {
      const verified: Remitter = {
        ...current,
        verified: true,
        verified_at: tx.now.toISOString(),
        otp: null,
        otp_at: undefined,
      };
      tx.set('dmt_remitters', key, verified);
      return verified;
    }
    const attempts = (current.otp_at?.attempts ?? 0) + 1;
    const left = settings.dmt.otp.max_attempts - attempts;
    if (current.otp_at)
      tx.set('dmt_remitters', key, {
        ...current,
        otp_at: left > 0 ? { ...current.otp_at, attempts } : undefined,
      });
    return otpRefusal(
      left > 0
        ? { ok: false, code: 'otp_invalid', left, attempts, keep: null }
        : { ok: false, code: 'otp_attempts_exceeded', left: 0, attempts, keep: null },
      request,
    );
  });
  if (outcome instanceof ApiError) throw outcome;
  return outcome;
}
