// /wallet: balance, top-up (sandbox: an instant sandbox payment; live: the payment gateway's
// checkout when one is configured (wallet-topups.ts), else how to fund by bank transfer), the
// wallet history with opening and closing balances, and spend per day and tier.
import { randomBytes } from 'node:crypto';
import type { Router } from 'express';
import { z } from 'zod';
import { sha256Hex } from '../../accounts/keys.js';
import { clientGone, drained } from '../../http/client-gone.js';
import { ApiError } from '../../http/errors.js';
import {
  FUNDING_TOPUP,
  balanceMicros,
  creditWallet,
  heldMicros,
  owedMicros,
} from '../../ledger/ledger.js';
import { rowOf, table, type UsageTotals } from '../../store/state.js';
import { type AmountError, unitsToMicros } from '../../util/money.js';
import { audit } from '../audit.js';
import { spendChart } from '../chart.js';
import {
  fieldError,
  formErrors,
  invalidAttrs,
  type FormErrors,
  type WebContext,
} from '../context.js';
import { formatMoney, formatSignedMoney, formatTimestamp, formatUnits } from '../format.js';
import type { WalletRow } from '../history-index.js';
import { html } from '../html.js';
import { csrfField } from '../layout.js';
import { sendUserPage, userState, type UserRequestState } from './user-shell.js';
import {
  prefillAmount,
  providerTopUpSection,
  topUpLimits,
  topupRoutes,
  topupSections,
} from './wallet-topups.js';

export const TOPUP_MIN_MICROS = 1_000_000;
export const TOPUP_MAX_MICROS = 100_000 * 1_000_000;
const PRESETS_UNITS = [100, 500, 1000, 5000];
const PAGE_ROWS = 25;
const CHART_DAYS = 30;

/** A money field of a form: text with at most two decimals → integer micro-units. */
export function moneyField(min_micros: number, max_micros: number, currency: string) {
  return z
    .string()
    .trim()
    .min(1, 'Enter an amount')
    .regex(/^\d{1,12}(\.\d{1,2})?$/, 'Enter an amount such as 500 or 250.50 (at most two decimals)')
    .transform((text, ctx) => {
      try {
        return unitsToMicros(Number(text), 2);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as AmountError).message });
        return z.NEVER;
      }
    })
    .refine(
      (micros) => micros >= min_micros,
      `The smallest amount is ${formatMoney(min_micros, currency)}`,
    )
    .refine(
      (micros) => micros <= max_micros,
      `The largest amount is ${formatMoney(max_micros, currency)}`,
    );
}

const nonceField = z
  .string()
  .regex(/^[A-Za-z0-9_-]{16,64}$/, 'This form is incomplete; reload the page.');

export function topUpForm(currency: string) {
  return z.object({
    amount: moneyField(TOPUP_MIN_MICROS, TOPUP_MAX_MICROS, currency),
    nonce: nonceField,
  });
}

const pageQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).catch(1).default(1),
  /** The amount to fill in (a 402's shortfall), and the top-up a checkout came back with. */
  amount: z.string().max(20).optional().catch(undefined),
  topup: z.string().max(64).optional().catch(undefined),
});

async function historyTable(ctx: WebContext, account_id: string, page: number) {
  const { total } = await ctx.index.walletPage(account_id, 1, 1);
  const total_pages = Math.max(1, Math.ceil(total / PAGE_ROWS));
  const current = Math.min(page, total_pages);
  const newest_first: WalletRow[] = (await ctx.index.walletPage(account_id, current, PAGE_ROWS))
    .rows;
  if (total === 0) return html`<p class="empty">No wallet movements yet. Top up to start.</p>`;
  return html`<div class="table-wrap"><table id="wallet-history">
<caption class="visually-hidden">Wallet history, newest first</caption>
<thead><tr><th scope="col">Date</th><th scope="col">Description</th><th scope="col" class="num">Opening</th><th scope="col" class="num">Amount</th><th scope="col" class="num">Closing</th></tr></thead>
<tbody>${newest_first.map(
    (row) => html`<tr>
<td>${formatTimestamp(row.ts)}</td>
<td>${row.memo}${row.ref ? html`<br><span class="small muted mono">${row.ref}</span>` : ''}</td>
<td class="num">${formatMoney(row.opening_micros, ctx.currency)}</td>
<td class="num ${row.delta_micros >= 0 ? 'plus' : 'minus'}">${formatSignedMoney(row.delta_micros, ctx.currency)}</td>
<td class="num">${formatMoney(row.closing_micros, ctx.currency)}</td>
</tr>`,
  )}</tbody></table></div>
<nav class="pager" aria-label="Wallet history pages">
${current > 1 ? html`<a class="button secondary small" href="/wallet?page=${current - 1}#history">Newer</a>` : ''}
<span class="small muted">Page ${current} of ${total_pages} · ${total} movements</span>
${current < total_pages ? html`<a class="button secondary small" href="/wallet?page=${current + 1}#history">Older</a>` : ''}
<a class="button secondary small" href="/wallet/history.csv" download>Download CSV</a>
</nav>`;
}

const TOPUP_LIMITS = { min: TOPUP_MIN_MICROS, max: TOPUP_MAX_MICROS };

function topUpSection(
  ctx: WebContext,
  state: UserRequestState,
  options: { errors?: FormErrors; amount?: string },
) {
  const topups = ctx.deps.topups;
  if (ctx.deps.config.mode === 'live' && topups?.provider)
    return providerTopUpSection(ctx, state, topups, {
      ...options,
      limits: topUpLimits(ctx, TOPUP_LIMITS),
    });
  if (ctx.deps.config.mode === 'live') {
    return html`<section class="card" aria-labelledby="topup-title">
<h2 id="topup-title">Add funds</h2>
<p>This service runs in live mode: the wallet is funded by bank transfer, and the operator credits it when the payment arrives.</p>
<ol>
<li>Transfer the amount to the operator's account, as agreed in your contract.</li>
<li>Write your account id <code>${state.account.id}</code> in the payment reference.</li>
<li>The credit appears in the history below with your bank reference, usually within one working day.</li>
</ol>
<p class="small muted">Questions about a payment: contact the operator of <code>${ctx.publicUrl()}</code> and quote your account id.</p>
</section>`;
  }
  const nonce = randomBytes(16).toString('base64url');
  return html`<section class="card" aria-labelledby="topup-title">
<h2 id="topup-title">Top up</h2>
<p class="small muted">Sandbox mode: the payment is simulated and credited at once.</p>
<form method="post" action="/wallet/top-up" novalidate>
${csrfField(state.csrf)}<input type="hidden" name="nonce" value="${nonce}">
<div class="presets" role="group" aria-label="Quick amounts">${PRESETS_UNITS.map(
    (units) =>
      html`<button type="submit" class="secondary" name="amount" value="${units}">${formatMoney(units * 1_000_000, ctx.currency)}</button>`,
  )}</div>
</form>
<form method="post" action="/wallet/top-up" novalidate>
${csrfField(state.csrf)}<input type="hidden" name="nonce" value="${nonce}">
<div class="row">
<div class="field"><label for="amount">Other amount (${ctx.currency})<span class="hint" id="amount-hint">${formatUnits(TOPUP_MIN_MICROS, ctx.currency)} to ${formatUnits(TOPUP_MAX_MICROS, ctx.currency)}, at most two decimals.</span></label>
<input id="amount" name="amount" type="text" inputmode="decimal" autocomplete="off" required value="${options.amount ?? ''}"${invalidAttrs(options.errors, 'amount', 'amount-hint')}>${fieldError(options.errors, 'amount')}</div>
<button type="submit">Pay (sandbox)</button>
</div>
${fieldError(options.errors, 'nonce')}
</form>
</section>`;
}

/** AI usage totals, the figures of GET /v1/balance: cached prompt tokens and reasoning tokens shown apart. */
function aiUsageSection(ctx: WebContext, usage: UsageTotals | undefined) {
  if (!usage) return '';
  const n = (value: number | undefined) => (value ?? 0).toLocaleString('en-IN');
  const protocols = Object.entries(usage.by_protocol ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return html`<section class="card" aria-labelledby="ai-usage-title" id="ai-usage">
<h2 id="ai-usage-title">AI usage</h2>
<p>${n(usage.requests)} requests: ${n(usage.prompt_tokens)} prompt tokens (${n(usage.cached_tokens)} cached), ${n(usage.completion_tokens)} completion tokens (${n(usage.reasoning_tokens)} reasoning), ${formatMoney(usage.cost_micros, ctx.currency)}.</p>
${
  protocols.length === 0
    ? ''
    : html`<div class="table-wrap"><table id="ai-usage-by-protocol"><thead><tr><th scope="col">Protocol</th><th scope="col" class="num">Requests</th><th scope="col" class="num">Prompt (cached)</th><th scope="col" class="num">Output (reasoning)</th><th scope="col" class="num">Cost</th></tr></thead><tbody>${protocols.map(
        ([name, p]) =>
          html`<tr><td>${name}</td><td class="num">${n(p.requests)}</td><td class="num">${n(p.prompt_tokens)} (${n(p.cached_tokens)})</td><td class="num">${n(p.completion_tokens)} (${n(p.reasoning_tokens)})</td><td class="num">${formatMoney(p.cost_micros, ctx.currency)}</td></tr>`,
      )}</tbody></table></div>`
}
<p class="small"><a href="/reports?report=ai-usage">Every request, with CSV</a></p>
</section>`;
}

async function walletPage(
  ctx: WebContext,
  state: UserRequestState,
  page: number,
  topup: { errors?: FormErrors; amount?: string; returned?: unknown },
) {
  const account_id = state.account.id;
  const { balance_micros, held, owed, usage } = await ctx.deps.store.read(
    (s) => ({
      balance_micros: balanceMicros(s, account_id),
      held: heldMicros(s, account_id),
      owed: owedMicros(s, account_id),
      usage: rowOf(table(s, 'usage'), account_id),
    }),
    { fresh: true },
  );
  const today = ctx.now().toISOString().slice(0, 10);
  const topups = ctx.deps.config.mode === 'live' ? ctx.deps.topups : undefined;
  const [spend, history, gateway] = await Promise.all([
    ctx.index.dailySpend(account_id, today, CHART_DAYS),
    historyTable(ctx, account_id, page),
    topups?.provider ? topupSections(ctx, state, topups, topup.returned) : null,
  ]);
  return html`<h1>Wallet</h1>
<p class="lead">One wallet pays for AI requests and payments. Requests stop with 402 when it runs out.</p>
${gateway?.status ?? ''}
<div class="grid">
<section class="card" aria-labelledby="balance-title">
<h2 id="balance-title">Balance</h2>
<p class="stat" id="balance" data-balance-micros="${balance_micros}">${formatMoney(balance_micros, ctx.currency)}</p>
${held > 0 ? html`<p class="small muted">${formatMoney(held, ctx.currency)} more is reserved for requests in progress.</p>` : ''}
${owed > 0 ? html`<p class="small" id="owed">${formatMoney(owed, ctx.currency)} is owed for AI usage beyond the wallet; the next top-up pays it first.</p>` : ''}
<p class="small muted">Same as <code>GET /v1/balance</code> and <code>GET /api/wallet/balance</code> with one of your keys.</p>
</section>
${topUpSection(ctx, state, topup)}
</div>
${gateway?.load_details ?? ''}
${gateway?.list ?? ''}
${aiUsageSection(ctx, usage)}
<section class="card" aria-labelledby="spend-title">
<h2 id="spend-title">AI spend, last ${CHART_DAYS} days</h2>
${spendChart(spend, ctx.currency)}
</section>
<section class="card" aria-labelledby="history-title" id="history">
<h2 id="history-title">History</h2>
${history}
</section>`;
}

function csvCell(value: string): string {
  // Quote, and defuse spreadsheet formulas.
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return `"${safe.replace(/"/g, '""')}"`;
}

export function walletRoutes(ctx: WebContext, router: Router): void {
  router.get('/wallet', ctx.requireSession('user'), async (req, res) => {
    await ctx.index.catchUp();
    const state = await userState(ctx, res);
    const { page, amount, topup } = pageQuery.parse(req.query);
    const limits = ctx.deps.config.mode === 'live' ? topUpLimits(ctx, TOPUP_LIMITS) : TOPUP_LIMITS;
    sendUserPage(ctx, req, res, state, 200, {
      title: 'Wallet',
      current: '/wallet',
      notice: ctx.takeFlash(state.binding),
      body: await walletPage(ctx, state, page, {
        amount: prefillAmount(amount, limits),
        returned: topup,
      }),
    });
  });

  historyCsvRoute(ctx, router);
  topUpRoute(ctx, router, topUpForm(ctx.currency)); // the form's schema, built once
  topupRoutes(
    ctx,
    router,
    (limits) =>
      z.object({ amount: moneyField(limits.min, limits.max, ctx.currency), nonce: nonceField }),
    TOPUP_LIMITS,
    async (req, res, state, topup) => {
      await ctx.index.catchUp();
      sendUserPage(ctx, req, res, state, 422, {
        title: 'Wallet',
        current: '/wallet',
        body: await walletPage(ctx, state, 1, topup),
      });
    },
  );
}

/** GET /wallet/history.csv: the whole wallet history, streamed with backpressure. */
function historyCsvRoute(ctx: WebContext, router: Router): void {
  router.get('/wallet/history.csv', ctx.requireSession('user'), async (req, res) => {
    await ctx.index.catchUp();
    const state = await userState(ctx, res);
    res.setHeader('Content-Type', 'text/csv; charset=utf-8');
    res.setHeader('Content-Disposition', 'attachment; filename="wallet-history.csv"');
    // Streamed a chunk of rows at a time, waiting for the socket to drain: memory stays
    // bounded however long the history. A client that leaves ends the wait (and the walk).
    const signal = clientGone(req, res);
    let chunk = 'date,description,reference,opening,amount,closing,currency\r\n';
    for await (const row of ctx.index.walletRows(state.account.id)) {
      chunk += `${[row.ts, row.memo, row.ref ?? '', formatPlain(row.opening_micros), formatPlain(row.delta_micros), formatPlain(row.closing_micros), ctx.currency].map(csvCell).join(',')}\r\n`;
      if (chunk.length >= 64 * 1024) {
        if (!res.write(chunk)) await drained(res, signal);
        chunk = '';
        if (signal.aborted || res.destroyed) return;
      }
    }
    res.end(chunk);
  });
}

/** POST /wallet/top-up (sandbox only): credit once per form nonce, then flash the outcome. */
function topUpRoute(ctx: WebContext, router: Router, form: ReturnType<typeof topUpForm>): void {
  const { store } = ctx.deps;
  router.post('/wallet/top-up', ...ctx.postGuard('user'), async (req, res) => {
    const state = await userState(ctx, res);
    if (ctx.deps.config.mode !== 'sandbox') {
      throw new ApiError(
        403,
        'live_mode',
        'Instant top-ups exist only in sandbox mode. The wallet page explains how to fund the wallet.',
      );
    }
    const body = (req.body ?? {}) as Record<string, unknown>;
    const parsed = form.safeParse(body);
    if (!parsed.success) {
      await ctx.index.catchUp();
      const amount = typeof body.amount === 'string' ? body.amount.slice(0, 20) : '';
      return sendUserPage(ctx, req, res, state, 422, {
        title: 'Wallet',
        current: '/wallet',
        body: await walletPage(ctx, state, 1, { errors: formErrors(parsed.error), amount }),
      });
    }
    const { amount: amount_micros, nonce } = parsed.data;
    const idempotency_key = `web-topup:${state.account.id}:${nonce}`;
    const request_hash = sha256Hex(`${state.account.id}:${amount_micros}`);
    const outcome = await store.transact((tx) => {
      const seen = tx.get('idempotency', idempotency_key);
      if (seen) return seen.request_hash === request_hash ? 'duplicate' : 'conflict';
      const ref = `sandbox_${nonce}`;
      creditWallet(tx, {
        account_id: state.account.id,
        amount_micros,
        from: FUNDING_TOPUP,
        memo: 'Sandbox top-up',
        ref,
      });
      tx.set('idempotency', idempotency_key, {
        key: idempotency_key,
        request_hash,
        status: 200,
        body: null,
        created_at: tx.now.toISOString(),
      });
      audit(tx, {
        actor: `user:${state.account.id}`,
        action: 'wallet.topup',
        account_id: state.account.id,
        detail: `${formatPlain(amount_micros)} ${ctx.currency} ${ref}`,
        ip: ctx.clientIp(req),
      });
      return 'credited';
    });
    const amount_text = formatMoney(amount_micros, ctx.currency);
    ctx.setFlash(
      state.binding,
      outcome === 'credited'
        ? { kind: 'ok', text: `${amount_text} added to your wallet.` }
        : outcome === 'duplicate'
          ? {
              kind: 'info',
              text: `That top-up of ${amount_text} was already credited; it was not charged twice.`,
            }
          : {
              kind: 'error',
              text: 'This top-up form was already used for another amount. Nothing was charged; try again.',
            },
    );
    res.redirect(303, '/wallet');
  });
}

/** Plain decimal text for CSV: "-12.5" style, no grouping, no symbol. */
function formatPlain(micros: number): string {
  return formatUnits(micros, 'XXX').replace(/,/g, '').replace('−', '-');
}
