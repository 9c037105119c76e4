// Issue #13 findings 6 and 7 (admin token, data dir), each reproduced as it was found: a one-character admin token
// was accepted, the bearer admin API had no failure limit, and the data dir was readable by
// other users.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { admin, request, runCli, startGateway, tempDir, TEST_CLUSTER_URL } from './helpers.ts';

test('finding 6: AIHUB_ADMIN_TOKEN shorter than 32 characters stops the start with exit 2 and says why', async () => {
  for (const token of ['x', 'a'.repeat(31), `${'a'.repeat(20)} ${'b'.repeat(20)}`]) {
    const result = await runCli(['--port', '0', '--data-dir', tempDir()], {
      AIHUB_ADMIN_TOKEN: token,
    });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /AIHUB_ADMIN_TOKEN must be at least 32 characters/);
  }
});

test('finding 6: wrong bearer admin tokens lock the address out (429 + Retry-After), together with the console login', async () => {
  const gateway = await startGateway();
  try {
    const wrong = { authorization: `Bearer ${'w'.repeat(40)}` };
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++)
      statuses.push((await request(`${gateway.url}/admin/accounts`, { headers: wrong })).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
    // Locked out: the right token from the same address is refused too, in the admin API's error shape.
    const locked = await request(`${gateway.url}/admin/accounts`, {
      headers: { authorization: `Bearer ${gateway.admin_token}` },
    });
    assert.equal(locked.status, 429);
    assert.equal(locked.body.error.code, 'too_many_admin_attempts');
    assert.equal(locked.body.error.type, 'rate_limit_exceeded');
    const retry_after = Number(locked.headers.get('retry-after'));
    assert.ok(retry_after > 0 && retry_after <= 15 * 60, `Retry-After ${retry_after}`);
    // The console login shares the count: it is locked for this address as well.
    const page = await fetch(`${gateway.url}/admin/login`);
    const cookie = page.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const login = await fetch(`${gateway.url}/admin/login`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, token: gateway.admin_token }),
      redirect: 'manual',
    });
    assert.equal(login.status, 429);
  } finally {
    await gateway.stop();
  }
});

test('finding 6: calls without a bearer token and right tokens do not lock anyone out', async () => {
  const gateway = await startGateway();
  try {
    for (let i = 0; i < 8; i++)
      assert.equal((await request(`${gateway.url}/admin/accounts`)).status, 401);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 4; i++)
        assert.equal(
          (
            await request(`${gateway.url}/admin/accounts`, {
              headers: { authorization: 'Bearer nope' },
            })
          ).status,
          401,
        );
      assert.equal(
        (await admin(gateway).get('/admin/accounts')).status,
        200,
        'a right token resets the count, as a console login does',
      );
    }
  } finally {
    await gateway.stop();
  }
});

function modesUnder(dir: string): Array<{ path: string; mode: number; dir: boolean }> {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    const stat = statSync(path);
    const self = { path, mode: stat.mode & 0o777, dir: stat.isDirectory() };
    return stat.isDirectory() ? [self, ...modesUnder(path)] : [self];
  });
}

test('finding 7: a fresh data dir is created 0700 and every file the gateway writes there 0600', async () => {
  const parent = tempDir();
  const data_dir = join(parent, 'nested', 'data');
  const gateway = await startGateway({ data_dir });
  try {
    await admin(gateway).post('/admin/accounts', { email: 'modes@example.com' });
  } finally {
    await gateway.stop();
  }
  assert.equal(statSync(data_dir).mode & 0o777, 0o700);
  const entries = modesUnder(data_dir);
  // With the PostgreSQL store the data dir holds no journal or checkpoint (the state is in
  // the database): the modes of what it does hold are checked below all the same.
  if (!gateway.database_url) {
    assert.ok(
      entries.some((e) => e.path.includes('/journal/') && e.path.endsWith('.jsonl')),
      'a journal segment exists',
    );
    assert.ok(
      entries.some((e) => e.path.endsWith('/state.jsonl')),
      'a checkpoint exists',
    );
    assert.ok(
      entries.some((e) => e.path.includes('/index/')),
      'the history indexes exist',
    );
  }
  for (const entry of entries)
    assert.equal(
      entry.mode,
      entry.dir ? 0o700 : 0o600,
      `${entry.path} is ${entry.mode.toString(8)}`,
    );
});

// Its files are the JSON-file store's journal and checkpoint, which a gateway on PostgreSQL does not write.
const json_file_only = TEST_CLUSTER_URL
  ? "about the JSON-file store's own files; this run keeps the store in PostgreSQL"
  : false;

test(
  'finding 7: a data dir or a file in it that group or others can read stops the start (exit 2, path and fix named)',
  { skip: json_file_only },
  async () => {
    const open_dir = tempDir();
    chmodSync(open_dir, 0o755);
    const refused = await runCli(['--port', '0', '--data-dir', open_dir]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, new RegExp(`${open_dir}.*0755`));
    assert.match(refused.stderr, /chmod -R go-rwx/);

    const data_dir = tempDir();
    const gateway = await startGateway({ data_dir });
    await gateway.stop();
    const segment = join(data_dir, 'journal', readdirSync(join(data_dir, 'journal'))[0]!);
    chmodSync(segment, 0o644);
    const file_refused = await runCli(['--port', '0', '--data-dir', data_dir]);
    assert.equal(file_refused.code, 2, file_refused.stderr);
    assert.match(file_refused.stderr, new RegExp(segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));

    chmodSync(segment, 0o600);
    mkdirSync(join(data_dir, 'extra'), { mode: 0o750 });
    chmodSync(join(data_dir, 'extra'), 0o750);
    const sub_refused = await runCli(['--port', '0', '--data-dir', data_dir]);
    assert.equal(sub_refused.code, 2, sub_refused.stderr);
    assert.match(sub_refused.stderr, /extra/);
  },
);
