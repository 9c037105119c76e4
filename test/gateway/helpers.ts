// Starts the real gateway (dist/gateway.js, built by `npm run build`) as a child process on
// port 0 with a temp data dir, and talks to it over loopback HTTP.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { createDatabase } from '../support/postgres.js';
import pg from 'pg';
import { loadState } from '../../gateway/store/store.js';
import { scanHistory } from '../../gateway/store/history.js';
import {
  emptyState,
  isArchivedRow,
  type HistoryRecord,
  type State,
} from '../../gateway/store/state.js';
import { tempDir } from '../support/temp.js';

export const GATEWAY_JS = resolve(import.meta.dirname, '../../dist/gateway.js');

export interface Gateway {
  url: string;
  port: number;
  data_dir: string;
  /** The PostgreSQL database this gateway keeps its store in, when it has one. */
  database_url?: string;
  admin_token: string;
  proc: ChildProcess;
  /** stdout and stderr lines so far */
  output: string[];
  /** SIGTERM (or the given signal) and wait for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Every file below a directory, recursively. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

// Temp dirs (data dirs, config files) are removed when the test process ends.
export { tempDir } from '../support/temp.js';

/**
 * A gateway whose config file holds this `chat` section (engines, models, breaker...), at
 * 6,000 requests a minute unless the section says otherwise; `SCRIPTED_KEY` is set for
 * engines that name it as their `api_key_env`.
 */
export async function startGatewayWithChat(
  chat: Record<string, unknown>,
  options: StartOptions = {},
): Promise<Gateway> {
  const config = join(tempDir('aihub-chat-config-'), 'config.json');
  writeFileSync(
    config,
    JSON.stringify({ chat: { rate_limit: { requests_per_minute: 6000 }, ...chat } }),
  );
  return startGateway({
    ...options,
    args: ['--config', config, ...(options.args ?? [])],
    env: { SCRIPTED_KEY: 'sk-scripted', ...options.env },
  });
}

export interface StartOptions {
  data_dir?: string;
  admin_token?: string | null;
  env?: Record<string, string>;
  args?: string[];
  timeout_ms?: number;
  /**
   * The store's database: a URL, or false for the JSON-file store whatever the run says.
   * Default: the JSON-file store, or, in a run with AIHUB_TEST_DATABASE_URL set, a fresh
   * database on that cluster for this data dir (see testDatabaseFor).
   */
  database_url?: string | false;
}

/** The PostgreSQL cluster of this test run (scripts/test-all.sh's PostgreSQL pass), if any. */
export const TEST_CLUSTER_URL = process.env.AIHUB_TEST_DATABASE_URL || undefined;

const testDatabases = new Map<string, Promise<string>>();

/**
 * In a PostgreSQL run, the database that stands for a data dir: made fresh the first time, the
 * same one when a test restarts a gateway on the same data dir (so restart tests keep their
 * state). Undefined in a JSON-file run.
 */
export function testDatabaseFor(data_dir: string): Promise<string> | undefined {
  if (!TEST_CLUSTER_URL) return undefined;
  let database = testDatabases.get(data_dir);
  if (!database) {
    database = createDatabase(TEST_CLUSTER_URL);
    testDatabases.set(data_dir, database);
  }
  return database;
}

async function databaseArgs(
  options: StartOptions,
  data_dir: string,
): Promise<{ url?: string; args: string[] }> {
  const explicit =
    (options.args ?? []).includes('--database-url') ||
    options.env?.AIHUB_DATABASE_URL !== undefined;
  if (explicit || options.database_url === false) return { args: [] };
  const url = options.database_url ?? (await testDatabaseFor(data_dir));
  return url ? { url, args: ['--database-url', url] } : { args: [] };
}

export async function startGateway(options: StartOptions = {}): Promise<Gateway> {
  const data_dir = options.data_dir ?? tempDir();
  const admin_token =
    options.admin_token === undefined
      ? 'test-admin-token-that-is-long-enough-0123456789'
      : options.admin_token;
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    AIHUB_LOG_LEVEL: 'info',
    ...options.env,
  };
  delete env.AIHUB_ADMIN_TOKEN;
  if (admin_token) env.AIHUB_ADMIN_TOKEN = admin_token;
  const database = await databaseArgs(options, data_dir);
  const proc = spawn(
    process.execPath,
    [
      GATEWAY_JS,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      data_dir,
      ...database.args,
      ...(options.args ?? []),
    ],
    {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const output: string[] = [];
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => {
      // Not left running: a gateway that listens after its test gave up would outlive the run
      // (one was seen still listening minutes after its fuzz test had failed on this timeout).
      proc.kill('SIGKILL');
      reject(new Error(`gateway did not start in time:\n${output.join('\n')}`));
    }, options.timeout_ms ?? 15_000);
    const onLine = (line: string) => {
      output.push(line);
      if (line.includes('"msg":"listening"')) {
        clearTimeout(timer);
        resolvePort((JSON.parse(line) as { port: number }).port);
      }
    };
    lines(proc.stdout!, onLine);
    lines(proc.stderr!, (line) => output.push(line));
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before listening:\n${output.join('\n')}`));
    });
  });
  // 'close', not 'exit': the process has exited and its stdout and stderr have been read to
  // the end, so every line it logged is in `output` when stop() resolves.
  const exited = once(proc, 'close');
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    data_dir,
    ...(database.url ? { database_url: database.url } : {}),
    admin_token: admin_token ?? '',
    proc,
    output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      proc.kill(signal);
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}

/**
 * Waits (bounded) until a line of the gateway's output satisfies `match`. Log lines are
 * written asynchronously and read through a pipe, so one can arrive after the HTTP answer
 * it belongs to: a test waits for it instead of asserting at once.
 */
export async function waitForOutput(
  gateway: Pick<Gateway, 'output'>,
  match: (line: string) => boolean,
  what: string,
  timeout_ms = 10_000,
): Promise<string> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    const line = gateway.output.find(match);
    if (line !== undefined) return line;
    if (Date.now() > deadline)
      throw new Error(
        `no log line ${what} in ${timeout_ms} ms; the last lines:\n${gateway.output.slice(-5).join('\n')}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let buffer = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffer += chunk;
    let index: number;
    while ((index = buffer.indexOf('\n')) !== -1) {
      onLine(buffer.slice(0, index));
      buffer = buffer.slice(index + 1);
    }
  });
}

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export async function request<T = any>(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown; raw?: string } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | undefined;
  if (init.raw !== undefined) body = init.raw;
  else if (init.body !== undefined) body = JSON.stringify(init.body);
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
    headers['content-type'] = 'application/json';
  const response = await fetch(url, {
    method: init.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    body,
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { status: response.status, body: parsed as T, headers: response.headers };
}

/** One JSON chat completion of `content` with `key` (the lite tier, a few output tokens). */
export function chatWith(
  gateway: Pick<Gateway, 'url'>,
  key: string,
  content: string,
  max_tokens = 8,
) {
  return request(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: { model: 'service-ai-lite', messages: [{ role: 'user', content }], max_tokens },
  });
}

/** Admin calls with the gateway's admin token. */
export function admin(gateway: Pick<Gateway, 'url' | 'admin_token'>) {
  const auth = { authorization: `Bearer ${gateway.admin_token}` };
  return {
    get: <T = any>(path: string) => request<T>(`${gateway.url}${path}`, { headers: auth }),
    post: <T = any>(path: string, body: unknown = {}) =>
      request<T>(`${gateway.url}${path}`, { method: 'POST', headers: auth, body }),
    put: <T = any>(path: string, body: unknown = {}) =>
      request<T>(`${gateway.url}${path}`, { method: 'PUT', headers: auth, body }),
    del: <T = any>(path: string) =>
      request<T>(`${gateway.url}${path}`, { method: 'DELETE', headers: auth }),
  };
}

/** An account with a key and (optionally) a credited wallet, through the admin API. */
export async function createFundedAccount(
  gateway: Gateway,
  amount = 0,
  email = `user-${Math.random().toString(36).slice(2)}@example.com`,
) {
  const api = admin(gateway);
  const account = await api.post('/admin/accounts', { email, name: 'Test User' });
  if (account.status !== 201)
    throw new Error(`create account: ${account.status} ${JSON.stringify(account.body)}`);
  const key = await api.post(`/admin/accounts/${account.body.id}/keys`, { name: 'test' });
  if (key.status !== 201) throw new Error(`create key: ${key.status} ${JSON.stringify(key.body)}`);
  if (amount > 0) {
    const credit = await api.post(`/admin/accounts/${account.body.id}/credit`, {
      amount,
      reference: `fund-${account.body.id}`,
    });
    if (credit.status !== 200)
      throw new Error(`credit: ${credit.status} ${JSON.stringify(credit.body)}`);
  }
  return {
    account_id: account.body.id as string,
    key: key.body.key as string,
    key_id: key.body.id as string,
  };
}

/**
 * The gateway's state as a reader of its store sees it (balances, live rows, meta), read-only:
 * the JSON-file store's checkpoint and journal, or the PostgreSQL store's tables (customer
 * balances and the platform's shard sums; rows but the finalized ones, which the JSON-file
 * store keeps as history).
 */
export async function gatewayState(
  gateway: Pick<Gateway, 'data_dir' | 'database_url'>,
): Promise<State> {
  if (!gateway.database_url)
    return (await loadState(gateway.data_dir, { repair: false, now: () => new Date() })).state;
  const pool = new pg.Pool({ connectionString: gateway.database_url, max: 1 });
  try {
    const state = emptyState(new Date().toISOString());
    const balances = await pool.query<{ account: string; micros: string }>(
      `SELECT account, micros::text AS micros FROM aihub.balances
       UNION ALL SELECT account, sum(micros)::text FROM aihub.pool GROUP BY account`,
    );
    for (const row of balances.rows)
      if (Number(row.micros) !== 0)
        state.balances[row.account] = (state.balances[row.account] ?? 0) + Number(row.micros);
    const rows = await pool.query<{ tbl: string; id: string; row: unknown }>(
      'SELECT tbl, id, row FROM aihub.rows ORDER BY created',
    );
    const tables = state.tables as Record<string, Record<string, unknown>>;
    for (const row of rows.rows)
      if (!isArchivedRow(row.tbl, row.row)) (tables[row.tbl] ??= {})[row.id] = row.row;
    return state;
  } finally {
    await pool.end();
  }
}

/** Every history record of the gateway's store, oldest first (the journal, or the database's history table). */
export async function* gatewayHistory(
  gateway: Pick<Gateway, 'data_dir' | 'database_url'>,
): AsyncGenerator<HistoryRecord> {
  if (!gateway.database_url) {
    for await (const item of scanHistory(gateway.data_dir))
      if ('record' in item) yield item.record as HistoryRecord;
    return;
  }
  const pool = new pg.Pool({ connectionString: gateway.database_url, max: 1 });
  try {
    const { rows } = await pool.query<{ record: HistoryRecord }>(
      'SELECT record FROM aihub.history ORDER BY n',
    );
    for (const row of rows) yield row.record;
  } finally {
    await pool.end();
  }
}

/**
 * The store flags of a CLI command on a data dir: `--data-dir D`, plus in a PostgreSQL run the
 * `--database-url` of the database that stands for it (as the gateway started on it had).
 */
export async function storeArgs(data_dir: string): Promise<string[]> {
  const database = testDatabases.get(data_dir);
  return ['--data-dir', data_dir, ...(database ? ['--database-url', await database] : [])];
}

/** Runs `aihub-gateway verify` on a data dir (in a PostgreSQL run, on the database that stands for it). */
export async function runVerify(
  data_dir: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const database = testDatabases.get(data_dir);
  return runCli(
    database ? ['verify', '--database-url', await database] : ['verify', '--data-dir', data_dir],
  );
}

export async function runCli(
  args: string[],
  env: Record<string, string> = {},
  /** Another build's bundle (a bench's baseline verifies its own database layout). */
  gateway_js = GATEWAY_JS,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [gateway_js, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (chunk) => (stdout += chunk));
  proc.stderr.on('data', (chunk) => (stderr += chunk));
  const [code] = (await once(proc, 'exit')) as [number | null];
  return { code, stdout, stderr };
}
