// The dashboard in a real browser: sign up → key → /v1/balance → top up → the page and the
// API agree → spend shows up → revoke → 401; CSRF; the login rate limit; sessions survive
// a restart; the admin console.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { admin, request, runVerify, startGateway, type Gateway } from '../gateway/helpers.ts';
import { launch, parseMoney, reviewShot, withPage } from './browser.ts';

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const PASSWORD = 'correct horse battery staple';

async function signUp(
  page: Page,
  gateway: Gateway,
  email: string,
  name = 'Asha Rao',
): Promise<void> {
  await page.goto(`${gateway.url}/signup`);
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: false }).first().fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(`${gateway.url}/api-keys`);
}

async function createKey(page: Page, name: string): Promise<string> {
  await page.getByLabel('Key name').fill(name);
  await page.getByRole('button', { name: 'Create key' }).click();
  await page.waitForURL(/\/api-keys$/);
  const key = (await page.locator('#new-key').textContent())?.trim() ?? '';
  assert.match(key, /^sk-aihub-[A-Za-z0-9_-]{43}$/);
  return key;
}

async function pageBalance(page: Page): Promise<number> {
  return parseMoney((await page.locator('#balance').textContent()) ?? '');
}

test('sign up → create a key → /v1/balance → top up → page and API agree → spend → revoke → 401', async () => {
  const gateway = await startGateway();
  try {
    await withPage(browser, 'main-flow', async (page) => {
      const dialogs: string[] = [];
      page.on('dialog', (dialog) => {
        dialogs.push(dialog.message());
        void dialog.accept();
      });
      await page.goto(`${gateway.url}/wallet`);
      assert.match(
        page.url(),
        /\/login\?next=%2Fwallet$/,
        'a page of the dashboard asks for a login first',
      );
      await reviewShot(page, 'login');
      await page.goto(`${gateway.url}/signup`);
      await reviewShot(page, 'signup');
      await signUp(page, gateway, 'asha@example.com');
      await assert.doesNotReject(
        page.getByRole('status').filter({ hasText: 'Your account is ready' }).waitFor(),
      );
      await reviewShot(page, 'api-keys-empty');

      const key = await createKey(page, 'laptop');
      await reviewShot(page, 'api-keys-new-key');
      await page.reload();
      assert.equal(await page.locator('#new-key').count(), 0, 'the key is shown once only');
      const row = page.locator('tr', { hasText: 'laptop' });
      assert.match(
        (await row.textContent()) ?? '',
        new RegExp(key.slice(0, 13).replace(/[-]/g, '\\-')),
      );
      assert.doesNotMatch(
        await page.content(),
        new RegExp(key.slice(14)),
        'the page never shows the secret part again',
      );
      assert.match((await row.textContent()) ?? '', /never/);

      const first = await request(`${gateway.url}/v1/balance`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.balance, 0);

      await page.getByRole('link', { name: 'Wallet' }).click();
      await page.waitForURL(/\/wallet$/);
      assert.equal(await pageBalance(page), 0);
      await page.getByRole('button', { name: '₹500.00' }).click();
      await page.waitForURL(/\/wallet$/);
      await page.getByRole('status').filter({ hasText: '₹500.00 added' }).waitFor();
      assert.equal(await pageBalance(page), 500);
      await page.getByLabel('Other amount (INR)').fill('250.55');
      await page.getByRole('button', { name: 'Pay (sandbox)' }).click();
      await page.waitForURL(/\/wallet$/);
      assert.equal(await pageBalance(page), 750.55);
      const api = await request(`${gateway.url}/v1/balance`, { headers: { 'x-api-key': key } });
      assert.equal(api.body.balance, 750.55, 'the API shows the balance the page shows');
      const payments = await request(`${gateway.url}/api/wallet/balance`, {
        headers: { 'x-api-key': key },
      });
      assert.equal(payments.body.data.balance, 750.55);

      const history = page.locator('#wallet-history tbody tr');
      assert.equal(await history.count(), 2);
      const newest = (await history.nth(0).locator('td').allTextContents()).map((cell) =>
        cell.trim(),
      );
      assert.deepEqual(
        [parseMoney(newest[2]!), parseMoney(newest[3]!), parseMoney(newest[4]!)],
        [500, 250.55, 750.55],
        'opening, amount, closing',
      );

      // A bad amount is refused at the edge, the balance stays.
      await page.getByLabel('Other amount (INR)').fill('12.345');
      await page.getByRole('button', { name: 'Pay (sandbox)' }).click();
      await page.getByText('at most two decimals', { exact: false }).first().waitFor();
      assert.equal(
        await page.getByLabel('Other amount (INR)').getAttribute('aria-invalid'),
        'true',
      );
      assert.equal(
        (await request(`${gateway.url}/v1/balance`, { headers: { 'x-api-key': key } })).body
          .balance,
        750.55,
      );

      // Spend: a chat request shows in the chart, in the history and on the key's row.
      const chat = await request(`${gateway.url}/v1/chat/completions`, {
        headers: { authorization: `Bearer ${key}` },
        body: {
          model: 'service-ai-pro-4',
          messages: [{ role: 'user', content: 'Say hello in five words.' }],
          max_tokens: 40,
        },
      });
      assert.equal(chat.status, 200, JSON.stringify(chat.body));
      const cost = chat.body.x_aihub.cost as number;
      assert.ok(cost > 0);
      await page.goto(`${gateway.url}/wallet`);
      assert.equal(await pageBalance(page), chat.body.x_aihub.balance);
      assert.equal(
        await page.locator('figure.chart svg rect.tier-pro').count(),
        1,
        'one bar segment for the pro tier today',
      );
      assert.match((await page.locator('figure.chart figcaption').textContent()) ?? '', /pro/);
      await reviewShot(page, 'wallet');

      await page.goto(`${gateway.url}/api-keys`);
      const used = (
        await page.locator('tr', { hasText: 'laptop' }).locator('td').allTextContents()
      ).map((cell) => cell.trim());
      assert.match(used[2]!, /UTC$/, 'last used is set');
      assert.equal(
        used[3],
        '2',
        'one chat request and one payments API call (/api/wallet/balance)',
      );
      assert.equal(parseMoney(used[4]!), cost, 'the key spent what the request cost');

      // Revoke from the page: the key gets 401 at once.
      await page.getByRole('button', { name: 'Revoke key laptop' }).click();
      await page.waitForURL(/\/api-keys$/);
      assert.equal(dialogs.length, 1, 'revoking asks for confirmation');
      await page.locator('tr', { hasText: 'laptop' }).getByText('revoked').waitFor();
      await reviewShot(page, 'api-keys-revoked');
      const revoked = await request(`${gateway.url}/v1/balance`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(revoked.status, 401);

      // Log out, then log in again.
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.waitForURL(/\/login$/);
      await page.goto(`${gateway.url}/api-keys`);
      assert.match(page.url(), /\/login/);
      await page.getByLabel('Email').fill('asha@example.com');
      await page.getByLabel('Password').fill(`${PASSWORD}!`);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('alert').filter({ hasText: 'not correct' }).waitFor();
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL(/\/api-keys$/);
    });
    assert.equal((await runVerify(gateway.data_dir)).code, 0);
  } finally {
    await gateway.stop();
  }
});

test('admin console: token login, accounts, credit (idempotent by reference), disable, key revoke, audit log; the JSON admin API is unchanged', async () => {
  const gateway = await startGateway();
  try {
    let key = '';
    await withPage(browser, 'admin-user', async (page) => {
      await signUp(page, gateway, 'ravi@example.com', 'Ravi Kumar');
      key = await createKey(page, 'server');
    });
    await withPage(browser, 'admin-console', async (page, context) => {
      await page.goto(`${gateway.url}/admin`);
      await page.waitForURL(/\/admin\/login$/);
      await page.getByLabel('Admin token').fill('not-the-token');
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('alert').filter({ hasText: 'not the admin token' }).waitFor();
      await reviewShot(page, 'admin-login');
      await page.getByLabel('Admin token').fill(gateway.admin_token);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL(/\/admin\/console$/);
      const admin_cookie = (await context.cookies(`${gateway.url}/admin/console`)).find(
        (cookie) => cookie.name === 'aihub_admin',
      );
      assert.equal(admin_cookie?.path, '/admin');
      assert.equal(admin_cookie?.httpOnly, true);
      await reviewShot(page, 'admin-accounts');

      await page.getByRole('link', { name: 'ravi@example.com' }).click();
      await page.waitForURL(/\/admin\/console\/accounts\/acc_/);
      await page.getByLabel('Amount (INR)').fill('1000');
      await page.getByLabel('Reference', { exact: false }).fill('NEFT-42');
      await page.getByRole('button', { name: 'Credit', exact: true }).click();
      await page.getByRole('status').filter({ hasText: 'Credited ₹1,000.00' }).waitFor();
      assert.equal(parseMoney((await page.locator('#account-balance').textContent()) ?? ''), 1000);
      await page.getByLabel('Amount (INR)').fill('1000');
      await page.getByLabel('Reference', { exact: false }).fill('NEFT-42');
      await page.getByRole('button', { name: 'Credit', exact: true }).click();
      await page.getByRole('status').filter({ hasText: 'credited already' }).waitFor();
      await page.getByLabel('Amount (INR)').fill('5');
      await page.getByLabel('Reference', { exact: false }).fill('NEFT-42');
      await page.getByRole('button', { name: 'Credit', exact: true }).click();
      await page.getByText('used already for another credit').waitFor();
      assert.equal(
        (
          await request(`${gateway.url}/v1/balance`, {
            headers: { authorization: `Bearer ${key}` },
          })
        ).body.balance,
        1000,
      );
      await reviewShot(page, 'admin-account');

      page.on('dialog', (dialog) => void dialog.accept());
      await page.getByRole('button', { name: 'Disable account' }).click();
      await page.getByRole('status').filter({ hasText: 'Account disabled' }).waitFor();
      assert.equal(
        (
          await request(`${gateway.url}/v1/balance`, {
            headers: { authorization: `Bearer ${key}` },
          })
        ).status,
        403,
      );
      await page.getByRole('button', { name: 'Enable account' }).click();
      await page.getByRole('status').filter({ hasText: 'Account enabled' }).waitFor();
      assert.equal(
        (
          await request(`${gateway.url}/v1/balance`, {
            headers: { authorization: `Bearer ${key}` },
          })
        ).status,
        200,
      );

      await page.getByRole('button', { name: 'Revoke key server' }).click();
      await page.getByRole('status').filter({ hasText: 'revoked' }).waitFor();
      assert.equal(
        (
          await request(`${gateway.url}/v1/balance`, {
            headers: { authorization: `Bearer ${key}` },
          })
        ).status,
        401,
      );

      await page.getByRole('link', { name: 'Audit log' }).click();
      await page.waitForURL(/\/admin\/console\/audit$/);
      const actions = (await page.locator('tbody tr td:nth-child(3)').allTextContents()).map(
        (text) => text.trim(),
      );
      for (const action of [
        'signup',
        'key.create',
        'admin.login',
        'wallet.credit',
        'account.disable',
        'account.enable',
        'key.revoke',
      ]) {
        assert.ok(actions.includes(action), `${action} in ${actions.join(', ')}`);
      }
      assert.equal(
        actions.filter((action) => action === 'wallet.credit').length,
        1,
        'the duplicate credit is not a second credit',
      );
      await reviewShot(page, 'admin-audit');

      // The console's cookie is not an admin credential for the JSON API.
      const json_with_cookie = await page.request.get(`${gateway.url}/admin/accounts`);
      assert.equal(json_with_cookie.status(), 401);
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.waitForURL(/\/admin\/login$/);
    });
    const listed = await admin(gateway).get('/admin/accounts');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data[0].email, 'ravi@example.com');
    assert.equal(listed.body.data[0].balance, 1000);
  } finally {
    await gateway.stop();
  }
});
