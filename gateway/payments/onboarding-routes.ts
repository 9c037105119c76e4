// Onboarding in the seed's order: POST /api/register, then POST/GET /api/kyc.
import { Router, type Request } from 'express';
import { createAccount, createApiKey } from '../accounts/accounts.js';
import { ApiError, conflict, parseWith } from '../http/errors.js';
import { jsonBody } from '../http/body.js';
import { rawBodyOf } from '../http/raw-body.js';
import { RateLimiter } from '../kernel/rate-limit.js';
import { requestSigningOf } from './signing.js';
import { authorize, clientAddress } from './auth.js';
import type { PaymentsContext } from './context.js';
import { registerBody } from './schemas.js';
import { checkDocuments, kycBody, newSubmission, readMultipart, removeDocuments, storeDocuments, submissionView, type UploadedFile } from './kyc.js';
import { hashPassword } from '../accounts/password.js';


export function onboardingRouter(ctx: PaymentsContext): Router {
  const { store, config, logger, settings } = ctx;
  const router = Router();
  const limiter = new RateLimiter({ max: settings.register.per_ip_per_hour, window_ms: 3_600_000, refill: 'sliding' }, { max_keys: 10_000 });

  router.post('/register', jsonBody(config), async (req, res) => {
    const wait_s = limiter.take(clientAddress(req) ?? 'unknown', ctx.clock.now().getTime()).retry_after_s;
    if (wait_s > 0) {
      throw new ApiError(429, 'rate_limit_exceeded', `too many sign-ups from this address; retry in ${wait_s} s`, null, null, { 'retry-after': String(wait_s) });
    }
    const body = parseWith(registerBody, req.body ?? {});
    const password_hash = await hashPassword(body.password);
    const { account, key } = await store.transact((tx) => {
      const account = createAccount(tx, { email: body.email, name: body.name, password_hash });
      return { account, key: createApiKey(tx, store.indexBy('keys', 'account_id'), account.id, 'default') };
    });
    res.locals.account_id = account.id;
    res.status(201).json({
      status: true,
      message: 'registered: submit eKYC next; payments services are activated after its approval',
      data: { account_id: account.id, api_key: key.key, key_prefix: key.record.prefix, services: account.services, kyc_status: account.kyc_status },
    });
  });

  router.post('/kyc', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, undefined, { body_read_later: true });
    // A signed request's body is read here, not before authorize: its signature is settled once it is read.
    const signing = account.signing ? requestSigningOf(res) : null;
    let fields: unknown;
    let files: UploadedFile[] = [];
    if (req.is('multipart/form-data')) {
      const bound = settings.kyc.max_files * settings.kyc.max_file_bytes + 64 * 1024;
      if (Number(req.headers['content-length'] ?? 0) > bound) {
        throw new ApiError(413, 'request_too_large', `the upload is larger than the limit of ${bound} bytes`);
      }
      ({ fields, files } = await readMultipart(req, settings.kyc, signing?.waiting(req) ? (chunk) => signing.update(req, chunk) : undefined));
    } else {
      fields = await parseJson(req, ctx);
      const raw = rawBodyOf(req);
      if (raw && signing?.waiting(req)) signing.update(req, raw);
    }
    signing?.settle(req);
    const body = parseWith(kycBody, fields ?? {});
    const checked = checkDocuments(files);
    const current = store.get('kyc_submissions', account.id);
    refuseResubmission(current?.status);
    const documents = storeDocuments(config.data_dir, account.id, checked, ctx.sealer);
    let submission: ReturnType<typeof newSubmission>;
    try {
      submission = await store.transact((tx) => {
        const previous = tx.get('kyc_submissions', account.id);
        refuseResubmission(previous?.status);
        const next = newSubmission(account.id, body, documents, tx.now.toISOString(), previous);
        tx.set('kyc_submissions', account.id, next);
        tx.set('accounts', account.id, { ...tx.get('accounts', account.id)!, kyc_status: 'submitted' });
        return next;
      });
    } catch (error) {
      removeDocuments(config.data_dir, documents);
      throw error;
    }
    res.json({ status: true, message: 'eKYC submitted for review', data: submissionView(submission) });
  });

  router.get('/kyc', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.readDurable();
    const submission = store.get('kyc_submissions', account.id);
    res.json({ status: true, data: submission ? submissionView(submission) : { status: 'none' } });
  });

  return router;
}

function refuseResubmission(status: string | undefined): void {
  if (status === 'submitted') throw conflict('an eKYC submission is under review already', 'kyc_under_review');
  if (status === 'approved') throw conflict('eKYC is approved already', 'kyc_approved');
}

function parseJson(req: Request, ctx: PaymentsContext): Promise<unknown> {
  return new Promise((resolve, reject) => {
    jsonBody(ctx.config)(req, req.res!, (error?: unknown) => (error ? reject(error) : resolve(req.body)));
  });
}
