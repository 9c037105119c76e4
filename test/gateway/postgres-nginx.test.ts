// docs/deploy.md's nginx in front of two gateways on one PostgreSQL database, for real: the
// upstream and location blocks are taken from the doc itself (only the TLS listener is
// swapped for a loopback port), Debian's nginx runs them, and the official openai SDK
// streams and bills through it; both gateways answer, one wallet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import OpenAI from 'openai';
import { createFundedAccount, request, tempDir } from './helpers.ts';
import { waitFor } from '../support/payments-helpers.ts';
import {
  freshDatabase,
  micros,
  postgresStoreMissing,
  startGateways,
  stopAll,
} from '../support/multi-gateway.ts';
import { freePort } from '../support/postgres.ts';

const NGINX = '/usr/sbin/nginx';
const skip = !existsSync(NGINX)
  ? `nginx is not installed (apt-get install nginx-light to run this check of docs/deploy.md)`
  : await postgresStoreMissing();

/** The nginx block of docs/deploy.md's two-gateway section, pointed at these gateways and this port. */
function siteFromDoc(ports: number[], listen: number): string {
  const doc = readFileSync(resolve(import.meta.dirname, '../../docs/deploy.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Two gateways behind nginx on one PostgreSQL'));
  const block = /```nginx\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'docs/deploy.md has the nginx config of the two-gateway section');
  assert.match(block, /server 127\.0\.0\.1:8787 [^;]*;\s*\n\s*server 127\.0\.0\.1:8788/);
  return block
    .replace('127.0.0.1:8787', `127.0.0.1:${ports[0]}`)
    .replace('127.0.0.1:8788', `127.0.0.1:${ports[1]}`)
    .replace(/listen 443 ssl http2;/, `listen 127.0.0.1:${listen};`)
    .replace(/\n\s*ssl_certificate(_key)? [^;]*;/g, '');
}

test(
  "docs/deploy.md's nginx spreads streamed, billed chats over two gateways on one database",
  { skip, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, { config: { trust_proxy: 1 } });
    const dir = tempDir('aihub-nginx-');
    mkdirSync(join(dir, 'logs'));
    chmodSync(dir, 0o755); // nginx's workers run as nobody
    const port = await freePort();
    writeFileSync(
      join(dir, 'site.conf'),
      siteFromDoc(
        gateways.map((g) => g.port),
        port,
      ),
    );
    writeFileSync(
      join(dir, 'nginx.conf'),
      `daemon off;\npid ${dir}/nginx.pid;\nerror_log ${dir}/logs/error.log;\nevents {}\nhttp {\n  access_log ${dir}/logs/access.log;\n  client_body_temp_path ${dir};\n  proxy_temp_path ${dir};\n  include ${dir}/site.conf;\n}\n`,
    );
    execFileSync(NGINX, ['-t', '-q', '-c', join(dir, 'nginx.conf'), '-p', dir]);
    const nginx = spawn(NGINX, ['-c', join(dir, 'nginx.conf'), '-p', dir], { stdio: 'ignore' });
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitFor(
        async () =>
          (await fetch(`${url}/healthz`).then(
            (r) => r.status,
            () => 0,
          )) === 200,
        () =>
          `nginx did not answer on ${url}: ${readFileSync(join(dir, 'logs/error.log'), 'utf8').slice(-500)}`,
      );
      const { key } = await createFundedAccount({ ...gateways[0]!, url }, 50);
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
      let charged = 0;
      let last_balance = Number.NaN;
      for (let i = 0; i < 12; i++) {
        const stream = await client.chat.completions.create({
          model: 'service-ai-lite',
          messages: [{ role: 'user', content: `hello ${i}` }],
          max_tokens: 12,
          stream: true,
        });
        let x: { cost: number; balance: number } | undefined;
        let chunks = 0;
        for await (const chunk of stream) {
          chunks++;
          x = (chunk as any).x_aihub ?? x;
        }
        assert.ok(x && chunks > 2, 'a whole stream came through nginx');
        charged += micros(x.cost);
        last_balance = micros(x.balance);
      }
      assert.equal(last_balance, micros(50) - charged);
      // Both gateways served through nginx and see the same wallet.
      for (const gateway of gateways) {
        await waitFor(
          () => gateway.output.some((line) => line.includes('"route":"/v1/chat/completions"')),
          () => `${gateway.url} served none of the chats: nginx did not spread them`,
        );
        const balance = await request(`${gateway.url}/v1/balance`, {
          headers: { authorization: `Bearer ${key}` },
        });
        assert.equal(micros(balance.body.balance), micros(50) - charged);
      }
    } finally {
      nginx.kill('SIGTERM');
      await stopAll(gateways);
    }
  },
);
