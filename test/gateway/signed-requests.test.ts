// Signed /api requests (issue #13, "Encrypted transactions"), opt-in per account: with a
// signing secret, every /api call carries X-AIHub-Timestamp and X-AIHub-Signature =
// "v2=" + hex HMAC-SHA256(secret, "v2\n" + timestamp + "\n" + METHOD + "\n" + path?query +
// "\n" + raw body) (issue #25, item 3: the first scheme signed timestamp + "." + body only);
// missing, wrong, stale and replayed signatures are 401 in the /api error shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { admin, filesUnder, request, tempDir } from './helpers.ts';
import {
  VALID_KYC,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
} from '../support/payments-helpers.ts';
import { createAccount, createApiKey } from '../../gateway/accounts/accounts.ts';
import { signingSecretAad } from '../../gateway/payments/sealing.ts';
import { Store } from '../../gateway/store/store.ts';
import { Sealer, parseKey } from '../../gateway/util/sealed.ts';
import { PAYMENT_HISTORY_TAGS } from '../../gateway/payments/history-tags.ts';

const now_s = () => Math.floor(Date.now() / 1000);

/** The signing recipe of docs/payments-api.md (v2): method and path with query, then the body. */
function sign(
  secret: string,
  method: string,
  target: string,
  body: string | Buffer = '',
  timestamp: number | string = now_s(),
) {
  const signature = createHmac('sha256', secret)
    .update(`v2\n${timestamp}\n${method}\n${target}\n`)
    .update(body)
    .digest('hex');
  return { 'X-AIHub-Timestamp': String(timestamp), 'X-AIHub-Signature': `v2=${signature}` };
}

/** The first scheme (v1): timestamp + "." + body, the bare hex. */
function signV1(secret: string, body: string | Buffer = '', timestamp: number | string = now_s()) {
  const signature = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  return { 'X-AIHub-Timestamp': String(timestamp), 'X-AIHub-Signature': signature };
}

const BALANCE = '/api/wallet/balance';

test('signed requests: opt-in by the admin API; missing, wrong, stale, replayed and altered requests are 401; off again', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { account_id, headers } = await onboard(gw, 1_000);
    const url = (path: string) => `${gw.url}${path}`;
    assert.equal(
      (await request(url('/api/wallet/balance'), { headers })).status,
      200,
      'unsigned while signing is off',
    );

    const enabled = await admin(gw).post(`/admin/accounts/${account_id}/signing-secret`, {});
    assert.equal(enabled.status, 201);
    const secret = enabled.body.secret as string;
    assert.match(secret, /^sigsec_[0-9a-f]{64}$/);
    const viewed = await admin(gw).get(`/admin/accounts/${account_id}`);
    assert.equal(viewed.body.request_signing.enabled, true);
    assert.ok(!JSON.stringify(viewed.body).includes(secret), 'the secret is shown once only');

    const missing = await request(url('/api/wallet/balance'), { headers });
    assert.equal(missing.status, 401);
    assert.equal(missing.body.status, false);
    assert.equal(missing.body.error.code, 'signature_required');
    assert.equal(typeof missing.body.message, 'string');

    const signed = sign(secret, 'GET', BALANCE);
    assert.equal(
      (await request(url('/api/wallet/balance'), { headers: { ...headers, ...signed } })).status,
      200,
    );
    const replayed = await request(url('/api/wallet/balance'), {
      headers: { ...headers, ...signed },
    });
    assert.equal(replayed.status, 401);
    assert.equal(replayed.body.error.code, 'signature_replayed');

    const now = Math.floor(Date.now() / 1000);
    const stale = await request(url('/api/wallet/balance'), {
      headers: { ...headers, ...sign(secret, 'GET', BALANCE, '', now - 301) },
    });
    assert.equal(stale.body.error.code, 'signature_expired');
    // An hour ahead, not 301 s: `now` was read before the requests above, and on a loaded
    // machine the gateway's clock may already be a second or more past it, which brought
    // now + 301 back inside the 300 s window (failed 2 runs in 4 beside another suite).
    const future = await request(url('/api/wallet/balance'), {
      headers: { ...headers, ...sign(secret, 'GET', BALANCE, '', now + 3600) },
    });
    assert.equal(future.body.error.code, 'signature_expired');
    const wrong_secret = await request(url('/api/wallet/balance'), {
      headers: { ...headers, ...sign('sigsec_wrong', 'GET', BALANCE) },
    });
    assert.equal(wrong_secret.status, 401);
    assert.equal(wrong_secret.body.error.code, 'signature_invalid');
    const garbage = await request(url('/api/wallet/balance'), {
      headers: { ...headers, 'X-AIHub-Timestamp': String(now), 'X-AIHub-Signature': 'zz' },
    });
    assert.equal(garbage.body.error.code, 'signature_invalid');

    // A POST: the signature covers the raw body; the same signature on another body is refused and moves no money.
    const raw = JSON.stringify({ operator_id: 1, number: '9876543210', amount: 100 });
    // Signed at `now` (not at the clock's second now): the altered request below is signed at
    // now + 1 over the same bytes, and if a second had passed by here the two signatures were
    // one, refused as replayed before the body was checked (seen under load).
    const paid = await request(url('/api/recharge'), {
      headers: { ...headers, ...sign(secret, 'POST', '/api/recharge', raw, now) },
      raw,
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.status, true);
    const balance_after = (
      await request(url('/api/wallet/balance'), {
        headers: { ...headers, ...sign(secret, 'GET', BALANCE, '', `${now}.5`) },
      })
    ).body.data.balance;
    assert.equal(
      typeof balance_after,
      'number',
      'a fractional timestamp makes two identical calls in one second distinct',
    );
    const altered_raw = JSON.stringify({ operator_id: 1, number: '9876543210', amount: 900 });
    const altered = await request(url('/api/recharge'), {
      headers: { ...headers, ...sign(secret, 'POST', '/api/recharge', raw, now + 1) },
      raw: altered_raw,
    });
    assert.equal(altered.status, 401);
    assert.equal(altered.body.error.code, 'signature_invalid');
    assert.equal(
      (
        await request(url('/api/wallet/balance'), {
          headers: { ...headers, ...sign(secret, 'GET', BALANCE, '', now + 2) },
        })
      ).body.data.balance,
      balance_after,
    );
    const other_raw = JSON.stringify({ operator_id: 1, number: '9876543211', amount: 50 });
    const upper = sign(secret, 'POST', '/api/recharge', other_raw, now + 3);
    upper['X-AIHub-Signature'] = `v2=${upper['X-AIHub-Signature'].slice(3).toUpperCase()}`;
    assert.equal(
      (await request(url('/api/recharge'), { headers: { ...headers, ...upper }, raw: other_raw }))
        .status,
      200,
      'hex digits in either case',
    );

    // A multipart upload (read by its route, not the JSON parser) is covered too.
    const form = new FormData();
    for (const [name, value] of Object.entries(VALID_KYC)) form.set(name, value);
    form.append(
      'pan_document',
      new Blob([new Uint8Array(Buffer.from('%PDF-1.4\n%%EOF\n'))]),
      'pan.pdf',
    );
    const encoded = new Response(form);
    const content_type = encoded.headers.get('content-type')!;
    const multipart = Buffer.from(await encoded.arrayBuffer());
    const upload = (extra: Record<string, string>, body: Buffer) =>
      fetch(url('/api/kyc'), {
        method: 'POST',
        headers: { ...headers, ...extra, 'content-type': content_type },
        body: new Uint8Array(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const tampered = Buffer.from(multipart);
    tampered[tampered.indexOf('%PDF') + 5] = 0x39;
    const bad_upload = await upload(sign(secret, 'POST', '/api/kyc', multipart, now + 4), tampered);
    assert.equal(bad_upload.status, 401);
    assert.equal(bad_upload.body.error.code, 'signature_invalid');
    const good_upload = await upload(
      sign(secret, 'POST', '/api/kyc', multipart, now + 5),
      multipart,
    );
    assert.equal(
      good_upload.status,
      409,
      `past the signature, the approved eKYC refuses a resubmission: ${JSON.stringify(good_upload.body)}`,
    );

    // Rotation: the old secret stops at once; the new one works.
    const rotated = await admin(gw).post(`/admin/accounts/${account_id}/signing-secret`, {});
    assert.equal(rotated.status, 201);
    assert.notEqual(rotated.body.secret, secret);
    assert.equal(
      (
        await request(url('/api/wallet/balance'), {
          headers: { ...headers, ...sign(secret, 'GET', BALANCE, '', now + 6) },
        })
      ).body.error.code,
      'signature_invalid',
    );
    assert.equal(
      (
        await request(url('/api/wallet/balance'), {
          headers: { ...headers, ...sign(rotated.body.secret, 'GET', BALANCE, '', now + 6) },
        })
      ).status,
      200,
    );

    const disabled = await admin(gw).del(`/admin/accounts/${account_id}/signing-secret`);
    assert.equal(disabled.status, 200);
    assert.equal(disabled.body.request_signing.enabled, false);
    assert.equal(
      (await request(url('/api/wallet/balance'), { headers })).status,
      200,
      'unsigned again once off',
    );
  } finally {
    await gw.stop();
  }
  for (const file of filesUnder(gw.data_dir))
    assert.ok(
      !/sigsec_[0-9a-f]{64}/.test(readFileSync(file, 'latin1')),
      `${file} holds a signing secret in plaintext`,
    );
});

/** A tiny cookie jar over fetch for the dashboard's forms. */
function browser(base: string) {
  const cookies = new Map<string, string>();
  const send = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${base}${path}`, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return {
      status: response.status,
      location: response.headers.get('location'),
      text: await response.text(),
    };
  };
  const csrf = (page: string) => /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
  const post = async (path: string, form: Record<string, string>, page: string) =>
    send(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...form, _csrf: csrf(page) }).toString(),
    });
  return { send, post };
}

test('signed requests: the account turns signing on, replaces the secret and turns it off from its dashboard page', async () => {
  const gw = await startPaymentsGateway();
  try {
    const registered = await request(`${gw.url}/api/register`, {
      body: { email: 'signer@example.com', password: 'correct horse battery', name: 'Signer' },
    });
    const headers = { 'x-api-key': registered.body.data.api_key };
    const web = browser(gw.url);
    const login_page = await web.send('/login');
    const logged_in = await web.post(
      '/login',
      { email: 'signer@example.com', password: 'correct horse battery' },
      login_page.text,
    );
    assert.equal(logged_in.status, 303);
    let page = await web.send('/api-keys');
    assert.match(page.text, /data-signing="off"/);

    assert.equal(
      (await web.post('/api-keys/signing', { action: 'enable' }, page.text)).status,
      303,
    );
    page = await web.send('/api-keys');
    assert.match(page.text, /data-signing="on"/);
    const secret = /id="signing-secret"[^>]*>(sigsec_[0-9a-f]{64})</.exec(page.text)?.[1];
    assert.ok(secret, 'the secret is shown once, right after turning signing on');
    assert.ok(!(await web.send('/api-keys')).text.includes(secret!), 'and not again');

    assert.equal(
      (await request(`${gw.url}/api/kyc`, { headers })).status,
      401,
      'unsigned calls are refused now',
    );
    assert.equal(
      (
        await request(`${gw.url}/api/kyc`, {
          headers: { ...headers, ...sign(secret!, 'GET', '/api/kyc') },
        })
      ).status,
      200,
    );

    page = await web.send('/api-keys');
    await web.post('/api-keys/signing', { action: 'rotate' }, page.text);
    page = await web.send('/api-keys');
    const replaced = /id="signing-secret"[^>]*>(sigsec_[0-9a-f]{64})</.exec(page.text)?.[1];
    assert.ok(replaced && replaced !== secret);
    const later = Math.floor(Date.now() / 1000) + 1;
    assert.equal(
      (
        await request(`${gw.url}/api/kyc`, {
          headers: { ...headers, ...sign(secret!, 'GET', '/api/kyc', '', later) },
        })
      ).status,
      401,
      'the replaced secret stops at once',
    );
    assert.equal(
      (
        await request(`${gw.url}/api/kyc`, {
          headers: { ...headers, ...sign(replaced!, 'GET', '/api/kyc', '', later) },
        })
      ).status,
      200,
    );

    page = await web.send('/api-keys');
    await web.post('/api-keys/signing', { action: 'disable' }, page.text);
    assert.match((await web.send('/api-keys')).text, /data-signing="off"/);
    assert.equal(
      (await request(`${gw.url}/api/kyc`, { headers })).status,
      200,
      'unsigned calls work again',
    );
  } finally {
    await gw.stop();
  }
});

test('signed requests: the admin console shows the state on the account page and turns signing off', async () => {
  const gw = await startPaymentsGateway();
  try {
    const registered = await request(`${gw.url}/api/register`, {
      body: { email: 'console-signer@example.com', password: 'correct horse battery', name: 'C' },
    });
    const { account_id, api_key } = registered.body.data;
    assert.equal(
      (await admin(gw).post(`/admin/accounts/${account_id}/signing-secret`, {})).status,
      201,
    );
    assert.equal(
      (await request(`${gw.url}/api/kyc`, { headers: { 'x-api-key': api_key } })).status,
      401,
    );

    const web = browser(gw.url);
    const login_page = await web.send('/admin/login');
    assert.equal(
      (await web.post('/admin/login', { token: gw.admin_token }, login_page.text)).status,
      303,
    );
    let page = await web.send(`/admin/console/accounts/${account_id}`);
    assert.equal(page.status, 200);
    assert.match(page.text, /data-signing="on"/);
    const off = await web.post(
      `/admin/console/accounts/${account_id}/signing/disable`,
      {},
      page.text,
    );
    assert.equal(off.status, 303);
    page = await web.send(`/admin/console/accounts/${account_id}`);
    assert.match(page.text, /data-signing="off"/);
    assert.equal(
      (await request(`${gw.url}/api/kyc`, { headers: { 'x-api-key': api_key } })).status,
      200,
    );
  } finally {
    await gw.stop();
  }
});

test('item 3: a v2 signature binds the method, the path and the query: it works for its own request only, and v1 signatures of a new secret are refused', async () => {
  const gw = await startPaymentsGateway();
  try {
    const { account_id, headers } = await onboard(gw, 1_000);
    const url = (path: string) => `${gw.url}${path}`;
    const put = JSON.stringify({ url: 'http://127.0.0.1:9/hook' });
    const hooked = await request(url('/api/webhook'), {
      method: 'PUT',
      headers,
      raw: put,
    });
    assert.equal(hooked.status, 200, JSON.stringify(hooked.body));
    const secret = (await admin(gw).post(`/admin/accounts/${account_id}/signing-secret`, {})).body
      .secret as string;
    assert.deepEqual(
      (await admin(gw).get(`/admin/accounts/${account_id}`)).body.request_signing.schemes,
      ['v2'],
      'a secret made now takes v2 only',
    );

    // A signed GET of the balance, captured and sent as DELETE /api/webhook (the same empty body).
    const balance = sign(secret, 'GET', BALANCE);
    const as_delete = await request(url('/api/webhook'), {
      method: 'DELETE',
      headers: { ...headers, ...balance },
    });
    assert.equal(as_delete.status, 401);
    assert.equal(as_delete.body.error.code, 'signature_invalid');
    // The same with the first scheme, which signed the timestamp and body only.
    const v1 = signV1(secret);
    const v1_delete = await request(url('/api/webhook'), {
      method: 'DELETE',
      headers: { ...headers, ...v1 },
    });
    assert.equal(v1_delete.status, 401);
    assert.equal(v1_delete.body.error.code, 'signature_scheme_retired');
    assert.match(v1_delete.body.message, /v2=/, 'the refusal says how to sign');
    const still = await request(url('/api/webhook'), {
      headers: { ...headers, ...sign(secret, 'GET', '/api/webhook') },
    });
    assert.equal(still.status, 200, JSON.stringify(still.body));
    assert.equal(still.body.data.url, 'http://127.0.0.1:9/hook', 'the webhook is still set');

    // A recharge's signature on the same path with a query added, or another path.
    const raw = JSON.stringify({ operator_id: 1, number: '9876543210', amount: 100 });
    const signed = sign(secret, 'POST', '/api/recharge', raw);
    for (const target of ['/api/recharge?foo=bar', '/api/recharge/', '/api/pan-find']) {
      const moved = await request(url(target), { headers: { ...headers, ...signed }, raw });
      assert.equal(moved.status, 401, `${target}: ${JSON.stringify(moved.body)}`);
      assert.equal(moved.body.error.code, 'signature_invalid');
    }
    const paid = await request(url('/api/recharge'), { headers: { ...headers, ...signed }, raw });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    // A query is part of what is signed, percent-encoding as sent.
    const target = '/api/transactions?service=recharge&number=98765%2043210&limit=5';
    const listed = await request(url(target), {
      headers: { ...headers, ...sign(secret, 'GET', target) },
    });
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
  } finally {
    await gw.stop();
  }
});

/** A fenced code block of docs/payments-api.md, by its info string (```js signed-fetch). */
function docsBlock(info: string): string {
  const doc = readFileSync(resolve(import.meta.dirname, '../../docs/payments-api.md'), 'utf8');
  const block = new RegExp(`\`\`\`${info}\\n([\\s\\S]*?)\\n\`\`\``).exec(doc)?.[1];
  assert.ok(block, `docs/payments-api.md has a \`\`\`${info} block`);
  return block!;
}

const python = spawnSync('python3', ['--version']).status === 0;

test('item 3: the client examples of docs/payments-api.md (Node, and Python where python3 is installed) sign requests the gateway takes', async () => {
  const gw = await startPaymentsGateway();
  const dir = tempDir('aihub-signing-docs-');
  try {
    const { account_id, key } = await onboard(gw, 1_000);
    const secret = (await admin(gw).post(`/admin/accounts/${account_id}/signing-secret`, {})).body
      .secret as string;
    const module_file = join(dir, 'signed-fetch.mjs');
    writeFileSync(module_file, docsBlock('js signed-fetch'));
    const { signedFetch } = (await import(pathToFileURL(module_file).href)) as {
      signedFetch: (
        url: string,
        options: { method?: string; body?: string; key: string; secret: string },
      ) => Promise<Response>;
    };
    const call = async (method: string, path: string, body?: unknown) => {
      const reply = await signedFetch(`${gw.url}${path}`, {
        method,
        key,
        secret,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: reply.status, body: (await reply.json()) as any };
    };
    assert.equal((await call('GET', BALANCE)).status, 200);
    const paid = await call('POST', '/api/recharge', {
      operator_id: 1,
      number: '9876543210',
      amount: 10,
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    const report = await call('GET', '/api/reports/transactions?service=recharge&limit=5');
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.equal(report.body.data.total, 1);
    assert.equal((await call('PUT', '/api/webhook', { url: 'http://127.0.0.1:9/h' })).status, 200);
    assert.equal((await call('DELETE', '/api/webhook')).status, 200);
    if (!python) {
      console.log(
        '# python3 is not installed: the Python example of docs/payments-api.md is not run',
      );
      return;
    }
    const script = `${docsBlock('python signed-request')}
import sys
for method, path, body in [("GET", "/api/wallet/balance", None), ("POST", "/api/recharge", {"operator_id": 1, "number": "9876543211", "amount": 10}), ("GET", "/api/transactions?service=recharge&limit=5", None)]:
    status, answer = signed_request(method, sys.argv[1] + path, sys.argv[2], sys.argv[3], body)
    print(status, answer["status"])
`;
    const ran = spawnSync('python3', ['-', gw.url, key, secret], {
      input: script,
      encoding: 'utf8',
    });
    assert.equal(ran.status, 0, ran.stderr);
    assert.deepEqual(ran.stdout.trim().split('\n'), ['200 True', '200 True', '200 True']);
  } finally {
    await gw.stop();
  }
});

test('item 3: a signing secret made before v2 keeps v1 until payments.signing.v1_until (each answer says so), and not after', async () => {
  // The data dir of a gateway from before v2: an account whose signing secret has no v2_only mark.
  const data_dir = tempDir('aihub-signing-v1-');
  const key_hex = randomBytes(32).toString('hex');
  const sealer = new Sealer([parseKey(key_hex, 'test')]);
  const secret = 'sigsec_' + 'ab'.repeat(32);
  const store = await Store.open(data_dir, { history_tags: PAYMENT_HISTORY_TAGS });
  const keys = store.indexBy('keys', 'account_id');
  const api_key = await store.transact((tx) => {
    const account = createAccount(tx, { email: 'old-integrator@example.com', name: 'Old' });
    tx.set('accounts', account.id, {
      ...account,
      signing: {
        secret: sealer.sealText(secret, signingSecretAad(account.id)),
        created_at: '2026-01-01T00:00:00.000Z',
      },
    });
    return createApiKey(tx, keys, account.id, 'default').key;
  });
  await store.close();
  const headers = { 'x-api-key': api_key };
  const start = (v1_until: string | null) =>
    startPaymentsGateway(paymentsConfig({ signing: { v1_until } }), {
      data_dir,
      database_url: false, // a data dir written before the start: the JSON-file store
      env: { AIHUB_ENCRYPTION_KEY: key_hex },
    });

  let gw = await start('2099-12-31T23:59:59Z');
  try {
    const old = await request(`${gw.url}${BALANCE}`, {
      headers: { ...headers, ...signV1(secret) },
    });
    assert.equal(old.status, 200, JSON.stringify(old.body));
    assert.match(
      old.headers.get('x-aihub-signature-deprecated') ?? '',
      /until 2099-12-31T23:59:59\.000Z.*v2=/,
    );
    const moved = await request(`${gw.url}${BALANCE}`, {
      headers: { ...headers, ...sign(secret, 'GET', BALANCE) },
    });
    assert.equal(moved.status, 200, 'v2 works with the old secret: clients move first');
    assert.equal(moved.headers.get('x-aihub-signature-deprecated'), null);
    const account_id = (await admin(gw).get('/admin/accounts')).body.data[0].id;
    assert.deepEqual(
      (await admin(gw).get(`/admin/accounts/${account_id}`)).body.request_signing.schemes,
      ['v1', 'v2'],
    );
  } finally {
    await gw.stop();
  }
  gw = await start('2026-01-31T00:00:00Z');
  try {
    const late = await request(`${gw.url}${BALANCE}`, {
      headers: { ...headers, ...signV1(secret, '', now_s() + 1) },
    });
    assert.equal(late.status, 401);
    assert.equal(late.body.error.code, 'signature_scheme_retired');
    const v2 = await request(`${gw.url}${BALANCE}`, {
      headers: { ...headers, ...sign(secret, 'GET', BALANCE, '', now_s() + 1) },
    });
    assert.equal(v2.status, 200);
  } finally {
    await gw.stop();
  }
});
