// Onboarding in the seed's order: POST /api/register, then POST/GET /api/kyc. The routes
// read and validate (multipart or JSON, signed or not), call one command of
// onboarding/commands.ts (where the rules are) and present.
import { Router, type Request } from 'express';
import { ApiError, parseWith } from '../../http/errors.js';
import { jsonBody } from '../../http/body.js';
import { rawBodyOf } from '../../http/raw-body.js';
import { requestSigningOf } from '../signing.js';
import { authorize, clientAddress } from '../auth.js';
import type { PaymentsContext } from '../context.js';
import { registerBody } from './schemas.js';
import { kycBody, readMultipart, submissionView, type UploadedFile } from './kyc.js';
import { onboardingCommands } from './commands.js';

export function onboardingRouter(ctx: PaymentsContext): Router {
  const { store, config, logger, settings } = ctx;
  const router = Router();
  const commands = onboardingCommands(ctx);

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

  router.post('/kyc', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger, undefined, {
      body_read_later: true,
    });
    // A signed request's body is read here, not before authorize: its signature is settled once it is read.
    const signing = account.signing ? requestSigningOf(res) : null;
    let fields: unknown;
    let files: UploadedFile[] = [];
    if (req.is('multipart/form-data')) {
      const bound = settings.kyc.max_files * settings.kyc.max_file_bytes + 64 * 1024;
      if (Number(req.headers['content-length'] ?? 0) > bound) {
        throw new ApiError(
          413,
          'request_too_large',
          `the upload is larger than the limit of ${bound} bytes`,
        );
      }
      ({ fields, files } = await readMultipart(
        req,
        settings.kyc,
        signing?.waiting(req) ? (chunk) => signing.update(req, chunk) : undefined,
      ));
    } else {
      fields = await parseJson(req, ctx);
      const raw = rawBodyOf(req);
      if (raw && signing?.waiting(req)) signing.update(req, raw);
    }
    signing?.settle(req);
    await signing?.claimShared(req); // before anything is stored: a replay on another gateway is refused
    const body = parseWith(kycBody, fields ?? {});
    const submission = await commands.submitKyc(account.id, body, files);
    res.json({
      status: true,
      message: 'eKYC submitted for review',
      data: submissionView(submission),
    });
  });

  router.get('/kyc', async (req, res) => {
    const { account } = authorize(store.state, req, res, logger);
    await store.readDurable();
    const submission = store.get('kyc_submissions', account.id);
    res.json({ status: true, data: submission ? submissionView(submission) : { status: 'none' } });
  });

  return router;
}

function parseJson(req: Request, ctx: PaymentsContext): Promise<unknown> {
  return new Promise((resolve, reject) => {
    jsonBody(ctx.config)(req, req.res!, (error?: unknown) =>
      error ? reject(error) : resolve(req.body),
    );
  });
}
