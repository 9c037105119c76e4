// Onboarding in the seed's order: POST /api/register, then POST/GET /api/kyc. The routes
// read and validate (multipart or JSON, signed or not), call one command of
// onboarding/commands.ts (where the rules are) and present.
import { Router, type Request, type Response } from 'express';
import { ApiError, parseWith } from '../../http/errors.js';
import { jsonBody } from '../../http/body.js';
import { rawBodyOf } from '../../http/raw-body.js';
import { requestSigningOf } from '../signing.js';
import { authorize, clientAddress } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { registerBody } from './schemas.js';
import {
  discardStaged,
  kycBody,
  readMultipart,
  sweepIncoming,
  type StagedDocument,
} from './kyc.js';
import { onboardingCommands, refuseResubmission } from './commands.js';
import { submissionView } from '../shared/kyc-view.js';

export function onboardingRouter(ctx: PaymentsContext): Router {
  const { store, config, logger, settings } = ctx;
  const router = Router();
  const commands = onboardingCommands(ctx);
  sweepIncoming(config.data_dir); // eKYC uploads a crash cut off

  router.post('/register', jsonBody(config), async (req, res) => {
    commands.admitSignup(clientAddress(req) ?? 'unknown');
    const body = parseWith(registerBody, req.body ?? {});
    const { account, key } = await commands.register(body);
    res.locals.account_id = account.id;
    res.status(201).json({
      status: true,
      message: 'registered: submit eKYC next; payments services are activated after its approval',
      data: {
        account_id: account.id,
        api_key: key.key,
        key_prefix: key.record.prefix,
        services: account.services,
        kyc_status: account.kyc_status,
      },
    });
  });

  const uploads = new UploadCounts(settings.kyc);
  router.post('/kyc', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, undefined, {
      body_read_later: true,
    });
    // What the head decides, before a byte of the body is read: a submission under review or
    // approved is 409 (for an account that signs its requests, only once the signature is
    // checked: nothing is said to an unsigned request), a body over the bound 413, and an
    // account (or the gateway) with as many uploads in flight as allowed 429.
    if (!account.signing) refuseResubmission(store.get('kyc_submissions', account.id)?.status);
    const multipart = Boolean(req.is('multipart/form-data'));
    const bound = settings.kyc.max_files * settings.kyc.max_file_bytes + 64 * 1024;
    if (multipart && Number(req.headers['content-length'] ?? 0) > bound)
      throw new ApiError(
        413,
        'request_too_large',
        `the upload is larger than the limit of ${bound} bytes`,
      );
    const done = uploads.admit(account.id);
    let files: StagedDocument[] = [];
    try {
      let fields: unknown;
      ({ fields, files } = await readKycRequest(req, res, ctx, account, multipart));
      const body = parseWith(kycBody, fields ?? {});
      const staged = files;
      files = []; // submitKyc places them, or discards them when it refuses
      const submission = await commands.submitKyc(account.id, body, staged);
      res.json({
        status: true,
        message: 'eKYC submitted for review',
        data: submissionView(submission),
      });
    } finally {
      discardStaged(files);
      done();
    }
  });

  router.get('/kyc', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.readDurable();
    const submission = store.get('kyc_submissions', account.id);
    res.json({ status: true, data: submission ? submissionView(submission) : { status: 'none' } });
  });

  return router;
}

/**
 * eKYC requests in flight, per account and in all: each is a body of up to max_files ×
 * max_file_bytes being read and written to disk, so how many may run at once is bounded
 * (429 `too_many_uploads` with Retry-After beyond).
 */
class UploadCounts {
  private readonly by_account = new Map<string, number>();
  private total = 0;

  constructor(private readonly limits: { max_uploads_per_account: number; max_uploads: number }) {}

  /** Counts one upload of `account_id` in; the returned function counts it out. */
  admit(account_id: string): () => void {
    const mine = this.by_account.get(account_id) ?? 0;
    if (mine >= this.limits.max_uploads_per_account || this.total >= this.limits.max_uploads)
      throw new ApiError(
        429,
        'too_many_uploads',
        mine >= this.limits.max_uploads_per_account
          ? `this account has ${mine} eKYC upload${mine === 1 ? '' : 's'} in progress; send the next when it is done`
          : 'the gateway is reading as many eKYC uploads as it takes at once; retry shortly',
        null,
        'rate_limit_exceeded',
        { 'Retry-After': '1' },
      );
    this.by_account.set(account_id, mine + 1);
    this.total++;
    let counted = true;
    return () => {
      if (!counted) return;
      counted = false;
      this.total--;
      const left = (this.by_account.get(account_id) ?? 1) - 1;
      if (left === 0) this.by_account.delete(account_id);
      else this.by_account.set(account_id, left);
    };
  }
}

/**
 * The submission's fields and its documents staged to disk, from a multipart or a JSON body.
 * A signed request's body is read here, not before authorize: its signature is settled (and
 * claimed where every gateway sees it) once the body is read.
 */
async function readKycRequest(
  req: Request,
  res: Response,
  ctx: PaymentsContext,
  account: { id: string; signing?: unknown },
  multipart: boolean,
): Promise<{ fields: unknown; files: StagedDocument[] }> {
  const signing = account.signing ? requestSigningOf(res) : null;
  let fields: unknown;
  let files: StagedDocument[] = [];
  if (multipart) {
    ({ fields, files } = await readMultipart(
      req,
      ctx.settings.kyc,
      { data_dir: ctx.config.data_dir, account_id: account.id, sealer: ctx.sealer },
      signing?.waiting(req) ? (chunk) => signing.update(req, chunk) : undefined,
    ));
  } else {
    fields = await parseJson(req, ctx);
    const raw = rawBodyOf(req);
    if (raw && signing?.waiting(req)) signing.update(req, raw);
  }
  try {
    signing?.settle(req);
    await signing?.claimShared(req); // before anything is stored: a replay on another gateway is refused
  } catch (error) {
    discardStaged(files);
    throw error;
  }
  return { fields, files };
}

function parseJson(req: Request, ctx: PaymentsContext): Promise<unknown> {
  return new Promise((resolve, reject) => {
    jsonBody(ctx.config)(req, req.res!, (error?: unknown) =>
      error ? reject(error) : resolve(req.body),
    );
  });
}
