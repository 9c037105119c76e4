// Money transfer under RBI's Framework for Domestic Money Transfer (in force since 1 November
// 2024), as commands:
// - a remitter's KYC: an officially valid document (type, number, name, address) verified once
//   through the DMT providers; the remitter's level (`minimum`, or `full` by an administrator)
//   sets its monthly and per-transfer limits;
// - an OTP on every transfer (the additional factor of authentication), bound to that transfer
//   (mobile, beneficiary, amount, type), sent to the remitter, used once;
// - a transfer above the per-transfer limit split into legs, each its own transaction, all
//   held (and the month's limit taken) in one commit, sent in order, the rest cancelled and
//   refunded once one fails; the parent's status follows its legs;
// - the remitter's details (name, address, document type and masked number, a cash-remittance
//   flag) carried to the provider with every transfer.
import type { z } from 'zod';
import { ApiError, badRequest, conflict, notFound } from '../../http/errors.js';
import { ChainAbortedError, runLookupChain } from '../../providers/chain.js';
import type { Account } from '../../store/state.js';
import type { Tx } from '../../store/types.js';
import { newId } from '../../util/ids.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsContext } from '../context.js';
import type { Answer, PaymentIntent } from '../engine/engine.js';
import { requestHash, slabChargesMicros } from '../engine/intent.js';
import type { Beneficiary, PaymentTxn, Remitter } from '../engine/tables.js';
import type { KycLevel } from './config.js';
import { countSend, issueOtp, otpText, sendOtp, uncountOtpSend, verifyOtp } from './otp.js';
import { maskAccountNumber } from '../identity/bank.js';
import { monthKey, parseOvd, remitterKey, usageKey } from './rules.js';
import type { remitterKycBody, transactBody, transferOtpBody } from './schemas.js';
import type { RemitterKyc, SplitTransfer, TransferOtp } from './tables.js';

type Ctx = Pick<
  PaymentsContext,
  'store' | 'logger' | 'settings' | 'engine' | 'config' | 'clock' | 'sms' | 'pricing' | 'providers'
>;

const HOUR_MS = 3_600_000;

export interface Limits {
  level: KycLevel | null;
  monthly_limit: number;
  per_txn_limit: number;
}

/** What a remitter may send: by its KYC level under the framework (none without a verified OVD), else the old limits. */
export function remitterLimits(settings: PaymentsConfigDmt, remitter: Remitter): Limits {
  const rbi = settings.rbi;
  if (!rbi.enforce)
    return {
      level: remitter.kyc?.level ?? null,
      monthly_limit: settings.monthly_limit,
      per_txn_limit: settings.per_txn_limit,
    };
  if (!remitter.kyc) return { level: null, monthly_limit: 0, per_txn_limit: 0 };
  const level = rbi.levels[remitter.kyc.level];
  return {
    level: remitter.kyc.level,
    monthly_limit: level.monthly_limit ?? settings.monthly_limit,
    per_txn_limit: level.per_txn_limit ?? settings.per_txn_limit,
  };
}

type PaymentsConfigDmt = PaymentsContext['settings']['dmt'];

/**
 * A transfer OTP no request will read again: unused, an hour past its expiry; used, 30 days
 * after it was sent (until then a retry of its transfer, with the same Idempotency-Key, is
 * recognised by it and gets the transfer's answer).
 */
export function transferOtpSpent(otp: TransferOtp, now_ms: number): boolean {
  if (otp.used_by === null) return now_ms > Date.parse(otp.expires_at) + HOUR_MS;
  return now_ms > Date.parse(otp.created_at) + 30 * 24 * HOUR_MS;
}

/** Amounts of the legs of a transfer: as many at the per-transfer limit as fit, then the rest. */
export function splitAmount(amount_micros: number, per_txn_micros: number): number[] {
  const legs: number[] = [];
  let left = amount_micros;
  while (left > per_txn_micros) {
    legs.push(per_txn_micros);
    left -= per_txn_micros;
  }
  legs.push(left);
  return legs;
}

function requireRemitterOf(reader: Pick<Tx, 'get'>, account_id: string, mobile: string): Remitter {
  const remitter = reader.get('dmt_remitters', remitterKey(account_id, mobile));
  if (!remitter)
    throw notFound(
      `no remitter ${mobile} is registered with this account; POST /api/dmt/remitter registers one`,
      'remitter_not_found',
    );
  if (!remitter.verified)
    throw new ApiError(
      422,
      'remitter_not_verified',
      `remitter ${mobile} has not verified the OTP yet (POST /api/dmt/remitter/verify)`,
      'mobile',
    );
  return remitter;
}

/** The remitter may transfer: under the framework it needs its OVD verified. */
function requireKyc(ctx: Ctx, remitter: Remitter): void {
  if (ctx.settings.dmt.rbi.enforce && !remitter.kyc)
    throw new ApiError(
      422,
      'remitter_kyc_required',
      `remitter ${remitter.mobile} has no verified officially valid document; POST /api/dmt/remitter/kyc verifies one (RBI's framework for domestic money transfer, since 1 November 2024)`,
      'mobile',
    );
}

/**
 * Verifies a remitter's OVD once, through the DMT providers' lookups. A remitter verified
 * already answers as it is (nothing is asked again).
 */
export async function verifyRemitterKyc(
  ctx: Ctx,
  signal: AbortSignal,
  account: Account,
  body: z.output<typeof remitterKycBody>,
): Promise<{ remitter: Remitter; already: boolean }> {
  await ctx.store.readDurable();
  const remitter = requireRemitterOf(ctx.store, account.id, body.mobile);
  if (remitter.kyc) return { remitter, already: true };
  const parsed = parseOvd(body.document_type, body.document_number);
  if ('error' in parsed)
    throw badRequest(`document_number: ${parsed.error}`, 'document_number', 'invalid_document');
  let chain: Awaited<ReturnType<typeof runLookupChain>>;
  try {
    chain = await runLookupChain(
      ctx.providers.dmt,
      {
        service: 'dmt',
        kind: 'remitter_kyc',
        subject: parsed.number,
        params: { document_type: body.document_type, name: body.name, mobile: body.mobile },
      },
      { now: () => ctx.clock.now(), signal },
    );
  } catch (error) {
    if (error instanceof ChainAbortedError)
      throw new ApiError(503, 'shutting_down', 'the gateway is shutting down; retry shortly');
    throw error;
  }
  if (!chain.result)
    throw new ApiError(
      503,
      'providers_unavailable',
      'no DMT provider could verify the document; retry later',
      null,
      null,
      { 'Retry-After': '30' },
    );
  if (chain.result.outcome === 'not_found')
    throw new ApiError(
      422,
      'kyc_not_verified',
      `the ${body.document_type.replace(/_/g, ' ')} could not be verified: ${chain.result.message}`,
      'document_number',
    );
  const provider = chain.provider;
  const verified = await ctx.store.transact((tx) => {
    const current = requireRemitterOf(tx, account.id, body.mobile);
    if (current.kyc) return { remitter: current, already: true };
    const kyc: RemitterKyc = {
      document_type: body.document_type,
      document_masked: parsed.masked,
      name: body.name,
      address: body.address ?? null,
      level: 'minimum',
      verified_by: provider,
      verified_at: tx.now.toISOString(),
    };
    const next: Remitter = { ...current, kyc };
    tx.set('dmt_remitters', remitterKey(account.id, body.mobile), next);
    return { remitter: next, already: false };
  });
  return verified;
}

/** The administrator sets a verified remitter's KYC level (its limits). */
export function setRemitterLevel(
  ctx: Pick<Ctx, 'store'>,
  account_id: string,
  mobile: string,
  level: KycLevel,
): Promise<Remitter> {
  return ctx.store.transact((tx) => {
    const remitter = requireRemitterOf(tx, account_id, mobile);
    if (!remitter.kyc)
      throw conflict(`remitter ${mobile} has no verified document yet`, 'remitter_kyc_required');
    const next = { ...remitter, kyc: { ...remitter.kyc, level } };
    tx.set('dmt_remitters', remitterKey(account_id, mobile), next);
    return next;
  });
}

function requireBeneficiaryOf(
  ctx: Ctx,
  account_id: string,
  remitter: Remitter,
  bene_id: string,
): Beneficiary {
  const bene = ctx.store.get('dmt_beneficiaries', bene_id);
  if (!bene || bene.account_id !== account_id || bene.mobile !== remitter.mobile)
    throw notFound(
      `no beneficiary ${bene_id} of remitter ${remitter.mobile}`,
      'beneficiary_not_found',
    );
  return bene;
}

const transferHash = (body: {
  mobile: string;
  bene_id: string;
  amount: number;
  txn_type: string;
}) =>
  requestHash('dmt-transfer-otp', {
    mobile: body.mobile,
    bene_id: body.bene_id,
    amount_micros: body.amount,
    txn_type: body.txn_type,
  });

/** The month's room left and the legs a transfer would take; 422 when it does not fit. */
function plan(ctx: Ctx, remitter: Remitter, amount_micros: number, check_month = true) {
  const limits = remitterLimits(ctx.settings.dmt, remitter);
  const month = monthKey(ctx.clock.now(), ctx.settings.dmt.utc_offset_minutes);
  const used = ctx.store.get('dmt_usage', usageKey(remitter.mobile, month)) ?? 0;
  const legs = splitAmount(amount_micros, limits.per_txn_limit);
  if (legs.length > ctx.settings.dmt.rbi.max_legs)
    throw badRequest(
      `amount: ${microsToUnits(amount_micros)} takes ${legs.length} transfers of at most ${microsToUnits(limits.per_txn_limit)}; at most ${ctx.settings.dmt.rbi.max_legs} are sent for one request`,
      'amount',
      'amount_out_of_range',
    );
  if (check_month && used + amount_micros > limits.monthly_limit)
    throw new ApiError(
      422,
      'monthly_limit_exceeded',
      `amount: remitter ${remitter.mobile} has ${microsToUnits(Math.max(0, limits.monthly_limit - used))} left of the monthly limit of ${microsToUnits(limits.monthly_limit)} (${microsToUnits(used)} used in ${month})`,
      'amount',
    );
  return { limits, month, legs };
}

/**
 * Sends the OTP that confirms one transfer: the remitter (verified, its OVD verified), the
 * beneficiary, the amount within the month's limit are checked first; the OTP is bound to this
 * transfer. Its SMS (live mode) names the amount and the beneficiary; not sent, the OTP is
 * deleted (a late SMS confirms nothing) and the send is not counted against the hour. In
 * sandbox mode it comes back as `sandbox_otp`.
 */
export async function requestTransferOtp(
  ctx: Ctx,
  account: Account,
  body: z.output<ReturnType<typeof transferOtpBody>>,
): Promise<{ otp: TransferOtp; code: string; legs: number[]; limits: Limits; bene: Beneficiary }> {
  // Read together, durable and current (on PostgreSQL, loaded without stopping the loop).
  const { bene, legs, limits } = await ctx.store.read(
    () => {
      const remitter = requireRemitterOf(ctx.store, account.id, body.mobile);
      requireKyc(ctx, remitter);
      const bene = requireBeneficiaryOf(ctx, account.id, remitter, body.bene_id);
      return { remitter, bene, ...plan(ctx, remitter, body.amount) };
    },
    { fresh: true },
  );
  const rules = ctx.settings.dmt;
  const key = remitterKey(account.id, body.mobile);
  const { recorded: otp, code } = await sendOtp(
    ctx,
    rules.otp.digits,
    (tx, code) => {
      const current = requireRemitterOf(tx, account.id, body.mobile);
      // Every transfer needs its own OTP, so there is no resend interval: only the hour's count.
      tx.set('dmt_remitters', key, {
        ...current,
        transfer_otps: countSend(current.transfer_otps ?? null, body.mobile, tx.now, {
          resend_interval_ms: 0,
          max_sends_per_hour: rules.rbi.otp_per_hour,
        }),
      });
      const row: TransferOtp = {
        id: newId('otp'),
        account_id: account.id,
        mobile: body.mobile,
        request_hash: transferHash(body),
        ...issueOtp(code, tx.now.getTime(), rules.otp.ttl_ms),
        verified_at: null,
        used_by: null,
        created_at: tx.now.toISOString(),
      };
      tx.set('dmt_transfer_otps', row.id, row);
      return row;
    },
    (otp, code) => ({
      mobile: body.mobile,
      text: otpText(rules.rbi.message, code, rules.otp.ttl_ms, {
        amount: String(microsToUnits(body.amount)),
        beneficiary: `${bene.name} (A/c ${maskAccountNumber(bene.account_number)})`,
      }),
      what: 'a transfer',
      log: { account_id: account.id },
      unsend: (tx) => {
        if (tx.get('dmt_transfer_otps', otp.id)) tx.del('dmt_transfer_otps', otp.id);
        const remitter = tx.get('dmt_remitters', key);
        if (remitter?.transfer_otps)
          tx.set('dmt_remitters', key, {
            ...remitter,
            transfer_otps: uncountOtpSend(remitter.transfer_otps),
          });
      },
    }),
  );
  return { otp, code, legs, limits, bene };
}

/** Why an OTP cannot confirm this transfer whatever its code: another's, another transfer's, used. */
function transferOtpRefusal(
  otp: TransferOtp | undefined,
  account: Account,
  body: z.output<ReturnType<typeof transactBody>>,
): ApiError | null {
  if (!otp || otp.account_id !== account.id)
    return new ApiError(
      422,
      'otp_not_requested',
      'no such transfer OTP; POST /api/dmt/transact/otp sends one',
      'otp_ref',
    );
  if (otp.request_hash !== transferHash(body))
    return new ApiError(
      422,
      'otp_mismatch',
      'this OTP was sent for another transfer (mobile, beneficiary, amount or type differ)',
      'otp_ref',
    );
  if (otp.used_by)
    return new ApiError(
      409,
      'otp_used',
      `this OTP confirmed transfer ${otp.used_by} already; request a new one`,
      'otp_ref',
    );
  return null;
}

/**
 * Checks a transfer's OTP in its own commit, as every DMT OTP is checked (otp.ts checkOtp: a
 * wrong code counted before it is refused, cancelled at `max_attempts`, expired after its
 * lifetime): it must be this account's, for this very transfer, unused, unexpired, right. A
 * cancelled OTP's row stays, expired (a keyed retry and the pruning pass read it).
 */
function checkTransferOtp(
  ctx: Ctx,
  account: Account,
  body: z.output<ReturnType<typeof transactBody>>,
): Promise<TransferOtp> {
  const rules = {
    max_attempts: ctx.settings.dmt.otp.max_attempts,
    request: 'POST /api/dmt/transact/otp',
  };
  return verifyOtp(ctx.store, body.otp!, rules, (tx) => {
    const otp = body.otp_ref ? tx.get('dmt_transfer_otps', body.otp_ref) : undefined;
    const refused = transferOtpRefusal(otp, account, body);
    if (refused) throw refused;
    return {
      stored: otp!,
      refused: (check) => {
        if (check.code !== 'otp_expired')
          tx.set('dmt_transfer_otps', otp!.id, {
            ...otp!,
            attempts: check.attempts,
            ...(check.keep ? {} : { expires_at: tx.now.toISOString() }),
          });
      },
      accepted: () => {
        const verified = { ...otp!, verified_at: otp!.verified_at ?? tx.now.toISOString() };
        tx.set('dmt_transfer_otps', verified.id, verified);
        return verified;
      },
    };
  });
}

/** In the transfer's commit: the OTP is used once, by this transfer. */
function useOtp(tx: Tx, otp_id: string, by: string): void {
  const otp = tx.get('dmt_transfer_otps', otp_id)!;
  if (otp.used_by)
    throw new ApiError(
      409,
      'otp_used',
      `this OTP confirmed transfer ${otp.used_by} already; request a new one`,
      'otp_ref',
    );
  tx.set('dmt_transfer_otps', otp_id, { ...otp, used_by: by });
}

/** The month's limit, taken in the commit that opens the holds. */
function reserveMonth(
  tx: Tx,
  mobile: string,
  month: string,
  amount_micros: number,
  limit_micros: number,
): void {
  const key = usageKey(mobile, month);
  const used = tx.get('dmt_usage', key) ?? 0;
  if (used + amount_micros > limit_micros)
    throw new ApiError(
      422,
      'monthly_limit_exceeded',
      `amount: remitter ${mobile} has ${microsToUnits(Math.max(0, limit_micros - used))} left of the monthly limit of ${microsToUnits(limit_micros)}`,
      'amount',
    );
  tx.set('dmt_usage', key, used + amount_micros);
}

/** The remitter's details a transfer carries (the framework: in the IMPS/NEFT message). */
function remitterDetails(remitter: Remitter): Record<string, string> {
  const kyc = remitter.kyc;
  return kyc
    ? {
        remitter_name: kyc.name,
        remitter_address: kyc.address ?? '',
        remitter_id_type: kyc.document_type,
        remitter_id_number: kyc.document_masked,
      }
    : { remitter_name: remitter.name };
}

/** One leg's (or a whole transfer's) intent, the remitter's details carried to the provider (also the transfer of the rules before the framework). */
export function legIntent(
  ctx: Pick<Ctx, 'settings' | 'pricing' | 'store'>,
  account: Account,
  remitter: Remitter,
  bene: Beneficiary,
  body: z.output<ReturnType<typeof transactBody>>,
  amount_micros: number,
  month: string,
  extra: { idempotency_key: string | null; parent?: { id: string; leg: number; legs: number } },
): PaymentIntent {
  const charges_micros = slabChargesMicros(amount_micros, ctx.settings.dmt.charges[body.txn_type]);
  if (charges_micros === null)
    throw badRequest(
      `amount: no charges slab covers ${microsToUnits(amount_micros)}`,
      'amount',
      'amount_out_of_range',
    );
  const remitter_details = remitterDetails(remitter);
  return {
    account,
    service: 'dmt',
    idempotency_key: extra.idempotency_key,
    client_ref: body.client_ref ?? null,
    request_hash: requestHash('dmt-transact', {
      mobile: body.mobile,
      bene_id: body.bene_id,
      amount_micros: body.amount,
      txn_type: body.txn_type,
      client_ref: body.client_ref ?? null,
      allow_duplicate: body.allow_duplicate ?? false,
    }),
    allow_duplicate: extra.parent !== undefined || (body.allow_duplicate ?? false),
    amount_micros,
    charges_micros,
    ...ctx.pricing.quote(ctx.store, {
      account_id: account.id,
      service: 'dmt',
      operator: body.txn_type,
      amount_micros,
      fee_micros: charges_micros,
    }),
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
      ...remitter_details,
      ...(extra.parent
        ? { parent_id: extra.parent.id, leg: extra.parent.leg, legs: extra.parent.legs }
        : {}),
    },
    provider_params: {
      kind: 'transfer',
      txn_type: body.txn_type,
      ifsc: bene.ifsc,
      account_number: bene.account_number,
      name: bene.name,
      mobile: remitter.mobile,
      ...remitter_details,
      /** The framework's identifier of a cash-based remittance in the IMPS/NEFT message. */
      remittance_type: 'cash',
      ...(extra.parent ? { leg: extra.parent.leg, legs: extra.parent.legs } : {}),
    },
  };
}

/** The split transfer an Idempotency-Key made, if any (both rows are history: store.get finds them). */
function splitOfKey(ctx: Pick<Ctx, 'store'>, account_id: string, key: string) {
  const parent_id = ctx.store.get('dmt_transfer_keys', `${account_id}:${key}`)?.parent_id;
  return parent_id ? ctx.store.get('dmt_transfers', parent_id) : undefined;
}

/**
 * What a transfer reads before it acts, read together (durable and current): on PostgreSQL
 * the rows the cache lacks are loaded first, without stopping the event loop.
 */
function transferReads(
  ctx: Ctx,
  account: Account,
  body: z.output<ReturnType<typeof transactBody>>,
  idempotency_key: string | null,
) {
  return ctx.store.read(
    () => {
      // A retry of a split transfer answers with the transfer as it is now.
      const made = idempotency_key ? splitOfKey(ctx, account.id, idempotency_key) : undefined;
      if (made) return { made };
      const remitter = requireRemitterOf(ctx.store, account.id, body.mobile);
      requireKyc(ctx, remitter);
      const bene = requireBeneficiaryOf(ctx, account.id, remitter, body.bene_id);
      const existing = body.otp_ref ? ctx.store.get('dmt_transfer_otps', body.otp_ref) : undefined;
      // A retry (same Idempotency-Key) of a transfer whose OTP it used already: the engine
      // replays its answer; the month's room is not asked again (the first try took it).
      const replay = Boolean(existing?.used_by && idempotency_key);
      return {
        made: null,
        remitter,
        bene,
        existing,
        replay,
        ...plan(ctx, remitter, body.amount, !replay),
      };
    },
    { fresh: true },
  );
}

/** What a transfer request becomes: one transaction, or a split transfer's answer. */
export type TransferOutcome = { single: Answer } | { split: SplitTransfer };

/**
 * A transfer under the framework: the OTP checked (a wrong code counted), then one
 * transaction, or legs when the amount is above the remitter's per-transfer limit.
 */
export async function transferRbi(
  ctx: Ctx,
  account: Account,
  body: z.output<ReturnType<typeof transactBody>>,
  idempotency_key: string | null,
): Promise<TransferOutcome> {
  const pre = await transferReads(ctx, account, body, idempotency_key);
  if (pre.made) return { split: pre.made };
  const { remitter, bene, existing, replay, limits, month, legs } = pre;
  if (body.otp_ref === undefined || body.otp === undefined)
    throw new ApiError(
      422,
      'otp_required',
      'every transfer is confirmed by an OTP sent to the remitter (RBI, since 1 November 2024): POST /api/dmt/transact/otp, then send otp_ref and otp with the transfer',
      'otp',
    );
  const otp = replay && legs.length === 1 ? existing! : await checkTransferOtp(ctx, account, body);
  if (legs.length === 1) {
    const intent = legIntent(ctx, account, remitter, bene, body, body.amount, month, {
      idempotency_key,
    });
    return {
      single: await ctx.engine.submit({
        ...intent,
        reserve: (tx, txn_id) => {
          reserveMonth(tx, remitter.mobile, month, body.amount, limits.monthly_limit);
          useOtp(tx, otp.id, txn_id);
        },
      }),
    };
  }
  const parent_id = newId('dmtp');
  const intents = legs.map((amount, i) =>
    legIntent(ctx, account, remitter, bene, body, amount, month, {
      idempotency_key: null,
      parent: { id: parent_id, leg: i + 1, legs: legs.length },
    }),
  );
  let parent: SplitTransfer | null = null;
  await ctx.engine.submitMany(intents, (tx, ids) => {
    reserveMonth(tx, remitter.mobile, month, body.amount, limits.monthly_limit);
    useOtp(tx, otp.id, parent_id);
    parent = {
      id: parent_id,
      account_id: account.id,
      mobile: remitter.mobile,
      bene_id: bene.id,
      txn_type: body.txn_type,
      amount_micros: body.amount,
      leg_ids: ids,
      idempotency_key,
      created_at: tx.now.toISOString(),
    };
    tx.set('dmt_transfers', parent_id, parent);
    if (idempotency_key)
      tx.set('dmt_transfer_keys', `${account.id}:${idempotency_key}`, { parent_id });
  });
  return { split: parent! };
}

/** A split transfer's status, from its legs. */
export function parentStatus(legs: readonly PaymentTxn[]): string {
  const statuses = new Set<string>(legs.map((leg) => leg.status));
  if (statuses.size === 1) return legs[0]!.status;
  for (const waiting of ['pending', 'on_hold', 'refund_pending'])
    if (statuses.has(waiting)) return waiting === 'on_hold' ? 'pending' : waiting;
  const done_badly = [...statuses].every(
    (s) => s === 'failed' || s === 'refunded' || s === 'reversed',
  );
  if (done_badly) return statuses.has('failed') ? 'failed' : 'refunded';
  return 'partial';
}
