// An account's tax documents, read from its wallet's history (the store's index of its wallet
// postings in the period: never a pass over anyone else's history):
// - the monthly commission statement: every commission and override credited in the period
//   (gross, TDS, net, the slab), and every fee charged (taxable value, CGST, SGST/UTGST,
//   IGST), per transaction and per month, with totals;
// - the quarterly TDS statement: the TDS withheld from the account's commissions in a quarter
//   of the financial year, per transaction and per month (section 194H).
// The admin's TDS statement of a quarter covers every account (every wallet posting of the
// quarter), one row per deductee. Periods are calendar months in IST.
import type { Store } from '../../store/store.js';
import type { WalletLine } from '../../store/reads.js';
import type { Posting } from '../../store/state.js';
import type { Pacer } from '../../store/turns.js';
import { microsToUnits } from '../../util/money.js';
import type { Pricing } from '../network/pricing.js';

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

const isEarning = (posting: Posting) =>
  posting.meta?.kind === 'commission' || posting.meta?.kind === 'override';
const isFee = (posting: Posting) => posting.meta?.gst_rate_bp !== undefined;

/** Micro-unit sums of a statement, folded row by row. */
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

/** The columns every row has, from its posting. */
function rowBase(posting: Posting) {
  return {
    date: posting.ts,
    month: monthOf(posting.ts),
    txn_id: posting.ref ?? null,
    posting_id: posting.id,
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

/** One statement row from a wallet line, adding it to `totals`. */
function rowOf(line: WalletLine, totals: Totals[]): StatementRow {
  return isEarning(line.posting) ? earningRow(line, totals) : feeRow(line, totals);
}

/** A commission or an override: gross and TDS from the posting's meta, net from the wallet. */
function earningRow(line: WalletLine, totals: Totals[]): StatementRow {
  const meta = line.posting.meta ?? {};
  const gross = num(meta.gross_micros);
  const tds = num(meta.tds_micros);
  for (const t of totals) {
    t.count++;
    t.gross += gross;
    t.tds += tds;
    t.net += line.delta_micros;
  }
  return {
    ...rowBase(line.posting),
    kind: meta.kind === 'override' ? 'override' : 'commission',
    service: typeof meta.service === 'string' ? meta.service : null,
    retailer_id:
      meta.kind === 'override' && typeof meta.txn_account_id === 'string'
        ? meta.txn_account_id
        : null,
    amount: microsToUnits(num(meta.amount_micros)),
    gross: microsToUnits(gross),
    tds_rate: num(meta.tds_rate_bp) / 100,
    tds: microsToUnits(tds),
    net: microsToUnits(line.delta_micros),
    slab: typeof meta.slab === 'string' ? meta.slab : null,
  };
}

/** A fee: the wallet paid it; its parts are the posting's revenue and GST entries. */
function feeRow(line: WalletLine, totals: Totals[]): StatementRow {
  const posting = line.posting;
  let taxable = 0;
  let cgst = 0;
  let sgst = 0;
  let igst = 0;
  for (const [account, amount] of posting.entries) {
    if (account.startsWith('revenue:')) taxable += amount;
    else if (account === 'gst:cgst') cgst += amount;
    else if (account === 'gst:sgst' || account === 'gst:utgst') sgst += amount;
    else if (account === 'gst:igst') igst += amount;
  }
  const fee = -line.delta_micros;
  for (const t of totals) {
    t.count++;
    t.fees += fee;
    t.taxable += taxable;
    t.cgst += cgst;
    t.sgst += sgst;
    t.igst += igst;
  }
  const revenue = posting.entries.find(([account]) => account.startsWith('revenue:'))?.[0];
  const place = posting.meta?.place_of_supply;
  return {
    ...rowBase(posting),
    kind: 'charges',
    service: revenue ? revenue.slice('revenue:'.length) : null,
    retailer_id: null,
    fee: microsToUnits(fee),
    taxable_value: microsToUnits(taxable),
    cgst: microsToUnits(cgst),
    sgst: microsToUnits(sgst),
    igst: microsToUnits(igst),
    place_of_supply: typeof place === 'string' ? place : null,
  };
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

export function operatorParty(
  pricing: Pricing,
  settings: { tax: { operator: Record<string, unknown> } },
) {
  const operator = settings.tax.operator as {
    name: string;
    gstin?: string;
    pan?: string;
    tan?: string;
    address?: string;
  };
  return {
    name: operator.name,
    gstin: operator.gstin ?? null,
    pan: operator.pan ?? null,
    tan: operator.tan ?? null,
    address: operator.address ?? null,
    state: pricing.operator_state,
  };
}

/**
 * One account's statement of a period: its wallet postings in the period that are a
 * commission, an override or (the commission statement) a fee, in date order.
 */
export async function accountStatement(
  deps: {
    store: Store;
    pricing: Pricing;
    settings: { tax: { operator: Record<string, unknown> } };
  },
  kind: 'commission' | 'tds',
  account_id: string,
  period: Period,
  max_rows: number,
  pacer: Pacer,
): Promise<Statement> {
  const { store, pricing } = deps;
  await store.readDurable();
  const match = kind === 'tds' ? isEarning : (p: Posting) => isEarning(p) || isFee(p);
  const totals = new Totals();
  const months = new Map(period.months.map((m) => [m, new Totals()]));
  const rows: StatementRow[] = [];
  let seen = 0;
  // A batch at a time, in turns: memory holds the listed rows, never more than `max_rows`.
  for await (const batch of store.reads.walletLines(
    { account_id, from_ms: period.from_ms, to_ms: period.to_ms, match },
    EVERY_ROW,
    'asc',
    pacer,
  )) {
    for (const line of batch) {
      const month = months.get(monthOf(line.posting.ts)) ?? new Totals();
      const row = rowOf(line, [totals, month]);
      if (rows.length < max_rows) rows.push(row);
      seen++;
    }
  }
  return {
    kind,
    period,
    operator: operatorParty(pricing, deps.settings),
    account: {
      account_id,
      email: store.get('accounts', account_id)?.email ?? null,
      ...pricing.taxIdentity(store, account_id),
    },
    totals: totals.view(),
    by_month: [...months].map(([month, t]) => ({ month, ...t.view() })),
    rows,
    truncated: seen > rows.length,
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
    { account_id: null, from_ms: period.from_ms, to_ms: period.to_ms, match: isEarning },
    EVERY_ROW,
    'asc',
    pacer,
  );
  // Folded a batch at a time: memory holds one row per deductee, never the quarter's postings.
  for await (const line of flat(lines)) {
    const meta = line.posting.meta ?? {};
    const entry = by.get(line.account_id) ?? { count: 0, gross: 0, tds: 0, net: 0, higher: false };
    entry.count++;
    entry.gross += num(meta.gross_micros);
    entry.tds += num(meta.tds_micros);
    entry.net += line.delta_micros;
    if (num(meta.tds_rate_bp) > deps.tds_rate_bp) entry.higher = true;
    by.set(line.account_id, entry);
    all.count++;
    all.gross += num(meta.gross_micros);
    all.tds += num(meta.tds_micros);
    all.net += line.delta_micros;
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
