// What the benches share: the scripted upstream and real gateway processes (logs to a file, as
// in production, so that reading them costs the load generator nothing), an autocannon run
// with the machine's busy CPU per request, and a process's CPU time.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { GATEWAY_JS, type Gateway } from '../gateway/helpers.js';

/**
 * The gateway of commit `ref`, for a before/after in one run: exported with `git archive` into
 * `dir`/baseline, built there with its own build script and this checkout's node_modules.
 * Returns its gateway script.
 */
export function buildBaseline(dir: string, ref: string): string {
  const root = resolve(import.meta.dirname, '../..');
  const source = join(dir, 'baseline');
  mkdirSync(source);
  const archive = execFileSync('git', ['archive', '--format=tar', ref], {
    cwd: root,
    maxBuffer: 1024 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', source], { input: archive });
  symlinkSync(join(root, 'node_modules'), join(source, 'node_modules'), 'dir');
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: source, stdio: 'inherit' });
  return join(source, 'dist/gateway.js');
}

export const BENCH_ADMIN_TOKEN = 'bench-admin-token-that-is-long-enough-0123';

/** A support process that prints one JSON line {"port": N} when listening. */
export async function startUpstream(
  script = '../support/bench-upstream.ts',
  args: string[] = [],
): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', resolve(import.meta.dirname, script), ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [line] = (await once(createInterface({ input: proc.stdout! }), 'line')) as [string];
  return { proc, port: (JSON.parse(line) as { port: number }).port };
}

/** The gateways' config file: every tier on the scripted upstream, no rate limit in the way. Returns its path. */
export function writeScriptedConfig(dir: string, upstream_port: number): string {
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      chat: {
        engines: {
          scripted: {
            type: 'openai-compatible',
            base_url: `http://127.0.0.1:${upstream_port}/v1`,
            model: 'scripted',
            timeout_ms: 30_000,
          },
        },
        models: Object.fromEntries(
          [
            'service-ai-free',
            'service-ai-lite',
            'service-ai-standard-6',
            'service-ai-pro-4',
            'service-ai-max',
          ].map((id) => [id, { targets: ['scripted'] }]),
        ),
        rate_limit: { requests_per_minute: 10_000_000 },
      },
    }),
  );
  return file;
}

export interface BenchGatewayOptions {
  name?: string;
  gateway_js?: string;
  /** More arguments (e.g. --database-url URL). */
  args?: string[];
  env?: Record<string, string>;
  /** Node's own arguments before the script (default: BENCH_GATEWAY_NODE_ARGS, split on spaces). */
  node_args?: string[];
}

/** A real gateway process with its data dir and log file under `dir`. */
export async function startBenchGateway(
  dir: string,
  config_file: string,
  options: BenchGatewayOptions = {},
): Promise<Gateway> {
  const name = options.name ?? 'gateway';
  const data_dir = join(dir, `${name}-data`);
  const log_file = join(dir, `${name}.log`);
  const log_fd = openSync(log_file, 'w');
  const node_args =
    options.node_args ?? (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(
    process.execPath,
    [
      ...node_args,
      options.gateway_js ?? GATEWAY_JS,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      data_dir,
      '--config',
      config_file,
      ...(options.args ?? []),
    ],
    {
      env: {
        ...process.env,
        AIHUB_ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
        AIHUB_LOG_LEVEL: 'info',
        ...options.env,
      },
      stdio: ['ignore', log_fd, log_fd],
    },
  );
  closeSync(log_fd);
  // A bench that fails half-way must not leave its gateways running.
  const reap = () => proc.kill('SIGKILL');
  process.on('exit', reap);
  proc.once('exit', () => process.removeListener('exit', reap));
  for (let i = 0; i < 600; i++) {
    const line = readFileSync(log_file, 'utf8')
      .split('\n')
      .find((l) => l.includes('"msg":"listening"'));
    if (line) {
      const port = (JSON.parse(line) as { port: number }).port;
      const exited = once(proc, 'exit');
      return {
        url: `http://127.0.0.1:${port}`,
        port,
        data_dir,
        admin_token: BENCH_ADMIN_TOKEN,
        proc,
        output: [],
        async stop() {
          proc.kill('SIGTERM');
          const [code] = (await exited) as [number | null];
          return code;
        },
      };
    }
    if (proc.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gateway did not start:\n${readFileSync(log_file, 'utf8')}`);
}

/** Busy CPU time of the whole machine so far (every core, every process, the kernel's softirqs), in µs; Linux /proc/stat. */
export function machineBusyUs(): number {
  try {
    const [
      user = 0,
      nice = 0,
      system = 0,
      _idle = 0,
      _iowait = 0,
      irq = 0,
      softirq = 0,
      steal = 0,
    ] = readFileSync('/proc/stat', 'utf8')
      .split('\n', 1)[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    return (user + nice + system + irq + softirq + steal) * 10_000;
  } catch {
    return Number.NaN;
  }
}

/** CPU time (user + system) a process has used so far, in ms; Linux /proc, 10 ms resolution. */
export function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

export interface Run {
  rps: number;
  /** Busy CPU of the whole machine per request during the run, in µs. */
  machine_us: number;
  mean_ms: number;
  p99_ms: number;
  ok: number;
  bad: number;
}

/** Runs of the same load one after the other, as one: request-weighted means, the worst p99. */
export function merge(runs: Run[]): Run {
  const requests = runs.map((run) => run.ok + run.bad);
  const total = requests.reduce((sum, n) => sum + n, 0);
  const weighted = (field: 'machine_us' | 'mean_ms') =>
    runs.reduce((sum, run, i) => sum + run[field] * requests[i]!, 0) / Math.max(1, total);
  return {
    rps: runs.reduce((sum, run) => sum + run.rps, 0) / runs.length,
    machine_us: weighted('machine_us'),
    mean_ms: weighted('mean_ms'),
    p99_ms: Math.max(...runs.map((run) => run.p99_ms)),
    ok: runs.reduce((sum, run) => sum + run.ok, 0),
    bad: runs.reduce((sum, run) => sum + run.bad, 0),
  };
}

/** One autocannon run of POSTs of `body` for `duration_s` seconds. */
export async function load(
  url: string,
  connections: number,
  body: string,
  headers: Record<string, string>,
  duration_s: number,
  /** API keys to spread the requests over, one after the other (many wallets); else `headers` alone. */
  keys: readonly string[] = [],
): Promise<Run> {
  const busy_before_us = machineBusyUs();
  let next_key = 0;
  const result = await autocannon({
    url,
    method: 'POST',
    connections,
    duration: duration_s,
    body,
    headers: { 'content-type': 'application/json', ...headers },
    ...(keys.length > 0
      ? {
          requests: [
            {
              setupRequest: (request: { headers?: Record<string, string> }) => ({
                ...request,
                headers: {
                  ...request.headers,
                  authorization: `Bearer ${keys[next_key++ % keys.length]}`,
                },
              }),
            },
          ],
        }
      : {}),
  });
  const machine_us = (machineBusyUs() - busy_before_us) / Math.max(1, result.requests.total);
  const ok = result['2xx'];
  const bad = result.non2xx + result.errors + result.timeouts;
  return {
    rps: result.requests.total / duration_s,
    machine_us,
    mean_ms: result.latency.mean,
    p99_ms: result.latency.p99,
    ok,
    bad,
  };
}

/** The Portkey gateway version measured beside this one (bench:chat). */
export const PORTKEY_VERSION = '1.15.2';

/**
 * Portkey's open-source gateway (`@portkey-ai/gateway`, its own Node server) in front of the
 * scripted upstream, as an OpenAI-compatible custom host. Installed with npm into the
 * git-ignored .tools folder on first use (never a dependency of the project or its tests).
 */
export async function startPortkey(
  upstream_port: number,
): Promise<{ proc: ChildProcess; url: string; headers: Record<string, string> }> {
  const root = resolve(import.meta.dirname, '../..');
  const home = join(root, '.tools', `portkey-${PORTKEY_VERSION}`);
  const server = join(home, 'node_modules/@portkey-ai/gateway/build/start-server.js');
  if (!existsSync(server)) {
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'package.json'), '{"name":"portkey-bench","private":true}\n');
    execFileSync(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--ignore-scripts',
        `@portkey-ai/gateway@${PORTKEY_VERSION}`,
      ],
      { cwd: home, stdio: 'ignore', timeout: 300_000 },
    );
  }
  const port = await freePort();
  const proc = spawn(process.execPath, [server, `--port=${port}`, '--headless'], {
    cwd: home,
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  const headers = {
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `http://127.0.0.1:${upstream_port}/v1`,
    authorization: 'Bearer sk-bench',
  };
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) break;
    try {
      const reply = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'service-ai-standard-6',
          messages: [{ role: 'user', content: 'ready?' }],
          max_tokens: 8,
        }),
      });
      if (reply.status === 200) return { proc, url, headers };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill('SIGKILL');
  throw new Error(`Portkey's gateway did not answer on ${url}`);
}

function freePort(): Promise<number> {
  return new Promise((resolve_port, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve_port(port));
    });
  });
}
