// A GST document as its JSON answer shows it and as a PDF page: what CGST Rules 46 (tax
// invoice), 49 (bill of supply) and 53 (credit note) ask a document to carry: the supplier's
// name, address and GSTIN, the number and date, the recipient's name, address and GSTIN (or
// state), the SAC, the taxable value, the rate and amount of each tax, the place of supply
// with its state's name, and a credit note's original invoices.
import { microsToUnits } from '../../util/money.js';
import { stateName } from '../engine/tax.js';
import { PAGE, pdfSafe, renderPdfPages, type PdfPage, type PdfText } from '../pdf.js';
import type { GstDocument, GstLine, GstParty } from './tables.js';

const SERVICE_NAMES: Record<string, string> = {
  recharge: 'Recharge service fees',
  dmt: 'Money transfer (DMT) charges',
  pan: 'PAN service fees',
  bills: 'Bill payment (BBPS) fees',
  topup: 'Wallet top-up convenience fees',
};

const TITLES: Record<GstDocument['kind'], string> = {
  tax_invoice: 'Tax invoice',
  bill_of_supply: 'Bill of supply',
  credit_note: 'Credit note',
};

function partyView(party: GstParty) {
  return {
    ...party,
    state_name: stateName(party.state),
  };
}

function lineView(line: GstLine) {
  return {
    description: SERVICE_NAMES[line.service] ?? line.service,
    service: line.service,
    sac: line.sac,
    count: line.count,
    rate: line.rate_bp / 100,
    supply: line.supply,
    place_of_supply: line.place_of_supply,
    place_of_supply_name: stateName(line.place_of_supply),
    taxable_value: microsToUnits(line.taxable_micros),
    cgst: microsToUnits(line.cgst_micros),
    [line.state_tax]: microsToUnits(line.sgst_micros),
    igst: microsToUnits(line.igst_micros),
  };
}

/** A document's totals, in micro-units. */
export function documentTotals(document: Pick<GstDocument, 'lines'>) {
  const sum = (pick: (l: GstLine) => number) => document.lines.reduce((s, l) => s + pick(l), 0);
  const taxable = sum((l) => l.taxable_micros);
  const cgst = sum((l) => l.cgst_micros);
  const sgst = sum((l) => l.sgst_micros);
  const igst = sum((l) => l.igst_micros);
  return {
    taxable,
    cgst,
    sgst,
    igst,
    gst: cgst + sgst + igst,
    total: taxable + cgst + sgst + igst,
  };
}

export function documentView(document: GstDocument) {
  const places = [...new Set(document.lines.map((l) => l.place_of_supply))];
  const totals = documentTotals(document);
  return {
    document: TITLES[document.kind],
    kind: document.kind,
    invoice_number: document.number,
    series: document.series,
    financial_year: document.fy,
    date: document.issued_at,
    supplier: partyView(document.supplier),
    recipient: partyView(document.recipient),
    place_of_supply: places.length === 1 ? places[0]! : null,
    place_of_supply_name: places.length === 1 ? stateName(places[0]!) : null,
    reverse_charge: false,
    lines: document.lines.map(lineView),
    totals: {
      taxable_value: microsToUnits(totals.taxable),
      cgst: microsToUnits(totals.cgst),
      sgst: microsToUnits(totals.sgst),
      igst: microsToUnits(totals.igst),
      gst: microsToUnits(totals.gst),
      total: microsToUnits(totals.total),
    },
    ...(document.refers_to ? { refers_to: document.refers_to } : {}),
    ...(document.kind === 'bill_of_supply'
      ? { note: 'The supplier is not registered for GST: no GST is charged (CGST Rules, rule 49).' }
      : {}),
  };
}

const money = (micros: number) => (micros / 1e6).toFixed(2);

function partyLines(label: string, p: GstParty): string[] {
  const state = p.state ? `${p.state} ${stateName(p.state) ?? ''}`.trim() : '-';
  return [
    `${label}: ${p.name ?? '-'}`,
    `GSTIN ${p.gstin ?? 'not registered'}   PAN ${p.pan ?? '-'}   State ${state}`,
    `Address: ${p.address ?? '-'}`,
  ];
}

/** The document's lines as a table: the columns' heads, then a row per line. */
function lineTable(
  document: GstDocument,
  put: (text: string, size?: number, bold?: boolean, x?: number) => void,
  next: (gap?: number) => void,
): void {
  const header: Array<[number, string]> = [
    [40, 'Description'],
    [200, 'SAC'],
    [240, 'Place'],
    [290, 'Rate'],
    [330, 'Taxable'],
    [395, 'CGST'],
    [450, 'SGST/UTGST'],
    [515, 'IGST'],
  ];
  for (const [x, text] of header) put(text, 8, true, x);
  next();
  for (const line of document.lines) {
    const cells: Array<[number, string]> = [
      [40, SERVICE_NAMES[line.service] ?? line.service],
      [200, line.sac],
      [240, line.place_of_supply],
      [290, `${line.rate_bp / 100}%`],
      [330, money(line.taxable_micros)],
      [395, money(line.cgst_micros)],
      [450, money(line.sgst_micros)],
      [515, money(line.igst_micros)],
    ];
    for (const [x, text] of cells) put(text, 8, false, x);
    next();
  }
}

/** One document as one page or more. */
function documentPages(document: GstDocument, title_all: string): PdfPage[] {
  const pages: PdfPage[] = [];
  let texts: PdfText[] = [];
  let y = 0;
  const page = () => {
    texts = [];
    pages.push({ texts, lines: [] });
    y = PAGE.height - 56;
    texts.push({ x: 40, y: 24, size: 7, muted: true, text: `${title_all} - ${document.number}` });
  };
  const put = (text: string, size = 9, bold = false, x = 40) => {
    if (y < 60) page();
    texts.push({ x, y, size, bold, text: pdfSafe(text) });
  };
  const next = (gap = 13) => {
    y -= gap;
  };
  /** A line of its own. */
  const say = (text: string, size = 9) => {
    put(text, size);
    next();
  };
  page();
  put(TITLES[document.kind], 16, true);
  next(22);
  put(`No. ${document.number}   Date ${document.issued_at.slice(0, 10)}   FY ${document.fy}`, 10);
  next(20);
  for (const text of partyLines('Supplier', document.supplier)) say(text);
  next(6);
  for (const text of partyLines('Recipient', document.recipient)) say(text);
  next(6);
  if (document.refers_to)
    say(`Against: ${document.refers_to.map((r) => `${r.number ?? '-'} (${r.month})`).join(', ')}`);
  next(8);
  lineTable(document, put, next);
  const t = documentTotals(document);
  next(6);
  put(
    `Taxable value Rs.${money(t.taxable)}   CGST Rs.${money(t.cgst)}   SGST/UTGST Rs.${money(t.sgst)}   IGST Rs.${money(t.igst)}   Total Rs.${money(t.total)}`,
    9,
    true,
  );
  next(18);
  if (document.kind === 'bill_of_supply')
    say('Supplier not registered for GST: no GST charged (CGST Rules, rule 49).', 8);
  put('Tax payable on reverse charge: No. Computer-generated document.', 8);
  return pages;
}

export function documentsPdf(title: string, documents: GstDocument[], created_at: Date): Buffer {
  const pages = documents.flatMap((d) => documentPages(d, title));
  if (pages.length === 0)
    pages.push({
      texts: [
        { x: 40, y: PAGE.height - 56, size: 14, bold: true, text: pdfSafe(title) },
        { x: 40, y: PAGE.height - 80, size: 9, text: 'No fees moved in this month: no document.' },
      ],
      lines: [],
    });
  return renderPdfPages({ title, pages, created_at });
}
