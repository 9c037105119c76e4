// The /wallet top-up through Cashfree in a real browser (issue #41's second payment gateway):
// the pay page loads Cashfree's browser SDK (the scripted Cashfree's /js/v3/cashfree.js), whose
// checkout takes the tab to the provider's page; paying there sends the signed
// PAYMENT_SUCCESS_WEBHOOK to the gateway and returns the browser to /wallet?topup=<id>, where
// the top-up shows as credited with the new balance. Live mode, a real gateway process,
// Debian's chromium.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { startGateway, tempDir, type Gateway } from '../gateway/helpers.ts';
import { startCashfree, type Cashfree } from '../support/cashfree-upstream.ts';
import { launch, parseMoney, withPage } from './browser.ts';

const KEYS = {
  client_id: 'cf-browser-client',
  client_secret: 'cf-browser-secret-0123456789abcdef',
};
let browser: Browser;
let cashfree: Cashfree;
let gateway: Gateway;

before(async () => {
  browser = await launch();
  cashfree = await startCashfree(KEYS);
  const config = join(tempDir('aihub-topup-cashfree-browser-'), 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      topups: {
        provider: 'cashfree',
        cashfree: {
          base_url: cashfree.url,
          checkout_script_url: `${cashfree.url}/js/v3/cashfree.js`,
        },
      },
    }),
  );
  gateway = await startGateway({
    args: ['--config', config],
    env: {
      AIHUB_MODE: 'live',
      AIHUB_CASHFREE_CLIENT_ID: KEYS.client_id,
      AIHUB_CASHFREE_CLIENT_SECRET: KEYS.client_secret,
    },
  });
  cashfree.checkout.webhook_url = `${gateway.url}/webhooks/cashfree`;
});
after(async () => {
  await browser?.close();
  if (gateway) assert.equal(await gateway.stop(), 0);
  await cashfree?.close();
});

test('/wallet → Top up → Cashfree checkout → back on /wallet with the new balance', async () => {
  await withPage(browser, 'wallet-topup-cashfree', async (page) => {
    const csp: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) csp.push(message.text());
    });
    const password = 'correct horse battery staple';
    await page.goto(`${gateway.url}/signup`);
    await page.getByLabel('Name').fill('Asha Rao');
    await page.getByLabel('Email').fill('asha@example.com');
    await page.getByLabel('Password', { exact: false }).first().fill(password);
    await page.getByLabel('Repeat the password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${gateway.url}/api-keys`);

    await page.goto(`${gateway.url}/wallet`);
    await page.getByLabel('Amount (INR)').fill('300');
    await page.getByRole('button', { name: 'Top up', exact: true }).click();
    await page.waitForURL(/\/wallet\/topups\/[^/]+\/pay$/);
    // No fee configured: the total is the amount.
    assert.equal(parseMoney((await page.locator('#pay-total').textContent()) ?? ''), 300);

    await page.getByRole('button', { name: /^Pay ₹300\.00$/ }).click();
    await page.waitForURL(`${cashfree.url}/checkout?**`);
    await page.getByRole('button', { name: 'Pay' }).click();

    await page.waitForURL(/\/wallet\?topup=/);
    await page.locator('#topup-status[data-status="credited"]').waitFor();
    assert.match(
      (await page.locator('#topup-status').textContent()) ?? '',
      /₹300\.00 added to your wallet/,
    );
    assert.equal(parseMoney((await page.locator('#balance').textContent()) ?? ''), 300);
    assert.deepEqual(csp, [], 'no Content Security Policy violations');
  });
});
