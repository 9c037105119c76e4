// /wallet's amount from ?amount= (the shortfall a 402 names) and the pay page's widened CSP. Pure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Response } from 'express';
import { setPageHeaders } from '../../../gateway/web/context.js';
import { prefillAmount } from '../../../gateway/web/pages/wallet-topups.js';

const limits = { min: 10_000_000, max: 100_000 * 1_000_000 };

test('?amount= fills the form with a plain decimal, raised to the smallest and capped at the largest top-up', () => {
  assert.equal(prefillAmount('16.39', limits), '16.39');
  assert.equal(prefillAmount('250', limits), '250.00');
  assert.equal(prefillAmount('0.01', limits), '10.00');
  assert.equal(prefillAmount('99999999', limits), '100000.00');
  for (const bad of [
    undefined,
    '',
    '0',
    '0.00',
    '-5',
    '1e3',
    '1.234',
    '12,5',
    ' 12',
    ['12'],
    '<b>',
  ])
    assert.equal(prefillAmount(bad, limits), '', String(bad));
});

function policyOf(sources?: Parameters<typeof setPageHeaders>[1]): string {
  const headers = new Map<string, string>();
  setPageHeaders(
    { setHeader: (name: string, value: string) => headers.set(name, value) } as unknown as Response,
    sources,
  );
  return headers.get('Content-Security-Policy')!;
}

test('a page allows no other origin unless it names one; the pay page names only the checkout origins', () => {
  assert.equal(
    policyOf(),
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  const pay = policyOf({
    script: ['https://checkout.razorpay.com'],
    frame: ['https://checkout.razorpay.com', 'https://api.razorpay.com'],
    connect: ['https://checkout.razorpay.com', 'https://api.razorpay.com'],
  });
  assert.match(pay, /script-src 'self' https:\/\/checkout\.razorpay\.com;/);
  assert.match(pay, /frame-src https:\/\/checkout\.razorpay\.com https:\/\/api\.razorpay\.com/);
  assert.match(
    pay,
    /connect-src 'self' https:\/\/checkout\.razorpay\.com https:\/\/api\.razorpay\.com/,
  );
  assert.match(pay, /frame-ancestors 'none'/);
  assert.match(pay, /form-action 'self'/);
});
