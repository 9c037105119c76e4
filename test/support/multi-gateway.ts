// Several real gateway processes on one PostgreSQL database (issue #18): the cluster, the
// gateways, the CLI's verify on a database, a dashboard login, and the check whether this
// build has the PostgreSQL store at all.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  runCli,
  startGateway,
  tempDir,
  TEST_CLUSTER_URL,
  type Gateway,
  type StartOptions,
} from '../gateway/helpers.ts';
import { waitFor } from './payments-helpers.ts';
import { createDatabase, startPostgres, type PostgresCluster } from './postgres.ts';

/** Every gateway of one deployment shares the key that seals secrets and eKYC documents. */
export const SHARED_ENCRYPTION_KEY = randomBytes(32).toString('hex');
export const ADMIN_TOKEN = 'multi-gateway-admin-token-0123456789abcdef';

let own: Promise<PostgresCluster> | undefined;

/**
 * A cluster of this process's own (started once, torn down at exit): for the tests that stop
 * and start PostgreSQL, which must not do that to a cluster other test files share.
 */
export function ownCluster(): Promise<PostgresCluster> {
  own ??= startPostgres();
  return own;
}

/** A fresh database: on the run's shared cluster when there is one, else on this process's own. */
export async function freshDatabase(): Promise<string> {
  if (TEST_CLUSTER_URL) return createDatabase(TEST_CLUSTER_URL);
  return (await ownCluster()).createDatabase();
}

let missing: Promise<string | false> | undefined;

/**
 * Why the PostgreSQL tests cannot run on this build, or false when they can: the built
 * gateway must know `--database-url`. Asked once per process, of `aihub-gateway verify` on a
 * fresh database, so a skip names its reason instead of passing silently.
 */
export function postgresStoreMissing(): Promise<string | false> {
  missing ??= (async () => {
    const url = await freshDatabase();
    const result = await runCli(['verify', '--database-url', url]);
    if (/unknown option '--database-url'/i.test(result.stderr))
      return 'this build has no PostgreSQL store: `aihub-gateway verify --database-url` is an unknown option';
    return false;
  })();
  return missing;
}

export interface GatewaysOptions extends Omit<StartOptions, 'database_url' | 'data_dir'> {
  /** The gateways' config file contents (one file for all, as in a deployment). */
  config?: Record<string, unknown>;
}

/**
 * Starts gateway number `index` (id g<index>) on the database, with the deployment's shared
 * secrets; `data_dir` restarts a gateway on the data dir (and replica) it had.
 */
export async function startMember(
  database_url: string,
  index: number,
  options: GatewaysOptions & { data_dir?: string } = {},
): Promise<Gateway> {
  const env: Record<string, string> = {
    AIHUB_GATEWAY_ID: `g${index}`,
    AIHUB_ENCRYPTION_KEY: SHARED_ENCRYPTION_KEY,
    ...options.env,
  };
  if (options.config) {
    const file = join(tempDir('aihub-multi-config-'), 'config.json');
    writeFileSync(file, JSON.stringify(options.config));
    env.AIHUB_CONFIG = file;
  }
  return startGateway({
    ...options,
    admin_token: options.admin_token ?? ADMIN_TOKEN,
    database_url,
    env,
    timeout_ms: options.timeout_ms ?? 30_000,
  });
}

/** `count` gateways on one database, started at the same moment (migrations must not race). */
export async function startGateways(
  database_url: string,
  count: number,
  options: GatewaysOptions = {},
): Promise<Gateway[]> {
  const started = await Promise.allSettled(
    Array.from({ length: count }, (_, i) => startMember(database_url, i + 1, options)),
  );
  const gateways = started.flatMap((result) =>
    result.status === 'fulfilled' ? [result.value] : [],
  );
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) {
    await stopAll(gateways);
    throw failed.reason;
  }
  return gateways;
}

/** A gauge's value on a gateway's /metrics (NaN when it is not there). */
export async function metric(gateway: Pick<Gateway, 'url'>, name: string): Promise<number> {
  const text = await (await fetch(`${gateway.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : Number.NaN;
}

/** Waits (on state) until every gateway counts all of them live: their limits are shared out. */
export async function waitAllLive(gateways: Gateway[]): Promise<void> {
  const live = () => Promise.all(gateways.map((g) => metric(g, 'aihub_gateways_live')));
  await waitFor(
    async () => (await live()).every((n) => n === gateways.length),
    async () => `aihub_gateways_live: ${await live()}`,
  );
}

const isError = (line: string) => !line.startsWith('{') || /"level":"(error|fatal)"/.test(line);

/**
 * The gateways' logged errors (level error or fatal, or not JSON), for a failure message. Log
 * lines arrive through a pipe after the answer they belong to, so it waits for one (bounded).
 */
export async function loggedErrors(
  gateways: Gateway[],
  most = 5,
  wait_ms = 2_000,
): Promise<string> {
  const deadline = Date.now() + wait_ms;
  while (!gateways.some((gateway) => gateway.output.some(isError)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
  const lines = gateways.flatMap((gateway, i) =>
    gateway.output.filter(isError).map((line) => `g${i + 1}: ${line.slice(0, 500)}`),
  );
  return lines.length ? `\nthe gateways logged:\n${lines.slice(-most).join('\n')}` : '';
}

/**
 * Stops every gateway with `signal`; one that has not exited 20 s later is SIGKILLed and
 * reported, so that a shutdown that hangs fails the test with its name instead of a timeout.
 */
export async function stopAll(
  gateways: Gateway[],
  signal: NodeJS.Signals = 'SIGTERM',
  grace_ms = 20_000,
): Promise<void> {
  const hung: string[] = [];
  await Promise.all(
    gateways.map(async (gateway, i) => {
      let timer: NodeJS.Timeout | undefined;
      const stopped = gateway.stop(signal);
      const late = new Promise<'late'>(
        (resolve) => (timer = setTimeout(() => resolve('late'), grace_ms)),
      );
      if ((await Promise.race([stopped, late])) === 'late') {
        hung.push(
          `g${i + 1} (${gateway.url}) did not exit within ${grace_ms} ms of ${signal}; its last lines:\n${gateway.output
            .filter((line) => !line.includes('"msg":"request"'))
            .slice(-5)
            .join('\n')}`,
        );
        gateway.proc.kill('SIGKILL');
        await stopped;
      }
      clearTimeout(timer);
    }),
  );
  if (hung.length) throw new Error(hung.join('\n'));
}

/** `aihub-gateway verify --database-url`: exit code and the parsed report. */
export async function verifyDatabase(
  database_url: string,
): Promise<{ code: number | null; report: any; output: string }> {
  const result = await runCli(['verify', '--database-url', database_url]);
  let report: any = null;
  try {
    report = JSON.parse(result.stdout);
  } catch {
    // not JSON: the output says why
  }
  return { code: result.code, report, output: result.stdout + result.stderr };
}

/** Logs in to the dashboard as a browser would; returns the Cookie header to send afterwards. */
export async function dashboardLogin(
  gateway: Pick<Gateway, 'url'>,
  email: string,
  password: string,
): Promise<string> {
  const form = await fetch(`${gateway.url}/login`);
  const anon_cookie = form.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  if (!csrf) throw new Error('no CSRF token on /login');
  const login = await fetch(`${gateway.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: anon_cookie,
      origin: gateway.url,
    },
    body: new URLSearchParams({ email, password, _csrf: csrf }),
  });
  if (login.status !== 303) throw new Error(`login: ${login.status} ${await login.text()}`);
  const session_cookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  return `${anon_cookie}; ${session_cookie}`;
}

/** GET a dashboard page with a cookie, without following redirects. */
export async function dashboardPage(
  gateway: Pick<Gateway, 'url'>,
  path: string,
  cookie: string,
): Promise<{ status: number; text: string }> {
  const reply = await fetch(`${gateway.url}${path}`, { headers: { cookie }, redirect: 'manual' });
  return { status: reply.status, text: await reply.text() };
}

export const micros = (units: number) => Math.round(units * 1_000_000);
