// /reports: the account's payments reports as tables with filters and CSV download:
// transactions, commissions and API logs (the wallet report is the history on /wallet).
// Transactions are selected by the payments room's own filter (filterTransactions).
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { filterTransactions, transactionsQuery } from '../../payments/account-routes.js';
import type { PaymentTxn } from '../../payments/tables.js';
import { formErrors, type WebContext } from '../context.js';
import { formatMoney, formatTimestamp, formatUnits } from '../format.js';
import { html, type Html } from '../html.js';
import { sendUserPage, userState } from './user-shell.js';

const REPORTS = ['transactions', 'commissions', 'api-logs'] as const;
type Report = (typeof REPORTS)[number];
const LABELS: Record<Report, string> = { transactions: 'Transactions', commissions: 'Commissions', 'api-logs': 'API logs' };
const PAGE_ROWS = 50;

const reportQuery = z.object({
  report: z.enum(REPORTS).catch('transactions').default('transactions'),
  format: z.enum(['html', 'csv']).catch('html').default('html'),
});

/** Empty fields of the filter form mean "no filter". */
function filled(query: Request['query']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) if (typeof value === 'string' && value.trim() !== '' && !['report', 'format'].includes(name)) out[name] = value.trim();
  return out;
}

function csvCell(value: string | number | null): string {
  const text = value === null ? '' : String(value);
  const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return `"${safe.replace(/"/g, '""')}"`;
}

function plain(micros: number): string {
  return formatUnits(micros, 'XXX').replace(/,/g, '').replace('−', '-');
}

function statusPill(status: string): Html {
  const kind = status === 'success' ? 'ok' : status === 'pending' ? 'warn' : 'bad';
  return html`<span class="pill ${kind}">${status}</span>`;
}

function describe(txn: PaymentTxn): string {
  const operator = typeof txn.details.operator === 'string' ? txn.details.operator : '';
  return [txn.service, operator].filter(Boolean).join(' · ');
}

export function reportRoutes(ctx: WebContext, router: Router): void {
  ctx.extensions.reports = true;
  router.get('/reports', ctx.requireSession('user'), async (req: Request, res: Response) => {
    await ctx.index.catchUp();
    const state = await userState(ctx, res);
    const { report, format } = reportQuery.parse(req.query);
    const raw = filled(req.query);
    const parsed = transactionsQuery.safeParse({ ...raw, limit: '500' });
    const errors = parsed.success ? {} : formErrors(parsed.error);
    const filter = parsed.success ? parsed.data : transactionsQuery.parse({});
    const page = Math.max(1, Math.min(1_000_000, Number.parseInt(raw.page ?? '1', 10) || 1));
    const account_id = state.account.id;

    let header: string[] = [];
    let rows: Array<Array<string | number | null>> = [];
    let cells: Html[] = [];
    let total_line: Html | string = '';
    if (report === 'transactions' || report === 'commissions') {
      let txns = filterTransactions(Object.values(ctx.deps.store.rows('payment_txns')), filter, account_id);
      if (report === 'commissions') txns = txns.filter((txn) => txn.status === 'success' && txn.commission_micros > 0);
      if (report === 'transactions') {
        header = ['created_at', 'txn_id', 'service', 'operator', 'number', 'status', 'amount', 'charges', 'commission', 'message'];
        rows = txns.map((t) => [t.created_at, t.id, t.service, String(t.details.operator ?? ''), t.subject, t.status, plain(t.amount_micros), plain(t.charges_micros), plain(t.status === 'success' ? t.commission_micros : 0), t.message]);
        cells = txns.slice((page - 1) * PAGE_ROWS, page * PAGE_ROWS).map(
          (t) => html`<tr><td>${formatTimestamp(t.created_at)}</td><td class="mono small">${t.id}</td><td>${describe(t)}</td><td class="mono">${t.subject}</td><td>${statusPill(t.status)}</td><td class="num">${formatMoney(t.amount_micros, ctx.currency)}</td><td class="num">${formatMoney(t.status === 'success' ? t.commission_micros : 0, ctx.currency)}</td><td class="small">${t.message}</td></tr>`,
        );
        const spent = txns.filter((t) => t.status === 'success').reduce((sum, t) => sum + t.amount_micros, 0);
        total_line = `${txns.length} transaction${txns.length === 1 ? '' : 's'}; successful amount ${formatMoney(spent, ctx.currency)}.`;
      } else {
        header = ['created_at', 'txn_id', 'service', 'operator', 'amount', 'commission'];
        rows = txns.map((t) => [t.created_at, t.id, t.service, String(t.details.operator ?? ''), plain(t.amount_micros), plain(t.commission_micros)]);
        cells = txns.slice((page - 1) * PAGE_ROWS, page * PAGE_ROWS).map(
          (t) => html`<tr><td>${formatTimestamp(t.created_at)}</td><td class="mono small">${t.id}</td><td>${describe(t)}</td><td class="num">${formatMoney(t.amount_micros, ctx.currency)}</td><td class="num">${formatMoney(t.commission_micros, ctx.currency)}</td></tr>`,
        );
        const earned = txns.reduce((sum, t) => sum + t.commission_micros, 0);
        total_line = `${txns.length} commission${txns.length === 1 ? '' : 's'}; ${formatMoney(earned, ctx.currency)} earned.`;
      }
    } else {
      const from = filter.from ?? -Infinity;
      const to = filter.to ?? Infinity;
      const logs = ctx.index
        .apiLogs(account_id)
        .filter((entry) => {
          const at = Date.parse(entry.ts);
          return at >= from && at <= to && (!filter.status || (filter.status === 'success') === entry.status < 400);
        })
        .slice()
        .reverse();
      header = ['ts', 'method', 'path', 'status', 'latency_ms', 'key_prefix', 'ip', 'txn_id'];
      rows = logs.map((e) => [e.ts, e.method, e.path, e.status, e.latency_ms, e.key_prefix, e.ip, e.txn_id]);
      cells = logs.slice((page - 1) * PAGE_ROWS, page * PAGE_ROWS).map(
        (e) => html`<tr><td>${formatTimestamp(e.ts)}</td><td><code>${e.method} ${e.path}</code></td><td class="num">${e.status}</td><td class="num">${e.latency_ms.toFixed(1)} ms</td><td class="mono small">${e.key_prefix ?? ''}${e.key_prefix ? '…' : ''}</td><td class="mono small">${e.ip ?? ''}</td></tr>`,
      );
      total_line = `${logs.length} request${logs.length === 1 ? '' : 's'} (the latest thousand are kept for this page).`;
    }

    if (format === 'csv') {
      res.setHeader('Content-Type', 'text/csv; charset=utf-8');
      res.setHeader('Content-Disposition', `attachment; filename="${report}.csv"`);
      res.setHeader('Cache-Control', 'no-store');
      res.send(`${[header.join(','), ...rows.map((row) => row.map(csvCell).join(','))].join('\r\n')}\r\n`);
      return;
    }

    const columns: Record<Report, string[]> = {
      transactions: ['Date', 'Transaction', 'Service', 'Number', 'Status', 'Amount', 'Commission', 'Message'],
      commissions: ['Date', 'Transaction', 'Service', 'Amount', 'Commission'],
      'api-logs': ['Time', 'Request', 'Status', 'Latency', 'Key', 'Client address'],
    };
    const numeric = new Set(['Amount', 'Commission', 'Status', 'Latency']);
    const pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
    const link = (extra: Record<string, string>) => `/reports?${new URLSearchParams({ report, ...raw, ...extra }).toString()}`;
    const tabs = REPORTS.map((name) => html`<li><a href="/reports?report=${name}"${name === report ? html` aria-current="page"` : ''}>${LABELS[name]}</a></li>`);
    const invalid = (name: string) => (errors[name] ? html` aria-invalid="true" aria-describedby="${name}-error"` : '');
    const body = html`<h1>Reports</h1>
<p class="lead">Payments activity of your account. Dates are UTC. The wallet report is the history on <a href="/wallet">Wallet</a>.</p>
<nav class="main card" aria-label="Reports"><ul>${tabs}</ul></nav>
<form method="get" action="/reports" class="card" aria-label="Filters">
<input type="hidden" name="report" value="${report}">
<div class="row">
${report !== 'api-logs' ? html`<div class="field"><label for="service">Service</label><select id="service" name="service"><option value="">All</option>${['recharge', 'dmt', 'pan', 'bills'].map((s) => html`<option value="${s}"${raw.service === s ? html` selected` : ''}>${s}</option>`)}</select></div>` : ''}
${report !== 'commissions' ? html`<div class="field"><label for="status">Status</label><select id="status" name="status"><option value="">All</option>${(report === 'api-logs' ? ['success', 'failed'] : ['success', 'pending', 'failed']).map((s) => html`<option value="${s}"${raw.status === s ? html` selected` : ''}>${report === 'api-logs' ? (s === 'success' ? 'below 400' : '400 and above') : s}</option>`)}</select></div>` : ''}
<div class="field"><label for="from">From</label><input id="from" name="from" type="date" value="${raw.from ?? ''}"${invalid('from')}>${errors.from ? html`<p class="error" id="from-error">${errors.from}</p>` : ''}</div>
<div class="field"><label for="to">To</label><input id="to" name="to" type="date" value="${raw.to ?? ''}"${invalid('to')}>${errors.to ? html`<p class="error" id="to-error">${errors.to}</p>` : ''}</div>
<button type="submit" class="secondary">Apply</button>
<a class="button secondary" href="${link({ format: 'csv' })}" download>Download CSV</a>
</div>
</form>
<section class="card" aria-labelledby="report-title">
<h2 id="report-title">${LABELS[report]}</h2>
<p class="small muted">${total_line}</p>
${
  cells.length === 0
    ? html`<p class="empty">Nothing matches these filters.</p>`
    : html`<div class="table-wrap"><table id="report-table"><thead><tr>${columns[report].map((name) => html`<th scope="col"${numeric.has(name) ? html` class="num"` : ''}>${name}</th>`)}</tr></thead><tbody>${cells}</tbody></table></div>
<nav class="pager" aria-label="Report pages">${page > 1 ? html`<a class="button secondary small" href="${link({ page: String(page - 1) })}">Newer</a>` : ''}<span class="small muted">Page ${Math.min(page, pages)} of ${pages}</span>${page < pages ? html`<a class="button secondary small" href="${link({ page: String(page + 1) })}">Older</a>` : ''}</nav>`
}
</section>`;
    sendUserPage(ctx, req, res, state, parsed.success ? 200 : 422, { title: 'Reports', current: '/reports', body, notice: parsed.success ? null : { kind: 'error', text: 'A filter is not valid; see below.' } });
  });
}
