// /api-keys: the account's keys with name, prefix, created, last used and spend; create
// (the key is shown once, with a copy button); revoke.
import type { Router } from 'express';
import { z } from 'zod';
import { MAX_ACTIVE_KEYS, createApiKey, revokeApiKey } from '../../accounts/accounts.js';
import { ApiError } from '../../http/errors.js';
import { ServiceError } from '../../kernel/errors.js';
import type { ApiKey } from '../../store/state.js';
import { clearSigningSecret, setSigningSecret } from '../../payments/signing.js';
import { limitsView } from '../../accounts/key-limits.js';
import { audit } from '../audit.js';
import { keySpends, limitCell, limitsFormFields, limitsFromForm } from './key-limits-form.js';
import {
  fieldError,
  formErrors,
  invalidAttrs,
  type FormErrors,
  type WebContext,
} from '../context.js';
import { formatMoney, formatTimestamp } from '../format.js';
import { html } from '../html.js';
import type { KeyStats } from '../history-index.js';
import { csrfField } from '../layout.js';
import { sendUserPage, userState, type UserRequestState } from './user-shell.js';

export const createKeyForm = z.object({
  name: z
    .string()
    .trim()
    .min(1, 'Give the key a name, such as "laptop" or "ci"')
    .max(100, 'Use at most 100 characters'),
});
const keyIdParam = z.string().regex(/^key_[0-9a-f]{24}$/);
const signingForm = z.object({ action: z.enum(['enable', 'rotate', 'disable']) });

export async function accountKeys(ctx: WebContext, account_id: string): Promise<ApiKey[]> {
  return (await ctx.deps.store.list('keys', 'account_id', account_id)).sort(
    (a, b) =>
      (a.revoked_at ? 1 : 0) - (b.revoked_at ? 1 : 0) || b.created_at.localeCompare(a.created_at),
  );
}

/** Each key's requests, spend and last use (history figures: read before a page is rendered). */
export async function keyStatsOf(ctx: WebContext, keys: ApiKey[]): Promise<Map<string, KeyStats>> {
  const stats = await Promise.all(keys.map((key) => ctx.index.keyStats(key.id)));
  return new Map(keys.map((key, i) => [key.id, stats[i]!]));
}

export function keysTable(
  ctx: WebContext,
  keys: ApiKey[],
  stats_of: Map<string, KeyStats>,
  revoke: { action: (key: ApiKey) => string; csrf: string } | null,
  spends: Map<string, number> = new Map(),
) {
  if (keys.length === 0) return html`<p class="empty">No keys yet.</p>`;
  return html`<div class="table-wrap"><table>
<caption class="visually-hidden">API keys</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Spend</th><th scope="col">Limit</th><th scope="col">Status</th></tr></thead>
<tbody>${keys.map((key) => {
    const stats = stats_of.get(key.id) ?? { requests: 0, cost_micros: 0, last_used: null };
    return html`<tr${key.revoked_at ? html` class="revoked"` : ''} data-key-id="${key.id}">
<th scope="row">${key.name || html`<span class="muted">(no name)</span>`}</th>
<td><code>${key.prefix}…</code></td>
<td>${formatTimestamp(key.created_at)}</td>
<td>${stats.last_used ? formatTimestamp(stats.last_used) : html`<span class="muted">never</span>`}</td>
<td class="num">${stats.requests}</td>
<td class="num">${formatMoney(stats.cost_micros, ctx.currency)}</td>
<td>${limitCell(ctx, key, spends.get(key.id))}</td>
<td>${
      key.revoked_at
        ? html`<span class="pill bad">revoked ${formatTimestamp(key.revoked_at)}</span>`
        : revoke
          ? html`<form method="post" action="${revoke.action(key)}" data-confirm="${`Revoke the key "${key.name || key.prefix}"? Programs using it stop working at once.`}">${csrfField(revoke.csrf)}<button type="submit" class="danger small" aria-label="${`Revoke key ${key.name || key.prefix}`}">Revoke</button></form>`
          : html`<span class="pill ok">active</span>`
    }</td>
</tr>`;
  })}</tbody></table></div>`;
}

/** The label of a flash that carries a new request signing secret (not an API key). */
const SIGNING_SECRET_LABEL = 'request signing secret';

function signingCard(ctx: WebContext, state: UserRequestState, new_secret: string | null) {
  const signing = state.account.signing ?? null;
  const base = ctx.publicUrl();
  return html`<section class="card" aria-labelledby="signing-title">
<h2 id="signing-title">Request signing</h2>
<p>When on, every payments API call (<code>${base}/api</code>) of this account must carry <code>X-AIHub-Timestamp</code> (Unix seconds) and <code>X-AIHub-Signature: v2=</code> followed by the hex HMAC-SHA256, with the signing secret, of <code>"v2\\n" + timestamp + "\\n" + METHOD + "\\n" + path with query + "\\n" + raw body</code>, so that a signature works for the one request it was made for. Unsigned, wrong, replayed or more than five minutes old requests get 401. The AI API (<code>/v1</code>) is not affected.</p>
${
  new_secret
    ? html`<p>Your signing secret. Copy it now: this is the only time it is shown.</p>
<div class="secret"><output id="signing-secret" aria-label="Request signing secret">${new_secret}</output><button type="button" class="secondary" data-copy="signing-secret" data-copy-status="signing-copy-status" hidden>Copy</button></div>
<p id="signing-copy-status" class="small muted" role="status" aria-live="polite"></p>`
    : ''
}
<p>Status: ${signing ? html`<span class="pill ok" data-signing="on">on since ${formatTimestamp(signing.created_at)}</span>` : html`<span class="pill" data-signing="off">off</span>`}</p>
<div class="row">
<form method="post" action="/api-keys/signing"${signing ? html` data-confirm="Replace the signing secret? Requests signed with the current one are refused at once."` : ''}>${csrfField(state.csrf)}<input type="hidden" name="action" value="${signing ? 'rotate' : 'enable'}"><button type="submit">${signing ? 'Replace the secret' : 'Turn on request signing'}</button></form>
${signing ? html`<form method="post" action="/api-keys/signing" data-confirm="Turn request signing off? Unsigned requests with this account's keys are accepted again.">${csrfField(state.csrf)}<input type="hidden" name="action" value="disable"><button type="submit" class="danger">Turn off</button></form>` : ''}
</div>
</section>`;
}

async function keysPage(
  ctx: WebContext,
  state: UserRequestState,
  options: {
    errors?: FormErrors;
    name?: string;
    secret?: string | null;
    signing_secret?: string | null;
  },
) {
  const keys = await accountKeys(ctx, state.account.id);
  const [stats, spends] = await Promise.all([keyStatsOf(ctx, keys), keySpends(ctx, keys)]);
  const base = ctx.publicUrl();
  return html`<h1>API keys</h1>
<p class="lead">A key works on the AI API (<code>${base}/v1</code>) and the payments API (<code>${base}/api</code>). Keep keys secret; revoke a key you no longer trust.</p>
${
  options.secret
    ? html`<section class="card" aria-labelledby="new-key-title">
<h2 id="new-key-title">Your new key</h2>
<p>Copy it now: this is the only time it is shown. AIHub keeps only a hash of it.</p>
<div class="secret"><output id="new-key" aria-label="New API key">${options.secret}</output><button type="button" class="secondary" data-copy="new-key" data-copy-status="copy-status" hidden>Copy</button></div>
<p id="copy-status" class="small muted" role="status" aria-live="polite"></p>
<p class="small muted">Try it: <code>curl ${base}/v1/balance -H "Authorization: Bearer ${options.secret.slice(0, 13)}…"</code></p>
</section>`
    : ''
}
<section class="card" aria-labelledby="create-title">
<h2 id="create-title">Create a key</h2>
<form method="post" action="/api-keys" novalidate>
${csrfField(state.csrf)}
<div class="row">
<div class="field"><label for="key-name">Key name<span class="hint" id="key-name-hint">Where the key is used, e.g. laptop, CI, VS Code.</span></label><input id="key-name" name="name" type="text" required maxlength="100" value="${options.name ?? ''}"${invalidAttrs(options.errors, 'name', 'key-name-hint')}>${fieldError(options.errors, 'name')}</div>
</div>
${limitsFormFields(ctx, options.errors)}
<button type="submit">Create key</button>
</form>
</section>
<section class="card" aria-labelledby="keys-title">
<h2 id="keys-title">Your keys</h2>
${keysTable(ctx, keys, stats, { action: (key) => `/api-keys/${key.id}/revoke`, csrf: state.csrf }, spends)}
</section>
${ctx.deps.payments ? signingCard(ctx, state, options.signing_secret ?? null) : ''}`;
}

export function keyRoutes(ctx: WebContext, router: Router): void {
  signingRoutes(ctx, router);
  router.get('/api-keys', ctx.requireSession('user'), async (req, res) => {
    await ctx.index.catchUp();
    const state = await userState(ctx, res);
    const flash = ctx.takeFlash(state.binding);
    sendUserPage(ctx, req, res, state, 200, {
      title: 'API keys',
      current: '/api-keys',
      notice: flash,
      body: await keysPage(ctx, state, {
        secret:
          flash?.secret && flash.secret.label !== SIGNING_SECRET_LABEL ? flash.secret.value : null,
        signing_secret: flash?.secret?.label === SIGNING_SECRET_LABEL ? flash.secret.value : null,
      }),
    });
  });

  createKeyRoute(ctx, router);
  revokeKeyRoute(ctx, router);
}

/** POST /api-keys: a new key (the 50-active-keys rule is createApiKey's), shown once. */
function createKeyRoute(ctx: WebContext, router: Router): void {
  const { store } = ctx.deps;
  router.post('/api-keys', ...ctx.postGuard('user'), async (req, res) => {
    const state = await userState(ctx, res);
    const parsed = createKeyForm.safeParse(req.body ?? {});
    const render_error = async (status: number, errors: FormErrors, name: string) => {
      await ctx.index.catchUp();
      sendUserPage(ctx, req, res, state, status, {
        title: 'API keys',
        current: '/api-keys',
        body: await keysPage(ctx, state, { errors, name }),
      });
    };
    const name = String((req.body as Record<string, unknown>)?.name ?? '').slice(0, 100);
    if (!parsed.success) return render_error(422, formErrors(parsed.error), name);
    const limits = limitsFromForm(req.body ?? {}, ctx.deps.config.keys.utc_offset);
    if (!limits.ok) return render_error(422, limits.errors, name);
    const keys_index = store.indexBy('keys', 'account_id');
    const created = await store
      .transact((tx) => {
        const result = createApiKey(
          tx,
          keys_index,
          state.account.id,
          parsed.data.name,
          limits.fields,
        );
        audit(tx, {
          actor: `user:${state.account.id}`,
          action: 'key.create',
          account_id: state.account.id,
          detail: `${result.record.id} "${parsed.data.name}" ${JSON.stringify(limitsView(result.record))}`,
          ip: ctx.clientIp(req),
        });
        return result;
      })
      .catch((error: unknown) => {
        if (error instanceof ServiceError && error.code === 'too_many_keys') return null;
        throw error;
      });
    if (!created)
      return render_error(
        409,
        { name: `An account can have at most ${MAX_ACTIVE_KEYS} active keys. Revoke one first.` },
        name,
      );
    ctx.setFlash(state.binding, {
      kind: 'ok',
      text: `Key "${created.record.name}" created.`,
      secret: { label: created.record.name, value: created.key },
    });
    res.redirect(303, '/api-keys');
  });
}

/** POST /api-keys/:id/revoke: one of the account's own keys, audited. */
function revokeKeyRoute(ctx: WebContext, router: Router): void {
  const { store } = ctx.deps;
  router.post('/api-keys/:id/revoke', ...ctx.postGuard('user'), async (req, res) => {
    const state = await userState(ctx, res);
    const parsed = keyIdParam.safeParse(req.params.id);
    const key = parsed.success ? store.get('keys', parsed.data) : undefined;
    if (!key || key.account_id !== state.account.id)
      throw new ApiError(404, 'key_not_found', 'There is no such key on your account.');
    await store.transact((tx) => {
      if (revokeApiKey(tx, key.id, state.account.id))
        audit(tx, {
          actor: `user:${state.account.id}`,
          action: 'key.revoke',
          account_id: state.account.id,
          detail: key.id,
          ip: ctx.clientIp(req),
        });
    });
    ctx.setFlash(state.binding, {
      kind: 'ok',
      text: `Key "${key.name || key.prefix}" revoked. Requests with it now get 401.`,
    });
    res.redirect(303, '/api-keys');
  });
}

/** POST /api-keys/signing: request signing of the payments API on, a new secret, or off. */
function signingRoutes(ctx: WebContext, router: Router): void {
  const { store } = ctx.deps;
  router.post('/api-keys/signing', ...ctx.postGuard('user'), async (req, res) => {
    const state = await userState(ctx, res);
    const action = signingForm.safeParse(req.body ?? {});
    if (!action.success || !ctx.deps.payments)
      throw new ApiError(
        400,
        'invalid_action',
        'Choose to turn request signing on, replace its secret, or turn it off.',
      );
    const account_id = state.account.id;
    const secret = await store.transact((tx) => {
      const detail = action.data.action;
      audit(tx, {
        actor: `user:${account_id}`,
        action: `signing.${detail}`,
        account_id,
        detail,
        ip: ctx.clientIp(req),
      });
      if (detail === 'disable') {
        clearSigningSecret(tx, account_id);
        return null;
      }
      return setSigningSecret(tx, account_id, ctx.deps.sealer).secret;
    });
    ctx.setFlash(
      state.binding,
      secret
        ? {
            kind: 'ok',
            text: 'Request signing is on: sign every payments API call with the secret below.',
            secret: { label: SIGNING_SECRET_LABEL, value: secret },
          }
        : { kind: 'ok', text: 'Request signing is off.' },
    );
    res.redirect(303, '/api-keys');
  });
}
