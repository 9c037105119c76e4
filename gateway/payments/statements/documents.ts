// A statement as a CSV file and as a PDF: the same rows and totals as its JSON, with the
// parties (operator and account: name, GSTIN, PAN, TAN, address), the period and the totals
// per month on top.
import { renderPdfPages, PAGE, type PdfPage, type PdfText } from '../pdf.js';
import { csvLine } from '../shared/csv.js';
import { stateName } from '../engine/tax.js';
import {
  STATEMENT_COLUMNS,
  type DeducteeRow,
  type Period,
  type Statement,
  type StatementRow,
} from './statements.js';

const amount = (value: number | null) => (value === null ? '' : value.toFixed(2));

export function statementTitle(statement: Pick<Statement, 'kind' | 'period'>): string {
  return statement.kind === 'tds'
    ? `TDS statement (section 194H), ${statement.period.label}`
    : `Commission statement and tax invoice summary, ${statement.period.label}`;
}

/** The CSV: a header of `# key,value` lines (parties, period, totals), then the rows. */
export function statementCsv(statement: Statement): string {
  const head: Array<[string, string | number | null]> = [
    ['document', statementTitle(statement)],
    ['period_from', new Date(statement.period.from_ms).toISOString()],
    ['period_to', new Date(statement.period.to_ms).toISOString()],
    ['operator', statement.operator.name],
    ['operator_gstin', statement.operator.gstin],
    ['operator_pan', statement.operator.pan],
    ['operator_tan', statement.operator.tan],
    ['account_id', statement.account.account_id],
    ['account_name', statement.account.name],
    ['account_gstin', statement.account.gstin],
    ['account_pan', statement.account.pan],
    ['account_state', statement.account.state],
    ...Object.entries(statement.totals).map(([key, value]): [string, number] => [
      `total_${key}`,
      value,
    ]),
  ];
  const columns = [...STATEMENT_COLUMNS];
  let text = head.map(([key, value]) => csvLine(['k', 'v'], { k: `# ${key}`, v: value })).join('');
  text += `${columns.join(',')}\r\n`;
  for (const row of statement.rows) text += csvLine(columns, row);
  return text;
}

export function deducteesCsv(period: Period, rows: DeducteeRow[]): string {
  const columns = ['account_id', 'name', 'pan', 'higher_rate', 'count', 'gross', 'tds', 'net'];
  let text = csvLine(['k', 'v'], {
    k: '# document',
    v: `TDS statement (section 194H), ${period.label}`,
  });
  text += `${columns.join(',')}\r\n`;
  for (const row of rows) text += csvLine(columns, { ...row });
  return text;
}

/** Lays text out top-down over as many A4 pages as it takes. */
class Layout {
  readonly pages: PdfPage[] = [];
  private texts: PdfText[] = [];
  private y = 0;
  constructor(private readonly title: string) {
    this.newPage();
  }

  private newPage(): void {
    this.texts = [];
    this.pages.push({ texts: this.texts, lines: [] });
    this.y = PAGE.height - 48;
    this.texts.push({
      x: 40,
      y: 24,
      size: 7,
      text: `${this.title} - page ${this.pages.length}`,
      muted: true,
    });
  }

  line(cells: Array<[x: number, text: string]>, size = 8, bold = false, gap = 12): void {
    if (this.y < 48) this.newPage();
    for (const [x, text] of cells) this.texts.push({ x, y: this.y, size, text, bold });
    this.y -= gap;
  }

  space(points: number): void {
    this.y -= points;
  }
}

const party = (
  label: string,
  p: { name: string | null; gstin: string | null; pan: string | null; state: string | null },
) =>
  `${label}: ${p.name ?? '-'} | GSTIN ${p.gstin ?? 'not registered'} | PAN ${p.pan ?? 'not on record'} | state ${p.state ? `${p.state} ${stateName(p.state) ?? ''}` : '-'}`;

const ROW_CELLS: Array<[number, (row: StatementRow) => string]> = [
  [40, (r) => r.date.slice(0, 10)],
  [88, (r) => r.txn_id ?? ''],
  [208, (r) => (r.reversal ? 'reversal' : r.kind)],
  [256, (r) => r.service ?? ''],
  [298, (r) => amount(r.amount ?? r.fee)],
  [352, (r) => amount(r.gross ?? r.taxable_value)],
  [402, (r) => amount(r.tds ?? (r.cgst === null ? null : r.cgst + (r.sgst ?? 0) + (r.igst ?? 0)))],
  [446, (r) => amount(r.net)],
  [492, (r) => r.slab ?? r.place_of_supply ?? ''],
];

/** The parties, the period, the totals and the months of a statement. */
function statementHead(layout: Layout, statement: Statement, title: string): void {
  layout.line([[40, title]], 14, true, 20);
  layout.line([[40, party('From', statement.operator)]], 8);
  if (statement.operator.tan)
    layout.line([[40, `TAN of the deductor: ${statement.operator.tan}`]], 8);
  layout.line([[40, party('Account', statement.account)]], 8);
  layout.line(
    [
      [
        40,
        `Account id ${statement.account.account_id}; period ${new Date(statement.period.from_ms).toISOString()} to ${new Date(statement.period.to_ms).toISOString()} (IST months)`,
      ],
    ],
    8,
  );
  layout.space(8);
  const t = statement.totals;
  layout.line([[40, 'Totals']], 10, true, 14);
  layout.line([
    [
      40,
      `Commissions: gross ${amount(t.gross)}, TDS ${amount(t.tds)}, net credited ${amount(t.net)} (${t.count} postings)`,
    ],
  ]);
  if (statement.kind === 'commission')
    layout.line([
      [
        40,
        `Fees charged: ${amount(t.fees)} = taxable value ${amount(t.taxable_value)} + CGST ${amount(t.cgst)} + SGST/UTGST ${amount(t.sgst)} + IGST ${amount(t.igst)}`,
      ],
    ]);
  layout.space(6);
  layout.line([[40, 'Per month']], 10, true, 14);
  for (const month of statement.by_month)
    layout.line([
      [
        40,
        `${month.month}: gross ${amount(month.gross)}, TDS ${amount(month.tds)}, net ${amount(month.net)}${statement.kind === 'commission' ? `; fees ${amount(month.fees)} (GST ${amount(month.gst)})` : ''}`,
      ],
    ]);
}

export function statementPdf(statement: Statement, created_at: Date): Buffer {
  const title = statementTitle(statement);
  const layout = new Layout(title);
  statementHead(layout, statement, title);
  layout.space(6);
  layout.line([[40, 'Transactions']], 10, true, 14);
  layout.line(
    [
      [40, 'date'],
      [88, 'transaction'],
      [208, 'kind'],
      [256, 'service'],
      [298, 'amount/fee'],
      [352, 'gross/taxable'],
      [402, 'TDS/GST'],
      [446, 'net'],
      [492, 'slab / place'],
    ],
    7,
    true,
  );
  for (const row of statement.rows)
    layout.line(
      ROW_CELLS.map(([x, cell]) => [x, cell(row)]),
      7,
    );
  if (statement.truncated)
    layout.line(
      [
        [
          40,
          'More rows than a PDF lists: the CSV of this statement has them all; the totals above count every one.',
        ],
      ],
      8,
    );
  return renderPdfPages({ title, pages: layout.pages, created_at });
}

export function deducteesPdf(
  operator: Statement['operator'],
  period: Period,
  rows: DeducteeRow[],
  totals: { count: number; gross: number; tds: number; net: number },
  created_at: Date,
): Buffer {
  const title = `TDS statement (section 194H), ${period.label}`;
  const layout = new Layout(title);
  layout.line([[40, title]], 14, true, 20);
  layout.line([[40, party('Deductor', operator)]], 8);
  layout.line([[40, `TAN ${operator.tan ?? 'not configured'}`]], 8);
  layout.line(
    [
      [
        40,
        `Totals: ${totals.count} credits, gross ${amount(totals.gross)}, TDS ${amount(totals.tds)}, net ${amount(totals.net)}`,
      ],
    ],
    9,
    true,
    16,
  );
  layout.line(
    [
      [40, 'deductee'],
      [170, 'name'],
      [300, 'PAN'],
      [370, 'credits'],
      [410, 'gross'],
      [460, 'TDS'],
      [510, 'net'],
    ],
    7,
    true,
  );
  for (const row of rows)
    layout.line(
      [
        [40, row.account_id],
        [170, (row.name ?? '').slice(0, 28)],
        [300, `${row.pan ?? 'no PAN'}${row.higher_rate ? ' (206AA)' : ''}`],
        [370, String(row.count)],
        [410, amount(row.gross)],
        [460, amount(row.tds)],
        [510, amount(row.net)],
      ],
      7,
    );
  return renderPdfPages({ title, pages: layout.pages, created_at });
}
