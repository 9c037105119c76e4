// DMT's rules, one command per operation: remitter registration with its OTP (the limit of
// remitters per account, the resend interval and hourly limit of OTPs, the SMS), OTP
// verification (attempts counted durably), beneficiaries (add with its limit, delete,
// penny-drop verification) and transfers (the monthly limit is reserved in the same commit
// as the hold, through the engine intent's `reserve`, and given back by `dmtOnFinal` when a
// transfer fails). The /api routes validate, call one of these and present the result; any
// other surface calls the same commands.
import type { z } from 'zod';
import { ApiError, notFound } from '../../http/errors.js';
import type { Account } from '../../store/state.js';
import type { Tx } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsContext } from '../context.js';
import { bankForIfsc, maskAccountNumber } from '../identity/bank.js';
import { monthKey, namesMatch, remitterKey, usageKey } from './rules.js';
import { countSend, issueOtp, otpText, sendOtp, uncountOtpSend, verifyOtp } from './otp.js';
import type { Answer } from '../engine/engine.js';
import { legIntent } from './rbi.js';
import { requestHash } from '../engine/intent.js';
import type { beneficiaryBody, otpBody, remitterBody, transactBody } from './schemas.js';
import type { Beneficiary, PaymentTxn, Remitter, TxnStatus } from '../engine/tables.js';

type Ctx = Pick<
  PaymentsContext,
  'store' | 'logger' | 'settings' | 'engine' | 'config' | 'clock' | 'sms' | 'pricing'
>;

/** A transfer in these statuses counts against the remitter's monthly limit (it stands or may stand). */
const COUNTED: ReadonlySet<TxnStatus> = new Set(['pending', 'on_hold', 'success']);

/**
 * A transfer that a provider accepted and that then failed waits for the customer's consent
 * (an OTP to the remitter) before its money goes back to the agent's wallet: refund_pending.
 */
export function dmtRefundNeedsConsent(txn: PaymentTxn): boolean {
  return txn.details.kind === 'transfer';
}

/**
 * Inside the commit that changes a DMT transaction's status: a transfer that stops counting
 * (failed, waiting for its refund, refunded or reversed) gives its amount back to the
 * remitter's month; a settled penny drop marks the beneficiary verified.
 */
export function dmtOnTransition(tx: Tx, txn: PaymentTxn, from: TxnStatus): void {
  // Refunded otherwise than by the customer's OTP (an operator): its OTP is void.
  if (from === 'refund_pending' && tx.get('dmt_refund_otps', txn.id))
    tx.del('dmt_refund_otps', txn.id);
  if (txn.details.kind === 'transfer' && COUNTED.has(from) && !COUNTED.has(txn.status)) {
    const key = usageKey(String(txn.details.mobile), String(txn.details.month));
    const used = tx.get('dmt_usage', key);
    // No row: its month is over and the pruner removed it (nothing reads it any more); do not recreate it.
    if (used !== undefined) tx.set('dmt_usage', key, Math.max(0, used - txn.amount_micros));
  }
  if (
    txn.details.kind === 'beneficiary_verification' &&
    txn.stage === 'final' &&
    (from === 'pending' || from === 'on_hold')
  ) {
    const bene = tx.get('dmt_beneficiaries', String(txn.details.bene_id));
    if (!bene) return;
    const registered_name =
      typeof txn.result.registered_name === 'string' ? txn.result.registered_name : null;
    if (txn.status === 'success')
      tx.set('dmt_beneficiaries', bene.id, {
        ...bene,
        verified: true,
        registered_name,
        verification_txn_id: txn.id,
      });
    else tx.set('dmt_beneficiaries', bene.id, { ...bene, verification_txn_id: txn.id });
  }
}

/** The same, for a route's answer: on PostgreSQL the month's row is loaded without stopping the loop. */
export function usedMicrosLoaded(ctx: Ctx, mobile: string, at: Date): Promise<number> {
  return ctx.store.read(() => usedMicros(ctx, mobile, at));
}

/** What the remitter has sent this month, in micro-units. */
export function usedMicros(ctx: Ctx, mobile: string, at: Date): number {
  return (
    ctx.store.get(
      'dmt_usage',
      usageKey(mobile, monthKey(at, ctx.settings.dmt.utc_offset_minutes)),
    ) ?? 0
  );
}

export function requireRemitter(tx: Pick<Tx, 'get'>, account_id: string, mobile: string): Remitter {
  const remitter = tx.get('dmt_remitters', remitterKey(account_id, mobile));
  if (!remitter)
    throw notFound(
      `no remitter ${mobile} is registered with this account; POST /api/dmt/remitter registers one`,
      'remitter_not_found',
    );
  return remitter;
}

function requireVerified(remitter: Remitter): void {
  if (!remitter.verified) {
    throw new ApiError(
      422,
      'remitter_not_verified',
      `remitter ${remitter.mobile} has not verified the OTP yet (POST /api/dmt/remitter/verify)`,
      'mobile',
    );
  }
}

function requireBeneficiary(ctx: Ctx, account_id: string, bene_id: string): Beneficiary {
  const bene = ctx.store.get('dmt_beneficiaries', bene_id);
  if (!bene || bene.account_id !== account_id)
    throw notFound(`no beneficiary ${bene_id}`, 'beneficiary_not_found');
  return bene;
}

export interface RemitterOtp {
  remitter: Remitter;
  /** The OTP that was sent; null when the remitter is verified already (nothing sent). */
  otp: string | null;
}

/**
 * Registers a remitter, or a new OTP for one that is not verified yet: the account's limit of
 * remitters, the resend interval and the hourly limit of OTPs are checked in the commit that
 * records the send. In live mode the OTP goes out by SMS; a failed send voids it and is not
 * counted, so it can be retried at once.
 */
export async function requestRemitterOtp(
  ctx: Ctx,
  account: Account,
  body: z.output<typeof remitterBody>,
): Promise<RemitterOtp> {
  const otp = ctx.settings.dmt.otp;
  const key = remitterKey(account.id, body.mobile);
  const { recorded: remitter, code } = await sendOtp(
    ctx,
    otp.digits,
    (tx, code) => recordOtpSend(ctx, tx, account, body, code),
    (remitter, code) =>
      remitter && {
        mobile: remitter.mobile,
        text: otpText(otp.message, code, otp.ttl_ms),
        what: 'a remitter',
        log: { account_id: account.id },
        unsend: (tx) => {
          const current = tx.get('dmt_remitters', key);
          if (current && !current.verified)
            tx.set('dmt_remitters', key, {
              ...current,
              otp: null,
              sends: uncountOtpSend(current.sends),
            });
        },
      },
  );
  if (!remitter)
    return { remitter: requireRemitter(ctx.store, account.id, body.mobile), otp: null };
  return { remitter, otp: code };
}

/**
 * Inside the commit: the limits, then the remitter with its new OTP (ours: `otp`; the
 * provider's, sent and checked there: `provider`); null when verified already.
 */
export function recordOtpSend(
  ctx: Ctx,
  tx: Tx,
  account: Account,
  body: z.output<typeof remitterBody>,
  otp: string | null,
  provider?: string,
): Remitter | null {
  const dmt = ctx.settings.dmt;
  const key = remitterKey(account.id, body.mobile);
  const existing = tx.get('dmt_remitters', key);
  if (existing?.verified) return null;
  if (!existing) {
    const count = tx.get('dmt_remitter_counts', account.id) ?? 0;
    if (count >= dmt.max_remitters_per_account) {
      throw new ApiError(
        422,
        'remitter_limit',
        `this account has registered ${count} remitters, the most allowed`,
        'mobile',
      );
    }
    tx.set('dmt_remitter_counts', account.id, count + 1);
  }
  const remitter: Remitter = {
    account_id: account.id,
    mobile: body.mobile,
    name: body.name,
    verified: false,
    created_at: existing?.created_at ?? tx.now.toISOString(),
    verified_at: null,
    otp: otp === null ? null : issueOtp(otp, tx.now.getTime(), dmt.otp.ttl_ms),
    ...(provider
      ? {
          otp_at: {
            provider,
            expires_at: new Date(tx.now.getTime() + dmt.otp.ttl_ms).toISOString(),
            attempts: 0,
          },
        }
      : {}),
    sends: countSend(existing?.sends ?? null, body.mobile, tx.now, dmt.otp),
    beneficiary_ids: existing?.beneficiary_ids ?? [],
  };
  tx.set('dmt_remitters', key, remitter);
  return remitter;
}

/** Checks an OTP. Wrong guesses are committed before they are refused, so attempts are really counted. */
export function verifyRemitterOtp(
  ctx: Ctx,
  account: Account,
  body: z.output<ReturnType<typeof otpBody>>,
): Promise<Remitter> {
  const rules = {
    max_attempts: ctx.settings.dmt.otp.max_attempts,
    request: 'POST /api/dmt/remitter',
  };
  const key = remitterKey(account.id, body.mobile);
  return verifyOtp<Remitter>(ctx.store, body.otp, rules, (tx) => {
    const remitter = requireRemitter(tx, account.id, body.mobile);
    if (remitter.verified) return { answer: remitter };
    return {
      stored: remitter.otp,
      refused: (check) => {
        if (remitter.otp) tx.set('dmt_remitters', key, { ...remitter, otp: check.keep });
      },
      accepted: () => {
        const verified: Remitter = {
          ...remitter,
          verified: true,
          verified_at: tx.now.toISOString(),
          otp: null,
        };
        tx.set('dmt_remitters', key, verified);
        return verified;
      },
    };
  });
}

/** Adds a beneficiary to a verified remitter: no twin (same account and IFSC), within the remitter's limit. */
export function addBeneficiary(
  ctx: Ctx,
  account: Account,
  body: z.output<typeof beneficiaryBody>,
): Promise<Beneficiary> {
  const dmt = ctx.settings.dmt;
  return ctx.store.transact((tx) => {
    const remitter = requireRemitter(tx, account.id, body.mobile);
    requireVerified(remitter);
    const twin = remitter.beneficiary_ids
      .map((id) => tx.get('dmt_beneficiaries', id))
      .find((b) => b && b.account_number === body.account_number && b.ifsc === body.ifsc);
    if (twin) {
      throw new ApiError(
        409,
        'beneficiary_exists',
        `this account (${maskAccountNumber(twin.account_number)}, ${twin.ifsc}) is already beneficiary ${twin.id} of ${remitter.mobile}`,
        'account_number',
      );
    }
    if (remitter.beneficiary_ids.length >= dmt.max_beneficiaries_per_remitter) {
      throw new ApiError(
        422,
        'beneficiary_limit',
        `remitter ${remitter.mobile} has ${remitter.beneficiary_ids.length} beneficiaries, the most allowed; delete one first`,
        'mobile',
      );
    }
    const created: Beneficiary = {
      id: newId('bene'),
      account_id: account.id,
      mobile: remitter.mobile,
      name: body.name,
      account_number: body.account_number,
      ifsc: body.ifsc,
      bank: body.bank ?? bankForIfsc(body.ifsc),
      verified: false,
      registered_name: null,
      verification_txn_id: null,
      created_at: tx.now.toISOString(),
    };
    tx.set('dmt_beneficiaries', created.id, created);
    tx.set('dmt_remitters', remitterKey(account.id, remitter.mobile), {
      ...remitter,
      beneficiary_ids: [...remitter.beneficiary_ids, created.id],
    });
    return created;
  });
}

export function deleteBeneficiary(
  ctx: Ctx,
  account: Account,
  bene_id: string,
): Promise<Beneficiary> {
  return ctx.store.transact((tx) => {
    const bene = tx.get('dmt_beneficiaries', bene_id);
    if (!bene || bene.account_id !== account.id)
      throw notFound(`no beneficiary ${bene_id}`, 'beneficiary_not_found');
    const key = remitterKey(account.id, bene.mobile);
    const remitter = tx.get('dmt_remitters', key);
    if (remitter)
      tx.set('dmt_remitters', key, {
        ...remitter,
        beneficiary_ids: remitter.beneficiary_ids.filter((id) => id !== bene_id),
      });
    tx.del('dmt_beneficiaries', bene_id);
    return bene;
  });
}

/** A penny drop through the engine (its fee held first); a verified beneficiary costs nothing. */
export async function verifyBeneficiary(
  ctx: Ctx,
  account: Account,
  bene_id: string,
  request: { idempotency_key: string | null; client_ref: string | null },
): Promise<Answer> {
  await ctx.store.readDurable();
  const bene = requireBeneficiary(ctx, account.id, bene_id);
  if (bene.verified) {
    return {
      http_status: 200,
      body: {
        status: true,
        message: `already verified: registered to ${bene.registered_name}; nothing was charged`,
        data: {
          bene_id,
          registered_name: bene.registered_name,
          name_match: bene.registered_name ? namesMatch(bene.registered_name, bene.name) : null,
          verified: true,
          status: 'success',
          fee: 0,
          txn_id: bene.verification_txn_id,
        },
      },
    };
  }
  return ctx.engine.submit({
    account,
    service: 'dmt',
    idempotency_key: request.idempotency_key,
    client_ref: request.client_ref,
    request_hash: requestHash('dmt-verify', { bene_id, client_ref: request.client_ref }),
    allow_duplicate: false,
    amount_micros: ctx.settings.dmt.verification_fee,
    charges_micros: 0,
    ...ctx.pricing.quote(ctx.store, {
      account_id: account.id,
      service: 'dmt',
      operator: 'penny_drop',
      amount_micros: ctx.settings.dmt.verification_fee,
      fee_micros: ctx.settings.dmt.verification_fee,
    }),
    pay_to: 'revenue:dmt',
    subject: bene.account_number,
    details: {
      kind: 'beneficiary_verification',
      mobile: bene.mobile,
      bene_id,
      beneficiary_name: bene.name,
      ifsc: bene.ifsc,
      bank: bene.bank,
    },
    provider_params: {
      kind: 'penny_drop',
      ifsc: bene.ifsc,
      account_number: bene.account_number,
      name: bene.name,
    },
  });
}

/** A transfer through the engine: verified remitter, its own beneficiary, the charges slab, the monthly limit. */
export async function transfer(
  ctx: Ctx,
  account: Account,
  body: z.output<ReturnType<typeof transactBody>>,
  idempotency_key: string | null,
): Promise<Answer> {
  const dmt = ctx.settings.dmt;
  await ctx.store.readDurable();
  const remitter = requireRemitter(ctx.store, account.id, body.mobile);
  requireVerified(remitter);
  const bene = requireBeneficiary(ctx, account.id, body.bene_id);
  if (bene.mobile !== remitter.mobile)
    throw notFound(
      `beneficiary ${bene.id} does not belong to remitter ${remitter.mobile}`,
      'beneficiary_not_found',
    );
  const month = monthKey(ctx.clock.now(), dmt.utc_offset_minutes);
  return ctx.engine.submit({
    ...legIntent(ctx, account, remitter, bene, body, body.amount, month, { idempotency_key }),
    reserve: (tx) => reserveMonthly(ctx, tx, remitter.mobile, month, body.amount),
  });
}

/** The monthly limit, reserved in the commit that opens the transfer's hold. */
function reserveMonthly(
  ctx: Ctx,
  tx: Tx,
  mobile: string,
  month: string,
  amount_micros: number,
): void {
  const dmt = ctx.settings.dmt;
  const key = usageKey(mobile, month);
  const used = tx.get('dmt_usage', key) ?? 0;
  if (used + amount_micros > dmt.monthly_limit) {
    throw new ApiError(
      422,
      'monthly_limit_exceeded',
      `amount: remitter ${mobile} has ${microsToUnits(Math.max(0, dmt.monthly_limit - used))} left of the monthly limit of ${microsToUnits(dmt.monthly_limit)} (${microsToUnits(used)} used in ${month})`,
      'amount',
    );
  }
  tx.set('dmt_usage', key, used + amount_micros);
}
