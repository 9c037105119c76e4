// Issuing the GST documents of a month (CGST Act s.31, CGST Rules 46, 49 and 53; docs/
// payments-api.md, "GST invoices"): once a month is over in India, every account whose fees
// moved in it gets one document for the month's fees (a tax invoice, or a bill of supply for
// fees that carried no GST) and one credit note for the fees given back in it (reversals),
// each summing the month's postings of the fee and GST accounts (movements.ts), never the
// transaction records. Months are issued in order, from the first month of the store (or
// `payments.tax.invoices.from_month`): a month is issued when a document of it, or of a
// later month, is first asked for. Numbers come from one row (`gst_invoicing`), in commits of
// at most ISSUE_CHUNK accounts: per series and financial year they are consecutive from 1,
// with no gap and no repeat, and asking again reads what was issued.
import type { Store, Tx } from '../../store/types.js';
import type { Pacer } from '../../store/turns.js';
import type { PaymentsContext } from '../context.js';
import { operatorParty } from '../engine/tax.js';
import {
  feeMovement,
  financialYear,
  istMonth,
  istMonthStartMs,
  movesFees,
  nextMonth,
  type FeeMovement,
} from './movements.js';
import type { GstDocument, GstInvoicing, GstLine, GstMonthDocuments, GstParty } from './tables.js';

/** Accounts whose documents one commit issues. */
const ISSUE_CHUNK = 200;
/** A document number's most characters (CGST Rules, rule 46(b)). */
const MAX_NUMBER_CHARS = 16;
const STATE_ID = 'state';
const EVERY_ROW = { offset: 0, limit: Number.MAX_SAFE_INTEGER };

export interface InvoiceSettings {
  sac: string;
  prefix: string;
  credit_prefix: string;
  from_month: string | undefined;
}

export interface IssueDeps {
  store: Store;
  pricing: PaymentsContext['pricing'];
  settings: { tax: { operator: Record<string, unknown> } };
  invoices: InvoiceSettings;
  clock: { now(): Date };
}

/** A month's fee movements of one account, by document side and line. */
interface AccountMonth {
  invoice: Map<string, GstLine>;
  credit: Map<string, GstLine>;
  /** The months of the fees its credit note gives back. */
  credit_months: Set<string>;
}

export function documentKey(account_id: string, month: string): string {
  return `${account_id}:${month}`;
}

/** `AH/26-27/000123`: prefix, the financial year's two-digit years, the serial. */
export function documentNumber(prefix: string, fy: string, serial: number): string {
  const number = `${prefix}/${fy.slice(2)}/${String(serial).padStart(6, '0')}`;
  if (number.length > MAX_NUMBER_CHARS)
    throw new Error(
      `GST document number ${number} is longer than ${MAX_NUMBER_CHARS} characters: use a shorter prefix`,
    );
  return number;
}

/** The first month documents are issued for. */
export function firstMonth(deps: Pick<IssueDeps, 'store' | 'invoices'>): string {
  return deps.invoices.from_month ?? istMonth(Date.parse(deps.store.state.meta.created_at));
}

/** Whether `month` is over in India at `now`. */
export function monthClosed(month: string, now: Date): boolean {
  return now.getTime() >= istMonthStartMs(nextMonth(month));
}

function lineKey(m: FeeMovement, rate_bp: number, place: string, supply: string): string {
  return `${m.service}|${rate_bp}|${place}|${supply}|${m.state_tax}`;
}

/**
 * The line a movement belongs to: its rate and place of supply as the charge recorded them
 * (the posting's meta; a reversal's from the transaction it reverses).
 */
async function describe(
  store: Store,
  movement: FeeMovement,
  meta: Record<string, string | number>,
  operator_state: string,
): Promise<{ rate_bp: number; place: string; supply: 'intra_state' | 'inter_state'; of: string }> {
  let rate = meta.gst_rate_bp;
  let place = meta.place_of_supply;
  let of = movement.month;
  // A fee given back belongs to the month it was charged in (the credit note names that
  // month's invoice), whatever its own posting carries: a reversal's meta repeats the rate and
  // place of supply (for the statements) but not the month of the charge.
  if ((rate === undefined || movement.side === 'credit') && typeof meta.txn_id === 'string') {
    const txn = await store.fetch('payment_txns', meta.txn_id);
    rate ??= txn?.tax?.rate_bp;
    place ??= txn?.tax?.place_of_supply;
    const charged = txn?.history.findLast((h) => h.status === 'success')?.at;
    if (charged) of = istMonth(Date.parse(charged));
  }
  const gst = movement.cgst_micros + movement.sgst_micros + movement.igst_micros;
  const rate_bp =
    typeof rate === 'number'
      ? rate
      : movement.taxable_micros > 0
        ? Math.round((gst * 10_000) / movement.taxable_micros)
        : 0;
  const where =
    typeof place === 'string' ? place : movement.igst_micros > 0 ? 'unknown' : operator_state;
  return {
    rate_bp,
    place: where,
    supply: where === operator_state ? 'intra_state' : 'inter_state',
    of,
  };
}

/** The month's fee movements per account (a pass over the month's wallet postings, in turns). */
async function monthMovements(
  deps: IssueDeps,
  month: string,
  pacer: Pacer,
): Promise<Map<string, AccountMonth>> {
  const { store, pricing } = deps;
  const by = new Map<string, AccountMonth>();
  const from_ms = istMonthStartMs(month);
  const to_ms = istMonthStartMs(nextMonth(month)) - 1;
  for await (const batch of store.reads.walletLines(
    { account_id: null, from_ms, to_ms, match: movesFees },
    EVERY_ROW,
    'asc',
    pacer,
  )) {
    for (const line of batch) {
      if (line.account_id !== line.posting.account_id) continue;
      const movement = feeMovement(line.posting);
      if (!movement) continue;
      const d = await describe(store, movement, line.posting.meta ?? {}, pricing.operator_state);
      let entry = by.get(movement.account_id);
      if (!entry)
        by.set(
          movement.account_id,
          (entry = { invoice: new Map(), credit: new Map(), credit_months: new Set() }),
        );
      const lines = movement.side === 'invoice' ? entry.invoice : entry.credit;
      if (movement.side === 'credit') entry.credit_months.add(d.of);
      const key = lineKey(movement, d.rate_bp, d.place, d.supply);
      const was = lines.get(key);
      lines.set(key, {
        service: movement.service,
        sac: deps.invoices.sac,
        rate_bp: d.rate_bp,
        supply: d.supply,
        place_of_supply: d.place,
        state_tax: movement.state_tax,
        count: (was?.count ?? 0) + 1,
        taxable_micros: (was?.taxable_micros ?? 0) + movement.taxable_micros,
        cgst_micros: (was?.cgst_micros ?? 0) + movement.cgst_micros,
        sgst_micros: (was?.sgst_micros ?? 0) + movement.sgst_micros,
        igst_micros: (was?.igst_micros ?? 0) + movement.igst_micros,
      });
    }
  }
  return by;
}

const gstOf = (lines: readonly GstLine[]) =>
  lines.reduce((sum, l) => sum + l.cgst_micros + l.sgst_micros + l.igst_micros, 0);

function emptyInvoicing(): GstInvoicing {
  return { from: null, issued_through: null, issuing: null, last: {}, months: {} };
}

/** Takes the next serial of `series` in `fy`, noting it as `month`'s. */
function take(state: GstInvoicing, month: string, series: string, fy: string): number {
  const key = `${series}:${fy}`;
  const serial = (state.last[key] ?? 0) + 1;
  state.last[key] = serial;
  const taken = (state.months[month] ??= {});
  taken[key] = [taken[key]?.[0] ?? serial, serial];
  return serial;
}

/** What one commit of a month's issuing shares: the state row it takes serials from. */
interface Issuing {
  deps: IssueDeps;
  tx: Tx;
  state: GstInvoicing;
  month: string;
  fy: string;
  issued_at: string;
  supplier: GstParty;
}

/** One account's documents of the month: its tax invoice (or bill of supply), then its credit note. */
function accountDocuments(at: Issuing, account_id: string, figures: AccountMonth): GstDocument[] {
  const { deps, tx, state, month, fy } = at;
  const identity = deps.pricing.taxIdentity(tx, account_id);
  const recipient: GstParty = {
    name: identity.name,
    gstin: identity.gstin,
    pan: identity.pan,
    state: identity.state,
    address: identity.address,
  };
  const documents: GstDocument[] = [];
  const issue = (kind: GstDocument['kind'], lines: GstLine[]) => {
    const series = kind === 'credit_note' ? 'credit_note' : 'invoice';
    const serial = take(state, month, series, fy);
    const prefix = series === 'invoice' ? deps.invoices.prefix : deps.invoices.credit_prefix;
    const number = documentNumber(prefix, fy, serial);
    const document: GstDocument = {
      kind,
      number,
      series,
      fy,
      serial,
      issued_at: at.issued_at,
      supplier: at.supplier,
      recipient,
      lines,
    };
    documents.push(document);
    return document;
  };
  const invoice_lines = [...figures.invoice.values()];
  const invoice =
    invoice_lines.length > 0
      ? issue(gstOf(invoice_lines) > 0 ? 'tax_invoice' : 'bill_of_supply', invoice_lines)
      : undefined;
  if (figures.credit.size > 0) {
    const note = issue('credit_note', [...figures.credit.values()]);
    const invoiceOf = (of: string) =>
      of === month
        ? invoice
        : tx
            .get('gst_invoices', documentKey(account_id, of))
            ?.documents.find((d) => d.series === 'invoice');
    note.refers_to = [...figures.credit_months]
      .sort()
      .map((of) => ({ month: of, number: invoiceOf(of)?.number ?? null }));
  }
  return documents;
}

/**
 * Issues the next commit's worth of `month`'s documents (the accounts after the last one done,
 * by id), or nothing when another issuer has done them. True when the month is complete.
 */
async function issueChunk(
  deps: IssueDeps,
  month: string,
  accounts: ReadonlyArray<[string, AccountMonth]>,
): Promise<boolean> {
  const { tan: _tan, ...supplier } = operatorParty(deps.pricing, deps.settings);
  return deps.store.transact((tx) => {
    const state = structuredClone(tx.get('gst_invoicing', STATE_ID) ?? emptyInvoicing());
    if (state.issued_through !== null && state.issued_through >= month) return true;
    state.from ??= month;
    const after = state.issuing?.month === month ? state.issuing.after : '';
    const todo = accounts.filter(([id]) => id > after).slice(0, ISSUE_CHUNK);
    const fy = financialYear(month);
    const at: Issuing = { deps, tx, state, month, fy, issued_at: tx.now.toISOString(), supplier };
    for (const [account_id, figures] of todo) {
      const row: GstMonthDocuments = {
        account_id,
        month,
        documents: accountDocuments(at, account_id, figures),
      };
      tx.set('gst_invoices', documentKey(account_id, month), row);
    }
    const last = todo.at(-1)?.[0];
    const complete = last === undefined || last === accounts.at(-1)?.[0];
    if (complete) {
      state.issued_through = month;
      state.issuing = null;
    } else state.issuing = { month, after: last };
    tx.set('gst_invoicing', STATE_ID, state);
    return complete;
  });
}

/**
 * Issues every month from the first not yet issued through `through` (a month that is over).
 * Safe to run from several requests and gateways at once: each commit re-reads the state.
 */
export async function issueThrough(deps: IssueDeps, through: string, pacer: Pacer): Promise<void> {
  const { store } = deps;
  for (;;) {
    const state = (await store.fetch('gst_invoicing', STATE_ID)) ?? emptyInvoicing();
    const month =
      state.issued_through === null ? firstMonth(deps) : nextMonth(state.issued_through);
    if (month > through) return;
    const figures = await monthMovements(deps, month, pacer);
    const accounts = [...figures].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    while (!(await issueChunk(deps, month, accounts))) await pacer.next();
  }
}

/** The issued documents of one account and month (none when it had no fees moving). */
export async function documentsOf(
  store: Store,
  account_id: string,
  month: string,
): Promise<GstDocument[]> {
  return (await store.fetch('gst_invoices', documentKey(account_id, month)))?.documents ?? [];
}
