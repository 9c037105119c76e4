// Signed /api requests (issue #13, "Encrypted transactions"), opt-in per account: with a
// signing secret, every /api call carries X-AIHub-Timestamp and X-AIHub-Signature = hex
// HMAC-SHA256(secret, timestamp + "." + raw body); missing, wrong, stale and replayed
// signatures are 401 in the /api error shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { admin, filesUnder, request } from './helpers.ts';
import { VALID_KYC, onboard, startPaymentsGateway } from '../support/payments-helpers.ts';

/** The signing recipe of docs/payments-api.md. */
function sign(
  secret: string,
  body: string | Buffer,
  timestamp: number | string = Math.floor(Date.now() / 1000),
) {
  const signature = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  return { 'X-AIHub-Timestamp': String(timestamp), 'X-AIHub-Signature': signature };
}

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

    const signed = sign(secret, '');
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
      headers: { ...headers, ...sign(secret, '', now - 301) },
    });
    assert.equal(stale.body.error.code, 'signature_expired');
    const future = await request(url('/api/wallet/balance'), {
      headers: { ...headers, ...sign(secret, '', now + 301) },
    });
    assert.equal(future.body.error.code, 'signature_expired');
    const wrong_secret = await request(url('/api/wallet/balance'), {
      headers: { ...headers, ...sign('sigsec_wrong', '') },
    });
    assert.equal(wrong_secret.status, 401);
    assert.equal(wrong_secret.body.error.code, 'signature_invalid');
    const garbage = await request(url('/api/wallet/balance'), {
      headers: { ...headers, 'X-AIHub-Timestamp': String(now), 'X-AIHub-Signature': 'zz' },
    });
    assert.equal(garbage.body.error.code, 'signature_invalid');

    // A POST: the signature covers the raw body; the same signature on another body is refused and moves no money.
    const raw = JSON.stringify({ operator_id: 1, number: '9876543210', amount: 100 });
    const paid = await request(url('/api/recharge'), {
      headers: { ...headers, ...sign(secret, raw) },
      raw,
    });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.status, true);
    const balance_after = (
      await request(url('/api/wallet/balance'), {
        headers: { ...headers, ...sign(secret, '', `${now}.5`) },
      })
    ).body.data.balance;
    assert.equal(
      typeof balance_after,
      'number',
      'a fractional timestamp makes two identical calls in one second distinct',
    );
    const altered_raw = JSON.stringify({ operator_id: 1, number: '9876543210', amount: 900 });
    const altered = await request(url('/api/recharge'), {
      headers: { ...headers, ...sign(secret, raw, now + 1) },
      raw: altered_raw,
    });
    assert.equal(altered.status, 401);
    assert.equal(altered.body.error.code, 'signature_invalid');
    assert.equal(
      (
        await request(url('/api/wallet/balance'), {
          headers: { ...headers, ...sign(secret, '', now + 2) },
        })
      ).body.data.balance,
      balance_after,
    );
    const other_raw = JSON.stringify({ operator_id: 1, number: '9876543211', amount: 50 });
    const upper = sign(secret, other_raw, now + 3);
    upper['X-AIHub-Signature'] = upper['X-AIHub-Signature'].toUpperCase();
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
    const bad_upload = await upload(sign(secret, multipart, now + 4), tampered);
    assert.equal(bad_upload.status, 401);
    assert.equal(bad_upload.body.error.code, 'signature_invalid');
    const good_upload = await upload(sign(secret, multipart, now + 5), multipart);
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
          headers: { ...headers, ...sign(secret, '', now + 6) },
        })
      ).body.error.code,
      'signature_invalid',
    );
    assert.equal(
      (
        await request(url('/api/wallet/balance'), {
          headers: { ...headers, ...sign(rotated.body.secret, '', now + 6) },
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
      (await request(`${gw.url}/api/kyc`, { headers: { ...headers, ...sign(secret!, '') } }))
        .status,
      200,
    );

    page = await web.send('/api-keys');
    await web.post('/api-keys/signing', { action: 'rotate' }, page.text);
    page = await web.send('/api-keys');
    const replaced = /id="signing-secret"[^>]*>(sigsec_[0-9a-f]{64})</.exec(page.text)?.[1];
    assert.ok(replaced && replaced !== secret);
    const later = Math.floor(Date.now() / 1000) + 1;
    assert.equal(
      (await request(`${gw.url}/api/kyc`, { headers: { ...headers, ...sign(secret!, '', later) } }))
        .status,
      401,
      'the replaced secret stops at once',
    );
    assert.equal(
      (
        await request(`${gw.url}/api/kyc`, {
          headers: { ...headers, ...sign(replaced!, '', later) },
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
