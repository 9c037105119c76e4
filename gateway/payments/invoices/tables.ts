// The GST documents' tables. A month's documents are issued once (invoices.ts) and never
// change: `gst_invoices` rows are final at once (archived: store/state.ts FINAL_ROW), found by
// `<account_id>:<YYYY-MM>`. `gst_invoicing` has one row, `state`: how far issuing has got and
// the last number of every series, read and written by every issuing commit, so that two
// issuers (two gateways on one database) conflict instead of both taking a number.

/** One line of a document: the fees of one service at one rate and place of supply. */
export interface GstLine {
  service: string;
  sac: string;
  rate_bp: number;
  supply: 'intra_state' | 'inter_state';
  place_of_supply: string;
  /** `sgst` or `utgst` (the operator's state a union territory without a legislature). */
  state_tax: 'sgst' | 'utgst';
  /** How many fee postings (or reversals) it sums. */
  count: number;
  taxable_micros: number;
  cgst_micros: number;
  sgst_micros: number;
  igst_micros: number;
}

export interface GstParty {
  name: string | null;
  gstin: string | null;
  pan: string | null;
  state: string | null;
  address: string | null;
}

export interface GstDocument {
  /** A tax invoice (GST charged), a bill of supply (none: the operator was not registered), or a credit note. */
  kind: 'tax_invoice' | 'bill_of_supply' | 'credit_note';
  /** `<prefix>/<yy-yy>/<serial>`, at most 16 characters, unique in its series and financial year. */
  number: string;
  series: 'invoice' | 'credit_note';
  /** The financial year, `2026-27`. */
  fy: string;
  serial: number;
  issued_at: string;
  supplier: GstParty;
  recipient: GstParty;
  lines: GstLine[];
  /** Credit notes: the tax invoices of the fees they give back (CGST Rules, rule 53(1A)(g)). */
  refers_to?: Array<{ month: string; number: string | null }>;
}

export interface GstMonthDocuments {
  account_id: string;
  month: string;
  documents: GstDocument[];
}

export interface GstInvoicing {
  /** The first month issued (documents exist from it on). */
  from: string | null;
  /** Every month up to this one (`YYYY-MM`) is issued; null: none yet. */
  issued_through: string | null;
  /** A month being issued in several commits: the accounts up to `after` (by id) are done. */
  issuing: { month: string; after: string } | null;
  /** `<series>:<fy>` → the last serial taken. */
  last: Record<string, number>;
  /** `<YYYY-MM>` → the serials that month took: `<series>:<fy>` → [first, last]. */
  months: Record<string, Record<string, [number, number]>>;
}

declare module '../../store/state.js' {
  interface Tables {
    gst_invoices: Record<string, GstMonthDocuments>;
    gst_invoicing: Record<string, GstInvoicing>;
  }
}
