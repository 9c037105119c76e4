// An account's tax documents, read from its wallet's history (the store's index of its wallet
// postings in the period: never a pass over anyone else's history):
// - the monthly commission statement: every commission and override credited in the period
//   (gross, TDS, net, the slab), and every fee charged (taxable value, CGST, SGST/UTGST,
//   IGST), per transaction and per month, with totals;
// - the quarterly TDS statement: the TDS withheld from the account's commissions in a quarter
//   of the financial year, per transaction and per month (section 194H).
// The admin's TDS statement of a quarter covers every account (every wallet posting of the
// quarter), one row per deductee. Periods are calendar months in IST.
import type { Store } from '../../store/types.js';
import type { Posting } from '../../store/state.js';
import type { Pacer } from '../../store/turns.js';
import { microsToUnits } from '../../util/money.js';
import type { PaymentsContext } from '../context.js';
import { operatorParty } from '../engine/tax.js';
import {
  onStatement,
  onTdsStatement,
  postingFigures,
  type PostingFigures,
} from '../engine/ledger-lines.js';

type Pricing = PaymentsContext['pricing'];

const IST_OFFSET_MS = 330 * 60_000;

export interface Period {
  label: string;
  /** Inclusive bounds, ms. */
  from_ms: number;
  to_ms: number;
  /** The calendar months it covers, `YYYY-MM`. */
  months: string[];
}

function monthStartMs(year: number, month0: number): number {
  return Date.UTC(year, month0, 1) - IST_OFFSET_MS;
}

/** Months `from` to `to` (`YYYY-MM`, at most 12). */
export function monthsPeriod(from: string, to: string): Period {
  const [fy, fm] = from.split('-').map(Number) as [number, number];
  const [ty, tm] = to.split('-').map(Number) as [number, number];
  const months: string[] = [];
  for (let y = fy, m = fm; y < ty || (y === ty && m <= tm); m === 12 ? (y++, (m = 1)) : m++)
    months.push(`${y}-${String(m).padStart(2, '0')}`);
  return {
    label: from === to ? from : `${from} to ${to}`,
    from_ms: monthStartMs(fy, fm - 1),
    to_ms: monthStartMs(ty, tm) - 1,
    months,
  };
}

/** A quarter of an Indian financial year (`2025-26`, `Q1` = April–June ... `Q4` = January–March). */
export function quarterPeriod(fy: string, quarter: 'Q1' | 'Q2' | 'Q3' | 'Q4'): Period {
  const start_year = Number(fy.slice(0, 4));
  const first_month = { Q1: 4, Q2: 7, Q3: 10, Q4: 1 }[quarter];
  const year = quarter === 'Q4' ? start_year + 1 : start_year;
  const from = `${year}-${String(first_month).padStart(2, '0')}`;
  const to = `${year}-${String(first_month + 2).padStart(2, '0')}`;
  return { ...monthsPeriod(from, to), label: `FY ${fy} ${quarter}` };
}

export function monthOf(at: string): string {
  return new Date(Date.parse(at) + IST_OFFSET_MS).toISOString().slice(0, 7);
}

export type StatementRow = {
  date: string;
  month: string;
  txn_id: string | null;
  posting_id: string;
  kind: 'commission' | 'override' | 'charges';
  /** The posting reverses a transaction's (its amounts are negative). */
  reversal: boolean;
  service: string | null;
  /** An override's retailer (the transaction's account). */
  retailer_id: string | null;
  amount: number | null;
  gross: number | null;
  tds_rate: number | null;
  tds: number | null;
  net: number | null;
  slab: string | null;
  fee: number | null;
  taxable_value: number | null;
  cgst: number | null;
  sgst: number | null;
  igst: number | null;
  place_of_supply: string | null;
};

export const STATEMENT_COLUMNS: ReadonlyArray<keyof StatementRow> = [
  'date',
  'month',
  'txn_id',
  'posting_id',
  'kind',
  'reversal',
  'service',
  'retailer_id',
  'amount',
  'gross',
  'tds_rate',
  'tds',
  'net',
  'slab',
  'fee',
  'taxable_value',
  'cgst',
  'sgst',
  'igst',
  'place_of_supply',
];

/** Every row of a range, for the streamed reads (their page is a window of the range). */
const EVERY_ROW = { offset: 0, limit: Number.MAX_SAFE_INTEGER };

async function* flat<T>(batches: AsyncIterable<T[]>): AsyncGenerator<T> {
  for await (const batch of batches) yield* batch;
}

export type StatementKind = 'commission' | 'tds';

/** Micro-unit sums of a statement, folded posting by posting. */
export class Totals {
  count = 0;
  gross = 0;
  tds = 0;
  net = 0;
  fees = 0;
  taxable = 0;
  cgst = 0;
  sgst = 0;
  igst = 0;

  /** Adds one posting's figures (an earning part and a fee part, either may be absent). */
  add(f: PostingFigures, kind: StatementKind): void {
    if (f.earning) {
      this.count++;
      this.gross += f.gross_micros;
      this.tds += f.tds_micros;
      this.net += f.gross_micros - f.tds_micros;
    }
    if (kind === 'commission' && f.fee) {
      this.count++;
      this.taxable += f.taxable_micros;
      this.cgst += f.cgst_micros;
      this.sgst += f.sgst_micros;
      this.igst += f.igst_micros;
      this.fees += f.taxable_micros + f.cgst_micros + f.sgst_micros + f.igst_micros;
    }
  }

  view() {
    return {
      count: this.count,
      gross: microsToUnits(this.gross),
      tds: microsToUnits(this.tds),
      net: microsToUnits(this.net),
      fees: microsToUnits(this.fees),
      taxable_value: microsToUnits(this.taxable),
      cgst: microsToUnits(this.cgst),
      sgst: microsToUnits(this.sgst),
      igst: microsToUnits(this.igst),
      gst: microsToUnits(this.cgst + this.sgst + this.igst),
    };
  }
}

const num = (value: string | number | undefined) => (typeof value === 'number' ? value : 0);
const text = (value: string | number | undefined) => (typeof value === 'string' ? value : null);

/** The columns every row has, from its posting. */
function rowBase(posting: Posting) {
  return {
    date: posting.ts,
    month: monthOf(posting.ts),
    txn_id: posting.ref ?? null,
    posting_id: posting.id,
    reversal: posting.meta?.kind === 'reversal',
    amount: null,
    gross: null,
    tds_rate: null,
    tds: null,
    net: null,
    slab: null,
    fee: null,
    taxable_value: null,
    cgst: null,
    sgst: null,
    igst: null,
    place_of_supply: null,
  };
}

/**
 * A posting's statement rows: its earning (a commission or an override, or the reversal of
 * one: gross, TDS and net from what it moved of commission:*, override:* and tds:194h) and
 * its fee (taxable value and GST from revenue:* and gst:*), each when it has one.
 */
export function statementRows(posting: Posting, kind: StatementKind): StatementRow[] {
  const f = postingFigures(posting);
  const meta = posting.meta ?? {};
  const rows: StatementRow[] = [];
  if (f.earning) {
    const override = f.override || meta.kind === 'override';
    rows.push({
      ...rowBase(posting),
      kind: override ? 'override' : 'commission',
      service: text(meta.service) ?? f.earning_service,
      retailer_id: override ? text(meta.txn_account_id) : null,
      amount: meta.amount_micros === undefined ? null : microsToUnits(num(meta.amount_micros)),
      gross: microsToUnits(f.gross_micros),
      tds_rate: meta.tds_rate_bp === undefined ? null : num(meta.tds_rate_bp) / 100,
      tds: microsToUnits(f.tds_micros),
      net: microsToUnits(f.gross_micros - f.tds_micros),
      slab: text(meta.slab),
    });
  }
  if (kind === 'commission' && f.fee)
    rows.push({
      ...rowBase(posting),
      kind: 'charges',
      service: f.fee_service,
      retailer_id: null,
      fee: microsToUnits(f.taxable_micros + f.cgst_micros + f.sgst_micros + f.igst_micros),
      taxable_value: microsToUnits(f.taxable_micros),
      cgst: microsToUnits(f.cgst_micros),
      sgst: microsToUnits(f.sgst_micros),
      igst: microsToUnits(f.igst_micros),
      place_of_supply: text(meta.place_of_supply),
    });
  return rows;
}

/**
 * The one computation of a statement from postings, folded a posting at a time: the
 * gateway's statements (fed the account's wallet postings of the period from the store's
 * index) and `verify` (fed the journal's or the database's postings) both call it. Keeps the
 * totals, the totals per month, and the first `max_rows` rows.
 */
export class StatementFold {
  readonly totals = new Totals();
  readonly months: Map<string, Totals>;
  readonly rows: StatementRow[] = [];
  private seen = 0;

  constructor(
    readonly kind: StatementKind,
    months: readonly string[],
    private readonly max_rows: number,
  ) {
    this.months = new Map(months.map((m) => [m, new Totals()]));
  }

  /** Which postings a statement of `kind` is made of (the others add nothing). */
  static wants(kind: StatementKind): (posting: Posting) => boolean {
    return kind === 'tds' ? onTdsStatement : onStatement;
  }

  add(posting: Posting): void {
    const f = postingFigures(posting);
    if (!f.earning && !(this.kind === 'commission' && f.fee)) return;
    this.totals.add(f, this.kind);
    const month = monthOf(posting.ts);
    let per_month = this.months.get(month);
    if (!per_month) this.months.set(month, (per_month = new Totals()));
    per_month.add(f, this.kind);
    for (const row of statementRows(posting, this.kind)) {
      if (this.rows.length < this.max_rows) this.rows.push(row);
      this.seen++;
    }
  }

  get truncated(): boolean {
    return this.seen > this.rows.length;
  }
}

export interface Statement {
  kind: 'commission' | 'tds';
  period: Period;
  operator: ReturnType<typeof operatorParty>;
  account: ReturnType<Pricing['taxIdentity']> & { account_id: string; email: string | null };
  totals: ReturnType<Totals['view']>;
  by_month: Array<{ month: string } & ReturnType<Totals['view']>>;
  rows: StatementRow[];
  /** Rows beyond `max_rows` were counted in the totals but not listed. */
  truncated: boolean;
}

/**
 * One account's statement of a period: its wallet postings in the period that move a
 * commission, override, TDS or GST account (reversals included), in date order, folded by
 * `StatementFold`.
 */
export async function accountStatement(
  deps: {
    store: Store;
    pricing: Pricing;
    settings: { tax: { operator: Record<string, unknown> } };
  },
  kind: StatementKind,
  account_id: string,
  period: Period,
  max_rows: number,
  pacer: Pacer,
): Promise<Statement> {
  const { store, pricing } = deps;
  await store.readDurable();
  const fold = new StatementFold(kind, period.months, max_rows);
  // A batch at a time, in turns: memory holds the listed rows, never more than `max_rows`.
  for await (const line of flat(
    store.reads.walletLines(
      {
        account_id,
        from_ms: period.from_ms,
        to_ms: period.to_ms,
        match: StatementFold.wants(kind),
      },
      EVERY_ROW,
      'asc',
      pacer,
    ),
  ))
    fold.add(line.posting);
  return {
    kind,
    period,
    operator: operatorParty(pricing, deps.settings),
    account: {
      account_id,
      email: store.get('accounts', account_id)?.email ?? null,
      ...pricing.taxIdentity(store, account_id),
    },
    totals: fold.totals.view(),
    by_month: [...fold.months].map(([month, t]) => ({ month, ...t.view() })),
    rows: fold.rows,
    truncated: fold.truncated,
  };
}

export interface DeducteeRow {
  account_id: string;
  name: string | null;
  pan: string | null;
  /** The 206AA rate applied: no PAN on record. */
  higher_rate: boolean;
  count: number;
  gross: number;
  tds: number;
  net: number;
}

/**
 * The deductor's TDS statement of a quarter (what Form 26Q reports under section 194H): every
 * commission and override credited to any account in the quarter, one row per deductee.
 */
export async function tdsByDeductee(
  deps: { store: Store; pricing: Pricing; tds_rate_bp: number },
  period: Period,
  pacer: Pacer,
): Promise<{
  rows: DeducteeRow[];
  totals: { count: number; gross: number; tds: number; net: number };
}> {
  const { store, pricing } = deps;
  await store.readDurable();
  const by = new Map<
    string,
    { count: number; gross: number; tds: number; net: number; higher: boolean }
  >();
  const all = { count: 0, gross: 0, tds: 0, net: 0 };
  const lines = store.reads.walletLines(
    {
      account_id: null,
      from_ms: period.from_ms,
      to_ms: period.to_ms,
      match: StatementFold.wants('tds'),
    },
    EVERY_ROW,
    'asc',
    pacer,
  );
  // Folded a batch at a time: memory holds one row per deductee, never the quarter's postings.
  // Every figure is what the posting moved (a reversal's are negative: the TDS given back).
  for await (const line of flat(lines)) {
    const f = postingFigures(line.posting);
    const entry = by.get(line.account_id) ?? { count: 0, gross: 0, tds: 0, net: 0, higher: false };
    for (const t of [entry, all]) {
      t.count++;
      t.gross += f.gross_micros;
      t.tds += f.tds_micros;
      t.net += f.gross_micros - f.tds_micros;
    }
    if (num(line.posting.meta?.tds_rate_bp) > deps.tds_rate_bp) entry.higher = true;
    by.set(line.account_id, entry);
  }
  const rows = [...by].map(([account_id, t]) => {
    const identity = pricing.taxIdentity(store, account_id);
    return {
      account_id,
      name: identity.name,
      pan: identity.pan,
      higher_rate: t.higher,
      count: t.count,
      gross: microsToUnits(t.gross),
      tds: microsToUnits(t.tds),
      net: microsToUnits(t.net),
    };
  });
  return {
    rows,
    totals: {
      count: all.count,
      gross: microsToUnits(all.gross),
      tds: microsToUnits(all.tds),
      net: microsToUnits(all.net),
    },
  };
}
