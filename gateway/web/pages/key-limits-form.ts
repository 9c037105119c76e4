// The /api-keys page's part of issue #39: the create form's limit fields (a form sends text;
// they are checked by the same schema as the JSON APIs) and each key's spend against its limit.
import { z } from 'zod';
import { TIER_IDS } from '../../catalogue/tiers.js';
import {
  keyLimitsShape,
  keySpendOf,
  limitFields,
  offsetMs,
  periodsAt,
  spentAgainstLimit,
} from '../../accounts/key-limits.js';
import type { ApiKey } from '../../store/state.js';
import { formErrors, type FormErrors, type WebContext } from '../context.js';
import { formatMoney } from '../format.js';
import { html } from '../html.js';

const limitsSchema = z.strictObject(keyLimitsShape);

/** The limit fields of the create form, as the key takes them; or the form's errors. */
export function limitsFromForm(
  body: Record<string, unknown>,
  utc_offset: string,
): { ok: true; fields: Partial<ApiKey> } | { ok: false; errors: FormErrors } {
  const text = (name: string) => {
    const value = body[name];
    return typeof value === 'string' ? value.trim().slice(0, 100) : '';
  };
  const models = ([] as unknown[]).concat(body.models ?? []).filter((m) => typeof m === 'string');
  const input: Record<string, unknown> = {};
  if (text('limit')) input.limit = Number(text('limit'));
  if (text('limit_reset')) input.limit_reset = text('limit_reset');
  if (models.length > 0 && models.length < TIER_IDS.length) input.models = models.slice(0, 10);
  if (text('expires_on')) input.expires_at = `${text('expires_on')}T00:00:00${utc_offset}`;
  const parsed = limitsSchema.safeParse(input);
  if (!parsed.success) {
    const errors = formErrors(parsed.error);
    if (errors.expires_at) errors.expires_on = 'Pick a date, or leave it empty';
    return { ok: false, errors };
  }
  return { ok: true, fields: limitFields(parsed.data) };
}

/** The create form's limit fields. */
export function limitsFormFields(ctx: WebContext, errors: FormErrors | undefined) {
  const offset = ctx.deps.config.keys.utc_offset;
  const error = (field: string) =>
    errors?.[field] ? html`<span class="error" role="alert">${errors[field]}</span>` : '';
  // Optional and folded away: the name field and its button stay next to each other for the
  // common case (and a keyboard); open when one of these fields was refused.
  const open = ['limit', 'limit_reset', 'expires_on', 'models'].some((field) => errors?.[field]);
  return html`<details class="key-limits"${open ? ' open' : ''}><summary>Limits (optional)</summary>
<div class="row">
<div class="field"><label for="key-limit">Spending limit (${ctx.currency})<span class="hint">Optional. The most this key may spend.</span></label><input id="key-limit" name="limit" type="number" min="0" step="any" inputmode="decimal">${error('limit')}</div>
<div class="field"><label for="key-reset">Limit resets<span class="hint">At 00:00 UTC${offset}.</span></label><select id="key-reset" name="limit_reset"><option value="">never</option><option value="daily">daily</option><option value="weekly">weekly (Monday)</option><option value="monthly">monthly</option></select>${error('limit_reset')}</div>
<div class="field"><label for="key-expires">Expires on<span class="hint">Optional. From 00:00 that day.</span></label><input id="key-expires" name="expires_on" type="date">${error('expires_on')}</div>
</div>
<fieldset><legend>Models this key may use <span class="hint">None ticked: all.</span></legend>
${TIER_IDS.map((id) => html`<label class="inline"><input type="checkbox" name="models" value="${id}"> ${id}</label> `)}${error('models')}
</fieldset>
</details>`;
}

/** Each limited key's spend this period (read before the page renders). */
export async function keySpends(ctx: WebContext, keys: ApiKey[]): Promise<Map<string, number>> {
  const limited = keys.filter((key) => key.limit_micros != null);
  if (limited.length === 0) return new Map();
  const periods = periodsAt(
    ctx.deps.clock.now().getTime(),
    offsetMs(ctx.deps.config.keys.utc_offset),
  );
  return ctx.deps.store.read(
    (state) =>
      new Map(
        limited.map((key) => [key.id, spentAgainstLimit(key, keySpendOf(state, key.id), periods)]),
      ),
    { fresh: true },
  );
}

/** A key's spend against its limit, with a bar; its tiers and expiry under it. */
export function limitCell(ctx: WebContext, key: ApiKey, spent_micros: number | undefined) {
  const terms = [
    key.models ? `models: ${key.models.join(', ')}` : '',
    key.expires_at ? `expires ${key.expires_at.slice(0, 10)}` : '',
  ].filter(Boolean);
  const extra = terms.length ? html`<br><span class="small muted">${terms.join('; ')}</span>` : '';
  if (key.limit_micros == null) return html`<span class="muted">none</span>${extra}`;
  const spent = spent_micros ?? 0;
  const per = key.limit_reset ? ` ${key.limit_reset}` : '';
  return html`<meter min="0" max="${key.limit_micros}" low="${Math.floor(key.limit_micros * 0.8)}" high="${Math.floor(key.limit_micros * 0.95)}" optimum="0" value="${Math.min(spent, key.limit_micros)}" aria-label="${`Spend against the limit of ${key.name || key.prefix}`}"></meter>
<span class="small" data-key-spend="${key.id}">${formatMoney(spent, ctx.currency)} of ${formatMoney(key.limit_micros, ctx.currency)}${per}</span>${extra}`;
}
