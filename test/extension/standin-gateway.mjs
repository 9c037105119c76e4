#!/usr/bin/env node
// A scripted stand-in for dist/gateway.js with the same command line, log line and HTTP contract
// (admin API, /v1 chat with streaming and x_aihub, /v1/models, /v1/balance, OpenAI-shaped errors).
// Only for developing the extension tests while the real /v1 is not built; the final runs use the
// real gateway (see test/extension/suite/gateway.ts, AIHUB_TEST_GATEWAY).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { port: { type: 'string' }, host: { type: 'string' }, 'data-dir': { type: 'string' } } });
const adminToken = process.env.AIHUB_ADMIN_TOKEN;
const MICROS = 1_000_000;
const MODELS = { 'service-ai-free': [0, 0], 'service-ai-lite': [50, 150], 'service-ai-standard-6': [300, 900], 'service-ai-pro-4': [1500, 4500], 'service-ai-max': [6000, 18000] };
const accounts = new Map();
const keys = new Map();
const keyIds = new Map();
const hash = (s) => createHash('sha256').update(s).digest('hex');

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': randomUUID(), ...headers });
  res.end(JSON.stringify(body));
}
const oaiError = (res, status, code, message, type = 'invalid_request_error') => send(res, status, { error: { message, type, param: null, code } });
const readBody = (req) => new Promise((resolve) => { let s = ''; req.on('data', (c) => (s += c)); req.on('end', () => resolve(s ? JSON.parse(s) : {})); });

function reply(messages) {
  const last = messages.at(-1)?.content ?? '';
  const system = messages[0]?.content ?? '';
  if (/code only/.test(system)) return '```ts\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n```';
  return `You asked about: ${last.split('\n')[0].slice(0, 60)}\n\nHere is an example:\n\n\`\`\`js\nconsole.log("hello");\n\`\`\`\n\nThat is **all**.`;
}

const server = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/healthz') return send(res, 200, { status: 'ok' });
  if (url.pathname.startsWith('/admin/')) {
    if (req.headers.authorization !== `Bearer ${adminToken}`) return send(res, 401, { error: { message: 'admin token' } });
    const body = await readBody(req);
    let m;
    if (req.method === 'POST' && url.pathname === '/admin/accounts') {
      const id = `acct_${randomBytes(6).toString('hex')}`;
      accounts.set(id, { id, email: body.email, balance_micros: 0, credits: new Set(), usage: { requests: 0, prompt_tokens: 0, completion_tokens: 0, cost_micros: 0 } });
      return send(res, 201, { id, email: body.email, name: body.name ?? null });
    }
    if (req.method === 'POST' && (m = /^\/admin\/accounts\/([^/]+)\/keys$/.exec(url.pathname))) {
      if (!accounts.has(m[1])) return send(res, 404, { error: { message: 'no account' } });
      const key = `aih_${randomBytes(16).toString('hex')}`;
      const id = randomUUID();
      keys.set(hash(key), m[1]);
      keyIds.set(id, hash(key));
      return send(res, 201, { id, key, prefix: key.slice(0, 8) });
    }
    if (req.method === 'DELETE' && (m = /^\/admin\/keys\/([^/]+)$/.exec(url.pathname))) {
      keys.delete(keyIds.get(m[1]));
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && (m = /^\/admin\/accounts\/([^/]+)\/credit$/.exec(url.pathname))) {
      const account = accounts.get(m[1]);
      if (!account) return send(res, 404, { error: { message: 'no account' } });
      if (!account.credits.has(body.reference)) account.balance_micros += Math.round(body.amount * MICROS);
      account.credits.add(body.reference);
      return send(res, 200, { balance: account.balance_micros / MICROS });
    }
    return send(res, 404, { error: { message: 'not found' } });
  }
  if (!url.pathname.startsWith('/v1/')) return send(res, 404, { error: { message: 'not found' } });
  const key = (req.headers.authorization ?? '').replace(/^Bearer /, '');
  const account = accounts.get(keys.get(hash(key)));
  if (!account) return oaiError(res, 401, 'invalid_api_key', 'Invalid API key.', 'authentication_error');
  if (url.pathname === '/v1/models') return send(res, 200, { object: 'list', data: Object.entries(MODELS).map(([id, [i, o]]) => ({ id, object: 'model', created: 0, owned_by: 'aihub', tier: id, pricing: { input_per_million: i, output_per_million: o, currency: 'INR' } })) });
  if (url.pathname === '/v1/balance') return send(res, 200, { object: 'balance', currency: 'INR', balance: account.balance_micros / MICROS, usage: { ...account.usage, cost: account.usage.cost_micros / MICROS } });
  if (url.pathname !== '/v1/chat/completions') return oaiError(res, 404, 'not_found', 'no route');
  const body = await readBody(req);
  const price = MODELS[body.model];
  if (!price) return oaiError(res, 404, 'model_not_found', `The model ${body.model} does not exist.`);
  if (price[1] > 0 && account.balance_micros <= 0) return oaiError(res, 402, 'insufficient_balance', `Insufficient balance. Top up at http://${values.host}:${server.address().port}/wallet`, 'insufficient_balance');
  const text = reply(body.messages);
  const pieces = text.match(/\S+\s*|\s+/g) ?? [];
  const promptTokens = JSON.stringify(body.messages).length >> 2;
  const cost_micros = Math.round((promptTokens * price[0] + pieces.length * price[1]) * MICROS / 1_000_000);
  account.balance_micros -= cost_micros;
  Object.assign(account.usage, { requests: account.usage.requests + 1, prompt_tokens: account.usage.prompt_tokens + promptTokens, completion_tokens: account.usage.completion_tokens + pieces.length, cost_micros: account.usage.cost_micros + cost_micros });
  const x_aihub = { request_id: randomUUID(), tier: body.model, cost: cost_micros / MICROS, balance: account.balance_micros / MICROS, currency: 'INR', prompt_tokens: promptTokens, completion_tokens: pieces.length };
  const base = { id: `chatcmpl-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: body.model };
  if (!body.stream) return send(res, 200, { ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: promptTokens, completion_tokens: pieces.length, total_tokens: promptTokens + pieces.length }, x_aihub });
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta, finish, extra = {}) => res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`);
  chunk({ role: 'assistant', content: '' }, null);
  for (const piece of pieces) {
    if (res.destroyed) return;
    chunk({ content: piece }, null);
    await new Promise((r) => setTimeout(r, 5));
  }
  chunk({}, 'stop', { x_aihub });
  res.end('data: [DONE]\n\n');
});
server.listen(Number(values.port ?? 8787), values.host ?? '127.0.0.1', () => {
  console.log(JSON.stringify({ level: 30, msg: 'listening', port: server.address().port, data_dir: values['data-dir'] }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
