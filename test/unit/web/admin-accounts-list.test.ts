// The admin account lists cost their page: `GET /admin/accounts` (oldest first) and the
// console's list (newest first) read their page's accounts from the store's row order, never
// every account (no sort, no listing of the table), and a console search walks a bounded
// number of accounts per page. The gateway is built in-process (as main.ts builds it) so that
// the accounts table can be watched: a Proxy counts the accounts each request touches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAccount } from '../../../gateway/accounts/accounts.ts';
import { sha256Hex } from '../../../gateway/accounts/keys.ts';
import { FileStore as Store } from '../../../gateway/store/store.ts';
import { SEARCH_SCAN_ROWS } from '../../../gateway/web/pages/admin.ts';
import { inProcessGateway } from '../../support/route-table.ts';
import { tempDir } from '../../support/temp.ts';

const ACCOUNTS = SEARCH_SCAN_ROWS + 230;
const TOKEN = 'admin-list-test-token-0123456789abcdef0123';

/** Counts the rows (by id) of a table that the code reads, and whether anything listed the table. */
function watch(store: Store, name: 'accounts' | 'kyc_submissions' = 'accounts') {
  const tables = store.state.tables as unknown as Record<string, Record<string, unknown>>;
  const target = tables[name]!;
  const seen = { ids: new Set<string>(), listed: 0 };
  const note = (key: string | symbol) => {
    if (typeof key === 'string' && Object.hasOwn(target, key)) seen.ids.add(key);
  };
  tables[name] = new Proxy(target, {
    get: (t, key, receiver) => (note(key), Reflect.get(t, key, receiver)),
    getOwnPropertyDescriptor: (t, key) => (note(key), Reflect.getOwnPropertyDescriptor(t, key)),
    has: (t, key) => (note(key), Reflect.has(t, key)),
    ownKeys: (t) => (seen.listed++, Reflect.ownKeys(t)),
  });
  return {
    /** Runs `fn` and says how many rows it read and how often it listed the table. */
    async count<T>(fn: () => Promise<T>): Promise<{ value: T; read: number; listed: number }> {
      seen.ids.clear();
      seen.listed = 0;
      const value = await fn();
      return { value, read: seen.ids.size, listed: seen.listed };
    },
  };
}

function cookiesOf(reply: Response): string[] {
  return reply.headers.getSetCookie().map((c) => c.split(';')[0]!);
}

/** Logs in to the admin console as a browser would; returns the Cookie header. */
async function consoleLogin(base: string): Promise<string> {
  const form = await fetch(`${base}/admin/login`);
  const anon = cookiesOf(form);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  assert.ok(csrf, 'a CSRF token on /admin/login');
  const login = await fetch(`${base}/admin/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: anon.join('; '),
      origin: base,
    },
    body: new URLSearchParams({ token: TOKEN, _csrf: csrf }),
  });
  assert.equal(login.status, 303, await login.text());
  return [...anon, ...cookiesOf(login)].join('; ');
}

const linkedIds = (page: string) =>
  [...page.matchAll(/<a href="\/admin\/console\/accounts\/(acc_[0-9a-f]{24})">/g)].map(
    (m) => m[1]!,
  );

test(
  'admin account lists: every account exactly once across the pages, in creation order, each page reading its own accounts only; a console search reads a bounded walk',
  { timeout: 120_000 },
  async (t) => {
    const data_dir = tempDir('aihub-admin-accounts-');
    const store = await Store.open(data_dir);
    const created: string[] = [];
    for (let done = 0; done < ACCOUNTS;) {
      const batch = Math.min(1_000, ACCOUNTS - done);
      const ids = await store.transact((tx) =>
        Array.from({ length: batch }, (_, i) => {
          const n = done + i;
          return createAccount(tx, {
            email: `user${n}@example.com`,
            name: n === 7 ? 'Zubin Oldest-Match' : `User ${n}`,
          }).id;
        }),
      );
      created.push(...ids);
      done += batch;
    }
    const { gateway, close } = inProcessGateway(store, data_dir, sha256Hex(TOKEN));
    const server: Server = createServer(gateway.handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(async () => {
      await new Promise((resolve) => server.close(resolve));
      await close();
      await store.close();
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const accounts = watch(store);

    // The JSON admin API, oldest first, 500 a page.
    const listed: string[] = [];
    for (let page = 1; ; page++) {
      const {
        value: body,
        read,
        listed: lists,
      } = await accounts.count(async () => {
        const reply = await fetch(`${base}/admin/accounts?limit=500&page=${page}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        assert.equal(reply.status, 200);
        return (await reply.json()) as { total: number; data: Array<{ id: string }> };
      });
      assert.equal(body.total, ACCOUNTS);
      assert.equal(lists, 0, `page ${page} listed the whole accounts table`);
      assert.ok(
        read <= body.data.length,
        `page ${page} read ${read} accounts for ${body.data.length}`,
      );
      if (body.data.length === 0) break;
      listed.push(...body.data.map((a) => a.id));
    }
    assert.equal(listed.length, ACCOUNTS);
    assert.equal(new Set(listed).size, ACCOUNTS, 'no account twice');
    assert.deepEqual(listed, created, 'oldest first, in the order they were created');

    // The console: newest first, 50 a page.
    const cookie = await consoleLogin(base);
    const consolePage = (query: string) =>
      accounts.count(async () => {
        const reply = await fetch(`${base}/admin/console?${query}`, { headers: { cookie } });
        assert.equal(reply.status, 200);
        return reply.text();
      });
    const newest = [...created].reverse();
    for (const page of [1, 2, Math.ceil(ACCOUNTS / 50)]) {
      const { value: html, read, listed: lists } = await consolePage(`page=${page}`);
      assert.equal(lists, 0, `console page ${page} listed the whole accounts table`);
      assert.ok(read <= 50, `console page ${page} read ${read} accounts`);
      assert.deepEqual(linkedIds(html), newest.slice((page - 1) * 50, page * 50));
      assert.match(html, new RegExp(`Page ${page} of ${Math.ceil(ACCOUNTS / 50)}`));
    }

    // A search by exact email finds an old account at once, through the emails table.
    const exact = await consolePage(`q=${encodeURIComponent('user3@example.com')}`);
    assert.equal(linkedIds(exact.value)[0], created[3]);
    assert.equal(exact.listed, 0);
    // A substring search walks at most SEARCH_SCAN_ROWS accounts a page, newest first, and
    // offers to search older ones: the oldest match is on the second walk.
    const first = await consolePage('q=oldest-match');
    assert.equal(first.listed, 0);
    assert.ok(first.read <= SEARCH_SCAN_ROWS, `a search page read ${first.read} accounts`);
    assert.deepEqual(linkedIds(first.value), []);
    const older = /href="(\/admin\/console\?q=oldest-match&amp;from=(\d+))"/.exec(first.value);
    assert.ok(older, 'a link to search older accounts');
    assert.equal(Number(older[2]), SEARCH_SCAN_ROWS);
    const second = await consolePage(`q=oldest-match&from=${older[2]}`);
    assert.ok(second.read <= ACCOUNTS - SEARCH_SCAN_ROWS, `${second.read}`);
    assert.deepEqual(linkedIds(second.value), [created[7]]);
    assert.doesNotMatch(second.value, /from=\d+/, 'nothing older to search');

    // The console's eKYC queue: a page of one status through the status index, in the order
    // the submissions took it, reading its own submissions only.
    const KYC = 130;
    await store.transact((tx) => {
      for (let i = 0; i < KYC; i++)
        tx.set('kyc_submissions', created[i]!, {
          account_id: created[i]!,
          name: `User ${i}`,
          aadhaar_masked: 'XXXXXXXX1234',
          pan_number: 'ABCDE1234F',
          gstin: null,
          documents: [],
          status: i % 2 === 0 ? 'submitted' : 'approved',
          reason: null,
          submitted_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
          reviewed_at: null,
          submissions: 1,
        });
    });
    const submissions = watch(store, 'kyc_submissions');
    const queue = created.slice(0, KYC).filter((_, i) => i % 2 === 0);
    const kyc = await submissions.count(async () => {
      const reply = await fetch(`${base}/admin/console/kyc?status=submitted&page=2`, {
        headers: { cookie },
      });
      assert.equal(reply.status, 200);
      return reply.text();
    });
    assert.equal(kyc.listed, 0, 'the eKYC page listed every submission');
    assert.ok(kyc.read <= 50, `the eKYC page read ${kyc.read} submissions`);
    assert.deepEqual(
      [...kyc.value.matchAll(/<h2 id="kyc-(acc_[0-9a-f]{24})">/g)].map((m) => m[1]),
      queue.slice(50),
    );
    assert.match(kyc.value, /Page 2 of 2/);
  },
);
