// `aihub-gateway verify`'s check of the GST documents (docs/payments-api.md, "GST invoices"),
// fed by either store's verify with every posting and every row of the GST tables: for every
// month issued, each account's tax invoice (or bill of supply) must add up to what its fee
// postings moved on the fee and GST accounts in that month, and its credit note to what the
// month's reversals gave back (movements.ts, the reading the issuer uses); a month's movement
// without its document, or a document without its movement, is a breach; and the serials of
// each series and financial year must be 1..n, each once, n the last one taken.
import type { ReplayCheck } from '../../store/replay-check.js';
import type { Posting } from '../../store/state.js';
import { documentTotals } from './documents.js';
import { feeMovement } from './movements.js';
import type { GstInvoicing, GstMonthDocuments } from './tables.js';

interface Sums {
  taxable: number;
  cgst: number;
  sgst: number;
  igst: number;
}

const zero = (): Sums => ({ taxable: 0, cgst: 0, sgst: 0, igst: 0 });
const show = (s: Sums) =>
  `taxable ${s.taxable}, CGST ${s.cgst}, SGST/UTGST ${s.sgst}, IGST ${s.igst} (micro-units)`;

export class GstDocumentsCheck implements ReplayCheck {
  readonly tables = ['gst_invoices', 'gst_invoicing'] as const;
  /** `<account>|<month>|<invoice|credit>` → what the postings moved. */
  private readonly moved = new Map<string, Sums>();
  /** The same keys → what the documents say. */
  private readonly documented = new Map<string, Sums>();
  /** `<series>:<fy>` → the serials found. */
  private readonly serials = new Map<string, number[]>();
  private rows = new Map<string, GstMonthDocuments>();
  private state: GstInvoicing | null = null;

  posting(posting: Posting): void {
    const movement = feeMovement(posting);
    if (!movement) return;
    const key = `${movement.account_id}|${movement.month}|${movement.side}`;
    const sums = this.moved.get(key) ?? zero();
    sums.taxable += movement.taxable_micros;
    sums.cgst += movement.cgst_micros;
    sums.sgst += movement.sgst_micros;
    sums.igst += movement.igst_micros;
    this.moved.set(key, sums);
  }

  row(table: string, id: string, value: unknown): void {
    if (table === 'gst_invoicing') this.state = value as GstInvoicing;
    else if (table === 'gst_invoices') this.rows.set(id, value as GstMonthDocuments);
  }

  private fold(): void {
    for (const row of this.rows.values())
      for (const document of row.documents) {
        const side = document.series === 'credit_note' ? 'credit' : 'invoice';
        const key = `${row.account_id}|${row.month}|${side}`;
        const t = documentTotals(document);
        const sums = this.documented.get(key) ?? zero();
        sums.taxable += t.taxable;
        sums.cgst += t.cgst;
        sums.sgst += t.sgst;
        sums.igst += t.igst;
        this.documented.set(key, sums);
        const series = `${document.series}:${document.fy}`;
        this.serials.set(series, [...(this.serials.get(series) ?? []), document.serial]);
      }
    this.rows = new Map();
  }

  finish(breach: (message: string) => void): void {
    this.fold();
    const state = this.state;
    const through = state?.issued_through ?? null;
    const from = state?.from ?? null;
    const issued = (month: string) =>
      through !== null && from !== null && month >= from && month <= through;
    for (const [key, sums] of this.documented) {
      const [account, month, side] = key.split('|') as [string, string, string];
      if (!issued(month)) breach(`GST documents of ${account} for ${month}, a month not issued`);
      const moved = this.moved.get(key) ?? zero();
      if (show(moved) !== show(sums))
        breach(
          `GST ${side === 'credit' ? 'credit note' : 'invoice'} of ${account} for ${month}: the documents say ${show(sums)}, the fee and GST accounts moved ${show(moved)}`,
        );
    }
    for (const [key, moved] of this.moved) {
      const [account, month, side] = key.split('|') as [string, string, string];
      if (issued(month) && !this.documented.has(key))
        breach(
          `GST ${side === 'credit' ? 'credit note' : 'invoice'} of ${account} for ${month} missing: the fee and GST accounts moved ${show(moved)}`,
        );
    }
    const last = state?.last ?? {};
    for (const series of new Set([...Object.keys(last), ...this.serials.keys()])) {
      const found = [...(this.serials.get(series) ?? [])].sort((a, b) => a - b);
      const n = last[series] ?? 0;
      const expected = Array.from({ length: n }, (_, i) => i + 1);
      if (found.join(',') !== expected.join(','))
        breach(
          `GST document serials of ${series}: ${found.length} found, not 1 to ${n} each once (${found.slice(0, 20).join(', ')}${found.length > 20 ? ', ...' : ''})`,
        );
    }
    if (through !== null && from !== null && through < from)
      breach(`GST documents issued through ${through}, before their first month ${from}`);
  }
}
