// Money in where the user is (issue #41), in a real browser: a key runs out of credit → the
// 402 names /wallet?amount=<shortfall> → the Top up form has the amount filled in and shows the
// convenience fee → the pay page shows the total → the payment provider's checkout (the
// scripted Razorpay's /v1/checkout.js and page, which pays and sends its signed webhooks to
// the gateway) → back on /wallet with the top-up credited and the new balance; a failed
// top-up and an unpaid one are listed under "Pending and failed top-ups". Live mode, a real
// gateway process, Debian's chromium.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { request, startGateway, tempDir, type Gateway } from '../gateway/helpers.ts';
import { ScriptedRazorpay } from '../support/razorpay-upstream.ts';
import { launch, parseMoney, reviewShot, withPage } from './browser.ts';

let browser: Browser;
let razorpay: ScriptedRazorpay;
let gateway: Gateway;

before(async () => {
  browser = await launch();
  razorpay = await ScriptedRazorpay.start();
  const config = join(tempDir('aihub-topup-browser-'), 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      topups: {
        provider: 'razorpay',
        razorpay: {
          base_url: razorpay.url,
          checkout_script_url: `${razorpay.url}/v1/checkout.js`,
        },
        min_amount: 10,
        fees: { default: 2 },
      },
      // With a GSTIN the operator charges GST on the fee (18%).
      payments: { tax: { operator: { gstin: '29AAACA1234A1ZG' } } },
    }),
  );
  gateway = await startGateway({
    args: ['--config', config],
    env: { AIHUB_MODE: 'live', ...razorpay.env() },
  });
  razorpay.webhook_url = `${gateway.url}/webhooks/razorpay`;
});
after(async () => {
  await browser?.close();
  if (gateway) assert.equal(await gateway.stop(), 0);
  await razorpay?.close();
});

const PASSWORD = 'correct horse battery staple';

async function signUpWithKey(page: Page, email: string): Promise<string> {
  await page.goto(`${gateway.url}/signup`);
  await page.getByLabel('Name').fill('Ravi Kumar');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: false }).first().fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(`${gateway.url}/api-keys`);
  await page.getByLabel('Key name').fill('laptop');
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.waitForURL(/\/api-keys$/);
  return ((await page.locator('#new-key').textContent()) ?? '').trim();
}

const balanceOf = async (page: Page) =>
  parseMoney((await page.locator('#balance').textContent()) ?? '');

test('402 → /wallet?amount= → Top up → checkout → back on /wallet with the new balance', async () => {
  await withPage(browser, 'wallet-topup', async (page) => {
    const csp: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) csp.push(message.text());
    });
    const key = await signUpWithKey(page, 'ravi@example.com');

    // The remedy where the user is: the 402 names the wallet page with the shortfall.
    const refused = await request(`${gateway.url}/v1/chat/completions`, {
      headers: { authorization: `Bearer ${key}` },
      body: {
        model: 'service-ai-lite',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 10,
      },
    });
    assert.equal(refused.status, 402, JSON.stringify(refused.body));
    const topup_url = refused.body.x_aihub.topup_url as string;
    assert.match(topup_url, /\/wallet\?amount=\d+\.\d\d$/);

    await page.goto(topup_url);
    assert.equal(await balanceOf(page), 0);
    // The shortfall is below the smallest top-up (10): the form offers the smallest.
    assert.equal(await page.getByLabel('Amount (INR)').inputValue(), '10.00');
    await page.getByLabel('Amount (INR)').fill('500');
    await page.getByRole('button', { name: 'Top up', exact: true }).click();

    // The pay page: the fee (2% + 18% GST on it) before paying.
    await page.waitForURL(/\/wallet\/topups\/[^/]+\/pay$/);
    assert.equal(parseMoney((await page.locator('#pay-fee').textContent()) ?? ''), 10);
    assert.equal(parseMoney((await page.locator('#pay-fee-gst').textContent()) ?? ''), 1.8);
    assert.equal(parseMoney((await page.locator('#pay-total').textContent()) ?? ''), 511.8);
    await reviewShot(page, 'wallet-topup-pay');
    const pay_page = page.url();

    // Not paid yet: /wallet lists it as waiting for payment, with a way back to the checkout.
    // Only the pay page lets the provider's origin in; /wallet keeps the strict policy.
    const wallet = await page.goto(`${gateway.url}/wallet`);
    const provider_origin = new RegExp(razorpay.url.replace(/[.]/g, '\\.'));
    assert.doesNotMatch((await wallet!.allHeaders())['content-security-policy']!, provider_origin);
    const pending = page.locator('#topups-table tbody tr');
    assert.equal(await pending.count(), 1);
    assert.match((await pending.first().textContent()) ?? '', /waiting for payment/);
    await pending.first().getByRole('link', { name: 'Pay' }).click();
    assert.equal(page.url(), pay_page);
    const policy = (await (await page.reload())!.allHeaders())['content-security-policy']!;
    assert.match(policy, new RegExp(`script-src 'self' ${provider_origin.source};`));

    // The provider's checkout: its script (allowed by the page's CSP) opens its page.
    await page.getByRole('button', { name: /^Pay ₹511\.80$/ }).click();
    await page.waitForURL(`${razorpay.url}/checkout?**`);
    await page.getByRole('button', { name: 'Pay' }).click();

    // Back on /wallet: the verified webhook credited the amount (not the fee).
    await page.waitForURL(/\/wallet\?topup=/);
    await page.locator('#topup-status[data-status="credited"]').waitFor();
    assert.match(
      (await page.locator('#topup-status').textContent()) ?? '',
      /₹500\.00 added to your wallet/,
    );
    assert.equal(await balanceOf(page), 500);
    assert.equal(await page.locator('#topups-table').count(), 0, 'nothing pending any more');
    await reviewShot(page, 'wallet-topup-credited');
    const api = await request(`${gateway.url}/v1/balance`, { headers: { 'x-api-key': key } });
    assert.equal(api.body.balance, 500, 'the API shows the balance the page shows');
    assert.deepEqual(csp, [], 'no Content Security Policy violations');
  });
});

test('a failed payment is listed under "Pending and failed top-ups" with its reason; nothing credited', async () => {
  await withPage(browser, 'wallet-topup-failed', async (page) => {
    await signUpWithKey(page, 'meera@example.com');
    await page.goto(`${gateway.url}/wallet`);
    await page.getByLabel('Amount (INR)').fill('100');
    await page.getByRole('button', { name: 'Top up', exact: true }).click();
    await page.waitForURL(/\/wallet\/topups\/[^/]+\/pay$/);
    const topup_id = /\/wallet\/topups\/([^/]+)\/pay$/.exec(page.url())![1]!;
    const order = [...razorpay.orders.values()].find((o) => o.notes?.topup_id === topup_id);
    assert.ok(order, 'the order carries the top-up id');
    const failed = razorpay.fail(order.id);
    const delivered = await razorpay.deliver(
      razorpay.webhook_url!,
      razorpay.webhook('payment.failed', { payment: failed }),
    );
    assert.equal(delivered.status, 200, JSON.stringify(delivered.body));

    await page.goto(`${gateway.url}/wallet?topup=${topup_id}`);
    await page.locator('#topup-status[data-status="failed"]').waitFor();
    assert.match((await page.locator('#topup-status').textContent()) ?? '', /failed/);
    const row = page.locator(`#topups-table tr[data-topup="${topup_id}"]`);
    assert.match((await row.textContent()) ?? '', /failed/);
    assert.equal(await balanceOf(page), 0);
  });
});
