// The admin console over the payments room: a customer submits eKYC; recharge is refused
// until an admin approves it and activates recharge in the console; then it succeeds and
// the wallet page shows the debit and the commission. Service activation before approval
// is refused (409 in the JSON API, an error on the page), and the IP whitelist bites.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { verhoeffCheckDigit } from '../../gateway/payments/identity/aadhaar.ts';
import { admin, request, runVerify, startGateway, type Gateway } from '../gateway/helpers.ts';
import { launch, parseMoney, reviewShot, withPage } from './browser.ts';

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const PASSWORD = 'recharge passphrase 1';

async function adminLogin(page: Page, gateway: Gateway): Promise<void> {
  await page.goto(`${gateway.url}/admin/login`);
  await page.getByLabel('Admin token').fill(gateway.admin_token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/admin\/console$/);
}

test('eKYC approved and recharge activated in the console → the account recharges; before that it is refused', async () => {
  const gateway = await startGateway();
  try {
    let key = '';
    let account_id = '';
    await withPage(browser, 'payments-customer', async (page) => {
      await page.goto(`${gateway.url}/signup`);
      await page.getByLabel('Name').fill('Meera Shah');
      await page.getByLabel('Email').fill('meera@example.com');
      await page.locator('#password').fill(PASSWORD);
      await page.getByLabel('Repeat the password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL(/\/api-keys$/);
      await page.getByLabel('Key name').fill('shop');
      await page.getByRole('button', { name: 'Create key' }).click();
      key = ((await page.locator('#new-key').textContent()) ?? '').trim();
      await page.goto(`${gateway.url}/wallet`);
      await page.getByRole('button', { name: '₹1,000.00' }).click();
      await page.getByRole('status').filter({ hasText: 'added' }).waitFor();
    });
    const headers = { 'x-api-key': key };
    const operators = await request(`${gateway.url}/api/operators?type=prepaid`, { headers });
    assert.equal(operators.status, 200, JSON.stringify(operators.body));
    const operator = operators.body.data[0];
    const recharge = { operator_id: operator.operator_id, number: '9876543210', amount: 199 };

    const refused = await request(`${gateway.url}/api/recharge`, { headers, body: recharge });
    assert.equal(refused.status, 403, 'recharge is off until an admin activates it');

    const aadhaar = '98765432101'; // + the Verhoeff check digit
    const kyc = await request(`${gateway.url}/api/kyc`, {
      headers,
      body: {
        name: 'Meera Shah',
        aadhaar_number: `${aadhaar}${verhoeffCheckDigit(aadhaar)}`,
        pan_number: 'ABCPS1234K',
      },
    });
    assert.equal(kyc.status, 200, JSON.stringify(kyc.body));
    account_id = kyc.body.data.account_id;

    await withPage(browser, 'payments-admin', async (page) => {
      await adminLogin(page, gateway);
      // Activation before approval is refused, through the payments room's own rule.
      await page.goto(`${gateway.url}/admin/console/accounts/${account_id}`);
      await page.getByLabel('Mobile recharge').check();
      const early = page.waitForResponse(
        (response) =>
          response.url().endsWith('/services') && response.request().method() === 'POST',
      );
      await page.getByRole('button', { name: 'Save services' }).click();
      assert.equal((await early).status(), 409);
      await page.getByRole('alert').filter({ hasText: 'only after eKYC approval' }).waitFor();

      await page.getByRole('link', { name: 'eKYC review' }).click();
      await page.waitForURL(/\/admin\/console\/kyc$/);
      const card = page.locator('section', { hasText: 'meera@example.com' });
      assert.match(
        (await card.textContent()) ?? '',
        /XXXX-XXXX-\d{4}/,
        'only the masked Aadhaar is shown',
      );
      assert.match((await card.textContent()) ?? '', /ABCPS1234K/);
      await reviewShot(page, 'admin-kyc');
      await page.getByRole('button', { name: 'Approve meera@example.com' }).click();
      await page.waitForURL(new RegExp(`/admin/console/accounts/${account_id}$`));
      await page.getByRole('status').filter({ hasText: 'approved' }).waitFor();

      await page.getByLabel('Mobile recharge').check();
      await page.getByRole('button', { name: 'Save services' }).click();
      await page.getByRole('status').filter({ hasText: 'services saved: recharge' }).waitFor();
      await reviewShot(page, 'admin-account-payments');
    });

    const done = await request(`${gateway.url}/api/recharge`, { headers, body: recharge });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.status, true);
    assert.equal(done.body.data.status, 'success');
    const balance = done.body.data.balance as number;

    // The IP whitelist set in the console is enforced by the payments API.
    await withPage(browser, 'payments-whitelist', async (page) => {
      await adminLogin(page, gateway);
      await page.goto(`${gateway.url}/admin/console/accounts/${account_id}`);
      await page.getByLabel('Addresses allowed', { exact: false }).fill('not-an-address');
      await page.getByRole('button', { name: 'Save whitelist' }).click();
      await page.locator('#ips-error').waitFor();
      await page.getByLabel('Addresses allowed', { exact: false }).fill('203.0.113.7\n10.0.0.0/8');
      await page.getByRole('button', { name: 'Save whitelist' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: 'IP whitelist saved (2 entries)' })
        .waitFor();
    });
    const blocked = await request(`${gateway.url}/api/recharge`, {
      headers,
      body: { ...recharge, number: '9876500000' },
    });
    assert.equal(blocked.status, 403, 'loopback is not on the whitelist');
    assert.deepEqual(
      (await admin(gateway).get(`/admin/accounts/${account_id}`)).body.ip_whitelist,
      ['203.0.113.7', '10.0.0.0/8'],
    );

    await withPage(browser, 'payments-wallet', async (page) => {
      await page.goto(`${gateway.url}/login`);
      await page.getByLabel('Email').fill('meera@example.com');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL(/\/api-keys$/);
      await page.goto(`${gateway.url}/wallet`);
      assert.equal(
        parseMoney((await page.locator('#balance').textContent()) ?? ''),
        balance,
        'the wallet page shows the balance the recharge answer reported',
      );
      const amounts = (
        await page.locator('#wallet-history tbody tr td:nth-child(4)').allTextContents()
      ).map(parseMoney);
      assert.ok(
        amounts.includes(-199),
        `the recharge debit is in the history: ${amounts.join(', ')}`,
      );
      await reviewShot(page, 'wallet-after-recharge');

      // Reports: the recharge, its commission, the API calls; filters and CSV.
      await page.getByRole('link', { name: 'Reports' }).click();
      await page.waitForURL(/\/reports$/);
      const row = page.locator('#report-table tbody tr', { hasText: done.body.txn_id });
      assert.match((await row.textContent()) ?? '', /success/);
      await reviewShot(page, 'reports');
      await page.getByLabel('Status').selectOption('failed');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.getByText('Nothing matches these filters.').waitFor();
      const csv = await page.request.get(`${gateway.url}/reports?report=transactions&format=csv`);
      assert.equal(csv.status(), 200);
      assert.match(csv.headers()['content-type'] ?? '', /text\/csv/);
      const csv_text = await csv.text();
      const lines = csv_text.trim().split('\r\n');
      assert.equal(lines.length, 2, 'a header and one transaction');
      const header = lines[0]!.split(',');
      const csv_cells = lines[1]!.split(',');
      assert.equal(csv_cells[header.indexOf('txn_id')], done.body.txn_id);
      assert.equal(Number(csv_cells[header.indexOf('amount')]), 199);
      assert.equal(
        (await admin(gateway).put(`/admin/accounts/${account_id}/ip-whitelist`, { ips: [] }))
          .status,
        200,
      ); // the API is whitelisted away from loopback above
      const api_csv = await fetch(`${gateway.url}/api/reports/transactions?format=csv`, {
        headers,
      });
      assert.equal(csv_text, await api_csv.text(), 'the page offers exactly the API CSV');
      await page.getByRole('link', { name: 'Commissions' }).click();
      const commission = page.locator('#report-table tbody tr', { hasText: done.body.txn_id });
      assert.equal(
        parseMoney((await commission.locator('td').nth(4).textContent()) ?? ''),
        done.body.data.commission,
      );
      await page.getByRole('link', { name: 'API logs' }).click();
      assert.ok(
        (await page.locator('#report-table tbody tr', { hasText: 'POST /api/recharge' }).count()) >=
          2,
        'the refused and the accepted recharge',
      );
      // A key's last use includes its payments API calls.
      await page.goto(`${gateway.url}/api-keys`);
      const cells = (
        await page.locator('tr', { hasText: 'shop' }).locator('td').allTextContents()
      ).map((cell) => cell.trim());
      assert.match(cells[2]!, /UTC$/);
      assert.ok(Number(cells[3]) >= 3, `requests: ${cells[3]}`);
    });
    assert.equal((await runVerify(gateway.data_dir)).code, 0);
  } finally {
    await gateway.stop();
  }
});
