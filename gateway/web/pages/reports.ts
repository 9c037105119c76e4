// /reports: the account's payments reports as tables with filters and CSV download:
// transactions, commissions and API logs (the wallet report is the history on /wallet).
// The rows come from the payments room's report functions, exactly as GET /api/reports/*
// computes them, and the CSV is that endpoint's CSV: one source for the page and the API.
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { clientGone, ClientGoneError } from '../../http/client-gone.js';
import { PROTOCOL_NAMES } from '../../chat/protocols/index.js';
import { ApiError } from '../../http/errors.js';
import type { ReportResult } from '../../payments/reports/reports.js';
import type { Cell, Row } from '../../payments/shared/csv.js';
import { unitsToMicros } from '../../util/money.js';
import type { WebContext } from '../context.js';
import { formatMoney, formatTimestamp } from '../format.js';
import { html, type Html } from '../html.js';
import { sendUserPage, userState } from './user-shell.js';

const REPORTS = ['transactions', 'commissions', 'api-logs', 'ai-usage'] as const;
type Report = (typeof REPORTS)[number];
const LABELS: Record<Report, string> = {
  transactions: 'Transactions',
  commissions: 'Commissions',
  'api-logs': 'API logs',
  'ai-usage': 'AI usage',
};
const PAGE_ROWS = 50;
const FILTERS = ['service', 'status', 'from', 'to', 'number', 'txn_id', 'protocol'] as const;

const reportQuery = z.object({
  report: z.enum(REPORTS).catch('transactions').default('transactions'),
  format: z.enum(['html', 'csv']).catch('html').default('html'),
  page: z.coerce.number().int().min(1).max(1_000_000).catch(1).default(1),
});

/** The filter fields the form filled in; empty fields mean "no filter". */
function filled(query: Request['query']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FILTERS) {
    const value = query[name];
    if (typeof value === 'string' && value.trim() !== '') out[name] = value.trim();
  }
  return out;
}

function statusPill(status: Cell): Html {
  const text = String(status ?? '');
  const kind =
    text === 'success' || /^[23]\d\d$/.test(text) ? 'ok' : text === 'pending' ? 'warn' : 'bad';
  return html`<span class="pill ${kind}">${text}</span>`;
}

type Column = {
  label: string;
  numeric?: boolean;
  cell: (row: Row, currency: string) => Html | string;
};

const money =
  (name: string): Column['cell'] =>
  (row, currency) =>
    typeof row[name] === 'number' ? formatMoney(unitsToMicros(row[name] as number), currency) : '';
const text =
  (name: string): Column['cell'] =>
  (row) =>
    row[name] === null || row[name] === undefined ? '' : String(row[name]);

const COLUMNS: Record<Report, Column[]> = {
  transactions: [
    { label: 'Date', cell: (row) => formatTimestamp(row.created_at as string) },
    {
      label: 'Transaction',
      cell: (row) => html`<span class="mono small">${text('txn_id')(row, '')}</span>`,
    },
    {
      label: 'Service',
      cell: (row) => `${text('service')(row, '')} · ${text('description')(row, '')}`,
    },
    { label: 'Number', cell: (row) => html`<span class="mono">${text('number')(row, '')}</span>` },
    { label: 'Status', cell: (row) => statusPill(row.status ?? null) },
    { label: 'Amount', numeric: true, cell: money('amount') },
    { label: 'Commission', numeric: true, cell: money('commission') },
    {
      label: 'Message',
      cell: (row) => html`<span class="small">${text('message')(row, '')}</span>`,
    },
  ],
  commissions: [
    { label: 'Date', cell: (row) => formatTimestamp(row.created_at as string) },
    {
      label: 'Transaction',
      cell: (row) => html`<span class="mono small">${text('txn_id')(row, '')}</span>`,
    },
    {
      label: 'Service',
      cell: (row) => `${text('service')(row, '')} · ${text('description')(row, '')}`,
    },
    { label: 'Amount', numeric: true, cell: money('amount') },
    { label: 'Commission', numeric: true, cell: money('commission') },
  ],
  'api-logs': [
    { label: 'Time', cell: (row) => formatTimestamp(row.ts as string) },
    {
      label: 'Request',
      cell: (row) => html`<code>${text('method')(row, '')} ${text('path')(row, '')}</code>`,
    },
    { label: 'Status', numeric: true, cell: (row) => statusPill(row.status ?? null) },
    {
      label: 'Latency',
      numeric: true,
      cell: (row) => (typeof row.latency_ms === 'number' ? `${row.latency_ms.toFixed(1)} ms` : ''),
    },
    {
      label: 'Key',
      cell: (row) =>
        html`<span class="mono small">${row.key_prefix ? `${String(row.key_prefix)}…` : ''}</span>`,
    },
    {
      label: 'Client address',
      cell: (row) => html`<span class="mono small">${text('ip')(row, '')}</span>`,
    },
  ],
  'ai-usage': [
    { label: 'Time', cell: (row) => formatTimestamp(row.ts as string) },
    {
      label: 'Request',
      cell: (row) => html`<span class="mono small">${text('request_id')(row, '')}</span>`,
    },
    { label: 'Protocol', cell: text('protocol') },
    {
      label: 'Model',
      cell: (row) => `${text('model')(row, '')} · ${text('target')(row, '') || 'no target'}`,
    },
    {
      label: 'Status',
      cell: (row) => statusPill(row.status === 'ok' ? 'success' : (row.status ?? null)),
    },
    {
      label: 'Prompt (cached)',
      numeric: true,
      cell: (row) => `${text('prompt_tokens')(row, '')} (${text('cached_tokens')(row, '')})`,
    },
    {
      label: 'Output (reasoning)',
      numeric: true,
      cell: (row) =>
        `${text('completion_tokens')(row, '')} (${text('reasoning_tokens')(row, '')})${row.usage === 'estimated' ? ' est.' : ''}`,
    },
    { label: 'Cost', numeric: true, cell: money('cost') },
    {
      label: 'Owed',
      numeric: true,
      cell: (row, currency) => (row.owed ? money('owed')(row, currency) : ''),
    },
  ],
};

function summary(report: Report, result: ReportResult, currency: string): string {
  const count = result.total;
  if (report === 'transactions') {
    const success = (result.totals.success as { amount?: number } | undefined)?.amount ?? 0;
    return `${count} transaction${count === 1 ? '' : 's'}; successful amount ${formatMoney(unitsToMicros(success), currency)}.`;
  }
  if (report === 'commissions') {
    const earned =
      result.rows.length === count
        ? result.rows.reduce((sum, row) => sum + unitsToMicros((row.commission as number) ?? 0), 0)
        : null;
    return `${count} commission${count === 1 ? '' : 's'}${earned === null ? '' : `; ${formatMoney(earned, currency)} earned`}.`;
  }
  if (report === 'ai-usage') {
    const cost = (result.totals as { cost?: number }).cost ?? 0;
    return `${count} request${count === 1 ? '' : 's'}; ${formatMoney(unitsToMicros(cost), currency)} in all.`;
  }
  return `${count} request${count === 1 ? '' : 's'}.`;
}

const statementQuery = z.object({
  kind: z.enum(['commission', 'tds']).catch('commission').default('commission'),
  format: z.enum(['pdf', 'csv']).catch('pdf').default('pdf'),
});

/** The month before `now`'s (IST), `YYYY-MM`, and the financial year and quarter it falls in. */
function lastMonth(now: Date): { month: string; fy: string; quarter: string } {
  const ist = new Date(now.getTime() + 330 * 60_000);
  const d = new Date(Date.UTC(ist.getUTCFullYear(), ist.getUTCMonth() - 1, 1));
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth() + 1;
  const fy_start = month >= 4 ? year : year - 1;
  const quarter =
    month >= 4 && month <= 6 ? 'Q1' : month <= 9 && month >= 7 ? 'Q2' : month >= 10 ? 'Q3' : 'Q4';
  return {
    month: `${year}-${String(month).padStart(2, '0')}`,
    fy: `${fy_start}-${String((fy_start + 1) % 100).padStart(2, '0')}`,
    quarter,
  };
}

/** The tax documents card: the month's commission statement and the quarter's TDS statement, as PDF or CSV. */
function documentsCard(now: Date): Html {
  const last = lastMonth(now);
  return html`<section class="card" aria-labelledby="documents-title">
<h2 id="documents-title">Tax documents</h2>
<p class="small muted">Commissions (gross, TDS, net) and fees (taxable value and GST) of a month; the TDS deducted in a quarter of the financial year (section 194H).</p>
<form method="get" action="/reports/statement" class="row" aria-label="Commission statement">
<input type="hidden" name="kind" value="commission">
<div class="field"><label for="statement-month">Month</label><input id="statement-month" name="month" type="month" value="${last.month}" required></div>
<div class="field"><label for="statement-format">Format</label><select id="statement-format" name="format"><option value="pdf">PDF</option><option value="csv">CSV</option></select></div>
<button type="submit" class="secondary">Commission statement</button>
</form>
<form method="get" action="/reports/statement" class="row" aria-label="TDS statement">
<input type="hidden" name="kind" value="tds">
<div class="field"><label for="tds-fy">Financial year</label><input id="tds-fy" name="fy" value="${last.fy}" pattern="\\d{4}-\\d{2}" required></div>
<div class="field"><label for="tds-quarter">Quarter</label><select id="tds-quarter" name="quarter">${['Q1', 'Q2', 'Q3', 'Q4'].map((q) => html`<option value="${q}"${q === last.quarter ? html` selected` : ''}>${q}</option>`)}</select></div>
<div class="field"><label for="tds-format">Format</label><select id="tds-format" name="format"><option value="pdf">PDF</option><option value="csv">CSV</option></select></div>
<button type="submit" class="secondary">TDS statement</button>
</form>
</section>`;
}

export function reportRoutes(ctx: WebContext, router: Router): void {
  ctx.extensions.reports = true;
  router.get(
    '/reports/statement',
    ctx.requireSession('user'),
    async (req: Request, res: Response) => {
      const payments = ctx.deps.payments;
      if (!payments)
        throw new ApiError(
          404,
          'payments_absent',
          'The payments module is not part of this gateway.',
        );
      const state = await userState(ctx, res);
      const { kind, format } = statementQuery.parse(req.query);
      const raw =
        kind === 'tds'
          ? { fy: req.query.fy, quarter: req.query.quarter, format }
          : { month: req.query.month, format };
      await payments.statement(kind, raw, state.account.id, req, res);
    },
  );
  router.get('/reports', ctx.requireSession('user'), async (req: Request, res: Response) => {
    const payments = ctx.deps.payments;
    if (!payments)
      throw new ApiError(
        404,
        'payments_absent',
        'The payments module is not part of this gateway.',
      );
    const state = await userState(ctx, res);
    const { report, format, page } = reportQuery.parse(req.query);
    const raw = filled(req.query);
    const scope = { account_id: state.account.id };
    // A download is streamed as its rows are read (a bad filter is a 400 before any byte).
    if (format === 'csv')
      return payments.downloadCsv(report, { ...raw, format: 'csv' }, scope, req, res);
    const errors: Record<string, string> = {};
    let result: ReportResult | null = null;
    try {
      const query = { ...raw, page: String(page), limit: String(PAGE_ROWS) };
      result = (await payments.report(report, query, scope, clientGone(req, res))).result;
    } catch (error) {
      if (error instanceof ClientGoneError) return; // nobody to show the page to
      if (!(error instanceof ApiError) || error.status !== 400) throw error;
      errors[error.param ?? 'status'] = error.message.replace(/^[a-z_]+: /, '');
    }

    const body = html`${reportBody(ctx, { report, raw, errors, result, page })}${documentsCard(ctx.deps.clock.now())}`;
    const ok = Object.keys(errors).length === 0;
    sendUserPage(ctx, req, res, state, ok ? 200 : 422, {
      title: 'Reports',
      current: '/reports',
      body,
      notice: ok ? null : { kind: 'error', text: 'A filter is not valid; see below.' },
    });
  });
}

/** The reports page: tabs, the filter form (with its field errors) and one page of the report. */
function reportBody(
  ctx: WebContext,
  view: {
    report: Report;
    raw: Record<string, string>;
    errors: Record<string, string>;
    result: ReportResult | null;
    page: number;
  },
): Html {
  const { report, raw, errors, result, page } = view;
  // The payments room's services (Payments.services), by code, as the reports filter them.
  const services = (ctx.deps.payments?.services ?? []).map((service) => service.code);
  const columns = COLUMNS[report];
  const rows = result?.rows ?? [];
  const pages = result ? Math.max(1, Math.ceil(result.total / PAGE_ROWS)) : 1;
  const link = (extra: Record<string, string>) =>
    `/reports?${new URLSearchParams({ report, ...raw, ...extra }).toString()}`;
  const tabs = REPORTS.map(
    (name) =>
      html`<li><a href="/reports?report=${name}"${name === report ? html` aria-current="page"` : ''}>${LABELS[name]}</a></li>`,
  );
  const invalid = (name: string) =>
    errors[name] ? html` aria-invalid="true" aria-describedby="${name}-error"` : '';
  const fieldError = (name: string) =>
    errors[name] ? html`<p class="error" id="${name}-error">${errors[name]}</p>` : '';
  const statuses =
    report === 'api-logs'
      ? ['2xx', '4xx', '5xx']
      : report === 'ai-usage'
        ? ['ok', 'client_closed', 'upstream_error', 'stream_error']
        : ['success', 'pending', 'failed', 'on_hold', 'refund_pending', 'refunded', 'reversed'];
  return html`<h1>Reports</h1>
<p class="lead">Payments and AI activity of your account. Dates are UTC. The wallet report is the history on <a href="/wallet">Wallet</a>.</p>
<nav class="main card" aria-label="Reports"><ul>${tabs}</ul></nav>
<form method="get" action="/reports" class="card" aria-label="Filters">
<input type="hidden" name="report" value="${report}">
<div class="row">
${report === 'ai-usage' ? html`<div class="field"><label for="protocol">Protocol</label><select id="protocol" name="protocol"${invalid('protocol')}><option value="">All</option>${PROTOCOL_NAMES.map((p) => html`<option value="${p}"${raw.protocol === p ? html` selected` : ''}>${p}</option>`)}</select>${fieldError('protocol')}</div>` : ''}
${report !== 'api-logs' && report !== 'ai-usage' ? html`<div class="field"><label for="service">Service</label><select id="service" name="service"${invalid('service')}><option value="">All</option>${services.map((s) => html`<option value="${s}"${raw.service === s ? html` selected` : ''}>${s}</option>`)}</select>${fieldError('service')}</div>` : ''}
${report !== 'commissions' ? html`<div class="field"><label for="status">Status</label><select id="status" name="status"${invalid('status')}><option value="">All</option>${statuses.map((s) => html`<option value="${s}"${raw.status === s ? html` selected` : ''}>${s}</option>`)}</select>${fieldError('status')}</div>` : ''}
<div class="field"><label for="from">From</label><input id="from" name="from" type="date" value="${raw.from ?? ''}"${invalid('from')}>${fieldError('from')}</div>
<div class="field"><label for="to">To</label><input id="to" name="to" type="date" value="${raw.to ?? ''}"${invalid('to')}>${fieldError('to')}</div>
<button type="submit" class="secondary">Apply</button>
<a class="button secondary" href="${link({ format: 'csv' })}" download>Download CSV</a>
</div>
</form>
<section class="card" aria-labelledby="report-title">
<h2 id="report-title">${LABELS[report]}</h2>
<p class="small muted">${result ? summary(report, result, ctx.currency) : ''}</p>
${
  rows.length === 0
    ? html`<p class="empty">Nothing matches these filters.</p>`
    : html`<div class="table-wrap"><table id="report-table"><thead><tr>${columns.map((column) => html`<th scope="col"${column.numeric ? html` class="num"` : ''}>${column.label}</th>`)}</tr></thead><tbody>${rows.map(
        (row) =>
          html`<tr>${columns.map((column) => html`<td${column.numeric ? html` class="num"` : ''}>${column.cell(row, ctx.currency)}</td>`)}</tr>`,
      )}</tbody></table></div>
<nav class="pager" aria-label="Report pages">${page > 1 ? html`<a class="button secondary small" href="${link({ page: String(page - 1) })}">Newer</a>` : ''}<span class="small muted">Page ${Math.min(page, pages)} of ${pages}</span>${page < pages ? html`<a class="button secondary small" href="${link({ page: String(page + 1) })}">Older</a>` : ''}</nav>`
}
</section>`;
}
