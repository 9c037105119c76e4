import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  admin,
  createFundedAccount,
  request,
  runCli,
  runVerify,
  startGateway,
  tempDir,
  waitForOutput,
} from './helpers.ts';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

test('account → key → credit: the balance equals the credit, also after a restart', async () => {
  const gateway = await startGateway();
  try {
    const api = admin(gateway);
    const created = await api.post('/admin/accounts', { email: 'Dev@Example.com', name: 'Dev' });
    assert.equal(created.status, 201);
    assert.equal(created.body.email, 'dev@example.com');
    assert.deepEqual(created.body.services, {
      ai: true,
      recharge: false,
      dmt: false,
      pan: false,
      bills: false,
    });
    assert.equal(created.body.kyc_status, 'none');
    const id = created.body.id;

    const key = await api.post(`/admin/accounts/${id}/keys`, { name: 'laptop' });
    assert.equal(key.status, 201);
    assert.match(key.body.key, /^sk-aihub-[A-Za-z0-9_-]{43}$/);
    assert.equal(key.body.prefix, key.body.key.slice(0, 13));

    const credit = await api.post(`/admin/accounts/${id}/credit`, {
      amount: 250.75,
      reference: 'bank-001',
    });
    assert.equal(credit.status, 200);
    assert.equal(credit.body.balance, 250.75);

    const shown = await api.get(`/admin/accounts/${id}`);
    assert.equal(shown.body.balance, 250.75);
    const wallet = await request(`${gateway.url}/api/wallet/balance`, {
      headers: { 'x-api-key': key.body.key },
    });
    assert.deepEqual(wallet.body, { status: true, data: { balance: 250.75, currency: 'INR' } });

    assert.equal(await gateway.stop(), 0, 'SIGTERM exits 0');
    const again = await startGateway({ data_dir: gateway.data_dir });
    try {
      const after = await admin(again).get(`/admin/accounts/${id}`);
      assert.equal(after.body.balance, 250.75);
      const bearer = await request(`${again.url}/api/wallet/balance`, {
        headers: { authorization: `Bearer ${key.body.key}` },
      });
      assert.equal(bearer.body.data.balance, 250.75);
    } finally {
      await again.stop();
    }
    const verify = await runVerify(gateway.data_dir);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  } finally {
    await gateway.stop();
  }
});

test('the same credit reference twice credits once; another amount under it is a conflict', async () => {
  const gateway = await startGateway();
  try {
    const api = admin(gateway);
    const { account_id } = await createFundedAccount(gateway);
    const first = await api.post(`/admin/accounts/${account_id}/credit`, {
      amount: 10,
      reference: 'ref-1',
    });
    const second = await api.post(`/admin/accounts/${account_id}/credit`, {
      amount: 10,
      reference: 'ref-1',
    });
    assert.equal(first.body.balance, 10);
    assert.equal(second.status, 200);
    assert.equal(second.body.balance, 10);
    assert.equal(second.body.duplicate, true);
    const other = await api.post(`/admin/accounts/${account_id}/credit`, {
      amount: 11,
      reference: 'ref-1',
    });
    assert.equal(other.status, 409);
    assert.equal(other.body.error.param, 'reference');
    const parallel = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.post(`/admin/accounts/${account_id}/credit`, { amount: 1.5, reference: 'ref-par' }),
      ),
    );
    assert.ok(parallel.every((reply) => reply.status === 200));
    assert.equal((await api.get(`/admin/accounts/${account_id}`)).body.balance, 11.5);
  } finally {
    await gateway.stop();
  }
});

test('a revoked key is refused at once; keys work as Bearer and x-api-key in any case', async () => {
  const gateway = await startGateway();
  try {
    const { key, key_id } = await createFundedAccount(gateway, 5);
    for (const headers of [
      { authorization: `Bearer ${key}` },
      { 'x-api-key': key },
      { 'X-API-KEY': key },
    ] as Array<Record<string, string>>) {
      assert.equal((await request(`${gateway.url}/api/wallet/balance`, { headers })).status, 200);
    }
    assert.equal((await admin(gateway).del(`/admin/keys/${key_id}`)).status, 204);
    const refused = await request(`${gateway.url}/api/wallet/balance`, {
      headers: { 'x-api-key': key },
    });
    assert.equal(refused.status, 401);
    assert.equal(refused.body.status, false);
    assert.equal(refused.body.error.code, 'invalid_api_key');
    assert.match(refused.body.message, /revoked/);
    const unknown = await request(`${gateway.url}/api/wallet/balance`, {
      headers: { 'x-api-key': 'sk-aihub-nope' },
    });
    assert.equal(unknown.status, 401);
    const none = await request(`${gateway.url}/api/wallet/balance`);
    assert.equal(none.status, 401);
    assert.equal((await admin(gateway).del('/admin/keys/key_unknown')).status, 404);
  } finally {
    await gateway.stop();
  }
});

test('the admin API holds an account to 50 active keys, as the dashboard does; a revoked key frees a place', async () => {
  const gateway = await startGateway();
  try {
    const api = admin(gateway);
    const { account_id, key_id } = await createFundedAccount(gateway);
    for (let i = 2; i <= 50; i++)
      assert.equal(
        (await api.post(`/admin/accounts/${account_id}/keys`, { name: `k${i}` })).status,
        201,
        `key ${i}`,
      );
    const refused = await api.post(`/admin/accounts/${account_id}/keys`, { name: 'k51' });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, 'too_many_keys');
    assert.equal(refused.body.error.param, 'name');
    assert.match(refused.body.error.message, /at most 50 active keys/);
    const listed = await api.get(`/admin/accounts/${account_id}`);
    assert.equal(listed.body.keys.length, 50, 'the refused key was not created');
    assert.equal((await api.del(`/admin/keys/${key_id}`)).status, 204);
    assert.equal(
      (await api.post(`/admin/accounts/${account_id}/keys`, { name: 'k51' })).status,
      201,
    );
    assert.equal(
      (await api.post(`/admin/accounts/${account_id}/keys`, { name: 'k52' })).status,
      409,
    );
    const other = await createFundedAccount(gateway);
    assert.ok(other.key, 'the limit is per account');
  } finally {
    await gateway.stop();
  }
});

test('no file in the data dir contains a plaintext key or the admin token', async () => {
  const gateway = await startGateway({ admin_token: 'an-admin-token-that-must-not-be-stored' });
  const keys: string[] = [];
  try {
    for (let i = 0; i < 3; i++) keys.push((await createFundedAccount(gateway, 1)).key);
  } finally {
    await gateway.stop();
  }
  const secrets = [...keys, 'an-admin-token-that-must-not-be-stored'];
  const files = filesUnder(gateway.data_dir);
  if (gateway.database_url) {
    // The PostgreSQL store's state is in the database: no table holds a secret either.
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: gateway.database_url });
    await client.connect();
    try {
      for (const secret of secrets) {
        const { rows } = await client.query<{ n: string }>(
          `SELECT (SELECT count(*) FROM aihub.rows WHERE strpos(row::text, $1) > 0)
                + (SELECT count(*) FROM aihub.history WHERE strpos(record::text, $1) > 0)
                + (SELECT count(*) FROM aihub.meta WHERE strpos(v::text, $1) > 0) AS n`,
          [secret],
        );
        assert.equal(rows[0]!.n, '0', 'the database holds a secret');
      }
    } finally {
      await client.end();
    }
  } else assert.ok(files.some((file) => file.endsWith('state.jsonl')));
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const secret of secrets) assert.ok(!text.includes(secret), `${file} contains a secret`);
  }
  for (const line of gateway.output)
    for (const secret of secrets) assert.ok(!line.includes(secret), 'a log line contains a secret');
});

test('a generated admin token is printed once, stored only as a hash, and works after a restart', async () => {
  const data_dir = tempDir();
  const first = await startGateway({ data_dir, admin_token: null });
  await first.stop();
  const printed = first.output.find((line) => line.includes('admin token'));
  assert.ok(printed, 'the token is printed on first start');
  const token = /(aihub-admin-\S+)/.exec(printed!)![1]!;
  for (const file of filesUnder(data_dir)) assert.ok(!readFileSync(file, 'utf8').includes(token));
  const second = await startGateway({ data_dir, admin_token: null });
  try {
    assert.ok(!second.output.some((line) => line.includes('admin token')), 'printed only once');
    const ok = await request(`${second.url}/admin/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: { email: 'a@b.co' },
    });
    assert.equal(ok.status, 201);
    const wrong = await request(`${second.url}/admin/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}x` },
      body: { email: 'c@b.co' },
    });
    assert.equal(wrong.status, 401);
  } finally {
    await second.stop();
  }
});

test('a second gateway on the same data dir refuses to start and names the first', async () => {
  const gateway = await startGateway();
  try {
    const second = await runCli(['--port', '0', '--data-dir', gateway.data_dir], {
      AIHUB_ADMIN_TOKEN: 'a-second-admin-token-that-is-long-enough',
    });
    assert.notEqual(second.code, 0);
    assert.match(
      second.stderr,
      new RegExp(`in use by another AIHub gateway \\(pid ${gateway.proc.pid}`),
    );
    assert.equal(second.stderr.trim().split('\n').length, 1, 'one line');
  } finally {
    await gateway.stop();
  }
});

test('a bad config file field is named and the process exits non-zero', async () => {
  const dir = tempDir();
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ limits: { body_bytes: 'big' }, colour: 'blue' }));
  const result = await runCli(['--config', config, '--data-dir', dir]);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /limits\.body_bytes/);
  assert.match(result.stderr, /colour/);
  const bad_port = await runCli(['--port', 'eighty', '--data-dir', dir]);
  assert.equal(bad_port.code, 2);
  assert.match(bad_port.stderr, /--port/);
});

test('GET /healthz, /metrics, x-request-id on every response, one JSON log line per request', async () => {
  const gateway = await startGateway();
  try {
    const health = await request(`${gateway.url}/healthz`);
    assert.deepEqual(health.body, { status: 'ok' });
    assert.match(health.headers.get('x-request-id') ?? '', /^req_[0-9a-f]{24}$/);
    const missing = await request(`${gateway.url}/nope`);
    assert.equal(missing.status, 404);
    assert.ok(missing.headers.get('x-request-id'));
    const metrics = await request(`${gateway.url}/metrics`);
    assert.match(
      String(metrics.body),
      /aihub_http_requests_total\{surface="healthz",status="200"\} 1/,
    );
    const { account_id } = await createFundedAccount(gateway, 1);
    const credit = JSON.parse(
      await waitForOutput(
        gateway,
        (line) =>
          line.includes('"msg":"request"') && line.includes('"route":"/admin/accounts/:id/credit"'),
        'for the credit request',
      ),
    );
    const logged = gateway.output
      .filter((line) => line.includes('"msg":"request"'))
      .map((line) => JSON.parse(line));
    assert.equal(typeof credit.request_id, 'string');
    assert.equal(credit.status, 200);
    assert.equal(typeof credit.duration_ms, 'number');
    assert.ok(
      !JSON.stringify(logged).includes(account_id) || credit.route.includes(':id'),
      'routes are logged as patterns',
    );
  } finally {
    await gateway.stop();
  }
});

test('GET /openapi.json is an OpenAPI 3.1 document generated from the validating schemas', async () => {
  const gateway = await startGateway();
  try {
    const reply = await request(`${gateway.url}/openapi.json`);
    assert.equal(reply.status, 200);
    const doc = reply.body;
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.servers[0].url, gateway.url);
    const create = doc.paths['/admin/accounts'].post;
    assert.deepEqual(create.requestBody.content['application/json'].schema.required, ['email']);
    assert.equal(create.requestBody.content['application/json'].schema.additionalProperties, false);
    assert.ok(create.responses['201'] && create.responses['409'] && create.responses['401']);
    const credit = doc.paths['/admin/accounts/{id}/credit'].post;
    assert.deepEqual(
      credit.parameters.map((p: { name: string }) => p.name),
      ['id'],
    );
    assert.equal(
      credit.requestBody.content['application/json'].schema.properties.amount.type,
      'number',
    );
    for (const path of [
      '/v1/chat/completions',
      '/v1/models',
      '/v1/balance',
      '/api/recharge',
      '/api/dmt/transact',
      '/api/pan-find',
    ]) {
      assert.ok(doc.paths[path], `${path} is documented`);
    }
  } finally {
    await gateway.stop();
  }
});
