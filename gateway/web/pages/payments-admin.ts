// Admin console pages over the payments room: the eKYC review queue (approve, or reject
// with a reason), service activation and IP whitelists on the account page. The actions
// go through the payments room's own admin handlers (payments-bridge.ts).
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import type { Account } from '../../store/state.js';
import type { ServiceSummary } from '../../payments/context.js';
import { submissionView } from '../../payments/shared/kyc-view.js';
import { duplicatesOf, type KycDuplicates } from '../../payments/identity/duplicates.js';
import { MAX_WHITELIST_ENTRIES } from '../../accounts/ip-whitelist.js';
import {
  fieldError,
  formErrors,
  invalidAttrs,
  type AccountSectionInput,
  type WebContext,
} from '../context.js';
import { formatTimestamp } from '../format.js';
import { html, raw } from '../html.js';
import { csrfField, type Notice } from '../layout.js';
import { callPaymentsAdmin, streamPaymentsAdmin } from '../payments-bridge.js';
import { sessionBinding, type CurrentSession } from '../sessions.js';
import {
  adminState,
  kycPill,
  renderAccountWithErrors,
  requireAccountOr404,
  sendAdminPage,
  stringValues,
} from './admin.js';

const statusQuery = z.object({
  status: z.enum(['submitted', 'approved', 'rejected']).catch('submitted').default('submitted'),
  page: z.coerce.number().int().min(1).max(1_000_000).catch(1).default(1),
});
const KYC_PAGE_ROWS = 50;
const approveForm = z.object({
  reason: z.string().trim().max(500, 'Use at most 500 characters').optional(),
});
const rejectForm = z.object({
  reason: z
    .string()
    .trim()
    .min(1, 'A rejection needs a reason the customer can act on')
    .max(500, 'Use at most 500 characters'),
});
const whitelistForm = z.object({
  ips: z
    .string()
    .max(8_000, 'The list is too long')
    .transform((text) => text.split(/[\s,]+/).filter(Boolean))
    .refine(
      (list) => list.length <= MAX_WHITELIST_ENTRIES,
      `At most ${MAX_WHITELIST_ENTRIES} entries`,
    ),
  force: z.literal('on').optional(),
});
const docParam = z.string().regex(/^doc_[0-9a-f]{24}$/);

function errorText(error: unknown): string | null {
  return error instanceof ApiError ? error.message : null;
}

/** The account's switches of the payment services the payments room serves (Payments.services). */
function servicesSection(services: readonly ServiceSummary[], input: AccountSectionInput) {
  const { account, csrf } = input;
  const approved = account.kyc_status === 'approved';
  const error = input.form === 'services' ? input.errors?._form : undefined;
  return html`<section class="card" aria-labelledby="services-title">
<h2 id="services-title">Payments services</h2>
<p class="small muted">eKYC: ${kycPill(account.kyc_status)} ${approved ? '' : '— services can be activated only after the eKYC is approved.'} ${account.kyc_status === 'submitted' ? html`<a href="/admin/console/kyc">Review it</a>.` : ''}</p>
<form method="post" action="/admin/console/accounts/${account.id}/services">
${csrfField(csrf)}
<fieldset class="checks"><legend>Active services</legend>
${services.map(
  ({ code, label }) =>
    html`<label><input type="checkbox" name="${code}" value="on"${account.services[code] ? html` checked` : ''}> ${label}</label>`,
)}
</fieldset>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<button type="submit" class="secondary">Save services</button>
</form>
</section>`;
}

function whitelistSection(input: AccountSectionInput) {
  const { account, csrf } = input;
  const errors = input.form === 'ip-whitelist' ? input.errors : undefined;
  const value =
    input.form === 'ip-whitelist' ? (input.values.ips ?? '') : account.ip_whitelist.join('\n');
  return html`<section class="card" aria-labelledby="ip-title">
<h2 id="ip-title">IP whitelist</h2>
<form method="post" action="/admin/console/accounts/${account.id}/ip-whitelist" novalidate>
${csrfField(csrf)}
<div class="field"><label for="ips">Addresses allowed to call the payments API<span class="hint" id="ips-hint">One address or CIDR range per line (203.0.113.7, 10.0.0.0/8, 2001:db8::/32). Empty: any address.</span></label>
<textarea id="ips" name="ips" rows="4"${invalidAttrs(errors, 'ips', 'ips-hint')}>${value}</textarea>${fieldError(errors, 'ips')}</div>
<div class="field"><label><input type="checkbox" name="force"${input.form === 'ip-whitelist' && input.values.force === 'on' ? raw(' checked') : ''}> Allow very wide ranges (wider than the configured minimum prefix)</label></div>
<button type="submit" class="secondary">Save whitelist</button>
</form>
</section>`;
}

/** Signed /api requests: the account turns them on itself (its secret is its own); an admin sees the state and can turn them off. */
function signingSection(input: AccountSectionInput) {
  const { account, csrf } = input;
  const signing = account.signing ?? null;
  return html`<section class="card" aria-labelledby="signing-title">
<h2 id="signing-title">Request signing</h2>
<p>${signing ? html`<span class="pill ok" data-signing="on">on since ${formatTimestamp(signing.created_at)}</span>` : html`<span class="pill" data-signing="off">off</span>`} Every payments API call of this account ${signing ? 'must be' : 'need not be'} signed (X-AIHub-Signature).</p>
${
  signing
    ? html`<form method="post" action="/admin/console/accounts/${account.id}/signing/disable" data-confirm="Turn request signing off for this account? Unsigned requests with its keys are accepted again.">${csrfField(csrf)}<button type="submit" class="secondary">Turn off</button></form>`
    : html`<p class="small muted">The account turns it on from its API keys page, or an admin with <code>POST /admin/accounts/${account.id}/signing-secret</code>.</p>`
}
</section>`;
}

/**
 * The submissions of one status, a page of them, in the order they took it (for the queue:
 * the order they were submitted): read through the status index, as GET /admin/kyc does,
 * never by filtering and sorting every submission.
 */
/** A page of one status's submissions, each with the other accounts of its Aadhaar and PAN. */
function kycSubmissions(ctx: WebContext, status: KycStatus, page_asked: number) {
  const { store } = ctx.deps;
  return store.read(() => {
    const ids = store.indexBy('kyc_submissions', 'status').ids(status);
    const pages = Math.max(1, Math.ceil(ids.size / KYC_PAGE_ROWS));
    const page = Math.min(page_asked, pages);
    const rows: Array<ReturnType<typeof submissionView> & { duplicates: KycDuplicates }> = [];
    let skip = (page - 1) * KYC_PAGE_ROWS;
    for (const id of ids) {
      if (skip-- > 0) continue;
      const submission = store.get('kyc_submissions', id);
      if (submission)
        rows.push({ ...submissionView(submission), duplicates: duplicatesOf(store, submission) });
      if (rows.length === KYC_PAGE_ROWS) break;
    }
    return { rows, page, pages };
  });
}

/** The flag beside an Aadhaar number or PAN that other accounts carry too (links to them). */
function sharedWith(what: string, found: KycDuplicates['pan']) {
  if (found.count === 0) return '';
  const more = found.count - found.accounts.length;
  return html` <span class="pill warn" data-duplicate="${what}">also on ${found.count} other account${found.count === 1 ? '' : 's'}:</span> ${found.accounts.map(
    (other) =>
      html`<a href="/admin/console/accounts/${other.account_id}">${other.account_id}</a> (${other.status}) `,
  )}${more > 0 ? `and ${more} more` : ''}`;
}

type KycStatus = 'submitted' | 'approved' | 'rejected';

async function kycPage(ctx: WebContext, csrf: string, query: { status: KycStatus; page: number }) {
  const { status } = query;
  const { rows: submissions, page, pages } = await kycSubmissions(ctx, status, query.page);
  const link = (p: number) => `/admin/console/kyc?status=${status}&page=${p}`;
  const tabs = (['submitted', 'approved', 'rejected'] as const).map(
    (name) =>
      html`<li><a href="/admin/console/kyc?status=${name}"${name === status ? html` aria-current="page"` : ''}>${name === 'submitted' ? 'Waiting for review' : name}</a></li>`,
  );
  return html`<h1>eKYC review</h1>
<p class="lead">Check the identity documents, then approve, or reject with a reason. Services are activated on the account page after approval.</p>
<nav class="main card" aria-label="eKYC status"><ul>${tabs}</ul></nav>
${
  submissions.length === 0
    ? html`<section class="card"><p class="empty">No ${status === 'submitted' ? 'submissions are waiting' : `${status} submissions`}.</p></section>`
    : submissions.map((submission) => {
        const account = ctx.deps.store.get('accounts', submission.account_id);
        const id = submission.account_id;
        return html`<section class="card" aria-labelledby="kyc-${id}">
<h2 id="kyc-${id}"><a href="/admin/console/accounts/${id}">${account?.email ?? id}</a> ${kycPill(submission.status)}</h2>
<dl class="facts">
<dt>Name</dt><dd>${submission.name}</dd>
<dt>Aadhaar</dt><dd><span class="mono">${submission.aadhaar_number}</span>${sharedWith('aadhaar', submission.duplicates.aadhaar)}</dd>
<dt>PAN</dt><dd><span class="mono">${submission.pan_number}</span>${sharedWith('pan', submission.duplicates.pan)}</dd>
<dt>GSTIN</dt><dd class="mono">${submission.gstin ?? '—'}</dd>
<dt>Submitted</dt><dd>${formatTimestamp(submission.submitted_at)}${submission.submissions > 1 ? ` (submission ${submission.submissions})` : ''}</dd>
${submission.reviewed_at ? html`<dt>Reviewed</dt><dd>${formatTimestamp(submission.reviewed_at)}</dd>` : ''}
${submission.reason ? html`<dt>Reason</dt><dd>${submission.reason}</dd>` : ''}
<dt>Documents</dt><dd>${
          submission.documents.length
            ? html`<ul>${submission.documents.map(
                (document) =>
                  html`<li><a href="/admin/console/kyc/${id}/documents/${document.id}">${document.kind}: ${document.filename}</a> <span class="small muted">(${document.content_type}, ${Math.ceil(document.size_bytes / 1024)} KB)</span></li>`,
              )}</ul>`
            : html`<span class="muted">none uploaded</span>`
        }</dd>
</dl>
${
  submission.status === 'submitted'
    ? html`<div class="grid mt">
<form method="post" action="/admin/console/kyc/${id}/approve">${csrfField(csrf)}
<div class="field"><label for="approve-${id}">Note (optional)</label><input id="approve-${id}" name="reason" type="text" maxlength="500"></div>
<button type="submit">Approve ${account?.email ?? id}</button></form>
<form method="post" action="/admin/console/kyc/${id}/reject" novalidate>${csrfField(csrf)}
<div class="field"><label for="reject-${id}">Reason for rejection</label><input id="reject-${id}" name="reason" type="text" maxlength="500" required></div>
<button type="submit" class="danger">Reject ${account?.email ?? id}</button></form>
</div>`
    : ''
}
</section>`;
      })
}
${pages > 1 ? html`<nav class="pager" aria-label="eKYC pages">${page > 1 ? html`<a class="button secondary small" href="${link(page - 1)}">Previous</a>` : ''}<span class="small muted">Page ${page} of ${pages}</span>${page < pages ? html`<a class="button secondary small" href="${link(page + 1)}">Next</a>` : ''}</nav>` : ''}`;
}

export function paymentsAdminRoutes(ctx: WebContext, router: Router): void {
  const services = ctx.deps.payments?.services ?? [];
  ctx.admin_nav.push({ href: '/admin/console/kyc', label: 'eKYC review' });
  ctx.admin_account_sections.push(
    (input) =>
      html`<div class="grid">${servicesSection(services, input)}${whitelistSection(input)}</div>${signingSection(input)}`,
  );
  kycReviewRoutes(ctx, router);
  const flash = adminFlash(ctx);
  servicesRoute(ctx, router, flash, services);

  router.post(
    '/console/accounts/:id/signing/disable',
    ...ctx.postGuard('admin'),
    async (req, res) => {
      const account = requireAccountOr404(ctx, req.params.id);
      await callPaymentsAdmin(
        ctx,
        req,
        res,
        'DELETE',
        `/accounts/${account.id}/signing-secret`,
        {},
      );
      flash(res, { kind: 'ok', text: `Request signing is off for ${account.email}.` });
      res.redirect(303, `/admin/console/accounts/${account.id}`);
    },
  );

  router.post('/console/accounts/:id/ip-whitelist', ...ctx.postGuard('admin'), async (req, res) => {
    const account = requireAccountOr404(ctx, req.params.id);
    const values = stringValues(req.body);
    const parsed = whitelistForm.safeParse(req.body ?? {});
    if (!parsed.success)
      return renderAccountWithErrors(
        ctx,
        res,
        account,
        422,
        'ip-whitelist',
        formErrors(parsed.error),
        values,
      );
    try {
      await callPaymentsAdmin(ctx, req, res, 'PUT', `/accounts/${account.id}/ip-whitelist`, {
        ips: parsed.data.ips,
        ...(parsed.data.force ? { force: true } : {}),
      });
    } catch (error) {
      const message = errorText(error);
      if (!message) throw error;
      return renderAccountWithErrors(
        ctx,
        res,
        account,
        error instanceof ApiError ? error.status : 400,
        'ip-whitelist',
        { ips: message },
        values,
      );
    }
    flash(res, {
      kind: 'ok',
      text: parsed.data.ips.length
        ? `IP whitelist saved (${parsed.data.ips.length} entr${parsed.data.ips.length === 1 ? 'y' : 'ies'}).`
        : 'IP whitelist cleared: any address may call.',
    });
    res.redirect(303, `/admin/console/accounts/${account.id}`);
  });
}

export function adminFlash(ctx: WebContext) {
  return (res: Response, notice: Notice) =>
    ctx.setFlash(sessionBinding((res.locals.web_session as CurrentSession).token_hash), notice);
}

/** The eKYC review queue: the list, the documents, approve and reject. */
function kycReviewRoutes(ctx: WebContext, router: Router): void {
  const guard = ctx.requireSession('admin');
  const flash = adminFlash(ctx);

  router.get('/console/kyc', guard, async (req, res) => {
    await ctx.deps.store.readDurable();
    const state = await adminState(ctx, res);
    sendAdminPage(ctx, res, state, 200, {
      title: 'eKYC review',
      current: '/admin/console/kyc',
      body: await kycPage(ctx, state.csrf, statusQuery.parse(req.query)),
    });
  });

  router.get('/console/kyc/:account/documents/:doc', guard, async (req, res) => {
    const account = requireAccountOr404(ctx, req.params.account);
    const doc = docParam.safeParse(req.params.doc);
    if (!doc.success) throw new ApiError(404, 'document_not_found', 'There is no such document.');
    await streamPaymentsAdmin(ctx, req, res, `/kyc/${account.id}/documents/${doc.data}`);
  });

  const review = (decision: 'approve' | 'reject') => async (req: Request, res: Response) => {
    const account = requireAccountOr404(ctx, req.params.account);
    const parsed = (decision === 'approve' ? approveForm : rejectForm).safeParse(req.body ?? {});
    if (!parsed.success) {
      flash(res, {
        kind: 'error',
        text: `${account.email}: ${Object.values(formErrors(parsed.error))[0]}`,
      });
      return res.redirect(303, '/admin/console/kyc');
    }
    const body = parsed.data.reason ? { reason: parsed.data.reason } : {};
    try {
      await callPaymentsAdmin(ctx, req, res, 'POST', `/kyc/${account.id}/${decision}`, body);
      flash(res, {
        kind: 'ok',
        text:
          decision === 'approve'
            ? `eKYC of ${account.email} approved. Activate its services on the account page.`
            : `eKYC of ${account.email} rejected.`,
      });
    } catch (error) {
      const message = errorText(error);
      if (!message) throw error;
      flash(res, { kind: 'error', text: message });
    }
    res.redirect(
      303,
      decision === 'approve' ? `/admin/console/accounts/${account.id}` : '/admin/console/kyc',
    );
  };
  router.post('/console/kyc/:account/approve', ...ctx.postGuard('admin'), review('approve'));
  router.post('/console/kyc/:account/reject', ...ctx.postGuard('admin'), review('reject'));
}

/** POST /console/accounts/:id/services: which payments services the account may use. */
function servicesRoute(
  ctx: WebContext,
  router: Router,
  flash: ReturnType<typeof adminFlash>,
  services: readonly ServiceSummary[],
): void {
  const codes = services.map((service) => service.code);
  router.post('/console/accounts/:id/services', ...ctx.postGuard('admin'), async (req, res) => {
    const account: Account = requireAccountOr404(ctx, req.params.id);
    const form = (req.body ?? {}) as Record<string, unknown>;
    const body = Object.fromEntries(codes.map((code) => [code, form[code] === 'on']));
    try {
      await callPaymentsAdmin(ctx, req, res, 'POST', `/accounts/${account.id}/services`, body);
    } catch (error) {
      const message = errorText(error);
      if (!message) throw error;
      return renderAccountWithErrors(
        ctx,
        res,
        account,
        error instanceof ApiError ? error.status : 400,
        'services',
        { _form: message },
        {},
      );
    }
    const on = codes.filter((code) => body[code]);
    flash(res, {
      kind: 'ok',
      text: `Payments services saved: ${on.length ? on.join(', ') : 'none active'}.`,
    });
    res.redirect(303, `/admin/console/accounts/${account.id}`);
  });
}
