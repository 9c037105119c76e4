// Issue #25, item 13: /openapi.json lacked the /v1 protocols besides chat (responses,
// messages, count_tokens, embeddings, completions) and three admin routes; outbound API-log
// rows carried the whole webhook URL, userinfo and query included. Now the document lists
// every route a client can call (the /v1 protocols of CONTRACT.md, and every /api and /admin
// JSON route the gateway registers, read from the gateway's own route table), each POST with
// its request schema; and webhook attempts are logged with scheme, host and path only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { routeTable } from '../support/route-table.ts';
import { admin, request, startGateway } from './helpers.ts';
import {
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  waitFor,
} from '../support/payments-helpers.ts';

/** The /v1 routes a client of CONTRACT.md calls. */
const V1_ROUTES = [
  'POST /v1/chat/completions',
  'POST /v1/responses',
  'POST /v1/messages',
  'POST /v1/messages/count_tokens',
  'POST /v1/embeddings',
  'POST /v1/completions',
  'GET /v1/models',
  'GET /v1/models/{model}',
  'GET /v1/balance',
  'POST /v1beta/models/{model}:generateContent',
  'POST /v1beta/models/{model}:streamGenerateContent',
  'POST /v1beta/models/{model}:countTokens',
  'POST /v1/models/{model}:generateContent',
  'GET /v1beta/models',
  'GET /v1beta/models/{model}',
];

/** Dashboard and console pages (HTML) and the gateway's own plumbing are not API routes. */
const notApi = (path: string) =>
  !(
    path.startsWith('/api/') ||
    path.startsWith('/admin/') ||
    path.startsWith('/v1/') ||
    path.startsWith('/v1beta/')
  ) ||
  path.startsWith('/admin/console') ||
  path.startsWith('/admin/login') ||
  path.startsWith('/admin/logout');

test('item 13: /openapi.json lists every /v1 protocol and every /api and /admin route the gateway serves, POSTs with their request schema', async () => {
  const gateway = await startGateway();
  try {
    const reply = await request(`${gateway.url}/openapi.json`);
    assert.equal(reply.status, 200);
    const paths = reply.body.paths as Record<string, Record<string, any>>;
    const documented = new Set(
      Object.entries(paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
      ),
    );
    const missing = V1_ROUTES.filter((route) => !documented.has(route));
    for (const route of await routeTable()) {
      if (notApi(route.path)) continue;
      const key = `${route.method} ${route.path.replace(/(?<=\/):([A-Za-z_]+)/g, '{$1}')}`;
      if (!documented.has(key)) missing.push(key);
    }
    assert.deepEqual(missing, [], 'routes the gateway serves that the document does not list');
    for (const route of V1_ROUTES.filter((r) => r.startsWith('POST'))) {
      const path = route.slice(5);
      const schema = paths[path]!.post.requestBody?.content['application/json']?.schema;
      assert.ok(
        path.includes('/models/') ? schema?.properties?.contents : schema?.properties?.model,
        `${route} documents its request body`,
      );
    }
    assert.deepEqual(
      paths['/v1/messages']!.post.responses['402'].content['application/json'].schema,
      { $ref: '#/components/schemas/AnthropicError' },
      "/v1/messages answers errors in Anthropic's shape",
    );
    assert.ok(reply.body.components.schemas.AnthropicError);
    assert.deepEqual(
      paths['/v1beta/models/{model}:generateContent']!.post.responses['402'].content[
        'application/json'
      ].schema,
      { $ref: '#/components/schemas/GoogleError' },
      "Gemini's routes answer errors in Google's shape",
    );
    assert.ok(paths['/admin/kyc/{accountId}']!.get);
    assert.ok(paths['/admin/kyc/{accountId}/documents/{docId}']!.get);
    assert.ok(paths['/admin/transactions/{txnId}']!.get);
  } finally {
    await gateway.stop();
  }
});

test("item 13: webhook attempts are logged (API-log reports, JSON and CSV, account and admin) without the URL's userinfo, query or fragment", async () => {
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end('ok'));
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const port = (receiver.address() as { port: number }).port;
  const gw = await startPaymentsGateway(paymentsConfig());
  try {
    const { account_id, headers } = await onboard(gw, 1_000, { recharge: true });
    const url = `http://hookuser:hookpass@127.0.0.1:${port}/hooks/aihub?token=s3cr3t-query#frag`;
    assert.equal(
      (await request(`${gw.url}/api/webhook`, { method: 'PUT', headers, body: { url } })).status,
      200,
    );
    const paid = await request(`${gw.url}/api/recharge`, {
      headers,
      body: { operator_id: 1, number: '9876543210', amount: 10 },
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const outbound = async () =>
      (
        (await request(`${gw.url}/api/reports/api-logs`, { headers })).body.data.rows as any[]
      ).filter((row) => row.direction === 'outbound');
    await waitFor(
      async () => (await outbound()).length > 0,
      () => 'a webhook attempt in the API log',
    );
    const [row] = await outbound();
    assert.equal(row.path, `http://127.0.0.1:${port}/hooks/aihub`);
    const csv = await (
      await fetch(`${gw.url}/api/reports/api-logs?format=csv`, { headers })
    ).text();
    const admin_report = JSON.stringify(
      (await admin(gw).get(`/admin/reports/api-logs?account_id=${account_id}`)).body,
    );
    for (const text of [JSON.stringify(await outbound()), csv, admin_report])
      for (const secret of ['hookuser', 'hookpass', 's3cr3t-query', 'frag'])
        assert.ok(!text.includes(secret), `${secret} in a report: ${text.slice(0, 300)}`);
  } finally {
    await gw.stop();
    receiver.close();
  }
});
