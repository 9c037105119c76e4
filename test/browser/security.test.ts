// The dashboard's defences in a real browser: CSRF tokens on every form (also against a
// same-site page on another port, which the SameSite cookie does not stop), the login
// rate limit, HttpOnly SameSite session cookies, sessions that survive a restart, logout.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { Browser, Page } from 'playwright-core';
import { request, startGateway, type Gateway } from '../gateway/helpers.ts';
import { launch, withPage } from './browser.ts';

let browser: Browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const PASSWORD = 'a long enough passphrase';

async function signUp(page: Page, gateway: Gateway, email: string): Promise<void> {
  await page.goto(`${gateway.url}/signup`);
  await page.getByLabel('Name').fill('Test User');
  await page.getByLabel('Email').fill(email);
  await page.locator('#password').fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(/\/api-keys$/);
}

/** A page on another port of the same host: same site, other origin. */
async function attackerSite(html: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(html);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

test('a form posted without its CSRF token, with a wrong one, or from another page is refused', async () => {
  const gateway = await startGateway();
  try {
    await withPage(browser, 'csrf', async (page, context) => {
      await signUp(page, gateway, 'csrf@example.com');
      const cookies = await context.cookies(gateway.url);
      const session = cookies.find((cookie) => cookie.name === 'aihub_session');
      assert.ok(session, 'a session cookie is set');
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Lax');
      assert.equal(
        await page.evaluate(() => document.cookie),
        '',
        'no cookie is readable by script',
      );

      // The logged-in browser posts the create-key form without a token, then with a wrong one.
      const without = await page.request.post(`${gateway.url}/api-keys`, {
        form: { name: 'no-token' },
        maxRedirects: 0,
      });
      assert.equal(without.status(), 403);
      assert.match(await without.text(), /security token/);
      const wrong = await page.request.post(`${gateway.url}/api-keys`, {
        form: { name: 'wrong-token', _csrf: 'x'.repeat(43) },
        maxRedirects: 0,
      });
      assert.equal(wrong.status(), 403);
      const top_up = await page.request.post(`${gateway.url}/wallet/top-up`, {
        form: { amount: '100', nonce: 'n'.repeat(22) },
        maxRedirects: 0,
      });
      assert.equal(top_up.status(), 403);

      // A page of another origin on the same site auto-submits a form into the gateway: the
      // browser sends the Lax cookie (same site), the missing token stops it.
      const attacker = await attackerSite(
        `<!doctype html><form id="f" method="post" action="${gateway.url}/api-keys"><input name="name" value="planted"></form><script>document.getElementById('f').submit()</script>`,
      );
      try {
        const refused = page.waitForResponse(
          (response) =>
            response.url() === `${gateway.url}/api-keys` && response.request().method() === 'POST',
        );
        await page.goto(attacker.url);
        assert.equal((await refused).status(), 403);
      } finally {
        await attacker.close();
      }

      // A token taken from the real page but posted from the attacker's origin is refused too.
      await page.goto(`${gateway.url}/api-keys`);
      const token = await page.locator('form[action="/api-keys"] input[name=_csrf]').inputValue();
      const cross = await page.request.post(`${gateway.url}/api-keys`, {
        form: { name: 'cross-origin', _csrf: token },
        headers: { origin: 'http://evil.example' },
        maxRedirects: 0,
      });
      assert.equal(cross.status(), 403);

      await page.goto(`${gateway.url}/api-keys`);
      assert.equal(await page.locator('tbody tr').count(), 0, 'no refused form created a key');
      assert.equal(await page.getByText('No keys yet.').count(), 1);

      // The same token through the real form works: the refusals above were the token's doing.
      await page.getByLabel('Key name').fill('real');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('#new-key').waitFor();
      assert.equal(await page.locator('tbody tr').count(), 1);
    });

    // Anonymous forms carry a token too: a login POST without one is refused before the password is looked at.
    const login = await request(`${gateway.url}/login`, {
      raw: 'email=csrf%40example.com&password=a+long+enough+passphrase',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(login.status, 403);
    assert.match(String(login.body), /security token/);
    assert.ok(
      !(login.headers.get('set-cookie') ?? '').includes('aihub_session'),
      'no session from a refused login',
    );
  } finally {
    await gateway.stop();
  }
});

test('after five wrong passwords the login is locked for that email, even with the right password', async () => {
  const gateway = await startGateway();
  try {
    await withPage(browser, 'rate-limit', async (page, context) => {
      await signUp(page, gateway, 'locked@example.com');
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.waitForURL(/\/login$/);
      for (let attempt = 1; attempt <= 5; attempt++) {
        await page.getByLabel('Email').fill('locked@example.com');
        await page.getByLabel('Password').fill(`wrong password ${attempt}`);
        const reply = page.waitForResponse(
          (response) => response.url().endsWith('/login') && response.request().method() === 'POST',
        );
        await page.getByRole('button', { name: 'Log in' }).click();
        assert.equal((await reply).status(), 401, `attempt ${attempt}`);
      }
      await page.getByLabel('Email').fill('locked@example.com');
      await page.getByLabel('Password').fill(PASSWORD);
      const reply = page.waitForResponse(
        (response) => response.url().endsWith('/login') && response.request().method() === 'POST',
      );
      await page.getByRole('button', { name: 'Log in' }).click();
      const locked = await reply;
      assert.equal(locked.status(), 429);
      assert.ok(Number(locked.headers()['retry-after']) > 0);
      await page.getByRole('alert').filter({ hasText: 'Too many failed attempts' }).waitFor();
      assert.equal(
        (await context.cookies(gateway.url)).some(
          (cookie) => cookie.name === 'aihub_session' && cookie.value,
        ),
        false,
        'no session',
      );
      await page.goto(`${gateway.url}/api-keys`);
      assert.match(page.url(), /\/login/);
    });
  } finally {
    await gateway.stop();
  }
});

test('a session survives a gateway restart; logout ends it on the server, not only in the browser', async () => {
  const gateway = await startGateway();
  let again: Gateway | null = null;
  try {
    await withPage(browser, 'session-restart', async (page, context) => {
      await signUp(page, gateway, 'restart@example.com');
      const cookie = (await context.cookies(gateway.url)).find(
        (entry) => entry.name === 'aihub_session',
      )!;
      assert.equal(await gateway.stop(), 0);
      again = await startGateway({ data_dir: gateway.data_dir });
      // Cookies belong to the host, not the port: the new process on a new port gets the same cookie.
      await page.goto(`${again.url}/api-keys`);
      assert.match(page.url(), /\/api-keys$/, 'still logged in after the restart');
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.waitForURL(/\/login$/);
      // The old cookie value, replayed, no longer opens a session.
      const replay = await fetch(`${again.url}/api-keys`, {
        headers: { cookie: `aihub_session=${cookie.value}` },
        redirect: 'manual',
      });
      assert.equal(replay.status, 303);
      assert.match(replay.headers.get('location') ?? '', /^\/login/);
    });
  } finally {
    await (again as Gateway | null)?.stop();
    await gateway.stop();
  }
});

test('keyboard only: skip link first, then the fields in reading order; Enter logs in', async () => {
  const gateway = await startGateway();
  try {
    await withPage(browser, 'keyboard', async (page) => {
      await signUp(page, gateway, 'keys@example.com');
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.waitForURL(/\/login$/);
      const focused = () =>
        page.evaluate(() => {
          const element = document.activeElement as HTMLElement | null;
          return element
            ? `${element.tagName.toLowerCase()}#${element.id}:${(element.textContent ?? '').trim().slice(0, 20)}`
            : '';
        });
      await page.keyboard.press('Tab');
      assert.equal(await focused(), 'a#:Skip to content');
      await page.keyboard.press('Enter');
      assert.match(await focused(), /^main#main:/, 'the skip link moves focus to the content');
      await page.keyboard.press('Tab');
      assert.equal(await focused(), 'input#email:');
      await page.keyboard.type('keys@example.com');
      await page.keyboard.press('Tab');
      assert.equal(await focused(), 'input#password:');
      await page.keyboard.type(PASSWORD);
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/api-keys$/);
      // On the keys page the name field and its button follow each other, the key's optional
      // limits folded between them (issue #39).
      await page.getByLabel('Key name').focus();
      await page.keyboard.type('kbd');
      await page.keyboard.press('Tab');
      assert.equal(await focused(), 'summary#:Limits (optional)');
      await page.keyboard.press('Tab');
      assert.equal(await focused(), 'button#:Create key');
      await page.keyboard.press('Enter');
      await page.locator('#new-key').waitFor();
    });
  } finally {
    await gateway.stop();
  }
});
