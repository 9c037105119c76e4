// Admin console pages over the distribution network: the commission schemes (each with its
// slabs; a new scheme from its slabs as JSON), and on the account page its place in the
// network (role, distributor, scheme, retailers) with a form to change it and its tax
// documents to download. Changes go through the payments room's own admin handlers
// (payments-bridge.ts): the same validation and audit as the JSON admin API.
import type { Router } from 'express';
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import { microsToUnits } from '../../util/money.js';
import type { CommissionScheme } from '../../payments/network/schemes.js';
import type { AccountSectionInput, WebContext } from '../context.js';
import { html, type Html } from '../html.js';
import { csrfField } from '../layout.js';
import { callPaymentsAdmin, streamPaymentsAdmin } from '../payments-bridge.js';
import { adminState, requireAccountOr404, sendAdminPage } from './admin.js';
import { adminFlash } from './payments-admin.js';

const networkForm = z.object({
  role: z.enum(['retailer', 'distributor']),
  parent_id: z.string().trim().max(100).optional(),
  scheme_id: z.string().trim().max(100).optional(),
});
const schemeForm = z.object({
  name: z.string().trim().min(1).max(100),
  slabs: z.string().max(100_000),
});
const documentQuery = z.object({
  kind: z.enum(['commission', 'tds']).catch('commission'),
  month: z.string().max(7).optional(),
  fy: z.string().max(7).optional(),
  quarter: z.string().max(2).optional(),
  format: z.enum(['pdf', 'csv']).catch('pdf'),
});

const errorText = (error: unknown) =>
  error instanceof ApiError ? error.message : error instanceof SyntaxError ? error.message : null;

function slabRows(scheme: CommissionScheme): Html {
  return html`<div class="table-wrap"><table><thead><tr><th scope="col">Slab</th><th scope="col">Service</th><th scope="col">Operator</th><th scope="col" class="num">From</th><th scope="col" class="num">To</th><th scope="col" class="num">Commission</th></tr></thead><tbody>${scheme.slabs.map(
    (slab) =>
      html`<tr><td class="mono small">${slab.id}</td><td>${slab.service}</td><td>${slab.operator ?? 'any'}</td><td class="num">${microsToUnits(slab.min_micros).toFixed(2)}</td><td class="num">${slab.max_micros === null ? '∞' : microsToUnits(slab.max_micros).toFixed(2)}</td><td class="num">${slab.kind === 'percent' ? `${slab.value / 100} %${slab.cap_micros === null ? '' : `, at most ${microsToUnits(slab.cap_micros).toFixed(2)}`}` : microsToUnits(slab.value).toFixed(2)}</td></tr>`,
  )}</tbody></table></div>`;
}

function networkSection(input: AccountSectionInput): Html {
  const { ctx, account, csrf } = input;
  const store = ctx.deps.store;
  const member = store.get('network', account.id);
  const role = member?.role ?? 'retailer';
  const retailers = [...store.indexBy('network', 'parent_id').ids(account.id)];
  return html`<section class="card" aria-labelledby="network-title">
<h2 id="network-title">Network and commission</h2>
<p class="small muted">Role: <strong>${role}</strong>${member?.parent_id ? html`; distributor <a href="/admin/console/accounts/${member.parent_id}">${member.parent_id}</a>` : ''}; scheme <a href="/admin/console/schemes#${member?.scheme_id ?? 'default'}">${member?.scheme_id ?? 'default'}</a>${role === 'distributor' ? `; ${retailers.length} retailer${retailers.length === 1 ? '' : 's'}` : ''}.</p>
${retailers.length > 0 ? html`<ul class="small">${retailers.slice(0, 50).map((id) => html`<li><a href="/admin/console/accounts/${id}">${store.get('accounts', id)?.email ?? id}</a></li>`)}</ul>` : ''}
<form method="post" action="/admin/console/accounts/${account.id}/network" class="row">
${csrfField(csrf)}
<div class="field"><label for="network-role">Role</label><select id="network-role" name="role"><option value="retailer"${role === 'retailer' ? html` selected` : ''}>retailer</option><option value="distributor"${role === 'distributor' ? html` selected` : ''}>distributor</option></select></div>
<div class="field"><label for="network-parent">Distributor (account id)</label><input id="network-parent" name="parent_id" value="${member?.parent_id ?? ''}"></div>
<div class="field"><label for="network-scheme">Scheme id</label><input id="network-scheme" name="scheme_id" value="${member?.scheme_id ?? ''}" placeholder="default"></div>
<button type="submit" class="secondary">Save</button>
</form>
<form method="get" action="/admin/console/accounts/${account.id}/statement" class="row" aria-label="Commission statement">
<input type="hidden" name="kind" value="commission">
<div class="field"><label for="admin-statement-month">Commission statement of</label><input id="admin-statement-month" name="month" type="month" required></div>
<div class="field"><label for="admin-statement-format">Format</label><select id="admin-statement-format" name="format"><option value="pdf">PDF</option><option value="csv">CSV</option></select></div>
<button type="submit" class="secondary">Download</button>
</form>
<form method="get" action="/admin/console/accounts/${account.id}/statement" class="row" aria-label="TDS statement">
<input type="hidden" name="kind" value="tds">
<div class="field"><label for="admin-tds-fy">TDS statement, financial year</label><input id="admin-tds-fy" name="fy" placeholder="2025-26" required></div>
<div class="field"><label for="admin-tds-quarter">Quarter</label><select id="admin-tds-quarter" name="quarter">${['Q1', 'Q2', 'Q3', 'Q4'].map((q) => html`<option>${q}</option>`)}</select></div>
<button type="submit" class="secondary">Download PDF</button>
</form>
</section>`;
}

async function schemesPage(ctx: WebContext, csrf: string): Promise<Html> {
  // The first 200 schemes in creation order: a page of the table on either store.
  const schemes: CommissionScheme[] = await ctx.deps.store.page('commission_schemes', {
    offset: 0,
    limit: 200,
  });
  const defaults = ctx.deps.payments?.default_scheme;
  return html`<h1>Commission schemes</h1>
<p class="lead">Slabs by service, operator and amount range, flat or percent with a cap. An account without a scheme earns by the default (the catalogue's rates); a distributor's retailers by a scheme within the distributor's.</p>
${[...(defaults ? [defaults] : []), ...schemes].map(
  (scheme) =>
    html`<section class="card" id="${scheme.id}" aria-labelledby="scheme-${scheme.id}"><h2 id="scheme-${scheme.id}">${scheme.name}</h2><p class="small muted mono">${scheme.id}${scheme.owner_id ? html` · of distributor <a href="/admin/console/accounts/${scheme.owner_id}">${scheme.owner_id}</a>` : ''}</p>${slabRows(scheme)}</section>`,
)}
<section class="card" aria-labelledby="new-scheme">
<h2 id="new-scheme">New scheme</h2>
<form method="post" action="/admin/console/schemes">
${csrfField(csrf)}
<div class="field"><label for="scheme-name">Name</label><input id="scheme-name" name="name" required></div>
<div class="field"><label for="scheme-slabs">Slabs (JSON)<span class="hint">[{"id": "airtel", "service": "recharge", "operator": 1, "type": "percent", "value": 3, "cap": 50}]</span></label><textarea id="scheme-slabs" name="slabs" rows="6" required></textarea></div>
<button type="submit">Create scheme</button>
</form>
</section>`;
}

export function networkAdminRoutes(ctx: WebContext, router: Router): void {
  ctx.admin_nav.push({ href: '/admin/console/schemes', label: 'Commission schemes' });
  ctx.admin_account_sections.push(networkSection);
  const guard = ctx.requireSession('admin');
  const flash = adminFlash(ctx);

  router.get('/console/schemes', guard, async (_req, res) => {
    await ctx.deps.store.readDurable();
    const state = await adminState(ctx, res);
    const body = await schemesPage(ctx, state.csrf);
    sendAdminPage(ctx, res, state, 200, {
      title: 'Commission schemes',
      current: '/admin/console/schemes',
      body,
    });
  });

  router.post('/console/schemes', ...ctx.postGuard('admin'), async (req, res) => {
    const parsed = schemeForm.safeParse(req.body ?? {});
    try {
      if (!parsed.success)
        throw new ApiError(400, 'invalid_form', 'A scheme needs a name and slabs');
      const slabs: unknown = JSON.parse(parsed.data.slabs);
      const created = await callPaymentsAdmin(ctx, req, res, 'POST', '/schemes', {
        name: parsed.data.name,
        slabs,
      });
      flash(res, {
        kind: 'ok',
        text: `Scheme ${(created.body as { scheme_id: string }).scheme_id} created.`,
      });
    } catch (error) {
      const message = errorText(error);
      if (message === null) throw error;
      flash(res, { kind: 'error', text: `The scheme was not created: ${message}` });
    }
    res.redirect(303, '/admin/console/schemes');
  });

  router.post('/console/accounts/:id/network', ...ctx.postGuard('admin'), async (req, res) => {
    const account = requireAccountOr404(ctx, req.params.id);
    const parsed = networkForm.safeParse(req.body ?? {});
    try {
      if (!parsed.success) throw new ApiError(400, 'invalid_form', 'Choose a role');
      await callPaymentsAdmin(ctx, req, res, 'PUT', `/accounts/${account.id}/network`, {
        role: parsed.data.role,
        parent_id: parsed.data.parent_id ? parsed.data.parent_id : null,
        scheme_id: parsed.data.scheme_id ? parsed.data.scheme_id : null,
      });
      flash(res, { kind: 'ok', text: `${account.email}: network place saved.` });
    } catch (error) {
      const message = errorText(error);
      if (message === null) throw error;
      flash(res, { kind: 'error', text: `Not saved: ${message}` });
    }
    res.redirect(303, `/admin/console/accounts/${account.id}`);
  });

  router.get('/console/accounts/:id/statement', guard, async (req, res) => {
    const account = requireAccountOr404(ctx, req.params.id);
    const query = documentQuery.parse(req.query);
    const params = new URLSearchParams({ account_id: account.id, format: query.format });
    if (query.kind === 'tds') {
      params.set('fy', query.fy ?? '');
      params.set('quarter', query.quarter ?? '');
    } else params.set('month', query.month ?? '');
    const path = query.kind === 'tds' ? 'tds-statement' : 'commission-statement';
    await streamPaymentsAdmin(ctx, req, res, `/reports/${path}?${params.toString()}`);
  });
}
