// Runs an agent's real binary once: located in node_modules as npm installed it, in a temp
// HOME and working dir, with an environment of its own (nothing of the caller's leaks in: no
// keys, no proxies), bounded by a timeout that kills the whole process tree, and traced with
// strace so that every address it connected to is known.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { once } from 'node:events';
import { tempDir } from '../support/temp.js';
import type { Agent, AgentOutcome, AgentSetup } from './agent.js';

const ROOT = resolve(import.meta.dirname, '../..');

export interface Located {
  /** The command npm linked in node_modules/.bin. */
  path: string;
  /** The version installed, which package.json pins. */
  version: string;
}

/**
 * The agent's binary as `npm ci` installed it, checked to be the pinned version and to run
 * here (`--version`). Throws, naming the agent, when it is missing or cannot run.
 */
export function locate(agent: Agent): Located {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const pinned: string | undefined = manifest.devDependencies?.[agent.package];
  if (!pinned) throw new Error(`${agent.name}: ${agent.package} is not a devDependency`);
  if (!/^\d+\.\d+\.\d+$/.test(pinned))
    throw new Error(`${agent.name}: ${agent.package} must be pinned exactly, not ${pinned}`);
  const installed = join(ROOT, 'node_modules', agent.package, 'package.json');
  if (!existsSync(installed))
    throw new Error(`${agent.name}: ${agent.package} is not installed (run npm ci)`);
  const version = JSON.parse(readFileSync(installed, 'utf8')).version as string;
  if (version !== pinned)
    throw new Error(`${agent.name}: ${agent.package} ${version} is installed, ${pinned} pinned`);
  const path = join(ROOT, 'node_modules', '.bin', agent.bin);
  // In a HOME of its own: even `--version` writes config and caches there.
  const probe = spawnSync(path, ['--version'], {
    encoding: 'utf8',
    timeout: 60_000,
    env: baseEnv(tempDir(`aihub-${agent.name}-probe-`)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (probe.status !== 0 || !probe.stdout.includes(version)) {
    throw new Error(
      `${agent.name} ${version} CANNOT RUN ON THIS MACHINE (${process.platform} ${process.arch}, node ${process.version}): ` +
        `\`${agent.bin} --version\` exited ${probe.status ?? probe.signal}${probe.error ? ` (${probe.error.message})` : ''}\n` +
        `stdout: ${probe.stdout}\nstderr: ${probe.stderr}`,
    );
  }
  return { path, version };
}

/** PATH with this Node first (codex's launcher is a Node script), then the system's. */
function baseEnv(home: string): Record<string, string> {
  return {
    PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: home,
    USER: process.env.USER ?? 'root',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
  };
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timed_out: boolean;
  duration_ms: number;
  outcome: AgentOutcome;
  /** Addresses other than loopback it connected or sent to; null when strace could not run. */
  outside: string[] | null;
  /** Why the network was not traced, when it was not. */
  untraced: string | null;
}

export interface RunOptions {
  setup: AgentSetup;
  /** The run's working dir (a temp dir). */
  cwd: string;
  prompt: string;
  writes: boolean;
  timeout_ms: number;
}

/** Writes the agent's config into the setup's HOME and runs one turn. */
export async function runAgent(agent: Agent, located: Located, options: RunOptions) {
  const config = agent.configure(options.setup);
  for (const file of config.files) {
    const path = join(options.setup.home, file.path);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, file.content);
  }
  const env: Record<string, string> = {
    ...baseEnv(options.setup.home),
    TMPDIR: tmpIn(options.setup.home),
    ...config.env,
  };
  for (const setting of config.offline) env[setting.name] = setting.value;
  const argv = [located.path, ...agent.args(options.prompt, { writes: options.writes })];
  const tracer = straceUsable();
  const trace_file = join(options.setup.home, 'network.strace');
  const command = tracer.ok ? ['strace', ...STRACE_ARGS, '-o', trace_file, ...argv] : argv;
  const started = performance.now();
  const child = spawn(command[0]!, command.slice(1), {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so that a timeout kills the whole tree
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let timed_out = false;
  const timer = setTimeout(() => {
    timed_out = true;
    killTree(child.pid!);
  }, options.timeout_ms);
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  killTree(child.pid!); // whatever it left running in the background
  const result: RunResult = {
    code,
    signal,
    stdout,
    stderr,
    timed_out,
    duration_ms: Math.round(performance.now() - started),
    outcome: agent.outcome(stdout),
    outside: tracer.ok ? outsideAddresses(readFileSync(trace_file, 'utf8')) : null,
    untraced: tracer.ok ? null : tracer.reason,
  };
  return result;
}

function tmpIn(home: string): string {
  const dir = join(home, 'tmp');
  mkdirSync(dir, { recursive: true });
  return dir;
}

// Every thread and child; only the calls that name a peer address; no signal lines.
const STRACE_ARGS = [
  '-f',
  '-qq',
  '--seccomp-bpf',
  '-e',
  'trace=connect,sendto,sendmsg,sendmmsg',
  '-e',
  'signal=none',
];

let strace_probe: { ok: true } | { ok: false; reason: string } | undefined;

/** Whether strace is installed and may trace here (ptrace can be denied in containers). */
export function straceUsable(): { ok: true } | { ok: false; reason: string } {
  if (strace_probe) return strace_probe;
  const probe = spawnSync('strace', [...STRACE_ARGS, '-o', '/dev/null', 'true'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  strace_probe =
    probe.status === 0
      ? { ok: true }
      : {
          ok: false,
          reason: probe.error
            ? `strace is not installed (${probe.error.message}); apt-get install strace`
            : `strace cannot trace here: ${probe.stderr.trim()}`,
        };
  return strace_probe;
}

/**
 * The peer addresses in an strace log that are not this machine: IPv4 outside 127/8, IPv6
 * other than ::1 (and IPv4-mapped loopback). Unix and netlink sockets are local.
 */
export function outsideAddresses(trace: string): string[] {
  const outside = new Set<string>();
  for (const line of trace.split('\n')) {
    for (const match of line.matchAll(
      /sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)|sin6_port=htons\((\d+)\),.*?inet_pton\(AF_INET6, "([^"]+)"/g,
    )) {
      const port = match[1] ?? match[3];
      const address = match[2] ?? match[4]!;
      if (isLocal(address)) continue;
      outside.add(`${address}:${port}`);
    }
  }
  return [...outside];
}

function isLocal(address: string): boolean {
  return (
    address.startsWith('127.') ||
    address === '0.0.0.0' ||
    address === '::1' ||
    address === '::' ||
    address.startsWith('::ffff:127.')
  );
}

/** SIGKILLs a process group and every descendant of its leader still running. */
export function killTree(pid: number): void {
  const victims = [pid, ...descendants(pid)];
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is gone
  }
  for (const victim of victims) {
    try {
      process.kill(victim, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(entry));
    children.set(ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length) {
    for (const child of children.get(queue.shift()!) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}
