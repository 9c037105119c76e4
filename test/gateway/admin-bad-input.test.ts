import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createFundedAccount, startGateway } from './helpers.ts';

test('bad input on every admin route gets a clear 4xx in the error shape, never a 5xx', async () => {
  const gateway = await startGateway();
  try {
    const { account_id, key_id } = await createFundedAccount(gateway, 5);
    const routes: Array<{ method: string; path: string; good: unknown }> = [
      { method: 'POST', path: '/admin/accounts', good: { email: 'new@example.com' } },
      { method: 'GET', path: `/admin/accounts/${account_id}`, good: undefined },
      { method: 'GET', path: '/admin/accounts', good: undefined },
      { method: 'POST', path: `/admin/accounts/${account_id}/keys`, good: { name: 'k' } },
      {
        method: 'POST',
        path: `/admin/accounts/${account_id}/credit`,
        good: { amount: 1, reference: 'r' },
      },
      {
        method: 'POST',
        path: `/admin/accounts/${account_id}/debit`,
        good: { amount: 1, reference: 'r' },
      },
      { method: 'DELETE', path: `/admin/keys/${key_id}`, good: undefined },
    ];
    const auth = { authorization: `Bearer ${gateway.admin_token}` };
    const send = async (
      method: string,
      path: string,
      headers: Record<string, string>,
      body?: string,
    ) => {
      const response = await fetch(`${gateway.url}${path}`, { method, headers, body });
      const text = await response.text();
      let json: any = null;
      try {
        json = JSON.parse(text);
      } catch {
        // checked below
      }
      return { status: response.status, json, text };
    };
    const expect4xx = (
      what: string,
      reply: { status: number; json: any; text: string },
      status?: number,
    ) => {
      assert.ok(
        reply.status >= 400 && reply.status < 500,
        `${what}: got ${reply.status} ${reply.text.slice(0, 200)}`,
      );
      if (status) assert.equal(reply.status, status, `${what}: ${reply.text.slice(0, 200)}`);
      assert.equal(typeof reply.json?.error?.message, 'string', `${what}: error shape`);
      assert.ok(reply.json.error.message.length > 5, `${what}: a clear message`);
      assert.equal(typeof reply.json.error.code, 'string', `${what}: a machine code`);
    };

    for (const route of routes) {
      const name = `${route.method} ${route.path}`;
      expect4xx(`${name} without a token`, await send(route.method, route.path, {}), 401);
      expect4xx(
        `${name} with a wrong token`,
        await send(route.method, route.path, { authorization: 'Bearer wrong' }),
        401,
      );
      expect4xx(
        `${name} with a non-bearer token`,
        await send(route.method, route.path, { authorization: `Basic ${gateway.admin_token}` }),
        401,
      );
      if (route.method !== 'POST') continue;
      const json = { ...auth, 'content-type': 'application/json' };
      expect4xx(
        `${name} malformed JSON`,
        await send('POST', route.path, json, '{"email": "a@'),
        400,
      );
      expect4xx(
        `${name} JSON that is not an object`,
        await send('POST', route.path, json, '[1,2,3]'),
        400,
      );
      expect4xx(`${name} a bare string`, await send('POST', route.path, json, '"x"'), 400);
      expect4xx(
        `${name} huge body`,
        await send('POST', route.path, json, JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) })),
        413,
      );
      const unknown = await send(
        'POST',
        route.path,
        json,
        JSON.stringify({ ...(route.good as object), surprise: 1 }),
      );
      expect4xx(`${name} unknown field`, unknown, 400);
      assert.equal(unknown.json.error.param, 'surprise');
    }

    const json = { ...auth, 'content-type': 'application/json' };
    const wrongTypes: Array<[string, unknown, string]> = [
      ['/admin/accounts', { email: 42 }, 'email'],
      ['/admin/accounts', { email: 'not-an-email' }, 'email'],
      ['/admin/accounts', { email: 'a@b.co', name: ['x'] }, 'name'],
      ['/admin/accounts', {}, 'email'],
      [`/admin/accounts/${account_id}/keys`, { name: 7 }, 'name'],
      [`/admin/accounts/${account_id}/credit`, { amount: '10', reference: 'r' }, 'amount'],
      [`/admin/accounts/${account_id}/credit`, { amount: -1, reference: 'r' }, 'amount'],
      [`/admin/accounts/${account_id}/credit`, { amount: 0, reference: 'r' }, 'amount'],
      [`/admin/accounts/${account_id}/credit`, { amount: 1.001, reference: 'r' }, 'amount'],
      [`/admin/accounts/${account_id}/credit`, { amount: 1e300, reference: 'r' }, 'amount'],
      [`/admin/accounts/${account_id}/credit`, { amount: 1 }, 'reference'],
      [`/admin/accounts/${account_id}/credit`, { amount: 1, reference: '' }, 'reference'],
      [
        `/admin/accounts/${account_id}/credit`,
        { amount: 1, reference: 'x'.repeat(500) },
        'reference',
      ],
      [`/admin/accounts/${account_id}/debit`, { amount: null, reference: 'r' }, 'amount'],
    ];
    for (const [path, body, param] of wrongTypes) {
      const reply = await send('POST', path, json, JSON.stringify(body));
      expect4xx(`POST ${path} ${JSON.stringify(body).slice(0, 60)}`, reply, 400);
      assert.equal(reply.json.error.param, param);
    }
    expect4xx('unknown account', await send('GET', '/admin/accounts/acc_nope', auth), 404);
    expect4xx(
      'credit to unknown account',
      await send(
        'POST',
        '/admin/accounts/acc_nope/credit',
        json,
        JSON.stringify({ amount: 1, reference: 'z' }),
      ),
      404,
    );
    expect4xx(
      'debit beyond the balance',
      await send(
        'POST',
        `/admin/accounts/${account_id}/debit`,
        json,
        JSON.stringify({ amount: 6, reference: 'big' }),
      ),
      402,
    );
    assert.equal(
      (await send('POST', '/admin/accounts', json, JSON.stringify({ email: 'new@example.com' })))
        .status,
      201,
    );
    expect4xx(
      'duplicate email in another case',
      await send('POST', '/admin/accounts', json, JSON.stringify({ email: 'NEW@example.com' })),
      409,
    );
    expect4xx('bad page', await send('GET', '/admin/accounts?page=-1', auth), 400);
    expect4xx(
      'weird content type',
      await send('POST', '/admin/accounts', { ...auth, 'content-type': 'text/plain' }, 'email=a'),
      400,
    );
    assert.ok(
      !gateway.output.some((line) => line.includes('unexpected error')),
      'nothing reached the 500 handler',
    );
  } finally {
    await gateway.stop();
  }
});
