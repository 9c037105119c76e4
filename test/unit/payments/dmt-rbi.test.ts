// The pure rules of DMT under RBI's 2024 framework and of the banks' formats: officially
// valid documents, the split of an amount into legs, a parent's status from its legs, and the
// sandbox's bank references (NEFT UTR, IMPS RRN).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parentStatus, splitAmount } from '../../../gateway/payments/dmt/rbi.ts';
import { parseOvd } from '../../../gateway/payments/dmt/rules.ts';
import { bankReference } from '../../../gateway/providers/sandbox/adapter.ts';
import { verhoeffCheckDigit } from '../../../gateway/payments/identity/aadhaar.ts';
import type { PaymentTxn } from '../../../gateway/payments/engine/tables.ts';

test('OVDs: each type by its own format; kept masked to the last four characters', () => {
  const aadhaar = `98765432101${verhoeffCheckDigit('98765432101')}`;
  assert.deepEqual(parseOvd('aadhaar', aadhaar.replace(/(\d{4})/g, '$1 ')), {
    number: aadhaar,
    masked: `XXXX-XXXX-${aadhaar.slice(-4)}`,
  });
  assert.ok('error' in parseOvd('aadhaar', '987654321011'), 'Verhoeff');
  assert.deepEqual(parseOvd('passport', 'j8369854'), { number: 'J8369854', masked: 'XXXX9854' });
  assert.ok('error' in parseOvd('passport', 'Q8369854'), 'Q is not a passport series');
  assert.ok('number' in parseOvd('voter_id', 'ABC 1234567'));
  assert.ok('number' in parseOvd('driving_licence', 'MH14 20110062821'));
  assert.ok('number' in parseOvd('nrega_job_card', 'MH-01-001-001-001/12'));
  assert.ok('error' in parseOvd('pan', 'ABCPE1234F'), 'a PAN is not an OVD');
});

test('split: parts at the per-transfer limit, then the rest; their sum is the amount', () => {
  const m = (u: number) => u * 1_000_000;
  assert.deepEqual(splitAmount(m(12_000), m(5_000)), [m(5_000), m(5_000), m(2_000)]);
  assert.deepEqual(splitAmount(m(10_000), m(5_000)), [m(5_000), m(5_000)]);
  assert.deepEqual(splitAmount(m(100), m(5_000)), [m(100)]);
  assert.deepEqual(splitAmount(m(5_000) + 10_000, m(5_000)), [m(5_000), 10_000]);
});

test("a split transfer's status follows its legs", () => {
  const legs = (...statuses: string[]) => statuses.map((status) => ({ status }) as PaymentTxn);
  assert.equal(parentStatus(legs('success', 'success')), 'success');
  assert.equal(parentStatus(legs('failed', 'failed')), 'failed');
  assert.equal(parentStatus(legs('success', 'failed', 'failed')), 'partial');
  assert.equal(parentStatus(legs('success', 'pending')), 'pending');
  assert.equal(parentStatus(legs('success', 'refund_pending', 'failed')), 'refund_pending');
  assert.equal(parentStatus(legs('refunded', 'failed')), 'failed');
  assert.equal(parentStatus(legs('refunded', 'refunded')), 'refunded');
});

test("bank references: a NEFT UTR of 16 characters, an IMPS RRN of 12 digits, both dated in India's time", () => {
  const at = new Date('2025-07-21T09:15:00Z'); // day 202 of 2025, 14:45 in India
  const request = (txn_type: string) => ({
    txn_id: 'txn_0123456789abcdef01234567',
    service: 'dmt' as const,
    amount_micros: 1,
    subject: '123456789012',
    params: { txn_type },
    submitted_at: at.toISOString(),
  });
  const neft = bankReference(request('NEFT'), at);
  assert.match(neft.utr, /^YESBN5202\d{7}$/);
  assert.equal(neft.utr.length, 16);
  const imps = bankReference(request('IMPS'), at);
  assert.match(imps.utr, /^520214\d{6}$/);
  // 20:00 UTC on 31 December is 01:30 on 1 January in India: year 6, day 001, hour 01.
  const new_year = new Date('2025-12-31T20:00:00Z');
  assert.match(bankReference(request('IMPS'), new_year).utr, /^600101\d{6}$/);
  assert.match(bankReference(request('NEFT'), new_year).utr, /^YESBN6001\d{7}$/);
  assert.equal(imps.rrn, imps.utr);
});
