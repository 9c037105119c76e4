// The payer check of a transfer into a virtual account (pure): the holder's own account, or
// the same name as words without titles, passes; anyone else, or no name at all, is held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { thirdPartyReason } from '../../../gateway/topups/virtual-accounts/payer.ts';

const holder = { names: ['Asha Verma', 'Verma Traders'], bank_accounts: [] };
const payer = (
  name: string | null,
  account_number: string | null = '50100000000001',
  ifsc: string | null = 'HDFC0000004',
) => ({
  name,
  account_number,
  ifsc,
  vpa: null,
});

test('the holder’s name in the bank’s spelling passes', () => {
  assert.equal(thirdPartyReason(holder, payer('ASHA VERMA')), null);
  assert.equal(thirdPartyReason(holder, payer('Verma, Asha')), null);
  assert.equal(thirdPartyReason(holder, payer('MRS ASHA  VERMA')), null);
  assert.equal(thirdPartyReason(holder, payer('VERMA TRADERS')), null);
});

test('another name, or none, is held with the reason', () => {
  assert.match(thirdPartyReason(holder, payer('RAVI VERMA'))!, /RAVI VERMA/);
  assert.match(thirdPartyReason(holder, payer('ASHA'))!, /not the account holder/);
  assert.match(thirdPartyReason(holder, payer(null))!, /not given/);
  assert.match(thirdPartyReason(holder, payer('   '))!, /not the account holder/);
});

test('the holder’s own bank account passes whatever name the bank gives', () => {
  const own = {
    ...holder,
    bank_accounts: [{ account_number: '0050100000000001', ifsc: 'hdfc0000004' }],
  };
  assert.equal(thirdPartyReason(own, payer('A V ENTERPRISES')), null);
  assert.match(
    thirdPartyReason(own, payer('A V ENTERPRISES', '50100000000009'))!,
    /A V ENTERPRISES/,
  );
});
