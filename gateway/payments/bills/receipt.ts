// The receipt of a bill payment, as an HTML page and as a PDF, from one list of fields
// (transaction id, biller, consumer number, amount, date, status...), so both always agree.
import { microsToUnits } from '../../util/money.js';
import { PAGE, renderPdf, type PdfLine, type PdfText } from '../pdf.js';
import type { PaymentTxn } from '../engine/tables.js';
import { stateName, type TaxSplit } from '../engine/tax.js';

export interface ReceiptField {
  label: string;
  value: string;
}

const amountFormat = new Intl.NumberFormat('en-IN', {
  minimumFractionDigits: 2,
  maximumFractionDigits: 2,
});
const dateFormat = new Intl.DateTimeFormat('en-IN', {
  dateStyle: 'medium',
  timeStyle: 'medium',
  timeZone: 'Asia/Kolkata',
  hour12: false,
});

export function formatAmount(micros: number, currency: string): string {
  return `${currency} ${amountFormat.format(microsToUnits(micros))}`;
}

export function formatReceiptDate(iso: string): string {
  return `${dateFormat.format(new Date(iso))} IST`;
}

const STATUS_TEXT: Record<PaymentTxn['status'], string> = {
  success: 'SUCCESS',
  pending: 'PENDING (awaiting the biller)',
  failed: 'FAILED (refunded)',
  on_hold: 'ON HOLD (under review; the amount stays held)',
  refund_pending: 'FAILED (refund pending)',
  refunded: 'FAILED (refunded)',
  reversed: 'REVERSED by the biller (refunded)',
};

/** 98XXXXXX10: the first two and last two digits of a mobile number. */
function maskMobile(mobile: string): string {
  return mobile.length > 4
    ? `${mobile.slice(0, 2)}${'X'.repeat(mobile.length - 4)}${mobile.slice(-2)}`
    : mobile;
}

export function receiptFields(txn: PaymentTxn, currency: string): ReceiptField[] {
  const d = txn.details;
  const fields: ReceiptField[] = [
    { label: 'Transaction ID', value: txn.id },
    { label: 'Status', value: STATUS_TEXT[txn.status] },
    { label: 'Biller', value: `${String(d.biller)} (${String(d.biller_id)})` },
    { label: 'Category', value: String(d.category) },
    { label: 'Consumer number', value: txn.subject },
  ];
  for (const [name, value] of Object.entries(d))
    if (name.startsWith('param_'))
      fields.push({ label: name.slice(6).replaceAll('_', ' '), value: String(value) });
  if (d.customer_name !== undefined)
    fields.push({ label: 'Customer name', value: String(d.customer_name) });
  if (d.customer_mobile !== undefined)
    fields.push({ label: 'Customer mobile', value: maskMobile(String(d.customer_mobile)) });
  if (d.bill_number !== undefined)
    fields.push({ label: 'Bill number', value: String(d.bill_number) });
  if (d.due_date !== undefined) fields.push({ label: 'Due date', value: String(d.due_date) });
  fields.push({ label: 'Amount', value: formatAmount(txn.amount_micros, currency) });
  if (txn.charges_micros > 0) {
    fields.push({ label: 'Convenience fee', value: formatAmount(txn.charges_micros, currency) });
    if (txn.tax) fields.push(...taxFieldsOf(txn.tax, currency));
    fields.push({
      label: 'Total',
      value: formatAmount(txn.amount_micros + txn.charges_micros, currency),
    });
  }
  fields.push({ label: 'Date', value: formatReceiptDate(txn.created_at) });
  if (txn.finalized_at)
    fields.push({
      label: txn.status === 'success' ? 'Confirmed' : 'Closed',
      value: formatReceiptDate(txn.finalized_at),
    });
  if (txn.result.bbps_ref !== undefined)
    fields.push({ label: 'BBPS reference', value: String(txn.result.bbps_ref) });
  if (txn.result.biller_ref !== undefined)
    fields.push({ label: 'Biller reference', value: String(txn.result.biller_ref) });
  if (d.payment_mode !== undefined)
    fields.push({
      label: 'Payment mode',
      value: `${String(d.payment_mode)} (${String(d.channel ?? 'AGT')})`,
    });
  if (txn.refund)
    fields.push({
      label: 'Refunded',
      value: `${formatAmount(txn.refund.amount_micros, currency)} to the wallet`,
    });
  return fields;
}

/** The fee's GST split, as the receipt lists it: taxable value, then each tax with its rate. */
export function taxFieldsOf(tax: TaxSplit, currency: string): ReceiptField[] {
  const half = `${tax.rate_bp / 200}%`;
  const fields: ReceiptField[] = [
    { label: '  Taxable value', value: formatAmount(tax.taxable_micros, currency) },
  ];
  if (tax.supply === 'intra_state') {
    fields.push({ label: `  CGST ${half}`, value: formatAmount(tax.cgst_micros, currency) });
    fields.push({
      label: `  ${tax.state_tax.toUpperCase()} ${half}`,
      value: formatAmount(tax.sgst_micros, currency),
    });
  } else {
    fields.push({
      label: `  IGST ${tax.rate_bp / 100}%`,
      value: formatAmount(tax.igst_micros, currency),
    });
  }
  fields.push({
    label: '  Place of supply',
    value: `${tax.place_of_supply} ${stateName(tax.place_of_supply) ?? ''}`.trim(),
  });
  return fields;
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

export function receiptHtml(txn: PaymentTxn, currency: string, pdf_url: string): string {
  const rows = receiptFields(txn, currency)
    .map(
      (f) => `<tr><th scope="row">${escapeHtml(f.label)}</th><td>${escapeHtml(f.value)}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Receipt ${escapeHtml(txn.id)}</title>
<style>
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;margin:0;background:#f6f8fa}
main{max-width:560px;margin:32px auto;background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:24px 28px}
h1{font-size:20px;margin:0 0 4px}p{margin:0 0 16px;color:#57606a}
table{width:100%;border-collapse:collapse}th,td{text-align:left;padding:8px 0;border-bottom:1px solid #eaeef2;vertical-align:top}
th{font-weight:600;width:42%;color:#57606a}.status-success{color:#1a7f37}.status-failed{color:#cf222e}.status-pending{color:#9a6700}
a{color:#0969da}@media print{body{background:#fff}main{border:0;margin:0}a{display:none}}
</style>
</head>
<body>
<main>
<h1>Bill payment receipt</h1>
<p class="status-${txn.status}">${escapeHtml(STATUS_TEXT[txn.status])}</p>
<table>
${rows}
</table>
<p style="margin-top:16px"><a href="${escapeHtml(pdf_url)}">Download as PDF</a></p>
</main>
</body>
</html>
`;
}

export function receiptPdf(txn: PaymentTxn, currency: string): Buffer {
  const left = 64;
  const value_x = 230;
  const texts: PdfText[] = [
    { x: left, y: PAGE.height - 80, size: 20, text: 'Bill payment receipt', bold: true },
    { x: left, y: PAGE.height - 102, size: 11, text: 'AIHub payments', muted: true },
  ];
  const lines: PdfLine[] = [
    { x1: left, y1: PAGE.height - 116, x2: PAGE.width - left, y2: PAGE.height - 116 },
  ];
  let y = PAGE.height - 144;
  for (const field of receiptFields(txn, currency)) {
    texts.push({ x: left, y, size: 11, text: field.label, muted: true });
    texts.push({
      x: value_x,
      y,
      size: 11,
      text: field.value,
      bold: field.label === 'Amount' || field.label === 'Status',
    });
    y -= 24;
  }
  lines.push({ x1: left, y1: y + 8, x2: PAGE.width - left, y2: y + 8 });
  texts.push({
    x: left,
    y: y - 14,
    size: 9,
    text: 'This receipt was generated by the AIHub gateway for the transaction above.',
    muted: true,
  });
  return renderPdf({
    title: `Receipt ${txn.id}`,
    texts,
    lines,
    created_at: new Date(txn.updated_at),
  });
}
