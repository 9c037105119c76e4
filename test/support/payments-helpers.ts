// Shared steps of the payments gateway tests: a config with short intervals, and onboarding
// over HTTP in the seed's order (register → eKYC → approval → activation → credit).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  admin,
  request,
  runVerify,
  startGateway,
  gatewayState,
  tempDir,
  type Gateway,
  type StartOptions,
} from '../gateway/helpers.ts';
import { JOURNAL_DIR } from '../../gateway/store/store.ts';
import { readJournal } from '../../gateway/store/journal.ts';
import { verhoeffCheckDigit } from '../../gateway/payments/identity/aadhaar.ts';
import { ScriptedUpstream } from './scripted-upstream.ts';

/** A valid Aadhaar number built from 11 digits (first 2–9) plus its Verhoeff check digit. */
export function aadhaar(first11 = '23412341234'): string {
  return first11 + verhoeffCheckDigit(first11);
}

export const VALID_KYC = {
  name: 'Asha Verma',
  aadhaar_number: '2341 2341 2346',
  pan_number: 'AAPFU0939F',
  gstin: '27AAPFU0939F1ZV',
};

/** The test operator's GSTIN (Karnataka; its check character is G). */
export const OPERATOR_GSTIN = '29AAACA1234A1ZG';

/** The sandbox pair with short timeouts, so `0004` failover and pending outcomes are quick. */
export function fastSandboxChain() {
  return [
    { type: 'sandbox', name: 'sandbox-a', hang_on: ['0004'], timeout_ms: 300, pending_ms: 300 },
    { type: 'sandbox', name: 'sandbox-b', timeout_ms: 300, pending_ms: 300 },
  ];
}

export function paymentsConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    payments: {
      tick_ms: 20,
      kyc: { max_file_bytes: 64 * 1024, max_files: 3 },
      reconcile: { first_check_ms: 100, max_backoff_ms: 400 },
      webhooks: { first_retry_ms: 100, max_backoff_ms: 400, timeout_ms: 2_000 },
      // A registered operator (its fees carry GST); a test of an unregistered one overrides `tax`.
      tax: { operator: { gstin: OPERATOR_GSTIN, pan: OPERATOR_GSTIN.slice(2, 12) } },
      providers: {
        recharge: fastSandboxChain(),
        dmt: fastSandboxChain(),
        pan: fastSandboxChain(),
        bills: fastSandboxChain(),
      },
      ...overrides,
    },
  };
}

export async function startPaymentsGateway(
  config: Record<string, unknown> = paymentsConfig(),
  options: StartOptions = {},
): Promise<Gateway> {
  const file = join(tempDir('aihub-pay-config-'), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return startGateway({ ...options, env: { ...options.env, AIHUB_CONFIG: file } });
}

let counter = 0;

export type PaymentsServices = Partial<Record<'recharge' | 'dmt' | 'pan' | 'bills', boolean>>;

/** Register → eKYC → approve → activate the services (recharge by default) → credit; returns the key and the account id. */
export async function onboard(
  gateway: Gateway,
  amount = 1_000,
  services: PaymentsServices = { recharge: true },
): Promise<{ key: string; account_id: string; headers: Record<string, string> }> {
  const api = admin(gateway);
  const email = `dev${++counter}-${process.pid}-${Date.now()}@example.com`;
  const registered = await request(`${gateway.url}/api/register`, {
    body: { email, password: 'correct horse battery', name: 'Dev' },
  });
  if (registered.status !== 201)
    throw new Error(`register: ${registered.status} ${JSON.stringify(registered.body)}`);
  const { api_key: key, account_id } = registered.body.data;
  const headers = { 'x-api-key': key };
  const kyc = await request(`${gateway.url}/api/kyc`, { headers, body: VALID_KYC });
  if (kyc.status !== 200) throw new Error(`kyc: ${kyc.status} ${JSON.stringify(kyc.body)}`);
  const approved = await api.post(`/admin/kyc/${account_id}/approve`, {});
  if (approved.status !== 200)
    throw new Error(`approve: ${approved.status} ${JSON.stringify(approved.body)}`);
  const activated = await api.post(`/admin/accounts/${account_id}/services`, services);
  if (activated.status !== 200)
    throw new Error(`services: ${activated.status} ${JSON.stringify(activated.body)}`);
  if (amount > 0) {
    const credit = await api.post(`/admin/accounts/${account_id}/credit`, {
      amount,
      reference: `fund-${account_id}`,
    });
    if (credit.status !== 200)
      throw new Error(`credit: ${credit.status} ${JSON.stringify(credit.body)}`);
  }
  return { key, account_id, headers };
}

export async function balance(gateway: Gateway, headers: Record<string, string>): Promise<number> {
  const reply = await request(`${gateway.url}/api/wallet/balance`, { headers });
  if (reply.status !== 200)
    throw new Error(`balance: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.data.balance;
}

/** Polls a transaction until it is final (bounded). */
export async function waitFinal(
  gateway: Gateway,
  headers: Record<string, string>,
  txn_id: string,
  timeout_ms = 15_000,
): Promise<any> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    const reply = await request(`${gateway.url}/api/transactions/${txn_id}`, { headers });
    if (reply.status === 200 && reply.body.data.status !== 'pending') return reply.body.data;
    if (Date.now() > deadline)
      throw new Error(`transaction ${txn_id} still pending: ${JSON.stringify(reply.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `aihub-gateway verify` on the data dir must pass; returns its report. */
export async function verifyOk(gateway: Gateway): Promise<{ open_holds: number }> {
  const verify = await runVerify(gateway.data_dir);
  if (verify.code !== 0)
    throw new Error(`verify failed (${verify.code}): ${verify.stdout}${verify.stderr}`);
  return JSON.parse(verify.stdout) as { open_holds: number };
}

/** The ledger's balances as the gateway would load them (checkpoint + journal), read-only. */
export async function ledgerBalances(gateway: Gateway): Promise<Record<string, number>> {
  return (await gatewayState(gateway)).balances;
}

/** The ids of one table's rows as the gateway would load them (checkpoint + durable journal), read-only. */
export async function tableIds(gateway: Gateway, name: string): Promise<Set<string>> {
  const state = await gatewayState(gateway);
  return new Set(Object.keys((state.tables as Record<string, object | undefined>)[name] ?? {}));
}

/** The ids `del` ops of the journal removed from one table (every durable record, from the first). */
export function deletedIds(gateway: Gateway, name: string): Set<string> {
  const ids = new Set<string>();
  for (const record of readJournal(join(gateway.data_dir, JOURNAL_DIR), 0, { repair: false })) {
    for (const op of record.ops) if (op.o === 'del' && op.t === name) ids.add(op.id);
  }
  return ids;
}

/** Polls `check` until it is true, failing with `describe()` after `timeout_ms`: a test waits on state, not on a log line. */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  describe: () => string | Promise<string>,
  timeout_ms = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited ${timeout_ms} ms: ${await describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A remitter registered and verified through the sandbox OTP. */
export async function verifiedRemitter(
  gateway: Gateway,
  headers: Record<string, string>,
  mobile: string,
  name = 'Ravi Kumar',
): Promise<void> {
  const registered = await request(`${gateway.url}/api/dmt/remitter`, {
    headers,
    body: { mobile, name },
  });
  if (registered.status !== 200 || typeof registered.body.data.sandbox_otp !== 'string')
    throw new Error(`remitter: ${registered.status} ${JSON.stringify(registered.body)}`);
  const verified = await request(`${gateway.url}/api/dmt/remitter/verify`, {
    headers,
    body: { mobile, otp: registered.body.data.sandbox_otp },
  });
  if (verified.status !== 200 || verified.body.data.verified !== true)
    throw new Error(`verify: ${verified.status} ${JSON.stringify(verified.body)}`);
  // RBI's 2024 framework: an officially valid document, verified once, before any transfer.
  const kyc = await request(`${gateway.url}/api/dmt/remitter/kyc`, {
    headers,
    body: { mobile, document_type: 'aadhaar', document_number: aadhaar(), name },
  });
  if (kyc.status !== 200 || kyc.body.data.kyc.verified !== true)
    throw new Error(`remitter kyc: ${kyc.status} ${JSON.stringify(kyc.body)}`);
}

/** The OTP in the latest SMS a scripted SMS sender (`{to, text}` bodies) got for `mobile` (live mode). */
export function smsOtp(sms: { seen: Array<{ json?: any }> }, mobile: string): string {
  const sent = sms.seen.filter((s) => s.json?.to === mobile).at(-1);
  const otp = /\b(\d{6})\b/.exec(String(sent?.json?.text))?.[1];
  assert.ok(otp, `an OTP was sent to ${mobile}`);
  return otp;
}

/**
 * Live mode's remitter: registered, verified with the OTP our SMS sender sent, and its
 * document (`kyc`) verified through the DMT providers; throws on any refusal.
 */
export async function liveVerifiedRemitter(
  gateway: Pick<Gateway, 'url'>,
  headers: Record<string, string>,
  sms: { seen: Array<{ json?: any }> },
  mobile: string,
  kyc: { document_type: string; document_number: string },
  name = 'Ravi Kumar',
): Promise<void> {
  const steps: Array<[string, () => Record<string, unknown>]> = [
    ['/api/dmt/remitter', () => ({ mobile, name })],
    ['/api/dmt/remitter/verify', () => ({ mobile, otp: smsOtp(sms, mobile) })],
    ['/api/dmt/remitter/kyc', () => ({ mobile, ...kyc, name })],
  ];
  for (const [path, body] of steps) {
    const reply = await request(`${gateway.url}${path}`, { headers, body: body() });
    if (reply.status !== 200)
      throw new Error(`${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
}

/**
 * Live mode's transfer to a new beneficiary of `mobile`: its OTP by our SMS sender, then the
 * transfer; the answer's body (throws on a refusal of either call).
 */
export async function liveTransfer(
  gateway: Gateway,
  headers: Record<string, string>,
  sms: { seen: Array<{ json?: any }> },
  mobile: string,
  account_number: string,
  amount: number,
  txn_type: 'IMPS' | 'NEFT' = 'IMPS',
) {
  const bene_id = await addBeneficiary(gateway, headers, mobile, account_number);
  const order = { mobile, bene_id, amount, txn_type };
  const otp = await request(`${gateway.url}/api/dmt/transact/otp`, { headers, body: order });
  if (otp.status !== 200)
    throw new Error(`transfer OTP: ${otp.status} ${JSON.stringify(otp.body)}`);
  const done = await request(`${gateway.url}/api/dmt/transact`, {
    headers,
    body: { ...order, otp_ref: otp.body.data.otp_ref, otp: smsOtp(sms, mobile) },
  });
  if (done.status !== 200) throw new Error(`transfer: ${done.status} ${JSON.stringify(done.body)}`);
  return done.body;
}

/**
 * A transfer as the 2024 framework has it: its OTP requested (`POST /api/dmt/transact/otp`),
 * then the transfer with `otp_ref` and the sandbox's code. `extra` rides in the transfer's
 * body only (client_ref, allow_duplicate); `request_headers` on both calls.
 */
export async function transferWithOtp(
  gateway: Pick<Gateway, 'url'>,
  headers: Record<string, string>,
  body: { mobile: string; bene_id: string; amount: number; txn_type: string },
  extra: Record<string, unknown> = {},
  request_headers: Record<string, string> = {},
) {
  const otp = await request(`${gateway.url}/api/dmt/transact/otp`, {
    headers: { ...headers, ...request_headers },
    body,
  });
  if (otp.status !== 200) return otp;
  return request(`${gateway.url}/api/dmt/transact`, {
    headers: { ...headers, ...request_headers },
    body: { ...body, ...extra, otp_ref: otp.body.data.otp_ref, otp: otp.body.data.sandbox_otp },
  });
}

/** Adds a beneficiary and returns its id. */
export async function addBeneficiary(
  gateway: Gateway,
  headers: Record<string, string>,
  mobile: string,
  account_number: string,
  name = 'Sunita Rao',
  ifsc = 'SBIN0001234',
): Promise<string> {
  const added = await request(`${gateway.url}/api/dmt/beneficiary`, {
    headers,
    body: { mobile, name, account_number, ifsc },
  });
  if (added.status !== 200)
    throw new Error(`beneficiary: ${added.status} ${JSON.stringify(added.body)}`);
  return added.body.data.bene_id;
}

/** Parses RFC 4180 CSV (quoted fields, doubled quotes, CRLF) into rows of strings. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** A small PDF with a secret line in it (encryption tests look for the line on disk). */
export const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj << /Type /Catalog /Secret (PAN of Asha Verma) >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n',
);

/** A new account with a webhook (its secret) and an eKYC submission with one document. */
export async function registerWithWebhookAndKyc(gw: Gateway): Promise<{
  account_id: string;
  headers: Record<string, string>;
  secret: string;
  document_id: string;
}> {
  const registered = await request(`${gw.url}/api/register`, {
    body: {
      email: `enc-${Date.now()}@example.com`,
      password: 'correct horse battery',
      name: 'Enc',
    },
  });
  assert.equal(registered.status, 201);
  const { account_id, api_key } = registered.body.data;
  const headers = { 'x-api-key': api_key };
  const hook = await request(`${gw.url}/api/webhook`, {
    method: 'PUT',
    headers,
    body: { url: 'http://127.0.0.1:9/hook' },
  });
  assert.equal(hook.status, 200);
  const form = new FormData();
  for (const [name, value] of Object.entries(VALID_KYC)) form.set(name, value);
  form.append('pan_document', new Blob([new Uint8Array(PDF)]), 'pan.pdf');
  const kyc = await fetch(`${gw.url}/api/kyc`, { method: 'POST', headers, body: form });
  const kyc_body = (await kyc.json()) as any;
  assert.equal(kyc.status, 200, JSON.stringify(kyc_body));
  return {
    account_id,
    headers,
    secret: hook.body.data.secret,
    document_id: kyc_body.data.documents[0].id,
  };
}

/** An eKYC document as the admin downloads it. */
export async function download(
  gw: Gateway,
  account_id: string,
  document_id: string,
): Promise<Buffer> {
  const response = await fetch(`${gw.url}/admin/kyc/${account_id}/documents/${document_id}`, {
    headers: { authorization: `Bearer ${gw.admin_token}` },
  });
  assert.equal(response.status, 200);
  return Buffer.from(await response.arrayBuffer());
}

/** The report metrics of one scrape, by series (`aihub_reports_cancelled_total{stage="queued"}`). */
export async function reportMetrics(url: string): Promise<Record<string, number>> {
  const text = (await request<string>(`${url}/metrics`)).body;
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const match = /^(aihub_reports_\S+) (\S+)$/.exec(line);
    if (match) out[match[1]!] = Number(match[2]);
  }
  return out;
}

/**
 * A payments gateway with `reports` settings whose chat model's only upstream never answers:
 * a report pipelined on a raw connection behind a chat request cannot send a byte, so a test
 * can hold it (waiting for 'drain') as long as it likes. Close `upstream` to let it go.
 */
export async function startHoldingGateway(
  reports: Record<string, unknown>,
): Promise<{ gateway: Gateway; upstream: ScriptedUpstream }> {
  const upstream = await ScriptedUpstream.start({ kind: 'hang' });
  const config = join(tempDir('aihub-report-hold-'), 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      ...paymentsConfig({ reports }),
      chat: {
        rate_limit: { requests_per_minute: 6000 },
        engines: {
          silent: {
            type: 'openai-compatible',
            base_url: upstream.base_url,
            model: 'm',
            api_key_env: 'SCRIPTED_KEY',
            timeout_ms: 120_000,
          },
        },
        models: { 'service-ai-lite': { targets: ['silent'] } },
      },
    }),
  );
  const gateway = await startGateway({
    args: ['--config', config],
    env: { SCRIPTED_KEY: 'sk-scripted' },
  });
  return { gateway, upstream };
}

/**
 * The bytes of a chat request (its upstream never answers, on a holding gateway) and, behind
 * it on the same connection, `request` (a raw HTTP/1.1 request): the second cannot send a
 * byte while the first waits.
 */
export function behindHangingChat(key: string, request: string): string {
  const chat = JSON.stringify({
    model: 'service-ai-lite',
    messages: [{ role: 'user', content: 'hello' }],
  });
  return (
    `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(chat)}\r\n\r\n${chat}` +
    request
  );
}

/** A transaction as `GET /api/transactions/:id` shows it to its owner. */
export async function txnOf(
  gw: Gateway,
  headers: Record<string, string>,
  id: string,
): Promise<any> {
  const reply = await request(`${gw.url}/api/transactions/${id}`, { headers });
  if (reply.status !== 200)
    throw new Error(`transaction ${id}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body.data;
}

/** Waits until the transaction is in `status` (its state, not a timing) and returns it. */
export async function waitStatus(
  gw: Gateway,
  headers: Record<string, string>,
  id: string,
  status: string,
): Promise<any> {
  let last: any = null;
  await waitFor(
    async () => (last = await txnOf(gw, headers, id)).status === status,
    () => `${id} is ${last?.status}, not ${status}: ${last?.message}`,
  );
  return last;
}
