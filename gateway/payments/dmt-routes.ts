// Money transfer: remitters (registered by mobile and name, verified by OTP), beneficiaries
// (add, list, delete, penny-drop verification), and POST /api/dmt/transact. Transfers and penny
// drops are payments of the one engine; the monthly limit is reserved in the same commit as
// the hold (engine intent `reserve`) and released when a transfer fails (`dmtOnFinal`).
import { Router, type Response } from 'express';
import { z } from 'zod';
import { jsonBody } from '../kernel/body.js';
import { ApiError, badRequest, notFound, parseWith } from '../http/errors.js';
import { ProviderUnavailableError } from '../providers/types.js';
import type { Tx } from '../store/store.js';
import { newId } from '../util/ids.js';
import { microsToUnits } from '../util/money.js';
import { authorize } from './auth.js';
import type { PaymentsConfig } from './config.js';
import type { PaymentsContext } from './context.js';
import { beneIdParam, beneficiaryBody, beneficiaryListQuery, mobileSchema, otpBody, remitterBody, transactBody, verifyBody } from './schemas.js';
import { txnAnswer, type Answer } from './engine.js';
import {
  bankForIfsc,
  hashOtp,
  maskAccountNumber,
  monthKey,
  namesMatch,
  newOtp,
  newOtpSalt,
  otpMatches,
  remitterKey,
  usageKey,
} from './dmt.js';
import { idempotencyKey, requestHash, slabChargesMicros } from './intent.js';
import type { Beneficiary, PaymentTxn, Remitter } from './tables.js';

const HOUR_MS = 3_600_000;


export function remitterView(remitter: Remitter, settings: PaymentsConfig['dmt'], used_micros: number) {
  return {
    mobile: remitter.mobile,
    name: remitter.name,
    verified: remitter.verified,
    monthly_limit: microsToUnits(settings.monthly_limit),
    used: microsToUnits(used_micros),
    available: microsToUnits(Math.max(0, settings.monthly_limit - used_micros)),
    per_txn_limit: microsToUnits(settings.per_txn_limit),
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
  const refund = txn.refund ? { refund: { posting_id: txn.refund.posting_id, amount: microsToUnits(txn.refund.amount_micros) } } : {};
  if (txn.details.kind === 'beneficiary_verification') {
    const registered_name = typeof txn.result.registered_name === 'string' ? txn.result.registered_name : null;
    const message =
      txn.status === 'success'
        ? `account ${maskAccountNumber(txn.subject)} verified: registered to ${registered_name}`
        : txn.status === 'pending'
          ? 'the penny drop is pending at the bank; the beneficiary is marked verified when it settles'
          : `verification failed: ${txn.message}`;
    return txnAnswer(txn, message, {
      bene_id: txn.details.bene_id,
      registered_name,
      name_match: registered_name === null ? null : namesMatch(registered_name, String(txn.details.beneficiary_name)),
      verified: txn.status === 'success',
      status: txn.status,
      fee: amount,
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
        : `transfer failed: ${txn.message}`;
  return txnAnswer(txn, message, {
    reference_id: txn.id,
    utr: txn.status === 'success' && txn.result.utr !== undefined ? String(txn.result.utr) : null,
    amount,
    charges: microsToUnits(txn.charges_micros),
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
 * Inside the commit that makes a DMT transaction final: a failed transfer gives its amount
 * back to the remitter's month; a settled penny drop marks the beneficiary verified.
 */
export function dmtOnFinal(tx: Tx, txn: PaymentTxn): void {
  if (txn.details.kind === 'transfer' && txn.status === 'failed') {
    const key = usageKey(String(txn.details.mobile), String(txn.details.month));
    const used = tx.get('dmt_usage', key);
    // No row: its month is over and the pruner removed it (nothing reads it any more); do not recreate it.
    if (used !== undefined) tx.set('dmt_usage', key, Math.max(0, used - txn.amount_micros));
  }
  if (txn.details.kind === 'beneficiary_verification') {
    const bene = tx.get('dmt_beneficiaries', String(txn.details.bene_id));
    if (!bene) return;
    const registered_name = typeof txn.result.registered_name === 'string' ? txn.result.registered_name : null;
    if (txn.status === 'success') tx.set('dmt_beneficiaries', bene.id, { ...bene, verified: true, registered_name, verification_txn_id: txn.id });
    else tx.set('dmt_beneficiaries', bene.id, { ...bene, verification_txn_id: txn.id });
  }
}

export function dmtRouter(ctx: PaymentsContext): Router {
  const { store, logger, settings, engine, config, clock, sms } = ctx;
  const dmt = settings.dmt;
  const router = Router();
  const json = jsonBody(config);
  const usedMicros = (mobile: string, at: Date) => store.get('dmt_usage', usageKey(mobile, monthKey(at, dmt.utc_offset_minutes))) ?? 0;

  const requireRemitter = (tx: Pick<Tx, 'get'>, account_id: string, mobile: string): Remitter => {
    const remitter = tx.get('dmt_remitters', remitterKey(account_id, mobile));
    if (!remitter) throw notFound(`no remitter ${mobile} is registered with this account; POST /api/dmt/remitter registers one`, 'remitter_not_found');
    return remitter;
  };
  const requireVerified = (remitter: Remitter) => {
    if (!remitter.verified) {
      throw new ApiError(422, 'remitter_not_verified', `remitter ${remitter.mobile} has not verified the OTP yet (POST /api/dmt/remitter/verify)`, 'mobile');
    }
  };
  const requireBeneficiary = (account_id: string, bene_id: string): Beneficiary => {
    const bene = store.get('dmt_beneficiaries', bene_id);
    if (!bene || bene.account_id !== account_id) throw notFound(`no beneficiary ${bene_id}`, 'beneficiary_not_found');
    return bene;
  };

  router.post('/dmt/remitter', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(remitterBody, req.body ?? {});
    const live = config.mode === 'live';
    if (live && !sms) throw new ApiError(503, 'sms_unavailable', 'no SMS sender is configured (payments.dmt.otp.sms), so no OTP can be sent');
    const otp = newOtp(dmt.otp.digits);
    const outcome = await store.transact((tx) => {
      const key = remitterKey(account.id, body.mobile);
      const existing = tx.get('dmt_remitters', key);
      if (existing?.verified) return { remitter: existing, sent: false as const };
      const now_ms = tx.now.getTime();
      const at = tx.now.toISOString();
      if (!existing) {
        const count = tx.get('dmt_remitter_counts', account.id) ?? 0;
        if (count >= dmt.max_remitters_per_account) {
          throw new ApiError(422, 'remitter_limit', `this account has registered ${count} remitters, the most allowed`, 'mobile');
        }
        tx.set('dmt_remitter_counts', account.id, count + 1);
      } else {
        const since_ms = now_ms - Date.parse(existing.sends.last_at);
        if (since_ms < dmt.otp.resend_interval_ms) {
          const wait_s = Math.ceil((dmt.otp.resend_interval_ms - since_ms) / 1000);
          throw new ApiError(429, 'otp_rate_limited', `an OTP was sent ${Math.floor(since_ms / 1000)} s ago; a new one can be requested in ${wait_s} s`, 'mobile', null, { 'Retry-After': String(wait_s) });
        }
        const in_window = now_ms - Date.parse(existing.sends.window_start) < HOUR_MS;
        if (in_window && existing.sends.count >= dmt.otp.max_sends_per_hour) {
          const wait_s = Math.ceil((Date.parse(existing.sends.window_start) + HOUR_MS - now_ms) / 1000);
          throw new ApiError(429, 'otp_rate_limited', `${existing.sends.count} OTPs were sent to ${body.mobile} in the last hour, the most allowed`, 'mobile', null, { 'Retry-After': String(wait_s) });
        }
      }
      const in_window = existing !== undefined && now_ms - Date.parse(existing.sends.window_start) < HOUR_MS;
      const salt = newOtpSalt();
      const remitter: Remitter = {
        account_id: account.id,
        mobile: body.mobile,
        name: body.name,
        verified: false,
        created_at: existing?.created_at ?? at,
        verified_at: null,
        otp: { hash: hashOtp(otp, salt), salt, expires_at: new Date(now_ms + dmt.otp.ttl_ms).toISOString(), attempts: 0 },
        sends: { window_start: in_window ? existing!.sends.window_start : at, count: in_window ? existing!.sends.count + 1 : 1, last_at: at },
        beneficiary_ids: existing?.beneficiary_ids ?? [],
      };
      tx.set('dmt_remitters', key, remitter);
      return { remitter, sent: true as const };
    });
    const { remitter } = outcome;
    const view = remitterView(remitter, dmt, usedMicros(remitter.mobile, clock.now()));
    if (!outcome.sent) {
      res.json({ status: true, message: `remitter ${remitter.mobile} is verified already`, data: { ...view, otp_required: false } });
      return;
    }
    if (live) {
      const text = dmt.otp.message.replaceAll('{otp}', otp).replaceAll('{minutes}', String(Math.round(dmt.otp.ttl_ms / 60_000)));
      try {
        await sms!.send(remitter.mobile, text);
      } catch (error) {
        // Nothing was sent: the OTP is void, and the send counts neither against the resend
        // interval nor against the hourly limit, so it can be retried at once (as documented).
        await store.transact((tx) => {
          const current = tx.get('dmt_remitters', remitterKey(account.id, remitter.mobile));
          if (current && !current.verified) tx.set('dmt_remitters', remitterKey(account.id, remitter.mobile), { ...current, otp: null, sends: { ...current.sends, count: Math.max(0, current.sends.count - 1), last_at: new Date(0).toISOString() } });
        });
        logger.warn({ msg: 'could not send a remitter OTP', account_id: account.id, err: error });
        const detail = error instanceof ProviderUnavailableError ? error.message : 'the SMS sender failed';
        throw new ApiError(502, 'sms_failed', `the OTP could not be sent (${detail}); request it again`);
      }
    }
    res.json({
      status: true,
      message: live ? `an OTP was sent to ${remitter.mobile}` : `sandbox: the OTP is in sandbox_otp (in live mode it is sent to ${remitter.mobile} by SMS)`,
      data: { ...view, otp_required: true, otp_expires_at: remitter.otp!.expires_at, ...(live ? {} : { sandbox_otp: otp }) },
    });
  });

  router.post('/dmt/remitter/verify', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(otpBody(dmt.otp.digits), req.body ?? {});
    const key = remitterKey(account.id, body.mobile);
    // Wrong guesses are committed before they are refused, so attempts are really counted.
    const outcome = await store.transact((tx): { remitter: Remitter } | { error: ApiError } => {
      const remitter = requireRemitter(tx, account.id, body.mobile);
      if (remitter.verified) return { remitter };
      const otp = remitter.otp;
      if (!otp) return { error: new ApiError(422, 'otp_not_requested', 'there is no OTP to verify; request one with POST /api/dmt/remitter', 'otp') };
      if (tx.now.getTime() >= Date.parse(otp.expires_at)) {
        tx.set('dmt_remitters', key, { ...remitter, otp: null });
        return { error: new ApiError(422, 'otp_expired', 'the OTP has expired; request a new one with POST /api/dmt/remitter', 'otp') };
      }
      if (!otpMatches(body.otp, otp.salt, otp.hash)) {
        const attempts = otp.attempts + 1;
        const left = dmt.otp.max_attempts - attempts;
        if (left <= 0) {
          tx.set('dmt_remitters', key, { ...remitter, otp: null });
          return { error: new ApiError(422, 'otp_attempts_exceeded', `wrong OTP ${attempts} times; this OTP is cancelled, request a new one with POST /api/dmt/remitter`, 'otp') };
        }
        tx.set('dmt_remitters', key, { ...remitter, otp: { ...otp, attempts } });
        return { error: new ApiError(422, 'otp_invalid', `wrong OTP; ${left} attempt${left === 1 ? '' : 's'} left`, 'otp') };
      }
      const verified: Remitter = { ...remitter, verified: true, verified_at: tx.now.toISOString(), otp: null };
      tx.set('dmt_remitters', key, verified);
      return { remitter: verified };
    });
    if ('error' in outcome) throw outcome.error;
    res.json({ status: true, message: `remitter ${outcome.remitter.mobile} verified`, data: remitterView(outcome.remitter, dmt, usedMicros(outcome.remitter.mobile, clock.now())) });
  });

  router.get('/dmt/remitter/:mobile', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const mobile = parseWith(z.object({ mobile: mobileSchema }), req.params).mobile;
    await store.readDurable();
    const remitter = requireRemitter(store, account.id, mobile);
    res.json({ status: true, data: remitterView(remitter, dmt, usedMicros(mobile, clock.now())) });
  });

  router.post('/dmt/beneficiary', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(beneficiaryBody, req.body ?? {});
    const bene = await store.transact((tx) => {
      const remitter = requireRemitter(tx, account.id, body.mobile);
      requireVerified(remitter);
      const twin = remitter.beneficiary_ids
        .map((id) => tx.get('dmt_beneficiaries', id))
        .find((b) => b && b.account_number === body.account_number && b.ifsc === body.ifsc);
      if (twin) {
        throw new ApiError(409, 'beneficiary_exists', `this account (${maskAccountNumber(twin.account_number)}, ${twin.ifsc}) is already beneficiary ${twin.id} of ${remitter.mobile}`, 'account_number');
      }
      if (remitter.beneficiary_ids.length >= dmt.max_beneficiaries_per_remitter) {
        throw new ApiError(422, 'beneficiary_limit', `remitter ${remitter.mobile} has ${remitter.beneficiary_ids.length} beneficiaries, the most allowed; delete one first`, 'mobile');
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
      tx.set('dmt_remitters', remitterKey(account.id, remitter.mobile), { ...remitter, beneficiary_ids: [...remitter.beneficiary_ids, created.id] });
      return created;
    });
    res.json({ status: true, message: `beneficiary ${bene.name} added`, data: beneficiaryView(bene) });
  });

  router.get('/dmt/beneficiary', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const { mobile } = parseWith(beneficiaryListQuery, req.query);
    await store.readDurable();
    const remitter = requireRemitter(store, account.id, mobile);
    const list = remitter.beneficiary_ids.map((id) => store.get('dmt_beneficiaries', id)).filter((b): b is Beneficiary => b !== undefined);
    res.json({ status: true, data: list.map(beneficiaryView) });
  });

  router.delete('/dmt/beneficiary/:bene_id', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const bene_id = parseWith(z.object({ bene_id: beneIdParam }), req.params).bene_id;
    const removed = await store.transact((tx) => {
      const bene = tx.get('dmt_beneficiaries', bene_id);
      if (!bene || bene.account_id !== account.id) throw notFound(`no beneficiary ${bene_id}`, 'beneficiary_not_found');
      const key = remitterKey(account.id, bene.mobile);
      const remitter = tx.get('dmt_remitters', key);
      if (remitter) tx.set('dmt_remitters', key, { ...remitter, beneficiary_ids: remitter.beneficiary_ids.filter((id) => id !== bene_id) });
      tx.del('dmt_beneficiaries', bene_id);
      return bene;
    });
    res.json({ status: true, message: `beneficiary ${removed.name} deleted`, data: { bene_id, deleted: true } });
  });

  router.post('/dmt/beneficiary/:bene_id/verify', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const bene_id = parseWith(z.object({ bene_id: beneIdParam }), req.params).bene_id;
    const body = parseWith(verifyBody, req.body ?? {});
    await store.readDurable();
    const bene = requireBeneficiary(account.id, bene_id);
    if (bene.verified) {
      res.json({
        status: true,
        message: `already verified: registered to ${bene.registered_name}; nothing was charged`,
        data: { bene_id, registered_name: bene.registered_name, name_match: bene.registered_name ? namesMatch(bene.registered_name, bene.name) : null, verified: true, status: 'success', fee: 0, txn_id: bene.verification_txn_id },
      });
      return;
    }
    const answer = await engine.submit({
      account,
      service: 'dmt',
      idempotency_key: idempotencyKey(req, body.client_ref),
      client_ref: body.client_ref ?? null,
      request_hash: requestHash('dmt-verify', { bene_id, client_ref: body.client_ref ?? null }),
      allow_duplicate: false,
      amount_micros: dmt.verification_fee,
      charges_micros: 0,
      commission_micros: 0,
      pay_to: 'revenue:dmt',
      subject: bene.account_number,
      details: { kind: 'beneficiary_verification', mobile: bene.mobile, bene_id, beneficiary_name: bene.name, ifsc: bene.ifsc, bank: bene.bank },
      provider_params: { kind: 'penny_drop', ifsc: bene.ifsc, account_number: bene.account_number, name: bene.name },
    });
    send(res, answer);
  });

  router.post('/dmt/transact', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(transactBody(dmt), req.body ?? {});
    await store.readDurable();
    const remitter = requireRemitter(store, account.id, body.mobile);
    requireVerified(remitter);
    const bene = requireBeneficiary(account.id, body.bene_id);
    if (bene.mobile !== remitter.mobile) throw notFound(`beneficiary ${bene.id} does not belong to remitter ${remitter.mobile}`, 'beneficiary_not_found');
    const charges_micros = slabChargesMicros(body.amount, dmt.charges[body.txn_type]);
    if (charges_micros === null) throw badRequest(`amount: no charges slab covers ${microsToUnits(body.amount)}`, 'amount', 'amount_out_of_range');
    const month = monthKey(clock.now(), dmt.utc_offset_minutes);
    const answer = await engine.submit({
      account,
      service: 'dmt',
      idempotency_key: idempotencyKey(req, body.client_ref),
      client_ref: body.client_ref ?? null,
      request_hash: requestHash('dmt-transact', {
        mobile: body.mobile,
        bene_id: body.bene_id,
        amount_micros: body.amount,
        txn_type: body.txn_type,
        client_ref: body.client_ref ?? null,
        allow_duplicate: body.allow_duplicate ?? false,
      }),
      allow_duplicate: body.allow_duplicate ?? false,
      amount_micros: body.amount,
      charges_micros,
      commission_micros: 0,
      pay_to: 'provider:dmt',
      subject: bene.account_number,
      details: {
        kind: 'transfer',
        txn_type: body.txn_type,
        mobile: remitter.mobile,
        bene_id: bene.id,
        beneficiary_name: bene.name,
        ifsc: bene.ifsc,
        bank: bene.bank,
        month,
      },
      provider_params: { kind: 'transfer', txn_type: body.txn_type, ifsc: bene.ifsc, account_number: bene.account_number, name: bene.name, mobile: remitter.mobile },
      reserve: (tx) => {
        const key = usageKey(remitter.mobile, month);
        const used = tx.get('dmt_usage', key) ?? 0;
        if (used + body.amount > dmt.monthly_limit) {
          throw new ApiError(
            422,
            'monthly_limit_exceeded',
            `amount: remitter ${remitter.mobile} has ${microsToUnits(Math.max(0, dmt.monthly_limit - used))} left of the monthly limit of ${microsToUnits(dmt.monthly_limit)} (${microsToUnits(used)} used in ${month})`,
            'amount',
          );
        }
        tx.set('dmt_usage', key, used + body.amount);
      },
    });
    send(res, answer);
  });

  return router;
}

function send(res: Response, answer: Answer): void {
  res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
  res.status(answer.http_status).json(answer.body);
}
