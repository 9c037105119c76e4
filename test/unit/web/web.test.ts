import { test } from 'node:test';
import assert from 'node:assert/strict';
import { html, raw } from '../../../gateway/web/html.ts';
import {
  formatMoney,
  formatSignedMoney,
  formatTimestamp,
  formatUnits,
} from '../../../gateway/web/format.ts';
import { hashPassword, verifyPassword } from '../../../gateway/accounts/password.ts';
import { niceCeiling, spendChart, tiersPresent } from '../../../gateway/web/chart.ts';
import { safeNext } from '../../../gateway/web/context.ts';
import { signupForm } from '../../../gateway/web/pages/auth.ts';
import { topUpForm } from '../../../gateway/web/pages/wallet.ts';

test('html escapes every interpolation except Html, joins arrays, drops null/false', () => {
  const evil = `<script>alert("x")</script>'&\``;
  assert.equal(
    html`<p title="${evil}">${evil}</p>`.text,
    '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;&#96;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;&#96;</p>',
  );
  assert.equal(
    html`<ul>${['a<', 'b'].map((item) => html`<li>${item}</li>`)}</ul>`.text,
    '<ul><li>a&lt;</li><li>b</li></ul>',
  );
  assert.equal(html`${null}${undefined}${false}${0}${raw('<b>')}`.text, '0<b>');
});

test('money is formatted from integer micros: grouping, decimals kept, sign', () => {
  assert.equal(formatUnits(0), '0.00');
  assert.equal(formatUnits(1_500_000), '1.50');
  assert.equal(formatUnits(750_506_750), '750.50675');
  assert.equal(formatUnits(123_456_789_000_000, 'INR'), '12,34,56,789.00');
  assert.equal(formatUnits(123_456_789_000_000, 'USD'), '123,456,789.00');
  assert.equal(formatUnits(1), '0.000001');
  assert.equal(formatMoney(100_000_000_000), '₹1,00,000.00');
  assert.equal(formatMoney(2_500_000, 'USD'), '$2.50');
  assert.equal(formatMoney(2_500_000, 'CHF'), '2.50 CHF');
  assert.equal(formatSignedMoney(43_250), '+₹0.04325');
  assert.equal(formatSignedMoney(-43_250), '−₹0.04325');
  assert.throws(() => formatUnits(0.5));
  assert.equal(formatTimestamp('2025-03-04T13:05:59.123Z'), '2025-03-04 13:05 UTC');
  assert.equal(formatTimestamp(null), '—');
});

test('passwords: scrypt hash verifies, a wrong password or a malformed hash does not', async () => {
  const hash = await hashPassword('correct horse battery staple');
  assert.match(hash, /^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  assert.notEqual(hash, await hashPassword('correct horse battery staple'), 'salted');
  assert.equal(await verifyPassword('correct horse battery staple', hash), true);
  assert.equal(await verifyPassword('correct horse battery stapl', hash), false);
  assert.equal(await verifyPassword('x', null), false);
  assert.equal(await verifyPassword('x', 'scrypt$3$8$1$abc$def'), false);
  assert.equal(await verifyPassword('x', hash.replace('32768', '1048577')), false);
  // A hash with other (smaller) parameters still verifies: the format carries them.
  const { scryptSync } = await import('node:crypto');
  const salt = Buffer.from('0123456789abcdef');
  const legacy = `scrypt$16384$8$1$${salt.toString('base64url')}$${scryptSync('pw-legacy-123', salt, 32, { N: 16384, r: 8, p: 1 }).toString('base64url')}`;
  assert.equal(await verifyPassword('pw-legacy-123', legacy), true);
});

test('safeNext keeps local paths only', () => {
  assert.equal(safeNext('/wallet?page=2', '/x'), '/wallet?page=2');
  assert.equal(safeNext('//evil.example/', '/x'), '/x');
  assert.equal(safeNext('/\\evil.example', '/x'), '/x');
  assert.equal(safeNext('https://evil.example/', '/x'), '/x');
  assert.equal(safeNext(['/a'], '/x'), '/x');
});

test('forms: signup and top-up validation at the edge', () => {
  const ok = signupForm.safeParse({
    name: ' Asha ',
    email: ' Asha@Example.COM ',
    password: 'long enough pw',
    password_confirm: 'long enough pw',
    _csrf: 'x',
  });
  assert.ok(ok.success);
  assert.equal(ok.data.email, 'asha@example.com');
  assert.equal(ok.data.name, 'Asha');
  const mismatch = signupForm.safeParse({
    name: 'A',
    email: 'a@b.co',
    password: 'long enough pw',
    password_confirm: 'other',
  });
  assert.equal(mismatch.success, false);
  assert.deepEqual(
    mismatch.error!.issues.map((issue) => issue.path.join('.')),
    ['password_confirm'],
  );
  assert.equal(
    signupForm.safeParse({
      name: 'A',
      email: 'not-an-email',
      password: 'long enough pw',
      password_confirm: 'long enough pw',
    }).success,
    false,
  );
  assert.equal(
    signupForm.safeParse({
      name: 'A',
      email: 'a@b.co',
      password: 'short',
      password_confirm: 'short',
    }).success,
    false,
  );

  const form = topUpForm('INR');
  const nonce = 'abcdefghijklmnop';
  assert.equal(form.parse({ amount: '250.55', nonce }).amount, 250_550_000);
  assert.equal(form.parse({ amount: ' 100 ', nonce }).amount, 100_000_000);
  for (const amount of ['12.345', '-5', '0.5', '1e3', '', '100001', 'NaN']) {
    assert.equal(form.safeParse({ amount, nonce }).success, false, amount);
  }
  assert.equal(form.safeParse({ amount: '10', nonce: 'short' }).success, false);
});

test('chart: a nice ceiling, tiers in tier order, one rect per non-zero day and tier, escaped labels', () => {
  assert.equal(niceCeiling(43_250), 50_000);
  assert.equal(niceCeiling(1_000_000), 1_000_000);
  assert.equal(niceCeiling(1_000_001), 2_000_000);
  assert.equal(niceCeiling(0), 1_000_000);
  const days = [
    {
      day: '2025-01-01',
      tiers: new Map([
        ['max', 2_000_000],
        ['lite', 500_000],
      ]),
    },
    { day: '2025-01-02', tiers: new Map<string, number>() },
    { day: '2025-01-03', tiers: new Map([['<odd>', 1_000_000]]) },
  ];
  assert.deepEqual(tiersPresent(days), ['lite', 'max', '<odd>']);
  const svg = spendChart(days, 'INR').text;
  assert.equal((svg.match(/<rect /g) ?? []).length, 3);
  assert.match(svg, /class="tier-other"/);
  assert.doesNotMatch(svg, /<odd>/);
  assert.match(svg, /₹3.50 in all/);
  assert.match(spendChart([{ day: '2025-01-01', tiers: new Map() }], 'INR').text, /No AI spend/);
});
