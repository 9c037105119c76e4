// Pure rules of Payments II: DMT charge slabs, calendar months in IST, IFSC and account
// numbers, PAN holder types, name matching, CSV cells, and the hand-written PDF read back by pdf.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chargeSlabSchema, paymentsConfigSchema } from '../../../gateway/payments/config.ts';
import { monthKey, namesMatch } from '../../../gateway/payments/dmt/rules.ts';
import { bankForIfsc } from '../../../gateway/payments/identity/bank.ts';
import { hashOtp, newOtp, otpMatches } from '../../../gateway/payments/dmt/otp.ts';
import { slabChargesMicros } from '../../../gateway/payments/engine/intent.ts';
import { parsePan } from '../../../gateway/payments/identity/pan.ts';
import { renderPdf } from '../../../gateway/payments/pdf.ts';
import { csvCell, toCsv } from '../../../gateway/payments/shared/csv.ts';
import { sandboxSuffix } from '../../../gateway/providers/sandbox/adapter.ts';
import { parseCsv } from '../../support/payments-helpers.ts';
import { pdfText } from '../../support/payments-pdf.ts';

const M = 1_000_000;

test('DMT charges: default slabs, half-up rounding to the paisa, min and max, uncovered amounts', () => {
  const slabs = paymentsConfigSchema.parse({}).dmt.charges.IMPS;
  assert.equal(slabChargesMicros(1 * M, slabs), 10 * M);
  assert.equal(slabChargesMicros(1_000 * M, slabs), 10 * M, 'up_to is inclusive');
  assert.equal(
    slabChargesMicros(1_000 * M + 10_000, slabs),
    10 * M,
    '1 % of 1,000.01 is 10.0001 → 10.00',
  );
  assert.equal(slabChargesMicros(4_999 * M, slabs), 49_990_000);
  assert.equal(slabChargesMicros(5_000 * M, slabs), 50 * M);
  const custom = [
    chargeSlabSchema.parse({ up_to: 100, pct: 1.25, flat: 0.1, max: 1 }),
    chargeSlabSchema.parse({ up_to: 200, pct: 0.5, min: 0.75 }),
  ];
  assert.equal(
    slabChargesMicros(2 * M, custom),
    130_000,
    '0.10 + 1.25 % of 2 = 0.125 → 0.13 (half up)',
  );
  assert.equal(slabChargesMicros(1_960_000, custom), 120_000, '0.10 + 0.0245 → 0.02');
  assert.equal(slabChargesMicros(100 * M, custom), 1 * M, 'capped at max');
  assert.equal(slabChargesMicros(101 * M, custom), 750_000, 'raised to min');
  assert.equal(slabChargesMicros(200_010_000, custom), null, 'no slab covers it');
  assert.throws(
    () =>
      paymentsConfigSchema.parse({
        dmt: { per_txn_limit: 10_000, charges: { IMPS: [{ up_to: 5_000, flat: 1 }] } },
      }),
    /last slab must reach per_txn_limit/,
  );
  assert.throws(
    () =>
      paymentsConfigSchema.parse({
        dmt: { charges: { IMPS: [{ up_to: 300_000 }, { up_to: 200_000 }] } },
      }),
    /increasing order/,
  );
});

test('calendar months are counted in IST by default', () => {
  assert.equal(monthKey(new Date('2025-01-31T18:29:59Z'), 330), '2025-01');
  assert.equal(
    monthKey(new Date('2025-01-31T18:30:00Z'), 330),
    '2025-02',
    'midnight in India starts February',
  );
  assert.equal(monthKey(new Date('2025-12-31T18:30:00Z'), 330), '2026-01');
  assert.equal(monthKey(new Date('2025-01-31T23:00:00Z'), 0), '2025-01');
});

test('banks, names, OTPs (IFSC and account numbers: identity.test.ts)', () => {
  assert.equal(bankForIfsc('ICIC0001234'), 'ICICI Bank');
  // Sublet branches name their own bank (Razorpay's ifsc lists), not the sponsor's prefix.
  assert.equal(bankForIfsc('HDFC0CAACOB'), 'Akhand Anand Co.op Bank');
  assert.equal(bankForIfsc('ALLA0AU1234'), 'Allahabad Up Gramin Bank');
  assert.equal(bankForIfsc('HDFC0001234'), 'HDFC Bank');
  assert.ok(namesMatch('Mr. Ravi  Kumar', 'KUMAR RAVI'));
  assert.ok(!namesMatch('Ravi Kumar', 'Ravi Kumari'));
  assert.ok(!namesMatch('', ''));
  const otp = newOtp(6);
  assert.match(otp, /^\d{6}$/);
  assert.ok(otpMatches(otp, 'salt', hashOtp(otp, 'salt')));
  assert.ok(!otpMatches(otp, 'other', hashOtp(otp, 'salt')));
});

test('PAN: format, holder type from the 4th character; sandbox keys on the digits', () => {
  assert.deepEqual(parsePan('abcpe 1234 f'), { pan: 'ABCPE1234F', type: 'Individual' });
  const types = {
    P: 'Individual',
    C: 'Company',
    H: 'HUF',
    F: 'Firm',
    A: 'AOP',
    T: 'Trust',
    B: 'BOI',
    L: 'Local Authority',
    J: 'Artificial Juridical Person',
    G: 'Government',
  };
  for (const [letter, type] of Object.entries(types))
    assert.deepEqual(parsePan(`ABC${letter}E1234F`), { pan: `ABC${letter}E1234F`, type });
  for (const bad of ['ABCDE1234F', 'ABCPE123F', 'ABCPE12345', '', 'ABCPEA234F'])
    assert.ok('error' in parsePan(bad), bad);
  assert.equal(sandboxSuffix('ABCPE0000F'), '0000');
  assert.equal(sandboxSuffix('9876540001'), '0001');
});

test('CSV: numbers as in JSON, text quoted when needed, formulas defused, round trip', () => {
  assert.equal(csvCell(-12.5), '-12.5');
  assert.equal(csvCell(null), '');
  assert.equal(csvCell('plain'), 'plain');
  assert.equal(csvCell('a,b'), '"a,b"');
  assert.equal(csvCell('say "hi"'), '"say ""hi"""');
  assert.equal(csvCell('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
  const rows = [
    { a: 'x,y', b: 1.5, c: null },
    { a: 'line\nbreak', b: -2, c: 'z' },
  ];
  const parsed = parseCsv(toCsv(['a', 'b', 'c'], rows));
  assert.deepEqual(parsed, [
    ['a', 'b', 'c'],
    ['x,y', '1.5', ''],
    ['line\nbreak', '-2', 'z'],
  ]);
});

test('the hand-written PDF parses with pdf.js and holds its text', async () => {
  const bytes = renderPdf({
    title: 'Receipt (test)',
    texts: [
      { x: 64, y: 760, size: 20, text: 'Bill payment receipt', bold: true },
      { x: 64, y: 720, size: 11, text: 'Amount: INR 1,234.50 (₹) \\ (paren)' },
      { x: 64, y: 700, size: 11, text: 'Ünïcödé → ok', muted: true },
    ],
    lines: [{ x1: 64, y1: 740, x2: 531, y2: 740 }],
    created_at: new Date('2025-01-02T03:04:05Z'),
  });
  assert.equal(bytes.subarray(0, 8).toString('latin1'), '%PDF-1.4');
  // every xref offset points at its object
  const text = bytes.toString('latin1');
  const xref_at = Number(/startxref\n(\d+)\n%%EOF\n$/.exec(text)![1]);
  assert.equal(text.slice(xref_at, xref_at + 4), 'xref');
  const offsets = [...text.slice(xref_at).matchAll(/^(\d{10}) 00000 n $/gm)].map((m) =>
    Number(m[1]),
  );
  offsets.forEach((offset, index) => {
    assert.equal(text.slice(offset, offset + `${index + 1} 0 obj`.length), `${index + 1} 0 obj`);
  });
  const read = await pdfText(bytes);
  assert.equal(read.pages, 1);
  assert.equal(read.title, 'Receipt (test)');
  assert.match(read.text, /Bill payment receipt/);
  assert.match(read.text, /Amount: INR 1,234\.50 \(Rs\.\) \\ \(paren\)/);
  assert.match(read.text, /Ünïcödé \? ok/);
});

test('a transaction view: fields a provider answered cannot replace ours, and keep the documented order', async () => {
  const { txnView } = await import('../../../gateway/payments/engine/transactions.ts');
  const at = '2026-11-21T00:00:00.000Z';
  const txn = {
    id: 'txn_1',
    account_id: 'acc_1',
    service: 'recharge',
    status: 'success',
    message: 'success',
    amount_micros: 100 * M,
    charges_micros: 0,
    commission_micros: 2 * M,
    subject: '9876543210',
    details: { operator_id: '1' },
    provider: 'sandbox',
    provider_ref: 'P1',
    // An operator's data_fields may name anything: these must not change the transaction.
    result: {
      utr: 'U123',
      status: 'failed',
      amount: 1,
      provider: 'evil',
      provider_ref: 'X',
      txn_id: 'other',
    },
    client_ref: null,
    created_at: at,
    updated_at: at,
    finalized_at: at,
    history: [],
    attempts: [],
    checks: { count: 0, next_at: null, last_at: null, last_result: null, stalled: false },
    refund: null,
    postings: [],
  } as unknown as Parameters<typeof txnView>[0];
  const view = txnView(txn);
  assert.equal(view.txn_id, 'txn_1');
  assert.equal(view.status, 'success');
  assert.equal(view.amount, 100);
  assert.equal(view.provider, 'sandbox');
  assert.equal(view.provider_ref, 'P1');
  assert.equal((view as Record<string, unknown>).utr, 'U123');
  assert.deepEqual(Object.keys(view).slice(0, 12), [
    'txn_id',
    'service',
    'status',
    'message',
    'amount',
    'charges',
    'commission',
    'number',
    'operator_id',
    'provider',
    'provider_ref',
    'utr',
  ]);
});

test('webhook URLs: the addresses live mode refuses, and the public ones it allows', async () => {
  const { isPrivateAddress } = await import('../../../gateway/payments/engine/webhooks.ts');
  const refused = [
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '192.0.0.8',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fd00::1',
    'fc00::1',
    'fe80::1',
    'fec0::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:a9fe:a9fe',
  ];
  // Issue #13 finding 8, as found: NAT64, 6to4 and IPv4-compatible forms of loopback passed.
  refused.push(
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    '::127.0.0.1',
    '::7f00:1',
    '64:ff9b::a9fe:a9fe',
    '64:ff9b::10.0.0.1',
    '2002:a00:1::1',
    '2002:c0a8:101:1::5',
    '::ffff:0:127.0.0.1',
    '64:ff9b:1::8.8.8.8',
    '::0.0.0.0',
    '2001:0:4136:e378:8000:63bf:80ff:fffe',
    '2001:db8::7f00:1',
    '100::1',
  );
  for (const literal of [
    '[64:ff9b::7f00:1]',
    '[2002:7f00:1::]',
    '[::127.0.0.1]',
    '[::ffff:127.0.0.1]',
  ]) {
    refused.push(new URL(`http://${literal}/hook`).hostname.replace(/^\[|\]$/g, '')); // as the webhook route and sender see it
  }
  const allowed = [
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    'example.com',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '::8.8.8.8',
    '2001:4860:4860::8888',
  ];
  for (const address of refused) assert.equal(isPrivateAddress(address), true, address);
  for (const address of allowed) assert.equal(isPrivateAddress(address), false, address);
});

test('webhook delivery: without allow_private, a private address is refused before connecting, as a literal or through DNS', async () => {
  const { postWebhook } = await import('../../../gateway/payments/engine/webhooks.ts');
  const { createServer } = await import('node:http');
  let received = 0;
  const server = createServer((req, res) => {
    received++;
    req.resume();
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  try {
    // An IP literal: refused at once.
    await assert.rejects(
      postWebhook(`http://127.0.0.1:${port}/hook`, '{}', {}, 2_000, false),
      /127\.0\.0\.1 is a private address/,
    );
    // IPv6 literals that embed the loopback address (issue #13 finding 8): refused too.
    for (const literal of [
      '[::127.0.0.1]',
      '[::ffff:127.0.0.1]',
      '[64:ff9b::7f00:1]',
      '[2002:7f00:1::]',
    ]) {
      await assert.rejects(
        postWebhook(`http://${literal}:${port}/hook`, '{}', {}, 2_000, false),
        /is a private address/,
        literal,
      );
    }
    // A name: refused on the address it resolves to (localhost comes from the hosts file, no network needed).
    await assert.rejects(
      postWebhook(`http://localhost:${port}/hook`, '{}', {}, 2_000, false),
      (error: NodeJS.ErrnoException) =>
        error.code === 'EPRIVATE' && /resolves only to private addresses/.test(error.message),
    );
    assert.equal(received, 0, 'nothing reached the private server');
    // Allowed (sandbox, or webhooks.allow_private_addresses): delivered.
    assert.equal(await postWebhook(`http://127.0.0.1:${port}/hook`, '{}', {}, 2_000, true), 200);
    assert.equal(received, 1);
  } finally {
    server.close();
  }
});
