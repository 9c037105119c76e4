// Team keys (issue #39) over real HTTP: a key's spending limit held with the wallet's
// reservation (40 parallel requests never spend past it, on one gateway of the run's store
// and on two PostgreSQL gateways sharing it), its period's reset on an injected clock, its
// model list, its expiry, the codes on every protocol in the protocol's own shape, and the
// official openai SDK's error classes for them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import OpenAI from 'openai';
import { fakeClock, fakeClockGateway } from '../support/fake-clock-gateway.ts';
import { createDatabase } from '../support/postgres.ts';
import { dashboardSession } from '../support/dashboard-session.ts';
import { GatewayClient } from '../../extension/client.ts';
import { keyLimitText, keyLimitTooltip } from '../../extension/keyLimit.ts';
import {
  freshDatabase,
  postgresStoreMissing,
  startGateways,
  stopAll,
} from '../support/multi-gateway.ts';
import {
  admin,
  createFundedAccount,
  request,
  startGatewayWithChat,
  type Gateway,
} from './helpers.ts';

const micros = (units: number) => Math.round(units * 1_000_000);
const BODY = {
  model: 'service-ai-lite',
  messages: [{ role: 'user' as const, content: 'Say something about key limits, please.' }],
  max_tokens: 40,
};
type Billed = { x_aihub: { cost: number; balance: number } };

async function patchKey(
  gateway: Pick<Gateway, 'url' | 'admin_token'>,
  key_id: string,
  body: unknown,
) {
  return request(`${gateway.url}/admin/keys/${key_id}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${gateway.admin_token}` },
    body,
  });
}

/** A second key of the account, created with `limits`. */
async function limitedKey(
  gateway: Pick<Gateway, 'url' | 'admin_token'>,
  account_id: string,
  limits: unknown,
) {
  const created = await admin(gateway).post(`/admin/accounts/${account_id}/keys`, {
    name: 'limited',
    ...(limits as object),
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body as { id: string; key: string; limit: number | null };
}

/** What one request of BODY costs (the builtin engine answers it the same way every time). */
async function costOfOne(gateway: Gateway, key: string): Promise<number> {
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
  const reply = (await client.chat.completions.create(BODY)) as unknown as Billed;
  return micros(reply.x_aihub.cost);
}

/** 40 requests at once on `gateways` in turn; the cost of each one answered, and the refusals' codes. */
async function forty(gateways: Gateway[], key: string) {
  const results = await Promise.all(
    Array.from({ length: 40 }, async (_, i) => {
      const gateway = gateways[i % gateways.length]!;
      const reply = await request(`${gateway.url}/v1/chat/completions`, {
        headers: { authorization: `Bearer ${key}` },
        body: BODY,
      });
      return reply;
    }),
  );
  const spent = results
    .filter((r) => r.status === 200)
    .reduce((sum, r) => sum + micros((r.body as Billed).x_aihub.cost), 0);
  const refused = results.filter((r) => r.status !== 200);
  return { spent, refused, answered: results.length - refused.length };
}

test('40 parallel requests on a key with a small limit never spend past it; the wallet is charged what the key spent', async () => {
  const gateway = await startGatewayWithChat({
    engines: { builtin: { type: 'builtin', token_interval_ms: 2 } },
  });
  try {
    const { account_id, key } = await createFundedAccount(gateway, 100);
    const one_micros = await costOfOne(gateway, key);
    assert.ok(one_micros > 0);
    const limit_micros = one_micros * 10;
    const limited = await limitedKey(gateway, account_id, { limit: limit_micros / 1e6 });
    assert.equal(limited.limit, limit_micros / 1e6);
    const before = (await admin(gateway).get(`/admin/accounts/${account_id}`)).body.balance;
    const { spent, refused, answered } = await forty([gateway], limited.key);
    assert.ok(spent <= limit_micros, `spent ${spent} > limit ${limit_micros}`);
    assert.ok(answered >= 1 && refused.length >= 30, `${answered} answered`);
    for (const r of refused) {
      assert.equal(r.status, 402, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'key_limit_exceeded');
      assert.equal(r.headers.get('retry-after'), null, 'no reset: no Retry-After');
      assert.match(r.body.error.message, /does not reset/);
    }
    const after = (await admin(gateway).get(`/admin/accounts/${account_id}`)).body.balance;
    assert.equal(micros(before) - micros(after), spent);
    // The account's other key is not held to this key's limit.
    assert.ok((await costOfOne(gateway, key)) > 0);
  } finally {
    await gateway.stop();
  }
});

const pg_missing = await postgresStoreMissing();

test(
  'two PostgreSQL gateways sharing a limited key: 40 parallel requests over both never spend past it',
  { skip: pg_missing, timeout: 180_000 },
  async () => {
    const database_url = await freshDatabase();
    const gateways = await startGateways(database_url, 2, {
      config: {
        chat: {
          rate_limit: { requests_per_minute: 6000 },
          engines: { builtin: { type: 'builtin', token_interval_ms: 2 } },
        },
      },
    });
    try {
      const { account_id, key } = await createFundedAccount(gateways[0]!, 100);
      const one_micros = await costOfOne(gateways[0]!, key);
      const limit_micros = one_micros * 10;
      const limited = await limitedKey(gateways[0]!, account_id, {
        limit: limit_micros / 1e6,
        limit_reset: 'monthly',
      });
      const { spent, refused, answered } = await forty(gateways, limited.key);
      assert.ok(spent <= limit_micros, `spent ${spent} > limit ${limit_micros}`);
      assert.ok(answered >= 1 && refused.length >= 30, `${answered} answered`);
      for (const r of refused) {
        assert.equal(r.status, 402, JSON.stringify(r.body));
        assert.equal(r.body.error.code, 'key_limit_exceeded');
        assert.ok(Number(r.headers.get('retry-after')) > 0);
      }
      // Nothing stays held: once every request ended, the key can spend what its month has left.
      const left = limit_micros - spent;
      if (left >= one_micros) assert.ok((await costOfOne(gateways[1]!, limited.key)) > 0);
    } finally {
      await stopAll(gateways);
    }
  },
);

test('a daily limit resets at midnight in the configured zone (IST by default), on an injected clock', async () => {
  // 23:59 IST on 7 December 2026.
  const clock = fakeClock('2026-12-07T18:29:00Z');
  const url = process.env.AIHUB_TEST_DATABASE_URL
    ? await createDatabase(process.env.AIHUB_TEST_DATABASE_URL)
    : undefined;
  const gw = await fakeClockGateway({}, clock, url);
  try {
    const account = await gw.api.post('/admin/accounts', { email: 'reset@example.com' });
    const account_id = account.body.id as string;
    await gw.api.post(`/admin/accounts/${account_id}/credit`, { amount: 50, reference: 'r1' });
    const owner = await gw.api.post(`/admin/accounts/${account_id}/keys`, {});
    const one_micros = await costOfOne({ url: gw.url } as Gateway, owner.body.key);
    const limited = await limitedKey(
      { url: gw.url, admin_token: 'fake-clock-admin-token-0123456789abcdef' },
      account_id,
      { limit: (one_micros * 2) / 1e6, limit_reset: 'daily' },
    );
    const chat = () =>
      gw.call('POST', '/v1/chat/completions', { authorization: `Bearer ${limited.key}` }, BODY);
    assert.equal((await chat()).status, 200);
    assert.equal((await chat()).status, 200);
    const refused = await chat();
    assert.equal(refused.status, 402, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'key_limit_exceeded');
    assert.match(refused.body.error.message, /resets at 2026-12-08T00:00:00\+05:30/);
    assert.equal(refused.headers.get('retry-after'), '60');
    // 00:00:01 IST on the 8th: a new day, a new allowance.
    clock.set('2026-12-07T18:30:01Z');
    assert.equal((await chat()).status, 200);
    assert.equal((await chat()).status, 200);
    assert.equal((await chat()).status, 402);
  } finally {
    await gw.stop();
  }
});

/** Each protocol's request for `model` with `key`, and where its error's code is read. */
function protocolCalls(url: string, key: string, model: string) {
  const bearer = { authorization: `Bearer ${key}` };
  return [
    {
      name: 'chat',
      call: () =>
        request(`${url}/v1/chat/completions`, { headers: bearer, body: { ...BODY, model } }),
      code: (b: any) => b.error.code,
    },
    {
      name: 'responses',
      call: () =>
        request(`${url}/v1/responses`, {
          headers: bearer,
          body: { model, input: 'hello', max_output_tokens: 40 },
        }),
      code: (b: any) => b.error.code,
    },
    {
      name: 'completions',
      call: () =>
        request(`${url}/v1/completions`, {
          headers: bearer,
          body: { model, prompt: 'def add(a, b):', max_tokens: 40 },
        }),
      code: (b: any) => b.error.code,
    },
    {
      name: 'embeddings',
      call: () =>
        request(`${url}/v1/embeddings`, { headers: bearer, body: { model, input: 'hello there' } }),
      code: (b: any) => b.error.code,
    },
    {
      name: 'messages',
      call: () =>
        request(`${url}/v1/messages`, {
          headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
          body: { model, max_tokens: 40, messages: [{ role: 'user', content: 'hello' }] },
        }),
      // Anthropic's shape has no code: its type, and the message.
      code: (b: any) => `${b.type}/${b.error.type}`,
    },
    {
      name: 'gemini',
      call: () =>
        request(`${url}/v1beta/models/${model}:generateContent`, {
          headers: { 'x-goog-api-key': key },
          body: { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] },
        }),
      code: (b: any) =>
        b.error.details.find((d: any) => d['@type'].endsWith('ErrorInfo')).reason as string,
    },
  ];
}

const ANTHROPIC = {
  key_limit_exceeded: 'error/billing_error',
  model_not_allowed: 'error/permission_error',
  key_expired: 'error/authentication_error',
};

test("the codes on every protocol, in its own shape: 403 model_not_allowed, 402 key_limit_exceeded, 401 key_expired; /v1/models lists the key's tiers", async () => {
  const gateway = await startGatewayWithChat({});
  try {
    const { account_id } = await createFundedAccount(gateway, 100);
    const only_max = await limitedKey(gateway, account_id, { models: ['service-ai-max'] });
    const listed = await request(`${gateway.url}/v1/models`, {
      headers: { authorization: `Bearer ${only_max.key}` },
    });
    assert.deepEqual(
      listed.body.data.map((m: { id: string }) => m.id),
      ['service-ai-max'],
    );
    const gemini_list = await request(`${gateway.url}/v1beta/models`, {
      headers: { 'x-goog-api-key': only_max.key },
    });
    assert.deepEqual(
      gemini_list.body.models.map((m: { name: string }) => m.name),
      ['models/service-ai-max'],
    );
    for (const p of protocolCalls(gateway.url, only_max.key, 'service-ai-lite')) {
      const reply = await p.call();
      assert.equal(reply.status, 403, `${p.name}: ${JSON.stringify(reply.body)}`);
      assert.equal(
        p.code(reply.body),
        p.name === 'messages' ? ANTHROPIC.model_not_allowed : 'model_not_allowed',
        p.name,
      );
    }

    const spent_out = await limitedKey(gateway, account_id, { limit: 0, limit_reset: 'weekly' });
    for (const p of protocolCalls(gateway.url, spent_out.key, 'service-ai-lite')) {
      const reply = await p.call();
      assert.equal(reply.status, 402, `${p.name}: ${JSON.stringify(reply.body)}`);
      assert.equal(
        p.code(reply.body),
        p.name === 'messages' ? ANTHROPIC.key_limit_exceeded : 'key_limit_exceeded',
        p.name,
      );
      assert.ok(Number(reply.headers.get('retry-after')) > 0, p.name);
    }

    const expiring = await limitedKey(gateway, account_id, {
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    assert.equal(
      (await protocolCalls(gateway.url, expiring.key, 'service-ai-lite')[0]!.call()).status,
      200,
    );
    const past = await patchKey(gateway, expiring.id, { expires_at: '2020-01-01T00:00:00Z' });
    assert.equal(past.status, 200, JSON.stringify(past.body));
    assert.equal(past.body.expires_at, '2020-01-01T00:00:00.000Z');
    for (const p of protocolCalls(gateway.url, expiring.key, 'service-ai-lite')) {
      const reply = await p.call();
      assert.equal(reply.status, 401, `${p.name}: ${JSON.stringify(reply.body)}`);
      assert.equal(
        p.code(reply.body),
        p.name === 'messages' ? ANTHROPIC.key_expired : 'key_expired',
        p.name,
      );
    }
  } finally {
    await gateway.stop();
  }
});

test('the official openai SDK surfaces each refusal as its own error class with the code', async () => {
  const gateway = await startGatewayWithChat({});
  try {
    const { account_id } = await createFundedAccount(gateway, 100);
    const client = (key: string) =>
      new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    const only_max = await limitedKey(gateway, account_id, { models: ['service-ai-max'] });
    await assert.rejects(client(only_max.key).chat.completions.create(BODY), (error: unknown) => {
      assert.ok(error instanceof OpenAI.PermissionDeniedError, String(error));
      assert.equal(error.code, 'model_not_allowed');
      assert.equal(error.param, 'model');
      return true;
    });
    const none_left = await limitedKey(gateway, account_id, { limit: 0 });
    await assert.rejects(client(none_left.key).chat.completions.create(BODY), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError, String(error));
      assert.equal(error.status, 402);
      assert.equal(error.code, 'key_limit_exceeded');
      return true;
    });
    const expired = await limitedKey(gateway, account_id, {
      expires_at: '2021-06-01T00:00:00+05:30',
    });
    await assert.rejects(client(expired.key).chat.completions.create(BODY), (error: unknown) => {
      assert.ok(error instanceof OpenAI.AuthenticationError, String(error));
      assert.equal(error.code, 'key_expired');
      return true;
    });
    // The wallet's own 402 stays insufficient_balance.
    const { key: poor } = await createFundedAccount(gateway, 0);
    await assert.rejects(client(poor).chat.completions.create(BODY), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError);
      assert.equal(error.status, 402);
      assert.equal(error.code, 'insufficient_balance');
      return true;
    });
  } finally {
    await gateway.stop();
  }
});

test('limits are validated at the edge, changed with PATCH and every change is in the audit log', async () => {
  const gateway = await startGatewayWithChat({});
  try {
    const { account_id } = await createFundedAccount(gateway, 1);
    const api = admin(gateway);
    const bad = [
      { limit: -1 },
      { limit: 'ten' },
      { limit_reset: 'hourly' },
      { models: ['gpt-4o'] },
      { models: [] },
      { expires_at: 'tomorrow' },
      { requests_per_minute: 0 },
      { limit: 1.0000001 },
    ];
    for (const body of bad) {
      const reply = await api.post(`/admin/accounts/${account_id}/keys`, body);
      assert.equal(reply.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(reply.body)}`);
    }
    const key = await limitedKey(gateway, account_id, {
      limit: 2.5,
      limit_reset: 'monthly',
      models: ['service-ai-lite', 'service-ai-lite'],
      requests_per_minute: 30,
    });
    const changed = await patchKey(gateway, key.id, { limit: null, models: null, name: 'ci' });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal(changed.body.limit, null);
    assert.equal(changed.body.limit_reset, 'monthly');
    assert.equal(changed.body.requests_per_minute, 30);
    assert.equal((await patchKey(gateway, key.id, {})).status, 400);
    assert.equal((await patchKey(gateway, 'key_nope', { limit: 1 })).status, 404);
    const account = await api.get(`/admin/accounts/${account_id}`);
    const listed = account.body.keys.find((k: { id: string }) => k.id === key.id);
    assert.equal(listed.name, 'ci');
    assert.equal(listed.limit, null);
    const audit = await api.get(`/admin/audit?account_id=${account_id}`);
    assert.equal(audit.status, 200, JSON.stringify(audit.body));
    const actions = audit.body.data.map((r: { action: string }) => r.action);
    assert.ok(actions.includes('key.create') && actions.includes('key.update'), actions.join());
    const created = audit.body.data.find((r: { action: string }) => r.action === 'key.create');
    assert.match(created.detail, /"limit":2.5/);
    assert.match(created.detail, /"models":\["service-ai-lite"\]/);
  } finally {
    await gateway.stop();
  }
});

test("a key's own requests and tokens per minute, under the account's: 429 with Retry-After", async () => {
  const gateway = await startGatewayWithChat({});
  try {
    const { account_id, key } = await createFundedAccount(gateway, 100);
    const chat = (k: string) =>
      request(`${gateway.url}/v1/chat/completions`, {
        headers: { authorization: `Bearer ${k}` },
        body: BODY,
      });
    const rpm = await limitedKey(gateway, account_id, { requests_per_minute: 2 });
    assert.equal((await chat(rpm.key)).status, 200);
    assert.equal((await chat(rpm.key)).status, 200);
    const third = await chat(rpm.key);
    assert.equal(third.status, 429, JSON.stringify(third.body));
    assert.equal(third.body.error.code, 'rate_limit_exceeded');
    assert.match(third.body.error.message, /this key's own limit of 2 requests per minute/);
    assert.ok(Number(third.headers.get('retry-after')) > 0);
    const tpm = await limitedKey(gateway, account_id, { tokens_per_minute: 10 });
    assert.equal((await chat(tpm.key)).status, 200); // admitted with a full bucket, uses more than 10
    const next = await chat(tpm.key);
    assert.equal(next.status, 429, JSON.stringify(next.body));
    assert.match(next.body.error.message, /10 tokens per minute/);
    // The account's other key is not held to them.
    assert.equal((await chat(key)).status, 200);
  } finally {
    await gateway.stop();
  }
});

test("GET /v1/key answers the key's limit, what is left and its usage; the owner's /v1/keys manages the account's keys", async () => {
  const gateway = await startGatewayWithChat({});
  try {
    const { key: owner_key } = await createFundedAccount(gateway, 100);
    const owner = { authorization: `Bearer ${owner_key}` };
    const made = await request(`${gateway.url}/v1/keys`, {
      headers: owner,
      body: { name: 'agent', limit: 1, limit_reset: 'daily', models: ['service-ai-lite'] },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const agent = { authorization: `Bearer ${made.body.key}` };
    const fresh = await request(`${gateway.url}/v1/key`, { headers: agent });
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    assert.deepEqual(
      { ...fresh.body.data, limit_resets_at: undefined },
      {
        name: 'agent',
        label: made.body.prefix,
        limit: 1,
        limit_remaining: 1,
        limit_reset: 'daily',
        limit_resets_at: undefined,
        usage: 0,
        usage_daily: 0,
        usage_weekly: 0,
        usage_monthly: 0,
        models: ['service-ai-lite'],
        expires_at: null,
        rate_limit: { requests: 6000, interval: '1m', tokens_per_minute: null },
        currency: 'INR',
        time_zone: '+05:30',
      },
    );
    const reply = await request(`${gateway.url}/v1/chat/completions`, {
      headers: agent,
      body: BODY,
    });
    assert.equal(reply.status, 200);
    const cost = micros(reply.body.x_aihub.cost);
    const after = (await request(`${gateway.url}/v1/key`, { headers: agent })).body.data;
    assert.equal(micros(after.usage), cost);
    assert.equal(micros(after.usage_daily), cost);
    assert.equal(micros(after.usage_monthly), cost);
    assert.equal(micros(after.limit_remaining), 1_000_000 - cost);
    // The key itself may not manage keys (it could raise its own limit).
    const own = await request(`${gateway.url}/v1/keys/${made.body.id}`, {
      method: 'PATCH',
      headers: agent,
      body: { limit: 1000 },
    });
    assert.equal(own.status, 403, JSON.stringify(own.body));
    assert.equal(own.body.error.code, 'key_not_permitted');
    const raised = await request(`${gateway.url}/v1/keys/${made.body.id}`, {
      method: 'PATCH',
      headers: owner,
      body: { limit: 2 },
    });
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    assert.equal(raised.body.limit, 2);
    const listed = await request(`${gateway.url}/v1/keys`, { headers: owner });
    assert.equal(listed.body.data.length, 2);
    assert.ok(!JSON.stringify(listed.body).includes(made.body.key), 'no secret in the list');
    const bad = await request(`${gateway.url}/v1/keys`, { headers: owner, body: { limit: -2 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'limit');
    const gone = await request(`${gateway.url}/v1/keys/${made.body.id}`, {
      method: 'DELETE',
      headers: owner,
    });
    assert.equal(gone.status, 204);
    assert.equal((await request(`${gateway.url}/v1/key`, { headers: agent })).status, 401);
    const other = await createFundedAccount(gateway, 0);
    const foreign = await request(`${gateway.url}/v1/keys/${other.key_id}`, {
      method: 'DELETE',
      headers: owner,
    });
    assert.equal(foreign.status, 404, JSON.stringify(foreign.body));
  } finally {
    await gateway.stop();
  }
});

test('the admin API lists the keys near or past their limits, fullest first', async () => {
  const gateway = await startGatewayWithChat({});
  try {
    const { account_id, key } = await createFundedAccount(gateway, 100);
    const one_micros = await costOfOne(gateway, key);
    const none = await limitedKey(gateway, account_id, { limit: 0, limit_reset: 'daily' });
    const roomy = await limitedKey(gateway, account_id, { limit: 1000 });
    const most = await limitedKey(gateway, account_id, { limit: (one_micros * 1.2) / 1e6 });
    const chat = await request(`${gateway.url}/v1/chat/completions`, {
      headers: { authorization: `Bearer ${most.key}` },
      body: BODY,
    });
    assert.equal(chat.status, 200, JSON.stringify(chat.body));
    const near = await admin(gateway).get('/admin/keys/limits?threshold=0.8');
    assert.equal(near.status, 200, JSON.stringify(near.body));
    const ids = near.body.data.map((k: { id: string }) => k.id);
    assert.deepEqual(ids, [none.id, most.id]);
    assert.equal(near.body.data[0].exceeded, true);
    assert.equal(near.body.data[1].exceeded, false);
    assert.equal(micros(near.body.data[1].spent), one_micros);
    assert.ok(!ids.includes(roomy.id));
    assert.equal((await admin(gateway).get('/admin/keys/limits?threshold=x')).status, 400);
  } finally {
    await gateway.stop();
  }
});

test('the dashboard creates a key with a limit, tiers and expiry, and shows its spend against the limit with a bar', async () => {
  const gateway = await startGatewayWithChat({});
  try {
    const cookie = await dashboardSession(gateway.url, '/signup', {
      name: 'Team Lead',
      email: 'lead-keys@example.com',
      password: 'correct horse battery staple',
      password_confirm: 'correct horse battery staple',
    });
    const page = await fetch(`${gateway.url}/api-keys`, { headers: { cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
    assert.ok(csrf);
    const post = (fields: [string, string][]) =>
      fetch(`${gateway.url}/api-keys`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams([...fields, ['_csrf', csrf]]),
        redirect: 'manual',
      });
    const refused = await post([
      ['name', 'agent'],
      ['limit', '-3'],
    ]);
    assert.equal(refused.status, 422);
    assert.match(await refused.text(), /class="error" role="alert">[^<]*0/);
    const created = await post([
      ['name', 'agent'],
      ['limit', '2.5'],
      ['limit_reset', 'monthly'],
      ['models', 'service-ai-lite'],
      ['models', 'service-ai-max'],
      ['expires_on', '2099-01-31'],
    ]);
    assert.equal(created.status, 303);
    const shown = await (await fetch(`${gateway.url}/api-keys`, { headers: { cookie } })).text();
    const secret = /<output id="new-key"[^>]*>([^<]+)</.exec(shown)?.[1];
    assert.ok(secret);
    const info = await request(`${gateway.url}/v1/key`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    assert.equal(info.body.data.limit, 2.5);
    assert.equal(info.body.data.limit_reset, 'monthly');
    assert.deepEqual(info.body.data.models, ['service-ai-lite', 'service-ai-max']);
    assert.equal(info.body.data.expires_at, '2099-01-30T18:30:00.000Z');
    // An account with no money: a free request, then the bar shows 0 of 2.50 monthly.
    const table = await (await fetch(`${gateway.url}/api-keys`, { headers: { cookie } })).text();
    assert.match(table, /<meter min="0" max="2500000"[^>]*value="0"/);
    assert.match(table, /data-key-spend="key_[0-9a-f]+">₹0\.00 of ₹2\.50 monthly/);
  } finally {
    await gateway.stop();
  }
});

test("the extension's client reads the key's remaining limit from GET /v1/key, for the status bar beside the balance", async () => {
  const gateway = await startGatewayWithChat({});
  try {
    const { account_id, key } = await createFundedAccount(gateway, 10);
    const limited = await limitedKey(gateway, account_id, { limit: 1.5, limit_reset: 'daily' });
    const client = (k: string) =>
      new GatewayClient({ apiBase: `${gateway.url}/v1`, root: gateway.url, apiKey: k });
    const info = await client(limited.key).keyLimit();
    assert.equal(keyLimitText(info, 'INR'), ' · key ₹1.50 left today');
    assert.match(keyLimitTooltip(info, 'INR'), /₹1\.50 left of ₹1\.50 \(resets daily\)/);
    // A key without a limit shows the balance alone.
    assert.equal(keyLimitText(await client(key).keyLimit(), 'INR'), '');
  } finally {
    await gateway.stop();
  }
});
