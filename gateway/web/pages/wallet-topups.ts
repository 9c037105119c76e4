// /wallet in live mode with a payment gateway configured (issue #41): the Top up form (the
// amount filled in from ?amount=, as a 402 names it; the convenience fee shown before paying),
// the pay page that opens the provider's checkout, the top-up's status when the checkout comes
// back (/wallet?topup=<id>), and the account's pending and failed top-ups. The top-ups room
// (gateway/topups/) makes the orders and credits the wallet from the provider's verified
// webhook; these pages only ask it.
import { randomBytes } from 'node:crypto';
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { ApiError } from '../../http/errors.js';
import type { TopupView, Topups } from '../../topups/room.js';
import { unitsToMicros } from '../../util/money.js';
import { CHECKOUT_JS_PATH } from '../checkout-asset.js';
import {
  fieldError,
  formErrors,
  invalidAttrs,
  type FormErrors,
  type PageSources,
  type WebContext,
} from '../context.js';
import { formatMoney, formatTimestamp, formatUnits } from '../format.js';
import { html, type Html } from '../html.js';
import { csrfField } from '../layout.js';
import { sendUserPage, userState, type UserRequestState } from './user-shell.js';

/** The statuses listed under "Pending and failed top-ups" (credited ones are in the history). */
const UNSETTLED = new Set<TopupView['status']>(['created', 'failed', 'expired', 'flagged']);
const LIST_ROWS = 20;
const topupId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);

/** The smallest and largest top-up the form offers: the room's limits, else the dashboard's. */
export function topUpLimits(ctx: WebContext, fallback: { min: number; max: number }) {
  const { min_amount, max_amount } = ctx.deps.config.topups;
  return { min: min_amount ?? fallback.min, max: max_amount ?? fallback.max };
}

/**
 * The amount to fill in from `?amount=` (the shortfall a 402 names): a plain decimal of at most
 * two places, raised to the smallest top-up, capped at the largest; '' when there is none.
 */
export function prefillAmount(query: unknown, limits: { min: number; max: number }): string {
  if (typeof query !== 'string' || !/^\d{1,12}(\.\d{1,2})?$/.test(query)) return '';
  const micros = unitsToMicros(Number(query), 2);
  if (micros <= 0) return '';
  const bounded = Math.min(Math.max(micros, limits.min), limits.max);
  return (bounded / 1_000_000).toFixed(2);
}

/** The convenience fee's words, before paying: the exact figures for a valid amount. */
function feeLine(ctx: WebContext, topups: Topups, amount: string): Html {
  const fees = Object.entries(ctx.deps.config.topups.fees);
  if (fees.length === 0) return html`<p class="small muted" id="topup-fee">No convenience fee.</p>`;
  const rates = fees
    .map(([method, bp]) => `${bp / 100}% ${method === 'default' ? 'other methods' : method}`)
    .join(', ');
  let exact: Html | string = '';
  if (amount) {
    try {
      const quote = topups.quote(unitsToMicros(Number(amount), 2), null);
      exact = html` For ${formatMoney(quote.amount_micros, ctx.currency)} you pay ${formatMoney(quote.total_micros, ctx.currency)} (fee ${formatMoney(quote.fee_micros - quote.fee_gst_micros, ctx.currency)} + GST ${formatMoney(quote.fee_gst_micros, ctx.currency)}).`;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
    }
  }
  return html`<p class="small" id="topup-fee">A convenience fee is added (${rates}), plus GST on it; the exact total is shown before you pay.${exact}</p>`;
}

/** The Top up form of live mode with a payment gateway. */
export function providerTopUpSection(
  ctx: WebContext,
  state: UserRequestState,
  topups: Topups,
  options: { errors?: FormErrors; amount?: string; limits: { min: number; max: number } },
): Html {
  const amount = options.amount ?? '';
  return html`<section class="card" aria-labelledby="topup-title">
<h2 id="topup-title">Top up</h2>
<p class="small muted">Pay by UPI, card or net banking; the wallet is credited as soon as the payment is confirmed.</p>
<form method="post" action="/wallet/topups" novalidate>
${csrfField(state.csrf)}<input type="hidden" name="nonce" value="${randomNonce()}">
<div class="row">
<div class="field"><label for="amount">Amount (${ctx.currency})<span class="hint" id="amount-hint">${formatUnits(options.limits.min, ctx.currency)} to ${formatUnits(options.limits.max, ctx.currency)}, at most two decimals.</span></label>
<input id="amount" name="amount" type="text" inputmode="decimal" autocomplete="off" required value="${amount}"${invalidAttrs(options.errors, 'amount', 'amount-hint')}>${fieldError(options.errors, 'amount')}</div>
<button type="submit" id="topup-submit">Top up</button>
</div>
${fieldError(options.errors, 'nonce')}
</form>
${feeLine(ctx, topups, options.errors?.amount ? '' : amount)}
</section>`;
}

function randomNonce(): string {
  return randomBytes(16).toString('base64url');
}

const STATUS_WORDS: Record<TopupView['status'], string> = {
  created: 'waiting for payment',
  credited: 'credited',
  failed: 'failed',
  expired: 'expired (never paid)',
  flagged: 'held for review',
  refunded: 'refunded',
  disputed: 'disputed',
  held: 'held: paid from an account not in your name, under review',
  returned: 'returned to the payer',
};

/** The top-up the checkout came back with (`?topup=<id>`): its status, in words. */
async function returnedSection(
  ctx: WebContext,
  topups: Topups,
  account_id: string,
  id: unknown,
): Promise<Html> {
  const parsed = topupId.safeParse(id);
  if (!parsed.success) return html``;
  const view = await topups.get(account_id, parsed.data);
  if (!view) return html``;
  const amount = formatMoney(unitsToMicros(view.amount, 6), ctx.currency);
  const words =
    view.status === 'credited'
      ? html`<div class="notice ok" role="status">Top-up <code>${view.topup_id}</code>: ${amount} added to your wallet.</div>`
      : view.status === 'created'
        ? html`<meta http-equiv="refresh" content="5"><div class="notice info" role="status">Top-up <code>${view.topup_id}</code> of ${amount}: waiting for the payment to be confirmed. This page checks again every few seconds; <a href="/wallet?topup=${view.topup_id}">check now</a>.</div>`
        : html`<div class="notice error" role="alert">Top-up <code>${view.topup_id}</code> of ${amount}: ${STATUS_WORDS[view.status]}. ${view.note}</div>`;
  return html`<div id="topup-status" data-status="${view.status}">${words}</div>`;
}

/** The account's pending and failed top-ups, newest first. */
async function unsettledSection(
  ctx: WebContext,
  topups: Topups,
  account_id: string,
): Promise<Html> {
  const rows = (await topups.recent(account_id, LIST_ROWS)).filter((t) => UNSETTLED.has(t.status));
  if (rows.length === 0) return html``;
  const money = (units: number) => formatMoney(unitsToMicros(units, 6), ctx.currency);
  return html`<section class="card" aria-labelledby="topups-title" id="topups">
<h2 id="topups-title">Pending and failed top-ups</h2>
<div class="table-wrap"><table id="topups-table">
<thead><tr><th scope="col">Date</th><th scope="col">Top-up</th><th scope="col" class="num">Amount</th><th scope="col" class="num">You pay</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${rows.map(
    (t) => html`<tr data-topup="${t.topup_id}">
<td>${formatTimestamp(t.created_at)}</td>
<td><span class="mono small">${t.topup_id}</span></td>
<td class="num">${money(t.amount)}</td>
<td class="num">${money(t.total)}</td>
<td>${STATUS_WORDS[t.status]}${t.note ? html`<br><span class="small muted">${t.note}</span>` : ''}</td>
<td>${t.status === 'created' && t.checkout ? html`<a class="button secondary small" href="/wallet/topups/${t.topup_id}/pay">Pay</a>` : ''}</td>
</tr>`,
  )}</tbody></table></div>
<p class="small muted">Money paid for a failed or expired top-up is returned by the payment provider; quote the top-up id to the operator if it is not.</p>
</section>`;
}

/**
 * The account's virtual account (GET /api/wallet/load-details): its number, IFSC and UPI ID when
 * it has one; else a button that asks the provider for one (never made by merely viewing /wallet).
 */
async function loadDetailsSection(
  ctx: WebContext,
  state: UserRequestState,
  topups: Topups,
): Promise<Html> {
  if (!topups.virtual_accounts) return html``;
  const details = await topups.storedLoadDetails(state.account.id);
  const body = details
    ? html`<div class="table-wrap"><table id="load-details-table"><tbody>
<tr><th scope="row">Account number</th><td class="mono" id="va-account-number">${details.account_number}</td></tr>
<tr><th scope="row">IFSC</th><td class="mono" id="va-ifsc">${details.ifsc}</td></tr>
${details.bank_name ? html`<tr><th scope="row">Bank</th><td>${details.bank_name}</td></tr>` : ''}
${details.upi_id ? html`<tr><th scope="row">UPI ID</th><td class="mono" id="va-upi">${details.upi_id}</td></tr>` : ''}
</tbody></table></div>
<p class="small muted">Transfer by IMPS, NEFT, RTGS or UPI from your own bank account: the wallet is credited by itself within seconds of the bank's confirmation, without a convenience fee.${ctx.deps.config.topups.virtual_accounts.hold_third_party ? ' A transfer from an account not in your name is held for the operator’s review.' : ''} Same as <code>GET /api/wallet/load-details</code>.</p>`
    : html`<p class="small muted">Get a bank account number and a UPI ID of your own: transfers to them credit this wallet by themselves.</p>
<form method="post" action="/wallet/load-details">${csrfField(state.csrf)}<button type="submit" class="secondary" id="load-details-make">Show bank transfer details</button></form>`;
  return html`<section class="card" aria-labelledby="load-details-title" id="load-details">
<h2 id="load-details-title">Bank transfer and UPI</h2>
${body}
</section>`;
}

/** What /wallet adds with a payment gateway: the returned top-up's status, the unsettled list, the load details. */
export async function topupSections(
  ctx: WebContext,
  state: UserRequestState,
  topups: Topups,
  returned: unknown,
): Promise<{ status: Html; list: Html; load_details: Html }> {
  const account_id = state.account.id;
  const [status, list, load_details] = await Promise.all([
    returnedSection(ctx, topups, account_id, returned),
    unsettledSection(ctx, topups, account_id),
    loadDetailsSection(ctx, state, topups),
  ]);
  return { status, list, load_details };
}

function originOf(url: string | null | undefined): string[] {
  if (!url) return [];
  try {
    return [new URL(url).origin];
  } catch {
    return [];
  }
}

/** The origins the pay page may load: the checkout's script, and the provider's frames and calls. */
function checkoutSources(ctx: WebContext, view: TopupView): PageSources['sources'] {
  const script = originOf(view.checkout?.script_url);
  const api = originOf(ctx.deps.config.topups[view.provider].base_url);
  const both = [...new Set([...script, ...api])];
  return { script, frame: both, connect: both };
}

function payPage(ctx: WebContext, view: TopupView): Html {
  const money = (units: number) => formatMoney(unitsToMicros(units, 6), ctx.currency);
  const checkout = view.checkout!;
  return html`<h1>Top up ${money(view.amount)}</h1>
<section class="card" aria-labelledby="pay-title" id="pay-card">
<h2 id="pay-title">Pay</h2>
<div class="table-wrap"><table id="pay-summary"><tbody>
<tr><th scope="row">To the wallet</th><td class="num">${money(view.amount)}</td></tr>
<tr><th scope="row">Convenience fee</th><td class="num" id="pay-fee">${money(view.fee - view.fee_gst)}</td></tr>
<tr><th scope="row">GST on the fee</th><td class="num" id="pay-fee-gst">${money(view.fee_gst)}</td></tr>
<tr><th scope="row">You pay</th><td class="num" id="pay-total"><strong>${money(view.total)}</strong></td></tr>
</tbody></table></div>
<p><button type="button" id="pay" disabled data-checkout="${JSON.stringify(checkout)}" data-return="/wallet?topup=${view.topup_id}">Pay ${money(view.total)}</button>
<a class="button secondary" href="/wallet">Cancel</a></p>
<p class="small" id="pay-status" role="status"></p>
<noscript><p class="error">The payment window needs JavaScript.</p></noscript>
<p class="small muted">Top-up <code>${view.topup_id}</code>. The wallet is credited when the payment provider confirms the payment to this gateway, whatever happens to this page.</p>
</section>
${checkout.script_url ? html`<script src="${checkout.script_url}" defer></script>` : ''}
<script src="${CHECKOUT_JS_PATH}" defer></script>`;
}

/** POST /wallet/load-details: makes the account's virtual account (the box's button), then back to /wallet. */
function loadDetailsRoute(ctx: WebContext, router: Router, live: () => Topups): void {
  router.post('/wallet/load-details', ...ctx.postGuard('user'), async (_req, res) => {
    const topups = live();
    const state = await userState(ctx, res);
    try {
      await topups.loadDetails(state.account.id);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status < 409) throw error;
      ctx.setFlash(state.binding, {
        kind: 'error',
        text: `The bank transfer details could not be made: ${error.message}`,
      });
    }
    res.redirect(303, '/wallet#load-details');
  });
}

/** Re-renders /wallet with the form's errors (the wallet page's own renderer). */
export type WalletRerender = (
  req: Request,
  res: Response,
  state: UserRequestState,
  topup: { errors: FormErrors; amount: string },
) => Promise<void>;

/** POST /wallet/topups (the form) and GET /wallet/topups/:id/pay (the checkout). */
export function topupRoutes(
  ctx: WebContext,
  router: Router,
  form: (limits: { min: number; max: number }) => z.ZodType<{ amount: number; nonce: string }>,
  fallback: { min: number; max: number },
  rerender: WalletRerender,
): void {
  const limits = topUpLimits(ctx, fallback);
  const schema = form(limits);
  /** Form nonce → the top-up it made: a form sent twice opens the same checkout. */
  const made = new Map<string, string>();
  const live = () => {
    const topups = ctx.deps.topups;
    if (ctx.deps.config.mode !== 'live' || !topups?.provider)
      throw new ApiError(
        404,
        'not_found',
        'Top-ups through a payment gateway are not configured here; the wallet page says how to fund the wallet.',
      );
    return topups;
  };

  router.post('/wallet/topups', ...ctx.postGuard('user'), async (req, res) => {
    const topups = live();
    const state = await userState(ctx, res);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const entered = typeof body.amount === 'string' ? body.amount.slice(0, 20) : '';
    const parsed = schema.safeParse(body);
    if (!parsed.success)
      return rerender(req, res, state, { errors: formErrors(parsed.error), amount: entered });
    const key = `${state.account.id}:${parsed.data.nonce}`;
    const seen = made.get(key);
    if (seen) return res.redirect(303, `/wallet/topups/${seen}/pay`);
    let view: TopupView;
    try {
      view = await topups.create(state.account.id, {
        amount_micros: parsed.data.amount,
        method: null,
      });
    } catch (error) {
      if (error instanceof ApiError && error.status === 400)
        return rerender(req, res, state, { errors: { amount: error.message }, amount: entered });
      if (error instanceof ApiError && error.status >= 409) {
        ctx.setFlash(state.binding, {
          kind: 'error',
          text: `The top-up could not be started: ${error.message} Nothing was charged.`,
        });
        return res.redirect(303, `/wallet?amount=${encodeURIComponent(entered)}`);
      }
      throw error;
    }
    made.set(key, view.topup_id);
    if (made.size > 10_000) made.delete(made.keys().next().value as string);
    res.redirect(303, `/wallet/topups/${view.topup_id}/pay`);
  });

  loadDetailsRoute(ctx, router, live);
  router.get('/wallet/topups/:topup_id/pay', ctx.requireSession('user'), async (req, res) => {
    const topups = live();
    const state = await userState(ctx, res);
    const id = topupId.safeParse(req.params.topup_id);
    const view = id.success ? await topups.get(state.account.id, id.data) : null;
    if (!view) throw new ApiError(404, 'not_found', 'No such top-up on this account.');
    if (view.status !== 'created' || !view.checkout)
      return res.redirect(303, `/wallet?topup=${view.topup_id}`);
    sendUserPage(ctx, req, res, state, 200, {
      title: 'Top up',
      current: '/wallet',
      body: payPage(ctx, view),
      sources: checkoutSources(ctx, view),
    });
  });
}
