// The admin console under /admin: an admin logs in with the admin token (a cookie session
// of its own, path /admin), then manages accounts, keys, credits and reads the audit log.
// The JSON admin API keeps every other /admin path (bearer auth); nothing here collides.
import { keySpends } from './key-limits-form.js';
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { accountView, revokeApiKey } from '../../accounts/accounts.js';
import { adjustWallet } from '../../accounts/adjustments.js';
import { matchesHash } from '../../accounts/keys.js';
import { ApiError } from '../../http/errors.js';
import { balanceMicros } from '../../ledger/ledger.js';
import type { Account } from '../../store/state.js';
import { audit } from '../audit.js';
import {
  fieldError,
  formErrors,
  invalidAttrs,
  safeNext,
  type AccountSectionInput,
  type FormErrors,
  type WebContext,
} from '../context.js';
import { formatMoney, formatTimestamp } from '../format.js';
import { html, type Html } from '../html.js';
import { csrfField, type NavItem, type Notice } from '../layout.js';
import { sessionBinding, type CurrentSession } from '../sessions.js';
import { accountKeys, keyStatsOf, keysTable } from './keys.js';
import { moneyField } from './wallet.js';

const PAGE_ROWS = 50;
export const CREDIT_MAX_MICROS = 100_000_000 * 1_000_000;

const accountIdParam = z.string().regex(/^acc_[0-9a-f]{24}$/);
const keyIdParam = z.string().regex(/^key_[0-9a-f]{24}$/);
const adminLoginForm = z.object({
  token: z.string().min(1, 'Enter the admin token').max(500),
  next: z.string().max(500).optional(),
});
const listQuery = z.object({
  q: z.string().trim().max(254).catch('').default(''),
  page: z.coerce.number().int().min(1).max(1_000_000).catch(1).default(1),
  /** A search's place in the accounts, newest first (from its pager). */
  from: z.coerce.number().int().min(0).max(100_000_000).catch(0).default(0),
});
const auditQuery = z.object({
  account: z.string().trim().max(100).catch('').default(''),
  page: z.coerce.number().int().min(1).max(1_000_000).catch(1).default(1),
});
export function creditForm(currency: string) {
  return z.object({
    amount: moneyField(10_000, CREDIT_MAX_MICROS, currency),
    reference: z
      .string()
      .trim()
      .min(1, 'Enter the payment reference (bank reference, invoice number)')
      .max(128, 'Use at most 128 characters'),
    memo: z.string().trim().max(200, 'Use at most 200 characters').optional(),
  });
}
const statusForm = z.object({ status: z.enum(['active', 'disabled']) });

export interface AdminState {
  session: CurrentSession;
  csrf: string;
}

export function adminNav(ctx: WebContext): NavItem[] {
  const items: NavItem[] = [{ href: '/admin/console', label: 'Accounts' }];
  for (const extra of ctx.admin_nav) items.push(extra);
  items.push({ href: '/admin/console/audit', label: 'Audit log' });
  return items;
}

export async function adminState(ctx: WebContext, res: Response): Promise<AdminState> {
  const session = res.locals.web_session as CurrentSession;
  return { session, csrf: await ctx.sessions.csrfToken(sessionBinding(session.token_hash)) };
}

export function sendAdminPage(
  ctx: WebContext,
  res: Response,
  state: AdminState,
  status: number,
  options: { title: string; current: string; body: Html; notice?: Notice | null },
): void {
  ctx.send(res, status, {
    title: options.title,
    area: 'admin',
    current: options.current,
    nav: adminNav(ctx),
    who: { label: 'Administrator', logout_action: '/admin/logout', csrf: state.csrf },
    notice: options.notice ?? ctx.takeFlash(sessionBinding(state.session.token_hash)),
    body: options.body,
  });
}

export function kycPill(status: Account['kyc_status']): Html {
  const kind =
    status === 'approved'
      ? 'ok'
      : status === 'submitted'
        ? 'warn'
        : status === 'rejected'
          ? 'bad'
          : '';
  return html`<span class="pill ${kind}">${status === 'none' ? 'not submitted' : status}</span>`;
}

function servicesText(account: Account): string {
  const on = Object.entries(account.services)
    .filter(([, enabled]) => enabled)
    .map(([name]) => name);
  return on.length ? on.join(', ') : 'none';
}

function loginPage(csrf: string, errors: FormErrors | undefined, next: string | undefined) {
  return html`<h1>Admin console</h1>
<p class="lead">Log in with the admin token (<code>AIHUB_ADMIN_TOKEN</code>, or the one printed at the first start).</p>
<div class="card">
<form method="post" action="/admin/login" novalidate>
${csrfField(csrf)}
${next ? html`<input type="hidden" name="next" value="${next}">` : ''}
<div class="field"><label for="token">Admin token</label><input id="token" name="token" type="password" autocomplete="current-password" required${invalidAttrs(errors, 'token')}>${fieldError(errors, 'token')}</div>
<button type="submit" class="wide">Log in</button>
</form>
</div>`;
}

/** Accounts a search looks at per page: a search's page costs at most this, whatever the total. */
export const SEARCH_SCAN_ROWS = 5_000;

interface AccountsListing {
  rows: Account[];
  /** The sentence under the heading (how many). */
  lead: Html;
  /** The pager: the page (or, for a search, the place) its links go to, and where this is. */
  prev: number | null;
  next: number | null;
  where: string;
}

/**
 * The accounts list, newest first: one page read from the store's row order (never a sort of
 * every account). A search looks up an exact account id or email through the store, then
 * walks the accounts newest first for email and name substrings, SEARCH_SCAN_ROWS at most
 * per page; `from` is where the walk goes on (the pager's "Search older" link).
 */
async function listAccounts(ctx: WebContext, query: { q: string; page: number; from: number }) {
  const { store } = ctx.deps;
  const total = await store.count('accounts');
  if (!query.q) {
    const pages = Math.max(1, Math.ceil(total / PAGE_ROWS));
    const page = Math.min(query.page, pages);
    const rows = await store.page('accounts', {
      newest_first: true,
      offset: (page - 1) * PAGE_ROWS,
      limit: PAGE_ROWS,
    });
    return {
      rows,
      lead: html`${total} account${total === 1 ? '' : 's'}.`,
      prev: page > 1 ? page - 1 : null,
      next: page < pages ? page + 1 : null,
      where: `Page ${page} of ${pages}`,
    } satisfies AccountsListing;
  }
  const needle = query.q.toLowerCase();
  const exact = await store.read(() => {
    const id = store.get('emails', needle) ?? (/^acc_[0-9a-f]{24}$/.test(needle) ? needle : '');
    return id ? store.get('accounts', id) : undefined;
  });
  const rows: Account[] = exact && query.from === 0 ? [exact] : [];
  const from = Math.min(query.from, total);
  let walked = 0;
  const scanned = await store.page('accounts', {
    newest_first: true,
    offset: from,
    limit: SEARCH_SCAN_ROWS,
  });
  for (const account of scanned) {
    walked++;
    const match =
      account.id !== exact?.id &&
      (account.email.includes(needle) || account.name.toLowerCase().includes(needle));
    if (match) rows.push(account);
    if (rows.length === PAGE_ROWS || walked === SEARCH_SCAN_ROWS) break;
  }
  const to = from + walked;
  return {
    rows,
    lead: html`${rows.length} account${rows.length === 1 ? '' : 's'} matching “${query.q}” (searched ${to - from} of ${total}, newest first).`,
    prev: null,
    next: to < total ? to : null,
    where: `Accounts ${Math.min(from + 1, to)}–${to} of ${total}`,
  } satisfies AccountsListing;
}

async function accountsPage(ctx: WebContext, query: { q: string; page: number; from: number }) {
  const { rows, lead, prev, next, where } = await listAccounts(ctx, query);
  const balances = await ctx.deps.store.read(
    (s) => new Map(rows.map((account) => [account.id, balanceMicros(s, account.id)])),
    { fresh: true },
  );
  const link = (at: number) =>
    `/admin/console?${new URLSearchParams(query.q ? { q: query.q, from: String(at) } : { page: String(at) }).toString()}`;
  return html`<h1>Accounts</h1>
<p class="lead">${lead}</p>
<form method="get" action="/admin/console" class="card" role="search">
<div class="row"><div class="field"><label for="q">Search by email, name or account id</label><input id="q" name="q" type="search" value="${query.q}"></div><button type="submit" class="secondary">Search</button></div>
</form>
<section class="card" aria-label="Accounts">
${
  rows.length === 0
    ? html`<p class="empty">No accounts${query.q ? ' match' : ' yet'}.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Email</th><th scope="col">Name</th><th scope="col">Created</th><th scope="col">eKYC</th><th scope="col">Services</th><th scope="col" class="num">Balance</th><th scope="col">Status</th></tr></thead>
<tbody>${rows.map(
        (account) => html`<tr>
<th scope="row"><a href="/admin/console/accounts/${account.id}">${account.email}</a></th>
<td>${account.name}</td><td>${formatTimestamp(account.created_at)}</td><td>${kycPill(account.kyc_status)}</td>
<td>${servicesText(account)}</td><td class="num">${formatMoney(balances.get(account.id) ?? 0, ctx.currency)}</td>
<td>${account.status === 'active' ? html`<span class="pill ok">active</span>` : html`<span class="pill bad">disabled</span>`}</td>
</tr>`,
      )}</tbody></table></div>`
}
${
  rows.length === 0 && next === null && prev === null
    ? ''
    : html`<nav class="pager" aria-label="Account pages">${prev !== null ? html`<a class="button secondary small" href="${link(prev)}">Previous</a>` : ''}<span class="small muted">${where}</span>${next !== null ? html`<a class="button secondary small" href="${link(next)}">${query.q ? 'Search older' : 'Next'}</a>` : ''}</nav>`
}
</section>`;
}

async function accountPage(input: AccountSectionInput) {
  const { ctx, account, csrf } = input;
  const keys = await accountKeys(ctx, account.id);
  const [key_stats, key_spends] = await Promise.all([keyStatsOf(ctx, keys), keySpends(ctx, keys)]);
  const errors = (form: string) => (input.form === form ? input.errors : undefined);
  const value = (form: string, name: string) =>
    input.form === form ? (input.values[name] ?? '') : '';
  // Read together (and the sections other rooms add): on PostgreSQL what the cache lacks is
  // loaded first, without stopping the event loop.
  const { view, balance_micros, sections } = await ctx.deps.store.read(
    (state) => ({
      view: accountView(state, account, ctx.currency),
      balance_micros: balanceMicros(state, account.id),
      sections: input.ctx.admin_account_sections.map((section) => section(input)),
    }),
    { fresh: true },
  );
  return html`<p class="small"><a href="/admin/console">← All accounts</a></p>
<h1>${account.email}</h1>
<p class="lead">${account.name || 'No name'} · <code>${account.id}</code></p>
<div class="grid">
<section class="card" aria-labelledby="facts-title">
<h2 id="facts-title">Account</h2>
<dl class="facts">
<dt>Status</dt><dd>${account.status === 'active' ? html`<span class="pill ok">active</span>` : html`<span class="pill bad">disabled</span>`}</dd>
<dt>Created</dt><dd>${formatTimestamp(account.created_at)}</dd>
<dt>eKYC</dt><dd>${kycPill(account.kyc_status)}</dd>
<dt>Services</dt><dd>${servicesText(account)}</dd>
<dt>IP whitelist</dt><dd>${account.ip_whitelist.length ? account.ip_whitelist.join(', ') : 'none (any address)'}</dd>
<dt>Balance</dt><dd id="account-balance">${formatMoney(balance_micros, ctx.currency)}</dd>
</dl>
<form method="post" action="/admin/console/accounts/${account.id}/status" data-confirm="${account.status === 'active' ? 'Disable this account? Its keys and sessions stop working at once.' : 'Enable this account again?'}">
${csrfField(csrf)}<input type="hidden" name="status" value="${account.status === 'active' ? 'disabled' : 'active'}">
<p><button type="submit" class="${account.status === 'active' ? 'danger' : 'secondary'} small">${account.status === 'active' ? 'Disable account' : 'Enable account'}</button></p>
</form>
<p class="small muted">JSON: <code>GET /admin/accounts/${view.id}</code></p>
</section>
<section class="card" aria-labelledby="credit-title">
<h2 id="credit-title">Credit the wallet</h2>
<form method="post" action="/admin/console/accounts/${account.id}/credit" novalidate>
${csrfField(csrf)}
<div class="field"><label for="credit-amount">Amount (${ctx.currency})</label><input id="credit-amount" name="amount" type="text" inputmode="decimal" required value="${value('credit', 'amount')}"${invalidAttrs(errors('credit'), 'amount')}>${fieldError(errors('credit'), 'amount')}</div>
<div class="field"><label for="credit-reference">Reference<span class="hint" id="credit-reference-hint">The same reference twice credits once.</span></label><input id="credit-reference" name="reference" type="text" required maxlength="128" value="${value('credit', 'reference')}"${invalidAttrs(errors('credit'), 'reference', 'credit-reference-hint')}>${fieldError(errors('credit'), 'reference')}</div>
<div class="field"><label for="credit-memo">Memo (optional)</label><input id="credit-memo" name="memo" type="text" maxlength="200" value="${value('credit', 'memo')}"${invalidAttrs(errors('credit'), 'memo')}>${fieldError(errors('credit'), 'memo')}</div>
<button type="submit">Credit</button>
</form>
</section>
</div>
${sections}
<section class="card" aria-labelledby="keys-title">
<h2 id="keys-title">API keys</h2>
${keysTable(ctx, keys, key_stats, { action: (key) => `/admin/console/keys/${key.id}/revoke`, csrf }, key_spends)}
</section>`;
}

async function auditPage(ctx: WebContext, query: { account: string; page: number }) {
  const { total } = await ctx.index.auditPage(query.account || null, 1, 1);
  const pages = Math.max(1, Math.ceil(total / PAGE_ROWS));
  const page = Math.min(query.page, pages);
  const { rows } = await ctx.index.auditPage(query.account || null, page, PAGE_ROWS);
  const link = (p: number) =>
    `/admin/console/audit?${new URLSearchParams({ ...(query.account ? { account: query.account } : {}), page: String(p) }).toString()}`;
  const email = (id: string | null) =>
    id ? (ctx.deps.store.get('accounts', id)?.email ?? id) : '';
  return html`<h1>Audit log</h1>
<p class="lead">Sign-ups, log-ins, keys, top-ups, credits and every admin action, newest first.</p>
<form method="get" action="/admin/console/audit" class="card" role="search">
<div class="row"><div class="field"><label for="account">Account id</label><input id="account" name="account" type="search" value="${query.account}"></div><button type="submit" class="secondary">Filter</button></div>
</form>
<section class="card" aria-label="Audit entries">
${
  rows.length === 0
    ? html`<p class="empty">No entries.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Account</th><th scope="col">Detail</th></tr></thead>
<tbody>${rows.map(
        (
          entry,
        ) => html`<tr><td>${formatTimestamp(entry.ts)}</td><td>${entry.actor.startsWith('user:') ? 'user' : entry.actor}</td><td><code>${entry.action}</code></td>
<td>${entry.account_id ? html`<a href="/admin/console/accounts/${entry.account_id}">${email(entry.account_id)}</a>` : ''}</td><td>${entry.detail}</td></tr>`,
      )}</tbody></table></div>
<nav class="pager" aria-label="Audit pages">${page > 1 ? html`<a class="button secondary small" href="${link(page - 1)}">Newer</a>` : ''}<span class="small muted">Page ${page} of ${pages}</span>${page < pages ? html`<a class="button secondary small" href="${link(page + 1)}">Older</a>` : ''}</nav>`
}
</section>`;
}

export function requireAccountOr404(ctx: WebContext, id: unknown): Account {
  const parsed = accountIdParam.safeParse(id);
  const account = parsed.success ? ctx.deps.store.get('accounts', parsed.data) : undefined;
  if (!account) throw new ApiError(404, 'account_not_found', 'There is no such account.');
  return account;
}

/** Renders the account page again with a form's errors (status 422/409). */
export async function renderAccountWithErrors(
  ctx: WebContext,
  res: Response,
  account: Account,
  status: number,
  form: string,
  errors: FormErrors,
  values: Record<string, string>,
) {
  await ctx.index.catchUp();
  const state = await adminState(ctx, res);
  sendAdminPage(ctx, res, state, status, {
    title: account.email,
    current: '/admin/console',
    notice: { kind: 'error', text: 'The form has errors; see below.' },
    body: await accountPage({ ctx, account, csrf: state.csrf, errors, values, form }),
  });
}

export function stringValues(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (body && typeof body === 'object')
    for (const [name, value] of Object.entries(body))
      if (typeof value === 'string' && name !== '_csrf') out[name] = value.slice(0, 2000);
  return out;
}

export function adminRoutes(ctx: WebContext, router: Router): void {
  adminLoginRoutes(ctx, router);
  adminConsoleRoutes(ctx, router);
}

/** The console's front door: log in with the admin token, log out. */
function adminLoginRoutes(ctx: WebContext, router: Router): void {
  const { store } = ctx.deps;
  router.get('/', (req, res) => {
    res.redirect(303, ctx.sessions.current(req, 'admin') ? '/admin/console' : '/admin/login');
  });

  router.get('/login', async (req, res) => {
    const next = safeNext(req.query.next, '/admin/console');
    if (ctx.sessions.current(req, 'admin')) return res.redirect(303, next);
    const csrf = await ctx.sessions.csrfToken(ctx.sessions.anonBinding(req, res));
    ctx.send(res, 200, {
      title: 'Admin log in',
      area: 'admin',
      narrow: true,
      body: loginPage(csrf, undefined, next === '/admin/console' ? undefined : next),
    });
  });

  router.post('/login', ...ctx.anonPostGuard(), async (req: Request, res: Response) => {
    const ip = ctx.clientIp(req);
    const now_ms = ctx.nowMs();
    const body = (req.body ?? {}) as Record<string, unknown>;
    const next = safeNext(body.next, '/admin/console');
    const render = async (
      status: number,
      errors: FormErrors | undefined,
      notice: Notice | null,
    ) => {
      const csrf = await ctx.sessions.csrfToken(ctx.sessions.anonBinding(req, res));
      ctx.send(res, status, {
        title: 'Admin log in',
        area: 'admin',
        narrow: true,
        notice,
        body: loginPage(csrf, errors, next === '/admin/console' ? undefined : next),
      });
    };
    const parsed = adminLoginForm.safeParse(body);
    // The attempt's slot is taken before the token is compared, and given back when it is right
    // (or when no token was tried).
    const slot = ctx.admin_by_ip.claim(ip, now_ms);
    if (!slot.ok) {
      res.setHeader('Retry-After', String(slot.retry_after_s));
      return render(429, undefined, {
        kind: 'error',
        text: `Too many failed attempts. Try again in ${Math.ceil(slot.retry_after_s / 60)} minutes.`,
      });
    }
    if (!parsed.success) return (slot.release(), render(422, formErrors(parsed.error), null));
    if (!matchesHash(parsed.data.token, ctx.deps.admin_token_hash)) {
      ctx.deps.logger.warn({
        msg: 'admin console login failed',
        request_id: res.locals.request_id,
        ip,
      });
      return render(401, undefined, { kind: 'error', text: 'That is not the admin token.' });
    }
    ctx.admin_by_ip.reset(ip);
    const started = await store.transact((tx) => {
      audit(tx, { actor: 'admin', action: 'admin.login', ip });
      return ctx.sessions.startInTx(tx, 'admin', null);
    });
    ctx.sessions.setSessionCookie(req, res, 'admin', started.token);
    res.redirect(303, next);
  });

  router.post('/logout', ctx.form, async (req, res) => {
    const current = ctx.sessions.current(req, 'admin');
    if (current) await ctx.checkCsrf(req, sessionBinding(current.token_hash));
    await ctx.sessions.end(req, res, 'admin', current);
    res.redirect(303, '/admin/login');
  });
}

/** The console behind the admin session: accounts, credits, account status, keys, audit. */
function adminConsoleRoutes(ctx: WebContext, router: Router): void {
  const { store } = ctx.deps;
  const flash = (res: Response, notice: Notice) =>
    ctx.setFlash(sessionBinding((res.locals.web_session as CurrentSession).token_hash), notice);
  const guard = ctx.requireSession('admin');

  router.get('/console', guard, async (req, res) => {
    const state = await adminState(ctx, res);
    sendAdminPage(ctx, res, state, 200, {
      title: 'Accounts',
      current: '/admin/console',
      body: await accountsPage(ctx, listQuery.parse(req.query)),
    });
  });

  router.get('/console/accounts/:id', guard, async (req, res) => {
    await ctx.index.catchUp();
    const account = requireAccountOr404(ctx, req.params.id);
    const state = await adminState(ctx, res);
    sendAdminPage(ctx, res, state, 200, {
      title: account.email,
      current: '/admin/console',
      body: await accountPage({
        ctx,
        account,
        csrf: state.csrf,
        errors: undefined,
        values: {},
        form: undefined,
      }),
    });
  });

  router.post('/console/accounts/:id/credit', ...ctx.postGuard('admin'), consoleCredit(ctx, flash));

  router.post('/console/accounts/:id/status', ...ctx.postGuard('admin'), consoleStatus(ctx, flash));

  router.post('/console/keys/:id/revoke', ...ctx.postGuard('admin'), async (req, res) => {
    const parsed = keyIdParam.safeParse(req.params.id);
    const key = parsed.success ? store.get('keys', parsed.data) : undefined;
    if (!key) throw new ApiError(404, 'key_not_found', 'There is no such key.');
    await store.transact((tx) => {
      if (revokeApiKey(tx, key.id))
        audit(tx, {
          actor: 'admin',
          action: 'key.revoke',
          account_id: key.account_id,
          detail: key.id,
          ip: ctx.clientIp(req),
        });
    });
    flash(res, { kind: 'ok', text: `Key ${key.prefix}… revoked.` });
    res.redirect(303, `/admin/console/accounts/${key.account_id}`);
  });

  router.get('/console/audit', guard, async (req, res) => {
    await ctx.index.catchUp();
    const state = await adminState(ctx, res);
    sendAdminPage(ctx, res, state, 200, {
      title: 'Audit log',
      current: '/admin/console/audit',
      body: await auditPage(ctx, auditQuery.parse(req.query)),
    });
  });
}

/** POST /admin/console/accounts/:id/credit: the admin's credit, once per reference. */
function consoleCredit(ctx: WebContext, flash: (res: Response, notice: Notice) => void) {
  const form = creditForm(ctx.currency); // built once, not per request
  return async (req: Request, res: Response) => {
    const { store } = ctx.deps;
    const account = requireAccountOr404(ctx, req.params.id);
    const values = stringValues(req.body);
    const parsed = form.safeParse(req.body ?? {});
    if (!parsed.success)
      return renderAccountWithErrors(
        ctx,
        res,
        account,
        422,
        'credit',
        formErrors(parsed.error),
        values,
      );
    const { amount: amount_micros, reference, memo } = parsed.data;
    // The same command as POST /admin/accounts/:id/credit: one reference, one credit.
    let outcome: 'credited' | 'duplicate';
    try {
      outcome = await store.transact((tx) => {
        if (
          adjustWallet(tx, {
            direction: 'credit',
            account_id: account.id,
            amount: amount_micros,
            reference,
            memo: memo || undefined,
          })
        )
          return 'duplicate';
        audit(tx, {
          actor: 'admin',
          action: 'wallet.credit',
          account_id: account.id,
          detail: `${formatMoney(amount_micros, ctx.currency)} ref ${reference}`,
          ip: ctx.clientIp(req),
        });
        return 'credited';
      });
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 409)) throw error;
      return renderAccountWithErrors(
        ctx,
        res,
        account,
        409,
        'credit',
        { reference: 'This reference was used already for another credit.' },
        values,
      );
    }
    flash(
      res,
      outcome === 'credited'
        ? {
            kind: 'ok',
            text: `Credited ${formatMoney(amount_micros, ctx.currency)} (reference ${reference}).`,
          }
        : { kind: 'info', text: `Reference ${reference} was credited already; nothing was added.` },
    );
    res.redirect(303, `/admin/console/accounts/${account.id}`);
  };
}

/** POST /console/accounts/:id/status: enable or disable an account (disabling ends its sessions), audited. */
function consoleStatus(ctx: WebContext, flash: (res: Response, notice: Notice) => void) {
  return async (req: Request, res: Response) => {
    const { store } = ctx.deps;
    const account = requireAccountOr404(ctx, req.params.id);
    const parsed = statusForm.safeParse(req.body ?? {});
    if (!parsed.success) throw new ApiError(400, 'invalid_status', 'Unknown account status.');
    await store.transact((tx) => {
      const current = tx.get('accounts', account.id)!;
      if (current.status === parsed.data.status) return;
      tx.set('accounts', account.id, { ...current, status: parsed.data.status });
      if (parsed.data.status === 'disabled') ctx.sessions.endAllInTx(tx, account.id);
      audit(tx, {
        actor: 'admin',
        action: parsed.data.status === 'disabled' ? 'account.disable' : 'account.enable',
        account_id: account.id,
        ip: ctx.clientIp(req),
      });
    });
    flash(res, {
      kind: 'ok',
      text:
        parsed.data.status === 'disabled'
          ? 'Account disabled: its keys get 403 and its sessions ended.'
          : 'Account enabled.',
    });
    res.redirect(303, `/admin/console/accounts/${account.id}`);
  };
}
