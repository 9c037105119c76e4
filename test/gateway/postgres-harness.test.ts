// The throwaway PostgreSQL cluster of test/support/postgres.ts: it starts, makes databases,
// survives a stop/start with its data, and goes away with its process even on failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { startPostgres, psql, sweepOrphans, postgresBinDir } from '../support/postgres.js';

const CHILD = resolve(import.meta.dirname, '../support/postgres-exit-child.ts');

async function portOpen(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), done(true)));
    socket.once('error', () => done(false));
  });
}

test('a throwaway cluster: fresh databases, data kept across stop and start, torn down', async () => {
  const pg = await startPostgres();
  try {
    const a = await pg.createDatabase();
    const b = await pg.createDatabase();
    assert.notEqual(a, b);
    await psql(a, 'CREATE TABLE t (v int); INSERT INTO t VALUES (42)');
    assert.equal(
      await psql(b, "SELECT count(*) FROM pg_tables WHERE tablename = 't'"),
      '0',
      'databases are separate',
    );
    assert.equal(await psql(pg.url, 'SHOW fsync'), 'on');
    await pg.stop();
    assert.equal(await portOpen(pg.port), false, 'stopped: nothing listens');
    await assert.rejects(psql(a, 'SELECT 1'));
    await pg.start();
    assert.equal(await psql(a, 'SELECT v FROM t'), '42', 'committed data survives a restart');
    await pg.restart('immediate');
    assert.equal(await psql(a, 'SELECT v FROM t'), '42', 'and a crash');
  } finally {
    await pg.teardown();
  }
  assert.equal(existsSync(pg.dir), false, 'teardown removes the temp dir');
  assert.equal(await portOpen(pg.port), false);
});

async function startChild(mode: 'throw' | 'wait') {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  const exited = once(child, 'exit');
  const started = await new Promise<{ dir: string; port: number }>((resolveLine, reject) => {
    child.stdout.on('data', (chunk: string) => {
      out += chunk;
      const end = out.indexOf('\n');
      if (end !== -1) resolveLine(JSON.parse(out.slice(0, end)));
    });
    child.once('exit', (code) =>
      reject(new Error(`child exited ${code} before starting its cluster`)),
    );
  });
  return { child, exited, ...started };
}

test('a cluster whose process was SIGKILLed is swept by the next start', async () => {
  const { child, exited, dir, port } = await startChild('wait');
  child.kill('SIGKILL');
  await exited;
  assert.equal(existsSync(dir), true, 'SIGKILL leaves it behind');
  sweepOrphans(postgresBinDir()!);
  assert.equal(existsSync(dir), false);
  assert.equal(await portOpen(port), false);
});

for (const how of ['throw', 'SIGTERM'] as const) {
  test(`a process that ends by ${how} takes its cluster with it`, async () => {
    const { child, exited, dir, port } = await startChild(how === 'throw' ? 'throw' : 'wait');
    assert.equal(existsSync(dir), true);
    assert.equal(await portOpen(port), true);
    if (how === 'SIGTERM') child.kill('SIGTERM');
    const [code, signal] = await exited;
    assert.ok(code !== 0 || signal === 'SIGTERM', `the child failed (${code}, ${signal})`);
    assert.equal(existsSync(dir), false, 'its temp dir is gone');
    assert.equal(await portOpen(port), false, 'its server is gone');
  });
}
