// Money transfer over /api: remitters (registered by mobile and name, verified by OTP),
// beneficiaries (add, list, delete, penny-drop verification) and POST /api/dmt/transact. Each
// route validates, calls one command of dmt/commands.ts (where the rules are) and presents.
import { Router, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { parseWith } from '../../http/errors.js';
import { jsonBody } from '../../http/body.js';
import { authorize } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import {
  addBeneficiary,
  deleteBeneficiary,
  requestRemitterOtp,
  requireRemitter,
  transfer,
  usedMicrosLoaded,
  verifyBeneficiary,
  verifyRemitterOtp,
} from './commands.js';
import { beneficiaryView, remitterView, renderSplit } from './views.js';
import { requestTransferOtp, setRemitterLevel, transferRbi, verifyRemitterKyc } from './rbi.js';
import type { SplitTransfer } from './tables.js';
import { balanceMicros } from '../../ledger/ledger.js';
import { microsToUnits } from '../../util/money.js';
import { notFound } from '../../http/errors.js';
import type { Answer } from '../engine/engine.js';
import { idempotencyKey } from '../engine/intent.js';
import {
  beneIdParam,
  beneficiaryBody,
  beneficiaryListQuery,
  otpBody,
  refundBody,
  refundOtpBody,
  remitterBody,
  remitterKycBody,
  remitterLevelBody,
  transactBody,
  transferOtpBody,
  txnIdParam,
  verifyBody,
} from './schemas.js';
import { confirmRefund, requestRefundOtp } from './refund.js';
import {
  remitterProvider,
  requestRemitterAtProvider,
  verifyRemitterAtProvider,
} from './remitter-provider.js';
import { mobileField } from '../identity/fields.js';
import type { Beneficiary } from '../engine/tables.js';

// Every schema is built once, here or when the router is built, never per request.
const mobileParams = z.object({ mobile: mobileField });
const beneIdParams = z.object({ bene_id: beneIdParam });
const parentParams = z.object({
  parent_id: z.string().regex(/^dmtp_[0-9a-f]{24}$/, 'is not a split transfer id'),
});
const txnIdParams = z.object({ txn_id: txnIdParam });

export function dmtRouter(ctx: PaymentsContext): Router {
  const { store, logger, settings, config } = ctx;
  const router = Router();
  const json = jsonBody(config);
  remitterRoutes(router, ctx, json);
  beneficiaryRoutes(router, ctx, json);
  refundRoutes(router, ctx, json);
  const transact = transactBody(settings.dmt);
  router.post('/dmt/transact', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(transact, req.body ?? {});
    const key = idempotencyKey(req, body.client_ref);
    if (!settings.dmt.rbi.enforce) {
      send(res, await transfer(ctx, account, body, key));
      return;
    }
    const outcome = await transferRbi(ctx, account, body, key);
    send(res, 'single' in outcome ? outcome.single : splitAnswer(ctx, outcome.split));
  });
  rbiRoutes(router, ctx, json);
  return router;
}

function splitAnswer(ctx: PaymentsContext, parent: SplitTransfer): Answer {
  const legs = parent.leg_ids.map((id) => ctx.store.get('payment_txns', id)!);
  return renderSplit(parent, legs, balanceMicros(ctx.store.state, parent.account_id));
}

/**
 * RBI's 2024 framework: the remitter's OVD (verified once), the OTP of a transfer, and a split
 * transfer with its legs.
 */
function rbiRoutes(router: Router, ctx: PaymentsContext, json: RequestHandler): void {
  const { store, logger, settings, config, clock } = ctx;
  const live = config.mode === 'live';
  const lookups = new AbortController();
  ctx.onStop(() => lookups.abort());
  router.post('/dmt/remitter/kyc', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(remitterKycBody, req.body ?? {});
    const { remitter, already } = await verifyRemitterKyc(ctx, lookups.signal, account, body);
    res.json({
      status: true,
      message: already
        ? `remitter ${remitter.mobile}'s document was verified already (${remitter.kyc!.verified_at}); it is not verified again`
        : `remitter ${remitter.mobile}'s ${remitter.kyc!.document_type.replace(/_/g, ' ')} verified`,
      data: remitterView(
        remitter,
        settings.dmt,
        await usedMicrosLoaded(ctx, remitter.mobile, clock.now()),
      ),
    });
  });

  const otp_body = transferOtpBody(settings.dmt);
  router.post('/dmt/transact/otp', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(otp_body, req.body ?? {});
    const sent = await requestTransferOtp(ctx, account, body);
    res.json({
      status: true,
      message: live
        ? `an OTP confirming this transfer was sent to ${body.mobile}`
        : `sandbox: the OTP is in sandbox_otp (in live mode it is sent to ${body.mobile} by SMS)`,
      data: {
        otp_ref: sent.otp.id,
        otp_expires_at: sent.otp.expires_at,
        ...(live ? {} : { sandbox_otp: sent.code }),
        mobile: body.mobile,
        bene_id: body.bene_id,
        amount: microsToUnits(body.amount),
        txn_type: body.txn_type,
        parts: sent.legs.map((amount) => microsToUnits(amount)),
        per_txn_limit: microsToUnits(sent.limits.per_txn_limit),
        kyc_level: sent.limits.level,
      },
    });
  });

  router.get('/dmt/transfers/:parent_id', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const { parent_id } = parseWith(parentParams, req.params);
    await store.readDurable();
    const parent = store.get('dmt_transfers', parent_id);
    if (!parent || parent.account_id !== account.id)
      throw notFound(`no split transfer ${parent_id}`, 'transfer_not_found');
    send(res, splitAnswer(ctx, parent));
  });
}

/** Registering a remitter by OTP, verifying it, and reading it with this month's limit. */
function remitterRoutes(router: Router, ctx: PaymentsContext, json: RequestHandler): void {
  const { store, logger, settings, config, clock } = ctx;
  const dmt = settings.dmt;
  const live = config.mode === 'live';
  const otp = otpBody(dmt.otp.digits);

  router.post('/dmt/remitter', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(remitterBody, req.body ?? {});
    // A provider that registers remitters itself (Eko's customer OTP) sends and checks the code.
    const at = remitterProvider(ctx);
    const { remitter, otp } = at
      ? await requestRemitterAtProvider(ctx, account, body, at)
      : await requestRemitterOtp(ctx, account, body);
    const view = remitterView(
      remitter,
      dmt,
      await usedMicrosLoaded(ctx, remitter.mobile, clock.now()),
    );
    if (otp === null) {
      res.json({
        status: true,
        message: `remitter ${remitter.mobile} is verified already`,
        data: { ...view, otp_required: false },
      });
      return;
    }
    res.json({
      status: true,
      message: at
        ? `${at.name} sent an OTP to ${remitter.mobile}`
        : live
          ? `an OTP was sent to ${remitter.mobile}`
          : `sandbox: the OTP is in sandbox_otp (in live mode it is sent to ${remitter.mobile} by SMS)`,
      data: {
        ...view,
        otp_required: true,
        otp_expires_at: (remitter.otp ?? remitter.otp_at)!.expires_at,
        ...(live || at ? {} : { sandbox_otp: otp }),
      },
    });
  });

  router.post('/dmt/remitter/verify', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(otp, req.body ?? {});
    const at = remitterProvider(ctx);
    const remitter = at
      ? await verifyRemitterAtProvider(ctx, account, body, at)
      : await verifyRemitterOtp(ctx, account, body);
    res.json({
      status: true,
      message: `remitter ${remitter.mobile} verified`,
      data: remitterView(remitter, dmt, await usedMicrosLoaded(ctx, remitter.mobile, clock.now())),
    });
  });

  router.get('/dmt/remitter/:mobile', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const mobile = parseWith(mobileParams, req.params).mobile;
    await store.readDurable();
    const remitter = requireRemitter(store, account.id, mobile);
    res.json({
      status: true,
      data: remitterView(remitter, dmt, await usedMicrosLoaded(ctx, mobile, clock.now())),
    });
  });
}

/** A remitter's beneficiaries: add, list, delete, and verify by a penny-drop. */
function beneficiaryRoutes(router: Router, ctx: PaymentsContext, json: RequestHandler): void {
  const { store, logger } = ctx;

  router.post('/dmt/beneficiary', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const body = parseWith(beneficiaryBody, req.body ?? {});
    const bene = await addBeneficiary(ctx, account, body);
    res.json({
      status: true,
      message: `beneficiary ${bene.name} added`,
      data: beneficiaryView(bene),
    });
  });

  router.get('/dmt/beneficiary', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const { mobile } = parseWith(beneficiaryListQuery, req.query);
    await store.readDurable();
    const remitter = requireRemitter(store, account.id, mobile);
    const list = remitter.beneficiary_ids
      .map((id) => store.get('dmt_beneficiaries', id))
      .filter((b): b is Beneficiary => b !== undefined);
    res.json({ status: true, data: list.map(beneficiaryView) });
  });

  router.delete('/dmt/beneficiary/:bene_id', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const bene_id = parseWith(beneIdParams, req.params).bene_id;
    const removed = await deleteBeneficiary(ctx, account, bene_id);
    res.json({
      status: true,
      message: `beneficiary ${removed.name} deleted`,
      data: { bene_id, deleted: true },
    });
  });

  router.post('/dmt/beneficiary/:bene_id/verify', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const bene_id = parseWith(beneIdParams, req.params).bene_id;
    const body = parseWith(verifyBody, req.body ?? {});
    const request = {
      idempotency_key: idempotencyKey(req, body.client_ref),
      client_ref: body.client_ref ?? null,
    };
    send(res, await verifyBeneficiary(ctx, account, bene_id, request));
  });
}

/** A failed transfer's refund with the customer's OTP: ask for the OTP, then confirm with it. */
function refundRoutes(router: Router, ctx: PaymentsContext, json: RequestHandler): void {
  const { store, logger, settings, config } = ctx;
  const live = config.mode === 'live';
  const confirm = refundBody(settings.dmt.otp.digits);

  router.post('/dmt/refund/:txn_id/otp', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const txn_id = parseWith(txnIdParams, req.params).txn_id;
    parseWith(refundOtpBody, req.body ?? {});
    res.locals.txn_id = txn_id;
    const sent = await requestRefundOtp(ctx, account, txn_id);
    res.json({
      status: true,
      message: live
        ? `an OTP was sent to the remitter ${sent.mobile}; the refund is credited when it is entered`
        : `sandbox: the OTP is in sandbox_otp (in live mode it is sent to the remitter ${sent.mobile} by SMS)`,
      data: {
        txn_id,
        status: sent.txn.status,
        mobile: sent.mobile,
        amount: microsToUnits(sent.txn.amount_micros),
        otp_expires_at: sent.expires_at,
        ...(live ? {} : { sandbox_otp: sent.otp }),
      },
    });
  });

  router.post('/dmt/refund/:txn_id', json, async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, 'dmt');
    const txn_id = parseWith(txnIdParams, req.params).txn_id;
    const body = parseWith(confirm, req.body ?? {});
    res.locals.txn_id = txn_id;
    const txn = await confirmRefund(ctx, account, txn_id, body.otp);
    res.json({
      status: true,
      message: `transfer ${txn.id} refunded to the wallet with the customer's consent`,
      data: {
        txn_id: txn.id,
        status: txn.status,
        refund: txn.refund
          ? { posting_id: txn.refund.posting_id, amount: microsToUnits(txn.refund.amount_micros) }
          : null,
        balance: microsToUnits(balanceMicros(store.state, account.id)),
      },
    });
  });
}

function send(res: Response, answer: Answer): void {
  res.locals.txn_id = (answer.body as { txn_id?: string }).txn_id;
  res.status(answer.http_status).json(answer.body);
}

/** The administrator sets a verified remitter's KYC level (its limits): PUT /admin/dmt/remitters/:account_id/:mobile/level. */
export function dmtAdminRouter(ctx: PaymentsContext): Router {
  const router = Router();
  const params = z.object({
    account_id: z.string().regex(/^acc_[0-9a-f]{24}$/, 'is not an account id'),
    mobile: mobileField,
  });
  router.put('/dmt/remitters/:account_id/:mobile/level', async (req, res) => {
    const { account_id, mobile } = parseWith(params, req.params);
    const { level } = parseWith(remitterLevelBody, req.body ?? {});
    const remitter = await setRemitterLevel(ctx, account_id, mobile, level);
    res.json(
      remitterView(
        remitter,
        ctx.settings.dmt,
        await usedMicrosLoaded(ctx, mobile, ctx.clock.now()),
      ),
    );
  });
  return router;
}
