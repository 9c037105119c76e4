// The remedy where the user is (issue #41): a 402 insufficient_balance on every AI protocol
// names the top-up page with the shortfall filled in, in its message, in `x_aihub` beside the
// error, and in headers (for SDKs that keep only the error object); Google's shape adds it
// as a google.rpc.Help link. The code and the protocol's own error shape stay as they were.
// A real gateway process on the embedded defaults, plain fetch.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { dashboardSession } from '../support/dashboard-session.js';
import { createFundedAccount, request, startGateway, type Gateway } from './helpers.js';

let gateway: Gateway;
let key: string;
const BALANCE = 0.01;

before(async () => {
  gateway = await startGateway();
  ({ key } = await createFundedAccount(gateway, BALANCE));
});
after(async () => {
  assert.equal(await gateway.stop(), 0);
});

const say = [{ role: 'user', content: 'hello there' }];
const model = 'service-ai-pro-4';

/** Each protocol's request that the wallet cannot cover, and how to read its error message. */
const PROTOCOLS: {
  name: string;
  path: string;
  headers: () => Record<string, string>;
  body: unknown;
  message: (body: any) => string;
}[] = [
  {
    name: 'chat',
    path: '/v1/chat/completions',
    headers: () => ({ authorization: `Bearer ${key}` }),
    body: { model, messages: say, max_tokens: 2000 },
    message: (body) => body.error.message,
  },
  {
    name: 'responses',
    path: '/v1/responses',
    headers: () => ({ authorization: `Bearer ${key}` }),
    body: { model, input: 'hello there', max_output_tokens: 2000 },
    message: (body) => body.error.message,
  },
  {
    name: 'messages',
    path: '/v1/messages',
    headers: () => ({ 'x-api-key': key }),
    body: { model, messages: say, max_tokens: 2000 },
    message: (body) => body.error.message,
  },
  {
    name: 'gemini',
    path: `/v1beta/models/${model}:generateContent`,
    headers: () => ({ 'x-goog-api-key': key }),
    body: {
      contents: [{ parts: [{ text: 'hello there' }] }],
      generationConfig: { maxOutputTokens: 2000 },
    },
    message: (body) => body.error.message,
  },
  {
    name: 'completions',
    path: '/v1/completions',
    headers: () => ({ authorization: `Bearer ${key}` }),
    body: { model, prompt: 'hello there', max_tokens: 2000 },
    message: (body) => body.error.message,
  },
  {
    name: 'embeddings',
    path: '/v1/embeddings',
    headers: () => ({ authorization: `Bearer ${key}` }),
    body: { model, input: Array.from({ length: 5 }, () => 'hello there '.repeat(300)) },
    message: (body) => body.error.message,
  },
];

for (const protocol of PROTOCOLS) {
  test(`${protocol.name}: the 402 names the top-up page with the shortfall filled in`, async () => {
    const reply = await request(`${gateway.url}${protocol.path}`, {
      headers: protocol.headers(),
      body: protocol.body,
    });
    assert.equal(reply.status, 402, JSON.stringify(reply.body));
    const x = reply.body.x_aihub as {
      request_id: string;
      balance: number;
      required: number;
      shortfall: number;
      currency: string;
      topup_url: string;
    };
    assert.ok(x, `x_aihub beside the error: ${JSON.stringify(reply.body)}`);
    assert.equal(x.request_id, reply.headers.get('x-request-id'));
    assert.equal(x.balance, BALANCE);
    assert.ok(x.required > BALANCE);
    assert.equal(Math.round((x.required - x.balance) * 1e6), Math.round(x.shortfall * 1e6));
    assert.equal(x.currency, 'INR');
    // The amount in the address is the shortfall rounded up to the smallest coin.
    const url = new URL(x.topup_url);
    assert.equal(`${url.origin}${url.pathname}`, `${gateway.url}/wallet`);
    const amount = Number(url.searchParams.get('amount'));
    assert.ok(amount >= x.shortfall && amount - x.shortfall < 0.01, `${amount} vs ${x.shortfall}`);
    assert.match(url.searchParams.get('amount')!, /^\d+\.\d\d$/);
    assert.ok(protocol.message(reply.body).includes(x.topup_url), protocol.message(reply.body));
    assert.equal(reply.headers.get('x-aihub-topup-url'), x.topup_url);
    assert.equal(Number(reply.headers.get('x-aihub-shortfall')), x.shortfall);

    // The protocol's own shape and code are kept.
    if (protocol.name === 'messages') {
      assert.equal(reply.body.type, 'error');
      assert.equal(reply.body.error.type, 'billing_error');
    } else if (protocol.name === 'gemini') {
      assert.equal(reply.body.error.status, 'FAILED_PRECONDITION');
      const details = reply.body.error.details as {
        '@type': string;
        reason?: string;
        links?: unknown;
      }[];
      assert.equal(
        details.find((d) => d['@type'].endsWith('ErrorInfo'))?.reason,
        'insufficient_balance',
      );
      assert.deepEqual(details.find((d) => d['@type'].endsWith('google.rpc.Help'))?.links, [
        { description: `Top up ${x.shortfall} INR`, url: x.topup_url },
      ]);
    } else {
      assert.equal(reply.body.error.code, 'insufficient_balance');
      assert.equal(reply.body.error.type, 'insufficient_balance');
      assert.equal(reply.body.error.param, null);
    }
  });
}

test('an empty wallet: the shortfall is the whole worst case', async () => {
  const broke = await createFundedAccount(gateway, 0);
  const reply = await request(`${gateway.url}/v1/chat/completions`, {
    headers: { authorization: `Bearer ${broke.key}` },
    body: { model, messages: say, max_tokens: 10 },
  });
  assert.equal(reply.status, 402);
  assert.equal(reply.body.x_aihub.balance, 0);
  assert.equal(reply.body.x_aihub.shortfall, reply.body.x_aihub.required);
  // A shortfall below one paisa still asks for one paisa, never for nothing.
  assert.ok(Number(new URL(reply.body.x_aihub.topup_url).searchParams.get('amount')) >= 0.01);
});

test('the named page fills in the amount (sandbox: the instant top-up form), raised to the smallest top-up', async () => {
  const cookie = await dashboardSession(gateway.url, '/signup', {
    name: 'Asha Rao',
    email: 'asha-remedy@example.com',
    password: 'correct horse battery staple',
    password_confirm: 'correct horse battery staple',
  });
  const amountOn = async (query: string) => {
    const page = await fetch(`${gateway.url}/wallet${query}`, { headers: { cookie } });
    assert.equal(page.status, 200);
    return /<input id="amount"[^>]* value="([^"]*)"/.exec(await page.text())?.[1];
  };
  assert.equal(await amountOn('?amount=16.39'), '16.39');
  assert.equal(await amountOn('?amount=0.11'), '1.00');
  assert.equal(await amountOn('?amount=%3Cscript%3E'), '');
  assert.equal(await amountOn(''), '');
});
