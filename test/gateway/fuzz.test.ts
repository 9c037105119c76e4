// Issue #13: a fuzz run driven by the gateway's own route table (test/support/route-table.ts:
// every route of /v1, /api, /admin, the admin console and the dashboard, as the gateway
// registers them), against the real process. Each route gets a fixed corpus of malformed
// path parameters, query strings and bodies (bad JSON, wrong types, 1e308, NaN, negative and
// over-precise amounts, deep nesting, prototype keys, long strings, bad %-escapes), and each
// field of a valid body is replaced by each bad value in turn. Deterministic and bounded in
// count (no randomness; the number of requests is printed). The verdict: no 5xx answer, the
// process alive throughout, a clean stop, and `verify` passing on the data dir afterwards.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { once } from 'node:events';
import { join } from 'node:path';
import {
  admin,
  createFundedAccount,
  filesUnder,
  request,
  runVerify,
  type Gateway,
} from './helpers.js';
import {
  addBeneficiary,
  onboard,
  paymentsConfig,
  startPaymentsGateway,
  verifiedRemitter,
} from '../support/payments-helpers.js';
import { routeTable, type Route } from '../support/route-table.js';

const BAD_ESCAPES = ['%E0%A4%A', '%', '%zz', '%C0%AF', '%FF%FE'];
const PROTOTYPE_NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];

/** Path parameter values besides the real one. */
const PATH_VALUES = [
  ...PROTOTYPE_NAMES,
  ...BAD_ESCAPES,
  'a'.repeat(3_000),
  '..%2F..%2Fetc%2Fpasswd',
  encodeURIComponent('ü😀\u0000'),
  '-1',
  '1e308',
  'NaN',
  '%00',
  '%2E%2E',
];

const QUERIES = [
  'page=-1&limit=1e308',
  'page=NaN&limit=-0&from=NaN&to=1e308',
  `from=${BAD_ESCAPES[0]}&to=%&status=%zz`,
  'format=pdf&format=csv&status[]=x&service[a]=b',
  '__proto__=x&constructor=y&toString=z&hasOwnProperty=1',
  `limit=${'9'.repeat(400)}&page=${'9'.repeat(400)}`,
  `q=${'a'.repeat(8_000)}`,
  'page=1.5&limit=0.0000001&order=sideways',
  'next=//evil.example/&type=__proto__&category=constructor&report=toString&mobile=9876543210&account=__proto__',
  'format=pdf',
  'format=csv&from=2026-01-01&to=2025-01-01',
];

let deep = '1';
for (let i = 0; i < 100; i++) deep = `{"a":${deep}}`;

/** Raw JSON bodies that are wrong before any field is looked at. */
const RAW_BODIES: Array<string | Buffer> = [
  '{',
  '{"a":',
  'nul',
  '',
  '[]',
  '"x"',
  '0',
  'null',
  'NaN',
  '{"amount":NaN}',
  '{"amount":1e999}',
  '{"amount":-Infinity}',
  deep,
  `${'['.repeat(10_000)}${']'.repeat(10_000)}`,
  '{"__proto__":{"admin":true,"status":"active"},"constructor":{"prototype":{"polluted":1}}}',
  `{"a":"${'x'.repeat(200_000)}"}`,
  '\uFEFF{}',
  '{"a":1,"a":2}',
  Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
];

/**
 * Bodies that claim a Content-Encoding they do not have, or a compressed stream cut short
 * (issue #25, item 5: these were 500s on the JSON routes and the dashboard's forms).
 */
const BAD_ENCODINGS: Array<{ encoding: string; body: Buffer }> = [
  { encoding: 'gzip', body: Buffer.from('{"plain":"not gzip"}') },
  { encoding: 'gzip', body: gzipSync('{"email":"a@example.com","name":"A"}').subarray(0, 15) },
  { encoding: 'deflate', body: Buffer.from('plainly not deflate') },
  { encoding: 'deflate', body: deflateSync('{"a":1}').subarray(0, 4) },
  { encoding: 'br', body: Buffer.from('not brotli at all, not at all') },
  { encoding: 'br', body: brotliCompressSync('{"a":1}').subarray(0, 3) },
  { encoding: 'gzip, br', body: Buffer.from('two encodings, neither applied') },
];

/** Whitelist entries that are not what they look like (issue #25, item 10): host bits, too wide, zones, mapped forms. */
const BAD_CIDRS = [
  '10.9.9.9/1',
  '127.0.0.1/0',
  '0.0.0.0/0',
  '::/0',
  '2001:db8::1/32',
  '::ffff:10.9.9.9/97',
  '10.0.0.0/08',
  '10.0.0.0/-1',
  '10.0.0.0/33',
  'fe80::1%eth0',
  '1.2.3.4/24/8',
  '::ffff:127.0.0.1/95',
];

const PART = (name: string, body: string | Buffer, filename?: string, type?: string) =>
  Buffer.concat([
    Buffer.from(
      `--x\r\nContent-Disposition: form-data; name="${name}"` +
        (filename === undefined ? '' : `; filename="${filename}"`) +
        (type ? `\r\nContent-Type: ${type}` : '') +
        '\r\n\r\n',
    ),
    Buffer.from(body),
    Buffer.from('\r\n'),
  ]);
const KYC_FIELDS = Buffer.concat(
  Object.entries({
    name: 'Asha Verma',
    aadhaar_number: '2341 2341 2346',
    pan_number: 'AAPFU0939F',
  }).map(([name, value]) => PART(name, value)),
);
const END = Buffer.from('--x--\r\n');
const PDF_BYTES = Buffer.from('%PDF-1.4\n%fuzz\n');

/**
 * eKYC uploads that must be refused whole, leaving no file behind (issue #25, item 8: documents
 * are now written to disk as they arrive, so every refusal must remove what was written).
 */
const BAD_UPLOADS: Array<{ label: string; body: Buffer; content_type?: string }> = [
  {
    label: 'not a document',
    body: Buffer.concat([
      KYC_FIELDS,
      PART('pan_document', 'MZ\x90\x00 an exe', 'pan.pdf', 'application/pdf'),
      END,
    ]),
  },
  {
    label: 'an empty file',
    body: Buffer.concat([KYC_FIELDS, PART('pan_document', '', 'pan.pdf'), END]),
  },
  {
    label: 'a good file, then a bad one',
    body: Buffer.concat([
      KYC_FIELDS,
      PART('pan_document', PDF_BYTES, 'pan.pdf'),
      PART('aadhaar_document', 'GIF89a', 'a.gif'),
      END,
    ]),
  },
  {
    label: 'a good file, then an unknown field',
    body: Buffer.concat([
      KYC_FIELDS,
      PART('pan_document', PDF_BYTES, 'pan.pdf'),
      PART('__proto__', PDF_BYTES, 'x.pdf'),
      END,
    ]),
  },
  {
    label: 'a file over the limit (64 KiB here)',
    body: Buffer.concat([
      KYC_FIELDS,
      PART('pan_document', Buffer.concat([PDF_BYTES, Buffer.alloc(100 * 1024)]), 'pan.pdf'),
      END,
    ]),
  },
  {
    label: 'a body over the limit of all files, said in its head',
    body: Buffer.concat([
      KYC_FIELDS,
      PART('pan_document', Buffer.concat([PDF_BYTES, Buffer.alloc(5 * 1024 * 1024)]), 'pan.pdf'),
      END,
    ]),
  },
  {
    label: 'too many files',
    body: Buffer.concat([
      KYC_FIELDS,
      ...Array.from({ length: 6 }, () => PART('other_document', PDF_BYTES, 'o.pdf')),
      END,
    ]),
  },
  {
    label: 'a good file, the body cut off',
    body: Buffer.concat([KYC_FIELDS, PART('pan_document', PDF_BYTES, 'pan.pdf')]).subarray(0, -2),
  },
  {
    label: 'a good file, bad fields',
    body: Buffer.concat([
      PART('name', ''),
      PART('aadhaar_number', '1234'),
      PART('constructor', 'x'),
      PART('pan_document', PDF_BYTES, '../../../etc/passwd'),
      END,
    ]),
  },
  {
    label: 'a value over the field size',
    body: Buffer.concat([
      PART('name', 'x'.repeat(5_000)),
      PART('pan_document', PDF_BYTES, 'pan.pdf'),
      END,
    ]),
  },
  {
    label: 'no boundary',
    body: Buffer.concat([KYC_FIELDS, END]),
    content_type: 'multipart/form-data',
  },
  {
    label: 'another boundary',
    body: Buffer.concat([KYC_FIELDS, END]),
    content_type: 'multipart/form-data; boundary=y',
  },
  {
    label: 'a PNG signature cut short',
    body: Buffer.concat([
      KYC_FIELDS,
      PART('pan_document', Buffer.from([0x89, 0x50, 0x4e]), 'p.png'),
      END,
    ]),
  },
];

/** Route-specific bodies besides the field-by-field ones (JSON routes and dashboard forms). */
const EXTRA_BODIES: Record<string, Array<Record<string, unknown>>> = {
  'PUT /admin/accounts/:id/ip-whitelist': [
    ...BAD_CIDRS.map((cidr) => ({ ips: [cidr] })),
    { ips: BAD_CIDRS },
    { ips: ['0.0.0.0/0'], force: 'yes' },
    { ips: ['10.9.9.9/1'], force: true },
  ],
  'POST /admin/console/accounts/:id/ip-whitelist': [
    ...BAD_CIDRS.map((cidr) => ({ ips: cidr })),
    { ips: BAD_CIDRS.join('\n'), force: 'on' },
    { ips: '0.0.0.0/0', force: 'yes' },
  ],
};

/** Values each field of a valid body is replaced by, one at a time. */
const BAD_VALUES: unknown[] = [
  1e308,
  -1,
  -0.01,
  0,
  10.001,
  0.1234567,
  2 ** 53 + 1,
  '',
  'x'.repeat(10_000),
  true,
  null,
  [],
  {},
  JSON.parse('{"__proto__":{"x":1}}'),
  '1e308',
  'NaN',
  '-1',
  '١٢٣',
  'constructor',
  BAD_ESCAPES[0],
];

/** Form values for the dashboard's forms (urlencoded strings). */
const BAD_FORM_VALUES = [
  '',
  'x'.repeat(10_000),
  '1e308',
  'NaN',
  '-1',
  '10.001',
  '-0.01',
  '__proto__',
  '%E0%A4%A',
  '\u0000',
  '١٢٣',
];

interface Ids {
  account: string;
  key: string;
  txn: string;
  mobile: string;
  bene: string;
  scheme: string;
}

/** The real value of a path parameter: ids of a second account (so that routes that disable or revoke cannot stop the fuzzing one) or the fuzzer's own resources. */
function realParam(route: Route, name: string, ids: Ids): string {
  if (name === 'model') return 'service-ai-lite';
  if (name === 'report') return 'transactions';
  if (name === 'txnId' || name === 'txn_id') return ids.txn;
  if (name === 'mobile') return ids.mobile;
  if (name === 'bene_id') return ids.bene;
  if (name === 'scheme_id') return ids.scheme;
  if (name === 'parent_id') return 'dmtp_000000000000000000000000';
  if (name === 'keyId' || (name === 'id' && route.path.includes('/keys/'))) return ids.key;
  if (name === 'doc' || name === 'docId') return 'doc_000000000000000000000000';
  if (name === 'complaint_id') return 'cmp_000000000000000000000000';
  return ids.account;
}

function fill(route: Route, value: (name: string) => string): string {
  return route.path.replace(/(?<=\/):([A-Za-z_]+)/g, (_, name: string) => value(name));
}

const FUZZ_SCHEME = {
  name: 'Fuzz',
  slabs: [{ id: 'a', service: 'recharge', type: 'percent', value: 0.1, cap: 5 }],
};

/** Valid JSON bodies by route, with real ids; each field is then fuzzed. */
function jsonBaselines(ids: Ids): Record<string, Record<string, unknown>> {
  return {
    'POST /v1/chat/completions': {
      model: 'service-ai-lite',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
    },
    'POST /v1/responses': { model: 'service-ai-lite', input: 'hi', max_output_tokens: 5 },
    'POST /v1/messages': {
      model: 'service-ai-lite',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'hi' }],
    },
    'POST /v1/messages/count_tokens': {
      model: 'service-ai-lite',
      messages: [{ role: 'user', content: 'hi' }],
    },
    'POST /v1/embeddings': { model: 'service-ai-lite', input: ['hi', 'there'] },
    'POST /v1/completions': {
      model: 'service-ai-lite',
      prompt: 'def f(',
      suffix: ')',
      max_tokens: 5,
    },
    ...Object.fromEntries(
      ['v1beta', 'v1'].flatMap((version) =>
        ['generateContent', 'streamGenerateContent', 'countTokens'].map((method) => [
          `POST /${version}/models/:model:${method}`,
          {
            contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
            systemInstruction: { parts: [{ text: 'be brief' }] },
            tools: [{ functionDeclarations: [{ name: 'f', parameters: { type: 'OBJECT' } }] }],
            toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
            generationConfig: { maxOutputTokens: 5, temperature: 0.5 },
          },
        ]),
      ),
    ),
    'POST /admin/accounts': { email: 'fuzz-admin-created@example.com', name: 'Fuzz' },
    'POST /admin/accounts/:id/keys': { name: 'fuzz' },
    'POST /admin/accounts/:id/credit': { amount: 10, reference: 'fuzz-credit' },
    'POST /admin/accounts/:id/debit': { amount: 1, reference: 'fuzz-debit' },
    'POST /admin/kyc/:accountId/approve': { reason: 'ok' },
    'POST /admin/kyc/:accountId/reject': { reason: 'no' },
    'POST /admin/accounts/:id/services': { recharge: true, dmt: true },
    'PUT /admin/accounts/:id/ip-whitelist': { ips: ['127.0.0.1', '::1', '::ffff:127.0.0.1/128'] },
    'POST /admin/transactions/:txnId/recheck': {},
    'POST /api/register': {
      email: 'fuzz-register@example.com',
      password: 'correct horse battery',
      name: 'Fuzz',
    },
    'POST /api/kyc': {
      name: 'Asha Verma',
      aadhaar_number: '2341 2341 2346',
      pan_number: 'AAPFU0939F',
      gstin: '27AAPFU0939F1ZV',
    },
    'POST /api/recharge': { operator_id: 1, number: '9876543210', amount: 10 },
    'POST /api/dmt/remitter': { mobile: '9876500077', name: 'Ravi Kumar' },
    'POST /api/dmt/remitter/verify': { mobile: '9876500077', otp: '123456' },
    'POST /api/dmt/beneficiary': {
      mobile: ids.mobile,
      name: 'Sunita Rao',
      account_number: '223456789099',
      ifsc: 'SBIN0001234',
    },
    'POST /api/dmt/beneficiary/:bene_id/verify': {},
    'POST /api/dmt/transact': {
      mobile: ids.mobile,
      bene_id: ids.bene,
      amount: 100,
      txn_type: 'IMPS',
    },
    'POST /api/dmt/remitter/kyc': {
      mobile: ids.mobile,
      document_type: 'aadhaar',
      document_number: '2341 2341 2346',
      name: 'Ravi Kumar',
    },
    'POST /api/dmt/transact/otp': {
      mobile: ids.mobile,
      bene_id: ids.bene,
      amount: 100,
      txn_type: 'IMPS',
    },
    'POST /api/pan-find': { pan_number: 'AAPFU0939F' },
    'POST /api/pan/verify': {
      pan_number: 'AAPFU0939F',
      variant: 'name_dob',
      name: 'Asha Verma',
      dob: '1990-01-01',
    },
    'POST /api/network/retailers': {
      email: 'fuzz-retailer@example.com',
      password: 'correct horse battery',
      name: 'Fuzz Retailer',
    },
    'PUT /api/network/retailers/:account_id/scheme': { scheme_id: null },
    'POST /api/network/funds': { retailer_id: ids.account, amount: 1, reference: 'fuzz-fund' },
    'POST /api/network/schemes': FUZZ_SCHEME,
    'PUT /api/network/schemes/:scheme_id': FUZZ_SCHEME,
    'POST /admin/schemes': FUZZ_SCHEME,
    'PUT /admin/schemes/:scheme_id': FUZZ_SCHEME,
    'PUT /admin/accounts/:id/network': { scheme_id: null },
    'PUT /admin/dmt/remitters/:account_id/:mobile/level': { level: 'full' },
    'POST /api/bills/fetch': { biller_id: 'BESCOM', params: { consumer_number: '1234567890' } },
    'POST /api/bills/pay': {
      biller_id: 'GENUSPRE',
      params: { meter_number: '1234567890' },
      amount: 100,
      customer_mobile: '9876543210',
    },
    'POST /api/bills/validate': {
      biller_id: 'TATAPLAYBB',
      params: { subscriber_id: '1234567890' },
      customer_mobile: '9876543210',
    },
    'POST /api/bills/complaints': {
      type: 'service',
      biller_id: 'BESCOM',
      reason: 'agent_overcharging',
      description: 'fuzz',
    },
    'PUT /api/webhook': { url: 'http://127.0.0.1:9/hook' },
  };
}

/** Valid form fields by dashboard route (the CSRF token is added); each field is then fuzzed. */
const FORM_BASELINES: Record<string, Record<string, string>> = {
  'POST /signup': {
    name: 'Fuzz',
    email: 'fuzz-signup@example.com',
    password: 'correct horse battery',
    password_confirm: 'correct horse battery',
  },
  'POST /login': { email: 'fuzz-register@example.com', password: 'wrong password' },
  'POST /api-keys': { name: 'fuzz' },
  'POST /wallet/top-up': { amount: '100', nonce: 'fuzzfuzzfuzzfuzz0001' },
  'POST /admin/login': { token: 'not-the-token' },
  'POST /admin/console/accounts/:id/credit': { amount: '10', reference: 'fuzz-console', memo: 'x' },
  'POST /admin/console/accounts/:id/status': { status: 'active' },
  'POST /admin/console/accounts/:id/services': { recharge: 'on', dmt: 'on' },
  'POST /admin/console/accounts/:id/ip-whitelist': { ips: '127.0.0.1 ::1' },
  'POST /admin/console/kyc/:account/approve': { reason: 'ok' },
  'POST /admin/console/kyc/:account/reject': { reason: 'no' },
  'POST /admin/console/keys/:id/revoke': {},
  'POST /api-keys/:id/revoke': {},
};

/** Routes whose valid-CSRF forms would end the fuzzer's own sessions: fuzzed without a valid token only. */
const SESSION_ENDING = new Set(['POST /logout', 'POST /admin/logout']);

const isDashboard = (path: string) =>
  !path.startsWith('/v1/') &&
  !path.startsWith('/api/') &&
  !(
    path.startsWith('/admin/') &&
    !path.startsWith('/admin/console') &&
    !path.startsWith('/admin/login') &&
    !path.startsWith('/admin/logout')
  ) &&
  path !== '/admin';

class Jar {
  readonly cookies = new Map<string, string>();
  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
  }
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1];

/** The fuzzed gateway's body deadline: short, so that the cut-short bodies are answered soon. */
const BODY_TIMEOUT_MS = 2_000;

let gateway: Gateway;
let ids: Ids;
let user: { key: string; headers: Record<string, string> };
const jar = new Jar();
let user_csrf = '';
let admin_csrf = '';

before(async () => {
  gateway = await startPaymentsGateway({
    ...paymentsConfig(),
    chat: { rate_limit: { requests_per_minute: 1_000_000 } },
    limits: { body_timeout_ms: BODY_TIMEOUT_MS },
  });
  const api = admin(gateway);
  // The fuzzing account: registered with a password (for the dashboard), every service on, funded.
  const registered = await request(`${gateway.url}/api/register`, {
    body: { email: 'fuzzer@example.com', password: 'correct horse battery', name: 'Fuzzer' },
  });
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const { api_key: key, account_id } = registered.body.data;
  user = { key, headers: { 'x-api-key': key } };
  assert.equal(
    (
      await request(`${gateway.url}/api/kyc`, {
        headers: user.headers,
        body: { name: 'Asha Verma', aadhaar_number: '2341 2341 2346', pan_number: 'AAPFU0939F' },
      })
    ).status,
    200,
  );
  assert.equal((await api.post(`/admin/kyc/${account_id}/approve`, {})).status, 200);
  assert.equal(
    (
      await api.post(`/admin/accounts/${account_id}/services`, {
        recharge: true,
        dmt: true,
        pan: true,
        bills: true,
      })
    ).status,
    200,
  );
  assert.equal(
    (
      await api.post(`/admin/accounts/${account_id}/credit`, {
        amount: 1_000_000,
        reference: 'fuzz-funds',
      })
    ).status,
    200,
  );
  const mobile = '9876500066';
  await verifiedRemitter(gateway, user.headers, mobile);
  const bene = await addBeneficiary(gateway, user.headers, mobile, '223456789012');
  const recharge = await request(`${gateway.url}/api/recharge`, {
    headers: user.headers,
    body: { operator_id: 1, number: '9876543210', amount: 10 },
  });
  assert.equal(recharge.status, 200);
  // A second account for the admin routes that change an account (status, keys, services).
  const target = await onboard(gateway, 100, { recharge: true });
  const target_key = await api.post(`/admin/accounts/${target.account_id}/keys`, {
    name: 'to revoke',
  });
  // The fuzzing account is a distributor (its network routes then run past the role check),
  // with a scheme of the admin's.
  const scheme = await api.post('/admin/schemes', FUZZ_SCHEME);
  assert.equal(scheme.status, 201, JSON.stringify(scheme.body));
  const distributor = await api.put(`/admin/accounts/${account_id}/network`, {
    role: 'distributor',
    scheme_id: scheme.body.scheme_id,
  });
  assert.equal(distributor.status, 200, JSON.stringify(distributor.body));
  ids = {
    account: target.account_id,
    key: target_key.body.id,
    txn: recharge.body.txn_id,
    mobile,
    bene,
    scheme: scheme.body.scheme_id,
  };

  // Dashboard sessions: the user's and the admin console's, with their CSRF tokens.
  const form = async (path: string, fields: Record<string, string>) => {
    const page = await fetch(`${gateway.url}${path}`, {
      headers: { cookie: jar.header() },
      redirect: 'manual',
    });
    jar.take(page);
    const csrf = csrfOf(await page.text());
    assert.ok(csrf, `a CSRF token on ${path}`);
    const posted = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...fields, _csrf: csrf! }),
      redirect: 'manual',
    });
    jar.take(posted);
    assert.equal(posted.status, 303, `log in at ${path}`);
  };
  await form('/login', { email: 'fuzzer@example.com', password: 'correct horse battery' });
  await form('/admin/login', { token: gateway.admin_token });
  const token = async (path: string) => {
    const page = await fetch(`${gateway.url}${path}`, {
      headers: { cookie: jar.header() },
      redirect: 'manual',
    });
    assert.equal(page.status, 200, path);
    return csrfOf(await page.text())!;
  };
  user_csrf = await token('/api-keys');
  admin_csrf = await token('/admin/console');
  assert.ok(user_csrf && admin_csrf);
});

after(async () => {
  if (gateway.proc.exitCode === null && gateway.proc.signalCode === null)
    await gateway.stop('SIGKILL');
});

/** One request as the fuzzer sends it (the session cookies, the surface's credentials). */
async function fuzzRequest(
  method: string,
  path: string,
  body?: string | Buffer,
  content_type?: string,
  extra: Record<string, string> = {},
): Promise<{ status: number; text: string; content_type: string }> {
  const headers: Record<string, string> = { cookie: jar.header(), ...extra };
  if (path.startsWith('/v1/')) headers.authorization = `Bearer ${user.key}`;
  else if (path.startsWith('/api/')) headers['x-api-key'] = user.key;
  else if (path.startsWith('/admin/')) headers.authorization = `Bearer ${gateway.admin_token}`;
  if (content_type) headers['content-type'] = content_type;
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers,
    body:
      method === 'GET' || method === 'HEAD' || body === undefined
        ? undefined
        : typeof body === 'string'
          ? body
          : new Blob([new Uint8Array(body)]),
    redirect: 'manual',
    signal: AbortSignal.timeout(30_000),
  });
  return {
    status: response.status,
    text: await response.text(),
    content_type: response.headers.get('content-type') ?? '',
  };
}

test("item 5: bodies that do not decompress as their Content-Encoding says are 400 in each surface's own shape on every route that reads a body", async () => {
  const routes = (await routeTable()).filter(
    (route) => route.method !== 'GET' && !SESSION_ENDING.has(`${route.method} ${route.path}`),
  );
  const failures: string[] = [];
  /** Routes that refused a bad body with 400 in their own shape, by surface. */
  const refused = {
    api: new Set<string>(),
    admin: new Set<string>(),
    dashboard: new Set<string>(),
  };
  for (const route of routes) {
    const path = fill(route, (name) => realParam(route, name, ids));
    const dashboard = isDashboard(route.path);
    for (const { encoding, body } of BAD_ENCODINGS) {
      const reply = await fuzzRequest(
        route.method,
        path,
        body,
        dashboard ? 'application/x-www-form-urlencoded' : 'application/json',
        { 'content-encoding': encoding },
      );
      const label = `${route.method} ${route.path} (${encoding}, ${body.length} bytes) → ${reply.status}`;
      if (reply.status >= 500) {
        failures.push(`${label}: ${reply.text.slice(0, 160)}`);
        continue;
      }
      if (reply.status !== 400) continue; // refused before the body was read (415 on /v1, 404...)
      if (dashboard) {
        if (!reply.content_type.startsWith('text/html')) failures.push(`${label}: not a page`);
        else refused.dashboard.add(route.path);
        continue;
      }
      const answer = JSON.parse(reply.text) as {
        status?: boolean;
        error?: { code?: string; type?: string };
      };
      if (route.path.startsWith('/api/')) {
        if (answer.status !== false || answer.error?.code !== 'invalid_content_encoding')
          failures.push(`${label}: not the /api shape: ${reply.text.slice(0, 160)}`);
        else refused.api.add(route.path);
      } else if (answer.error?.code !== 'invalid_content_encoding' || !answer.error.type) {
        failures.push(`${label}: not the admin shape: ${reply.text.slice(0, 160)}`);
      } else refused.admin.add(route.path);
    }
  }
  assert.deepEqual(failures, []);
  // The attack run counted 22 JSON routes and 13 dashboard forms that answered 500.
  const counts = Object.entries(refused).map(([surface, paths]) => `${surface}: ${paths.size}`);
  assert.ok(refused.api.size + refused.admin.size >= 22, counts.join(', '));
  assert.ok(refused.dashboard.size >= 13, counts.join(', '));
  // A body that is compressed whole is read as ever.
  const created = await fuzzRequest(
    'POST',
    '/admin/accounts',
    gzipSync(JSON.stringify({ email: 'gzipped@example.com', name: 'Gzip' })),
    'application/json',
    { 'content-encoding': 'gzip' },
  );
  assert.equal(created.status, 201, created.text);
});

test('item 8: bad eKYC uploads of an account that may submit are refused in the /api shape, none submitted and no file left', async (t) => {
  const { key, account_id } = await createFundedAccount(gateway, 0);
  const failures: string[] = [];
  const answers: string[] = [];
  for (const { label, body, content_type } of BAD_UPLOADS) {
    const response = await fetch(`${gateway.url}/api/kyc`, {
      method: 'POST',
      headers: {
        'x-api-key': key,
        'content-type': content_type ?? 'multipart/form-data; boundary=x',
      },
      body: new Blob([new Uint8Array(body)]),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    const answer = JSON.parse(text) as { status?: boolean; error?: { code?: string } };
    answers.push(`${label}: ${response.status} ${answer.error?.code}`);
    if (
      response.status < 400 ||
      response.status >= 500 ||
      answer.status !== false ||
      !answer.error?.code
    )
      failures.push(`${label} → ${response.status} ${text.slice(0, 200)}`);
  }
  t.diagnostic(answers.join('; '));
  assert.deepEqual(failures, []);
  const status = await request(`${gateway.url}/api/kyc`, { headers: { 'x-api-key': key } });
  assert.equal(status.body.data.status, 'none');
  for (const sub of [account_id, '.incoming']) {
    const dir = join(gateway.data_dir, 'kyc-documents', sub);
    assert.deepEqual(existsSync(dir) ? filesUnder(dir) : [], [], `no file left in ${sub}`);
  }
});

/**
 * One request on a raw connection whose body stops after `sent` of `length` bytes; resolves with
 * what the gateway sent once it has closed the connection.
 */
async function cutShort(
  method: string,
  path: string,
  headers: Record<string, string>,
  length: number,
  sent: string,
): Promise<string> {
  const socket = connect(gateway.port, '127.0.0.1');
  socket.on('error', () => {});
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  const closed = once(socket, 'close');
  await once(socket, 'connect');
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Content-Length: ${length}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n${sent}`);
  const timer = setTimeout(() => socket.destroy(), 30_000);
  await closed;
  clearTimeout(timer);
  return Buffer.concat(received).toString('utf8');
}

test("item 9: every route with a body cut short: the connection is closed at the body deadline, answered 408 in the surface's shape or refused from its head, never 5xx", async (t) => {
  // Every route that reads a body (DELETE routes read none: they would act, so they are left out).
  const routes = (await routeTable()).filter(
    (route) =>
      route.method !== 'GET' &&
      route.method !== 'DELETE' &&
      !SESSION_ENDING.has(`${route.method} ${route.path}`),
  );
  const failures: string[] = [];
  let timed_out = 0;
  await Promise.all(
    routes.map(async (route) => {
      const path = fill(route, (name) => realParam(route, name, ids));
      const dashboard = isDashboard(route.path) && !route.path.startsWith('/v1beta'); // (Gemini's are JSON)
      const headers: Record<string, string> = { cookie: jar.header() };
      if (path.startsWith('/v1')) headers.authorization = `Bearer ${user.key}`;
      else if (path.startsWith('/api/')) headers['x-api-key'] = user.key;
      else if (path.startsWith('/admin/')) headers.authorization = `Bearer ${gateway.admin_token}`;
      headers['content-type'] = dashboard
        ? 'application/x-www-form-urlencoded'
        : 'application/json';
      const sent = dashboard
        ? `_csrf=${route.path.startsWith('/admin') ? admin_csrf : user_csrf}&a=`
        : '{"a":';
      const text = await cutShort(route.method, path, headers, 100_000, sent);
      const label = `${route.method} ${route.path}`;
      const status = Number(text.split(' ')[1]);
      if (!text) return failures.push(`${label}: closed without an answer`);
      if (!(status >= 400 && status < 500)) return failures.push(`${label}: ${text.slice(0, 200)}`);
      if (status !== 408) return; // refused from the head (404, 401, 415, ...), closed at the deadline
      timed_out++;
      const body = text.slice(text.indexOf('\r\n\r\n') + 4);
      const shape = dashboard
        ? body.startsWith('<!doctype html>')
        : route.path.startsWith('/v1beta') || /:[A-Za-z_]+:/.test(route.path)
          ? JSON.parse(body).error?.status === 'DEADLINE_EXCEEDED'
          : route.path.startsWith('/v1/messages')
            ? JSON.parse(body).type === 'error'
            : body.includes('"request_timeout"');
      if (!shape) failures.push(`${label}: 408 not in the surface's shape: ${body.slice(0, 200)}`);
    }),
  );
  t.diagnostic(`${routes.length} routes, ${timed_out} answered 408`);
  assert.deepEqual(failures, []);
  assert.ok(timed_out >= 30, `${timed_out} routes answered 408`);
});

test(
  'fuzz: every route of the route table with a fixed corpus: no 5xx, the process alive, verify passes',
  { timeout: 900_000 },
  async (t) => {
    const routes = await routeTable();
    assert.ok(routes.length >= 80, `the route table has ${routes.length} routes`);
    const baselines = jsonBaselines(ids);
    const failures: string[] = [];
    const by_class = new Map<string, number>();
    let sent = 0;

    const send = async (
      method: string,
      path: string,
      body?: string | Buffer,
      content_type?: string,
      extra: Record<string, string> = {},
    ) => {
      sent++;
      let status: number;
      let text = '';
      try {
        ({ status, text } = await fuzzRequest(method, path, body, content_type, extra));
      } catch (error) {
        failures.push(
          `${method} ${path.slice(0, 120)}: no answer (${(error as Error).message}); body ${String(body ?? '').slice(0, 80)}`,
        );
        return;
      }
      const cls = `${Math.floor(status / 100)}xx`;
      by_class.set(cls, (by_class.get(cls) ?? 0) + 1);
      if (status >= 500)
        failures.push(
          `${method} ${path.slice(0, 120)} → ${status} ${text.slice(0, 200)}; body ${String(body ?? '').slice(0, 120)}`,
        );
    };

    for (const route of routes) {
      const key = `${route.method} ${route.path}`;
      const real_path = fill(route, (name) => realParam(route, name, ids));
      const dashboard = isDashboard(route.path);
      // Paths: each parameter in turn takes each bad value, the others their real ones.
      for (const [name] of route.path.matchAll(/:([A-Za-z_]+)/g)) {
        for (const value of PATH_VALUES) {
          const path = fill(route, (param) =>
            `:${param}` === name ? value : realParam(route, param, ids),
          );
          await send(
            route.method,
            path,
            route.method === 'GET' ? undefined : '{}',
            'application/json',
          );
        }
      }
      // Queries.
      if (route.method === 'GET') {
        for (const query of QUERIES) await send('GET', `${real_path}?${query}`);
        await send('GET', `${real_path}/${BAD_ESCAPES[0]}`);
        continue;
      }
      if (dashboard) {
        // Forms: without a token, with a forged one, with prototype keys and too many fields;
        // then each field of a valid form (with the real token) set to each bad value.
        const csrf = route.path.startsWith('/admin') ? admin_csrf : user_csrf;
        const form = 'application/x-www-form-urlencoded';
        await send(route.method, real_path, '', form);
        await send(route.method, real_path, '_csrf=forged&a=b', form);
        await send(route.method, real_path, '_csrf[]=x&_csrf[]=y', form);
        await send(
          route.method,
          real_path,
          `__proto__=x&constructor=y&toString=z&_csrf=${SESSION_ENDING.has(key) ? 'forged' : csrf}`,
          form,
        );
        await send(
          route.method,
          real_path,
          Array.from({ length: 300 }, (_, i) => `f${i}=${i}`).join('&'),
          form,
        );
        await send(route.method, real_path, `_csrf=${csrf}&x=${BAD_ESCAPES[0]}%`, form);
        for (const raw of RAW_BODIES.slice(0, 6))
          await send(route.method, real_path, raw, 'application/json');
        for (const { encoding, body } of BAD_ENCODINGS)
          await send(route.method, real_path, body, form, { 'content-encoding': encoding });
        for (const extra of EXTRA_BODIES[key] ?? [])
          await send(
            route.method,
            real_path,
            new URLSearchParams({ ...(extra as Record<string, string>), _csrf: csrf }).toString(),
            form,
          );
        const baseline = FORM_BASELINES[key];
        if (baseline && !SESSION_ENDING.has(key)) {
          for (const field of Object.keys(baseline)) {
            for (const value of BAD_FORM_VALUES) {
              await send(
                route.method,
                real_path,
                new URLSearchParams({ ...baseline, [field]: value, _csrf: csrf }).toString(),
                form,
              );
            }
          }
        }
        continue;
      }
      // JSON surfaces: raw bodies, other content types, then each field of a valid body set to each bad value.
      for (const raw of RAW_BODIES) await send(route.method, real_path, raw, 'application/json');
      for (const { encoding, body } of BAD_ENCODINGS)
        await send(route.method, real_path, body, 'application/json', {
          'content-encoding': encoding,
        });
      await send(route.method, real_path, '{}', 'text/plain');
      await send(route.method, real_path, '{}', 'application/json; charset=utf-16');
      await send(
        route.method,
        real_path,
        '--x\r\nContent-Disposition: form-data; name="__proto__"\r\n\r\nx\r\n--x--\r\n',
        'multipart/form-data; boundary=x',
      );
      for (const extra of EXTRA_BODIES[key] ?? [])
        await send(route.method, real_path, JSON.stringify(extra), 'application/json');
      const baseline = baselines[key];
      if (baseline) {
        for (const field of Object.keys(baseline)) {
          for (const value of BAD_VALUES)
            await send(
              route.method,
              real_path,
              JSON.stringify({ ...baseline, [field]: value }),
              'application/json',
            );
          await send(
            route.method,
            real_path,
            JSON.stringify(
              Object.fromEntries(Object.entries(baseline).filter(([name]) => name !== field)),
            ),
            'application/json',
          );
        }
      }
      assert.equal(gateway.proc.exitCode, null, `the gateway is alive after ${key}`);
    }

    t.diagnostic(
      `${routes.length} routes, ${sent} requests: ${[...by_class]
        .sort()
        .map(([cls, n]) => `${n} × ${cls}`)
        .join(', ')}`,
    );
    assert.deepEqual(failures, [], `${failures.length} answers were 5xx or missing`);
    assert.equal((await request(`${gateway.url}/healthz`)).status, 200, 'alive at the end');
    assert.equal(await gateway.stop(), 0, 'a clean stop');
    const verify = await runVerify(gateway.data_dir);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  },
);
