// Issue #13: the attack run's findings 2-5, each reproduced as it was found, against the real
// gateway process. (Finding 1 is test/gateway/http-server.test.ts; the route-table fuzz is
// test/gateway/fuzz.test.ts.)
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import {
  admin,
  createFundedAccount,
  request,
  runCli,
  runVerify,
  tempDir,
  waitForOutput,
  type Gateway,
} from './helpers.js';
import { onboard, paymentsConfig, startPaymentsGateway } from '../support/payments-helpers.js';
import { ScriptedUpstream } from '../support/scripted-upstream.js';

const BAD_ESCAPE = '%E0%A4%A';
const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

let gateway: Gateway;
let user: { key: string; account_id: string; headers: Record<string, string> };

before(async () => {
  gateway = await startPaymentsGateway();
  user = await onboard(gateway, 1_000, { recharge: true, dmt: true, pan: true, bills: true });
});

after(async () => {
  if (gateway.proc.exitCode === null) assert.equal(await gateway.stop(), 0);
  const verify = await runVerify(gateway.data_dir);
  assert.equal(verify.code, 0, verify.stdout + verify.stderr);
});

async function alive(): Promise<void> {
  assert.equal(gateway.proc.exitCode, null, 'the gateway process is running');
  const health = await request(`${gateway.url}/healthz`);
  assert.equal(health.status, 200);
}

describe('finding 2: deep JSON is a 400 at the edge of every surface, and no listener can end the process', () => {
  test('an admin POST nested 6,000 levels: 400 in OpenAI shape, and the audit listener does not kill the gateway', async () => {
    const auth = { authorization: `Bearer ${gateway.admin_token}` };
    for (const path of [
      '/admin/accounts',
      `/admin/accounts/${user.account_id}/credit`,
      `/admin/accounts/${user.account_id}/services`,
    ]) {
      const reply = await request(`${gateway.url}${path}`, {
        method: 'POST',
        headers: auth,
        raw: `{"email":${nested(6_000)}}`,
      });
      assert.equal(reply.status, 400, path);
      assert.equal(reply.body.error.code, 'json_too_deep');
      assert.equal(reply.body.error.type, 'invalid_request_error');
    }
    await alive();
    // The refusals were audited like any other refused admin call.
    const audit = await admin(gateway).get('/admin/audit?limit=50');
    assert.equal(audit.status, 200);
  });

  test('an /api POST nested 6,000 levels: 400 in the payments shape', async () => {
    const reply = await request(`${gateway.url}/api/recharge`, {
      headers: user.headers,
      raw: `{"operator_id":${nested(6_000)}}`,
    });
    assert.equal(reply.status, 400);
    assert.equal(reply.body.status, false);
    assert.equal(reply.body.error.code, 'json_too_deep');
    await alive();
  });

  test('a chat request with deep `tools`: 400 in OpenAI shape, not 500; 64 levels still pass', async () => {
    const client = new OpenAI({ apiKey: user.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    let parameters: unknown = { type: 'string' };
    for (let i = 0; i < 200; i++) parameters = { type: 'object', properties: { x: parameters } };
    const deep = client.chat.completions.create({
      model: 'service-ai-lite',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
      tools: [
        {
          type: 'function',
          function: { name: 'f', parameters: parameters as Record<string, unknown> },
        },
      ],
    });
    await assert.rejects(deep, (error: unknown) => {
      assert.ok(error instanceof OpenAI.BadRequestError, String(error));
      assert.equal(error.status, 400);
      assert.equal(error.code, 'json_too_deep');
      return true;
    });
    // At the bound: the body is {"tools":[{"function":{"parameters": ... }}]} = 4 levels + 2 per schema level.
    let shallow: unknown = { type: 'string' };
    for (let i = 0; i < 29; i++) shallow = { type: 'object', properties: { x: shallow } };
    const ok = await client.chat.completions.create({
      model: 'service-ai-lite',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
      tools: [
        {
          type: 'function',
          function: { name: 'f', parameters: shallow as Record<string, unknown> },
        },
      ],
    });
    assert.equal(ok.object, 'chat.completion');
    await alive();
  });

  test('brackets inside strings do not count towards the depth', async () => {
    const reply = await request(`${gateway.url}/api/recharge`, {
      headers: user.headers,
      body: { operator_id: nested(500), number: '9876543210', amount: 10 },
    });
    assert.equal(reply.status, 400);
    assert.notEqual(reply.body.error.code, 'json_too_deep');
  });
});

describe('finding 2, upstream side: an answer too deep to count', () => {
  test('a completion nested 10,000 levels (without usage, then with): 502, nothing billed, nothing left reserved', async () => {
    let deep_value = '1';
    for (let i = 0; i < 10_000; i++) deep_value = `[${deep_value}]`;
    const completion = `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"extra":${deep_value}}]}}]}`;
    const upstream = await ScriptedUpstream.start({ kind: 'raw', status: 200, text: completion });
    const dir = tempDir('aihub-deep-upstream-');
    const config_file = join(dir, 'config.json');
    const tiers = [
      'service-ai-free',
      'service-ai-lite',
      'service-ai-standard-6',
      'service-ai-pro-4',
      'service-ai-max',
    ];
    writeFileSync(
      config_file,
      JSON.stringify({
        chat: {
          engines: {
            deep: {
              type: 'openai-compatible',
              base_url: upstream.base_url,
              model: 'm',
              timeout_ms: 5_000,
            },
          },
          models: Object.fromEntries(tiers.map((id) => [id, { targets: ['deep'] }])),
        },
      }),
    );
    const { startGateway } = await import('./helpers.js');
    const deep_gateway = await startGateway({ args: ['--config', config_file] });
    try {
      // 1 unit; each request reserves about 0.6 (standard tier: 400 units per million output tokens).
      const { key } = await createFundedAccount(deep_gateway, 1);
      const client = new OpenAI({ apiKey: key, baseURL: `${deep_gateway.url}/v1`, maxRetries: 0 });
      for (let i = 0; i < 2; i++) {
        // The second call needs the first one's reservation back: a leaked one makes it a 402.
        await assert.rejects(
          client.chat.completions.create({
            model: 'service-ai-standard-6',
            messages: [{ role: 'user', content: 'hi' }],
            max_tokens: 1_500,
          }),
          (error: unknown) => {
            assert.ok(error instanceof OpenAI.APIError, String(error));
            assert.equal(error.status, 502, `call ${i + 1}: ${error.message}`);
            return true;
          },
        );
      }
      // With usage, nothing needs counting, but the answer still cannot be serialized: the same,
      // decided before the settlement (it was billed, then a 500).
      upstream.setDefault({
        kind: 'raw',
        status: 200,
        text: completion.replace(
          '"choices"',
          `"usage":{"prompt_tokens":3,"completion_tokens":5},"deep_extra":${deep_value},"choices"`,
        ),
      });
      await assert.rejects(
        client.chat.completions.create({
          model: 'service-ai-standard-6',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 1_500,
        }),
        (error: unknown) => {
          assert.ok(error instanceof OpenAI.APIError, String(error));
          assert.equal(error.status, 502, error.message);
          return true;
        },
      );
      const balance = await request(`${deep_gateway.url}/v1/balance`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(balance.body.balance, 1, 'nothing billed');
      assert.equal(balance.body.usage.requests, 3, 'every attempt recorded');
    } finally {
      assert.equal(await deep_gateway.stop(), 0);
      await upstream.close();
    }
    const verify = await runVerify(deep_gateway.data_dir);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  });
});

describe("finding 3: a malformed %-escape in the path is a 400 in the surface's shape on every route with a parameter", () => {
  test('/v1, /api, /admin and the dashboard', async () => {
    const key = { authorization: `Bearer ${user.key}` };
    const admin_auth = { authorization: `Bearer ${gateway.admin_token}` };
    const cases: Array<[string, string, Record<string, string>, 'openai' | 'payments']> = [
      ['GET', `/v1/models/${BAD_ESCAPE}`, key, 'openai'],
      ['GET', `/api/transactions/${BAD_ESCAPE}`, user.headers, 'payments'],
      ['GET', `/api/bills/receipt/${BAD_ESCAPE}`, user.headers, 'payments'],
      ['GET', `/api/dmt/remitter/${BAD_ESCAPE}`, user.headers, 'payments'],
      ['DELETE', `/api/dmt/beneficiary/${BAD_ESCAPE}`, user.headers, 'payments'],
      ['POST', `/api/dmt/beneficiary/${BAD_ESCAPE}/verify`, user.headers, 'payments'],
      ['GET', `/api/reports/${BAD_ESCAPE}`, user.headers, 'payments'],
      ['GET', `/admin/accounts/${BAD_ESCAPE}`, admin_auth, 'openai'],
      ['POST', `/admin/accounts/${BAD_ESCAPE}/credit`, admin_auth, 'openai'],
      ['GET', `/admin/kyc/${BAD_ESCAPE}`, admin_auth, 'openai'],
      ['GET', `/admin/transactions/${BAD_ESCAPE}`, admin_auth, 'openai'],
      ['GET', `/admin/console/accounts/${BAD_ESCAPE}`, {}, 'openai'],
      ['POST', `/api-keys/${BAD_ESCAPE}/revoke`, {}, 'openai'],
      ['GET', `/wallet/${BAD_ESCAPE}`, {}, 'openai'],
    ];
    for (const [method, path, headers, shape] of cases) {
      const reply = await request(`${gateway.url}${path}`, { method, headers });
      assert.equal(reply.status, 400, `${method} ${path}: ${JSON.stringify(reply.body)}`);
      if (shape === 'payments') {
        assert.equal(reply.body.status, false);
        assert.equal(reply.body.error.code, 'invalid_path');
      } else {
        assert.equal(reply.body.error.code, 'invalid_path');
        assert.equal(reply.body.error.type, 'invalid_request_error');
      }
      assert.ok(reply.headers.get('x-request-id'));
    }
    await alive();
  });
});

describe("finding 4: /v1 obeys the account's IP whitelist as /api does", () => {
  test('a whitelist without the caller refuses every /v1 route with 403 and bills nothing', async () => {
    const { key, account_id } = await createFundedAccount(gateway, 10);
    const api = admin(gateway);
    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    assert.equal(
      (await api.put(`/admin/accounts/${account_id}/ip-whitelist`, { ips: ['203.0.113.7'] }))
        .status,
      200,
    );
    const refused = async (call: Promise<unknown>) =>
      assert.rejects(call, (error: unknown) => {
        assert.ok(error instanceof OpenAI.PermissionDeniedError, String(error));
        assert.equal(error.code, 'ip_not_allowed');
        return true;
      });
    await refused(
      client.chat.completions.create({
        model: 'service-ai-lite',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 5,
      }),
    );
    await refused(client.models.list());
    await refused(client.models.retrieve('service-ai-lite'));
    const balance = await request(`${gateway.url}/v1/balance`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(balance.status, 403);
    assert.equal(balance.body.error.type, 'permission_error');
    await waitForOutput(
      gateway,
      (line) =>
        line.includes('outside the IP whitelist') &&
        line.includes(account_id) &&
        line.includes('"route":"/v1/balance"'),
      'about the refused /v1 call',
    );
    // /api says the same for the same key.
    const api_balance = await request(`${gateway.url}/api/wallet/balance`, {
      headers: { 'x-api-key': key },
    });
    assert.equal(api_balance.status, 403);
    assert.equal(api_balance.body.error.code, 'ip_not_allowed');

    assert.equal(
      (
        await api.put(`/admin/accounts/${account_id}/ip-whitelist`, {
          ips: ['203.0.113.7', '127.0.0.0/8'],
        })
      ).status,
      200,
    );
    const answer = await client.chat.completions.create({
      model: 'service-ai-lite',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
    });
    assert.equal(answer.object, 'chat.completion');
    const account = await api.get(`/admin/accounts/${account_id}`);
    const usage = await request(`${gateway.url}/v1/balance`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(usage.body.usage.requests, 1, 'only the allowed request was billed');
    assert.equal(account.body.balance, usage.body.balance);
  });

  test('X-Forwarded-For counts on /v1 exactly when trust_proxy says so, as on /api', async () => {
    // This gateway trusts no proxy: a forged X-Forwarded-For changes nothing.
    const { key, account_id } = await createFundedAccount(gateway, 10);
    assert.equal(
      (
        await admin(gateway).put(`/admin/accounts/${account_id}/ip-whitelist`, {
          ips: ['203.0.113.7'],
        })
      ).status,
      200,
    );
    const forged = { authorization: `Bearer ${key}`, 'x-forwarded-for': '203.0.113.7' };
    assert.equal((await request(`${gateway.url}/v1/models`, { headers: forged })).status, 403);
    assert.equal(
      (await request(`${gateway.url}/api/wallet/balance`, { headers: forged })).status,
      403,
    );

    // One trusted hop: the proxy's X-Forwarded-For names the client on both surfaces.
    const dir = tempDir('aihub-trust-');
    const config_file = join(dir, 'config.json');
    writeFileSync(config_file, JSON.stringify({ ...paymentsConfig(), trust_proxy: 1 }));
    const { startGateway } = await import('./helpers.js');
    const proxied = await startGateway({ env: { AIHUB_CONFIG: config_file } });
    try {
      const other = await createFundedAccount(proxied, 10);
      assert.equal(
        (
          await admin(proxied).put(`/admin/accounts/${other.account_id}/ip-whitelist`, {
            ips: ['203.0.113.7'],
          })
        ).status,
        200,
      );
      const via = (ip: string) => ({ authorization: `Bearer ${other.key}`, 'x-forwarded-for': ip });
      assert.equal(
        (await request(`${proxied.url}/v1/models`, { headers: via('203.0.113.7') })).status,
        200,
      );
      assert.equal(
        (await request(`${proxied.url}/api/wallet/balance`, { headers: via('203.0.113.7') }))
          .status,
        200,
      );
      assert.equal(
        (await request(`${proxied.url}/v1/models`, { headers: via('198.51.100.1') })).status,
        403,
      );
      assert.equal(
        (await request(`${proxied.url}/api/wallet/balance`, { headers: via('198.51.100.1') }))
          .status,
        403,
      );
    } finally {
      assert.equal(await proxied.stop(), 0);
    }
  });

  test('a malformed address in trust_proxy stops the start with exit 2 and names the setting', async () => {
    const dir = tempDir('aihub-trust-');
    const config_file = join(dir, 'config.json');
    writeFileSync(config_file, JSON.stringify({ trust_proxy: 'loopback, 10.0.0.0/33' }));
    const result = await runCli(['--port', '0', '--data-dir', join(dir, 'data')], {
      AIHUB_CONFIG: config_file,
    });
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stderr,
      /trust_proxy "loopback, 10\.0\.0\.0\/33": invalid range on address/,
    );
  });
});

describe('finding 5: prototype names never resolve as ids', () => {
  test('POST /admin/accounts/constructor/credit credits nothing; every admin, /api and /v1 route with an id refuses the name', async () => {
    const api = admin(gateway);
    const before_list = await api.get('/admin/accounts?limit=500');
    assert.equal(before_list.status, 200);
    for (const name of PROTOTYPE_NAMES) {
      const id = encodeURIComponent(name);
      /** 404, or 400 where the route checks the id's format first: never a row. */
      const refused = async (
        what: string,
        reply: Promise<{ status: number; body: unknown }>,
        format_checked = false,
      ) => {
        const answer = await reply;
        assert.ok(
          answer.status === 404 || (format_checked && answer.status === 400),
          `${what} with ${name}: ${answer.status} ${JSON.stringify(answer.body)}`,
        );
      };
      const credit = await api.post(`/admin/accounts/${id}/credit`, {
        amount: 5,
        reference: `proto-${name}`,
      });
      assert.equal(credit.status, 404, `credit ${name}: ${JSON.stringify(credit.body)}`);
      assert.equal(credit.body.error.code, 'account_not_found');
      await refused(
        'admin debit',
        api.post(`/admin/accounts/${id}/debit`, { amount: 5, reference: `proto-d-${name}` }),
      );
      await refused('admin account', api.get(`/admin/accounts/${id}`));
      await refused('admin new key', api.post(`/admin/accounts/${id}/keys`, { name: 'x' }));
      await refused('admin revoke key', api.del(`/admin/keys/${id}`));
      await refused(
        'admin services',
        api.post(`/admin/accounts/${id}/services`, { recharge: true }),
      );
      await refused(
        'admin ip whitelist',
        api.put(`/admin/accounts/${id}/ip-whitelist`, { ips: [] }),
      );
      await refused('admin kyc', api.get(`/admin/kyc/${id}`));
      await refused('admin kyc approve', api.post(`/admin/kyc/${id}/approve`, {}));
      await refused('admin kyc document', api.get(`/admin/kyc/${id}/documents/${id}`));
      await refused('admin transaction', api.get(`/admin/transactions/${id}`));
      await refused('admin recheck', api.post(`/admin/transactions/${id}/recheck`, {}));
      await refused(
        'api transaction',
        request(`${gateway.url}/api/transactions/${id}`, { headers: user.headers }),
      );
      await refused(
        'api receipt',
        request(`${gateway.url}/api/bills/receipt/${id}`, { headers: user.headers }),
      );
      await refused(
        'api remitter',
        request(`${gateway.url}/api/dmt/remitter/${id}`, { headers: user.headers }),
        true,
      );
      await refused(
        'api beneficiary delete',
        request(`${gateway.url}/api/dmt/beneficiary/${id}`, {
          method: 'DELETE',
          headers: user.headers,
        }),
        true,
      );
      await refused(
        'api beneficiary verify',
        request(`${gateway.url}/api/dmt/beneficiary/${id}/verify`, {
          method: 'POST',
          headers: user.headers,
          body: {},
        }),
        true,
      );
      const model = await request(`${gateway.url}/v1/models/${id}`, {
        headers: { authorization: `Bearer ${user.key}` },
      });
      assert.equal(model.status, 404);
      assert.equal(model.body.error.code, 'model_not_found');
    }
    // Nothing was created for a name, and the account list still works.
    const after_list = await api.get('/admin/accounts?limit=500');
    assert.equal(after_list.status, 200);
    assert.equal(after_list.body.total, before_list.body.total);
    await alive();
  });

  test('prototype names as idempotency keys, references and body keys are plain strings', async () => {
    const api = admin(gateway);
    for (const name of PROTOTYPE_NAMES) {
      const first = await api.post(`/admin/accounts/${user.account_id}/credit`, {
        amount: 1,
        reference: name,
      });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.duplicate, false, `the reference ${name} was not seen before`);
      const again = await api.post(`/admin/accounts/${user.account_id}/credit`, {
        amount: 1,
        reference: name,
      });
      assert.equal(again.body.duplicate, true);
      const recharge = await request(`${gateway.url}/api/recharge`, {
        headers: { ...user.headers, 'idempotency-key': name },
        raw: `{"operator_id":1,"number":"9876543210","amount":10,"__proto__":{"amount":1}}`,
      });
      assert.ok(
        recharge.status === 400 || recharge.status === 422,
        `recharge with __proto__ key: ${recharge.status} ${JSON.stringify(recharge.body)}`,
      );
    }
    // The replayed state equals the live one: verify replays the journal from the first record.
    const restarted = await gateway.stop();
    assert.equal(restarted, 0);
    const verify = await runVerify(gateway.data_dir);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  });
});
