// A full disk as an operator meets it (issue #36): the real gateway process on a small tmpfs.
// Writes are refused 507 insufficient_storage in each API's own shape while reads, /healthz,
// /metrics and the dashboard answer and /readyz says why; writes resume by themselves once
// space is freed; a checkpoint near full leaves nothing behind and the journal keeps its room;
// a start on a full disk says so in one line and leaves no stray file; nothing acknowledged is
// lost (counted here, compared after a restart, and `verify`).
// Needs root (mount -t tmpfs); where mount is refused the tests say so and why.
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { IdRuns } from '../../gateway/store/id-runs.js';
import {
  admin,
  filesUnder,
  request,
  runCli,
  runVerify,
  startGateway,
  tempDir,
  type Gateway,
} from './helpers.js';

const MOUNT = mkdtempSync(join(tmpdir(), 'aihub-disk-'));
const RESERVE_BYTES = 16 * 1024 * 1024; // store.disk_reserve_bytes' default
const ADMIN_TOKEN = 'test-admin-token-that-is-long-enough-0123456789';

let cannot_run: string | false = false;
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', MOUNT], { stdio: 'pipe' });
} catch (error) {
  rmSync(MOUNT, { recursive: true, force: true });
  cannot_run = `these tests cannot run: mount -t tmpfs was refused (${String((error as { stderr?: Buffer }).stderr ?? (error as Error).message).trim()}); run them as root (docs/deploy.md, "Faults")`;
  process.stdout.write(`# ${cannot_run}\n`);
}

/** A config file (the store's defaults but for `store`): a 16 MiB reserve fits the small disk. */
function configFile(store: Record<string, unknown> = {}): string {
  const file = join(tempDir(), 'config.json');
  writeFileSync(file, JSON.stringify({ store }));
  return file;
}

function dataDir(name: string): string {
  const dir = join(MOUNT, name);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

/** Fills the disk until it refuses another byte; `leave` bytes are then given back. */
function fillDisk(leave = 0): string {
  const file = join(MOUNT, `fill-${Math.random().toString(36).slice(2)}`);
  const fd = openSync(file, 'w');
  let size = 0;
  try {
    for (const chunk of [Buffer.alloc(1 << 20), Buffer.alloc(4096)])
      for (;;) {
        try {
          size += writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
          break;
        }
      }
  } finally {
    closeSync(fd);
  }
  if (leave > 0) truncateSync(file, Math.max(0, size - leave));
  return file;
}

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeout_ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function metric(text: string, name: string): number {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  assert.ok(match, `${name} in /metrics`);
  return Number(match[1]);
}

describe('a full disk (JSON-file store on a small tmpfs)', { skip: cannot_run }, () => {
  const running: Gateway[] = [];
  const start = async (data_dir: string, config: string) => {
    const gateway = await startGateway({
      data_dir,
      args: ['--config', config],
      database_url: false,
    });
    running.push(gateway);
    return gateway;
  };
  /**
   * Stops the gateway, runs `verify`, starts it again and compares the account's balance
   * with the credits the client saw acknowledged; then removes the data dir (its reserve
   * too: the next test needs the room).
   */
  const booksAfterRestart = async (
    gateway: Gateway,
    config: string,
    account_id: string,
    acknowledged: number,
  ) => {
    assert.equal(await gateway.stop(), 0);
    const verify = await runVerify(gateway.data_dir);
    assert.equal(verify.code, 0, verify.stderr);
    const again = await start(gateway.data_dir, config);
    assert.equal(
      (await admin(again).get(`/admin/accounts/${account_id}`)).body.balance,
      acknowledged,
    );
    assert.equal(await again.stop(), 0);
    rmSync(gateway.data_dir, { recursive: true });
  };
  before(() => {
    for (const name of readdirSync(MOUNT)) rmSync(join(MOUNT, name), { recursive: true });
  });
  after(async () => {
    try {
      for (const gateway of running) await gateway.stop('SIGKILL');
    } finally {
      execFileSync('umount', [MOUNT]);
      rmSync(MOUNT, { recursive: true, force: true });
    }
  });

  test('writes are refused 507 in each shape while reads answer; they resume once space is freed; nothing acknowledged is lost', async () => {
    const data_dir = dataDir('full');
    const config = configFile();
    const gateway = await start(data_dir, config);
    const api = admin(gateway);
    const account = (await api.post('/admin/accounts', { email: 'full@example.com' })).body;
    const key = (await api.post(`/admin/accounts/${account.id}/keys`, { name: 'k' })).body.key;
    assert.equal((await request(`${gateway.url}/readyz`)).status, 200);
    assert.equal((await fetch(`${gateway.url}/login`)).status, 200); // the dashboard was in use (its CSRF secret made)
    // Credits of 1 each, counted as the client sees them.
    let acknowledged = 0;
    let serial = 0;
    const credit = () =>
      api.post(`/admin/accounts/${account.id}/credit`, { amount: 1, reference: `c-${serial++}` });
    for (let i = 0; i < 20; i++) {
      assert.equal((await credit()).status, 200);
      acknowledged++;
    }

    let fill: string | null = fillDisk();
    try {
      let refused;
      for (let i = 0; i < 5_000 && !refused; i++) {
        const reply = await credit();
        if (reply.status === 200) acknowledged++;
        else refused = reply;
      }
      assert.ok(refused, 'a write was refused once the disk was full');
      assert.equal(refused.status, 507);
      assert.equal(refused.body.error.code, 'insufficient_storage'); // /admin: OpenAI's shape
      assert.match(refused.body.error.message, /disk is full/);

      // Every surface refuses in its own shape, and says nothing changed (it did not).
      const chat = await request(`${gateway.url}/v1/chat/completions`, {
        headers: { authorization: `Bearer ${key}` },
        body: { model: 'service-ai-lite', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(chat.status, 507, JSON.stringify(chat.body));
      assert.equal(chat.body.error.code, 'insufficient_storage');
      assert.match(chat.body.error.message, /nothing was changed/);
      const hook = await request(`${gateway.url}/api/webhook`, {
        method: 'PUT',
        headers: { 'x-api-key': key },
        body: { url: 'https://example.com/hook' },
      });
      assert.equal(hook.status, 507, JSON.stringify(hook.body));
      assert.equal(hook.body.status, false);
      assert.equal(hook.body.error.code, 'insufficient_storage');

      // Reads, liveness, metrics and the dashboard answer; readiness says why not.
      assert.equal((await request(`${gateway.url}/healthz`)).status, 200);
      const ready = await request(`${gateway.url}/readyz`);
      assert.equal(ready.status, 503);
      assert.match(ready.body.reasons.join(' '), /disk .* is full/);
      const balance = await request(`${gateway.url}/v1/balance`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(balance.status, 200);
      assert.equal(balance.body.balance, acknowledged);
      assert.equal((await api.get(`/admin/accounts/${account.id}`)).body.balance, acknowledged);
      const login = await fetch(`${gateway.url}/login`);
      assert.equal(login.status, 200);
      const during = await (await fetch(`${gateway.url}/metrics`)).text();
      assert.equal(metric(during, 'aihub_store_writes_refused'), 1);
      assert.equal(metric(during, 'aihub_store_disk_reserve_bytes'), 0); // given to the journal
      assert.ok(metric(during, 'aihub_store_disk_free_bytes') < RESERVE_BYTES);
      assert.ok(metric(during, 'aihub_store_writes_refused_total') >= 3);

      // Space comes back: writes resume without a restart.
      rmSync(fill);
      fill = null;
      await waitFor('/readyz 200 after space was freed', async () =>
        (await request(`${gateway.url}/readyz`)).status === 200 ? true : undefined,
      );
      const after_free = await (await fetch(`${gateway.url}/metrics`)).text();
      assert.equal(metric(after_free, 'aihub_store_disk_reserve_bytes'), RESERVE_BYTES);
      assert.ok(metric(after_free, 'aihub_store_disk_free_bytes') > RESERVE_BYTES);
      for (let i = 0; i < 5; i++) {
        assert.equal((await credit()).status, 200);
        acknowledged++;
      }
    } finally {
      if (fill) rmSync(fill);
    }
    // Nothing acknowledged lost, nothing refused recorded: the books say so after a restart.
    await booksAfterRestart(gateway, config, account.id, acknowledged);
  });

  test('without a reserve, the commits in flight are refused and undone: the books hold exactly what was acknowledged', async () => {
    const data_dir = dataDir('no-reserve');
    const config = configFile({ disk_reserve_bytes: 0 });
    const gateway = await start(data_dir, config);
    const api = admin(gateway);
    const account = (await api.post('/admin/accounts', { email: 'nr@example.com' })).body;
    let acknowledged = 0;
    let refused = 0;
    let serial = 0;
    const fill = fillDisk();
    try {
      // Concurrent credits, so that groups of several commits meet the full disk at once.
      for (let round = 0; round < 200 && refused < 40; round++) {
        const replies = await Promise.all(
          Array.from({ length: 16 }, () =>
            api.post(`/admin/accounts/${account.id}/credit`, {
              amount: 1,
              reference: `r-${serial++}`,
            }),
          ),
        );
        for (const reply of replies) {
          if (reply.status === 200) acknowledged++;
          else {
            assert.equal(reply.status, 507, JSON.stringify(reply.body));
            assert.equal(reply.body.error.code, 'insufficient_storage');
            refused++;
          }
        }
      }
      assert.ok(refused > 0, 'writes were refused');
      assert.equal((await api.get(`/admin/accounts/${account.id}`)).body.balance, acknowledged);
    } finally {
      rmSync(fill);
    }
    await waitFor('/readyz 200 after space was freed', async () =>
      (await request(`${gateway.url}/readyz`)).status === 200 ? true : undefined,
    );
    assert.equal(
      (await api.post(`/admin/accounts/${account.id}/credit`, { amount: 1, reference: 'after' }))
        .status,
      200,
    );
    acknowledged++;
    await booksAfterRestart(gateway, config, account.id, acknowledged);
  });

  test('a checkpoint near a full disk leaves no partial files and the journal keeps its room', async () => {
    const data_dir = dataDir('checkpoint');
    const config = configFile({ checkpoint_interval_ms: 100, checkpoint_every_records: 1 });
    const gateway = await start(data_dir, config);
    const api = admin(gateway);
    // A document of some size: the checkpoint and its index runs will not fit in what is left.
    const ids: string[] = [];
    for (let i = 0; i < 600; i++) {
      const reply = await api.post('/admin/accounts', {
        email: `a${i}@example.com`,
        name: 'x'.repeat(200),
      });
      assert.equal(reply.status, 201);
      ids.push(reply.body.id);
    }
    const fill = fillDisk(300 * 1024);
    try {
      for (let i = 0; i < 150; i++) {
        const reply = await api.post(`/admin/accounts/${ids[i % ids.length]}/credit`, {
          amount: 1,
          reference: `n-${i}`,
        });
        assert.equal(
          reply.status,
          200,
          `credit ${i} near a full disk: ${JSON.stringify(reply.body)}`,
        );
      }
      assert.equal((await request(`${gateway.url}/readyz`)).status, 200);
      const stray = filesUnder(data_dir).filter((file) => /\.tmp$|\.part$/.test(file));
      assert.deepEqual(stray, []);
    } finally {
      rmSync(fill);
    }
    assert.equal(await gateway.stop(), 0);
    // Every id run on disk is one the index manifest names (none cut short is left).
    const manifest = JSON.parse(
      (await import('node:fs')).readFileSync(join(data_dir, 'index', 'manifest.json'), 'utf8'),
    ) as { runs: Array<[number, number, number, number]> };
    const named = new Set(manifest.runs.map(([from, to]) => `${from}-${to}.run`));
    const run_files = filesUnder(join(data_dir, 'index', 'idrun'));
    for (const file of run_files)
      assert.ok(
        named.has(basename(file).replace(/\.(fence|bloom)$/, '')),
        `${file} is named by the manifest`,
      );
    assert.equal((await runVerify(data_dir)).code, 0);
    rmSync(data_dir, { recursive: true });
  });

  test('an id run that finds the disk full is removed, its entries kept and written once there is room', () => {
    const index_dir = dataDir('idrun');
    const ids = new IdRuns(index_dir, { max_memtable: 1_000_000 });
    // ~5 MB of entries with inline rows: more than the disk will have.
    const row = Buffer.alloc(1_000, 'r');
    for (let seq = 1; seq <= 5_000; seq++)
      ids.add({
        hash: (seq * 2_654_435_761) >>> 0,
        op: 0,
        seq,
        segment: 1,
        offset: seq,
        length: 1,
        inline: row,
      });
    const fill = fillDisk(1024 * 1024);
    try {
      assert.throws(() => ids.flush(), { code: 'ENOSPC' });
      assert.deepEqual(filesUnder(index_dir), [], 'nothing of the cut-short run is left');
      assert.deepEqual(ids.metas(), []);
    } finally {
      rmSync(fill);
    }
    ids.flush();
    assert.deepEqual(
      ids.metas().map(([from, to, count]) => [from, to, count]),
      [[1, 5_000, 5_000]],
    );
    ids.close();
    rmSync(index_dir, { recursive: true });
  });

  test(
    'a start on a full disk says so in one line and leaves no stray file',
    { timeout: 120_000 },
    async () => {
      const data_dir = dataDir('start');
      const config = configFile();
      const gateway = await start(data_dir, config);
      assert.equal(await gateway.stop(), 0);
      rmSync(join(data_dir, 'journal.reserve'), { force: true }); // as if the disk filled meanwhile
      const fill = fillDisk();
      try {
        const before_files = filesUnder(data_dir).sort();
        const { code, stdout, stderr } = await runCli(
          ['--port', '0', '--host', '127.0.0.1', '--data-dir', data_dir, '--config', config],
          { AIHUB_ADMIN_TOKEN: ADMIN_TOKEN },
        );
        assert.notEqual(code, 0, `exit code (stdout ${stdout})`);
        assert.notEqual(code, null, 'it exited by itself');
        const lines = stderr.trim().split('\n');
        assert.equal(lines.length, 1, `one line on stderr, got:\n${stderr}`);
        assert.match(lines[0]!, new RegExp(data_dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
        assert.match(lines[0]!, /full.*needs \d/);
        assert.doesNotMatch(stderr, /\n\s+at /);
        assert.deepEqual(filesUnder(data_dir).sort(), before_files, 'no stray file');
      } finally {
        rmSync(fill);
      }
    },
  );
});
