// A throwaway PostgreSQL cluster for tests and the bench: Debian's `postgresql` package
// (installed with apt-get when its programs are missing and we are root), `initdb` in a temp
// dir as the `postgres` user (PostgreSQL refuses to run as root), trust auth on loopback only,
// a free port, fsync on (the tests check durability, so the cluster must be durable too).
//
//   const pg = await startPostgres();
//   const url = await pg.createDatabase();      // postgres://postgres@127.0.0.1:PORT/t_xxx
//   await pg.stop(); await pg.start();          // fault tests
//   await pg.teardown();                        // also done at process exit, even on failure
//
// A process killed with SIGKILL cannot tear down its cluster; the next startPostgres() in any
// process stops and removes clusters whose owner process is gone (see sweepOrphans).
import { execFile, execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { atProcessEnd } from './temp.ts';

const run = promisify(execFile);
const PREFIX = 'aihub-pgcluster-'; // distinct from other aihub-pg-* temp dirs: the sweep reads only its own
const OWNER_FILE = 'owner.pid';

export interface PostgresCluster {
  /** URL of the cluster's maintenance database `postgres` (user `postgres`, no password). */
  url: string;
  port: number;
  /** The temp dir: data/, the server log `log`, the socket. */
  dir: string;
  /** Creates a fresh database (a random name when none is given) and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Stops the server (`fast`: disconnects clients and checkpoints; `immediate`: as a crash). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data; resolves when it accepts connections. */
  start(): Promise<void>;
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops the server and removes the temp dir. Idempotent. */
  teardown(): Promise<void>;
  /** The server log so far (for failure messages). */
  log(): string;
}

export interface StartPostgresOptions {
  /** Extra `-c name=value` server settings. */
  settings?: Record<string, string | number>;
}

/** The directory of PostgreSQL's server programs (initdb, pg_ctl, postgres, psql), or null. */
export function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], 'bin');
  }
  return null;
}

/** Finds PostgreSQL's programs, installing Debian's package when they are missing and we are root. */
export function ensurePostgresInstalled(): string {
  let bin = postgresBinDir();
  if (bin) return bin;
  if (process.getuid?.() !== 0)
    throw new Error(
      'PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb) and this user cannot apt-get install it: run `apt-get install postgresql` as root',
    );
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'postgresql'], {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  bin = postgresBinDir();
  if (!bin)
    throw new Error(
      'apt-get install postgresql ran, but /usr/lib/postgresql/*/bin/initdb is still missing',
    );
  return bin;
}

/** A database name that is safe to put in SQL unquoted. */
export function checkDatabaseName(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name))
    throw new Error(`bad database name ${JSON.stringify(name)}: use [a-z_][a-z0-9_]*`);
  return name;
}

export function randomDatabaseName(prefix = 't'): string {
  return checkDatabaseName(
    `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 10)}`,
  );
}

/**
 * Creates a database on the cluster whose maintenance URL is `clusterUrl` (any database URL of
 * that cluster works) and returns the new database's URL.
 */
export async function createDatabase(
  clusterUrl: string,
  name = randomDatabaseName(),
): Promise<string> {
  checkDatabaseName(name);
  const target = new URL(clusterUrl);
  target.pathname = '/postgres';
  await run(
    psqlPath(),
    ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', target.toString(), '-c', `CREATE DATABASE ${name}`],
    { timeout: 30_000 },
  );
  target.pathname = `/${name}`;
  return target.toString();
}

/** Runs SQL on a database through psql; returns its unaligned, tuples-only output. */
export async function psql(url: string, sql: string): Promise<string> {
  const { stdout } = await run(
    psqlPath(),
    ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql],
    { timeout: 30_000 },
  );
  return stdout.trim();
}

function psqlPath(): string {
  const bin = postgresBinDir();
  return bin ? join(bin, 'psql') : 'psql';
}

/** A port nothing listens on right now (it can be taken before it is used: retry on a clash). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL program as the `postgres` user when we are root, as ourselves otherwise. */
function asPostgres(bin: string, program: string, args: string[]): [string, string[]] {
  const path = join(bin, program);
  return asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Stops and removes clusters left by processes that died without tearing down (SIGKILL). */
export function sweepOrphans(bin: string): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(tmpdir(), name);
    let owner = NaN;
    try {
      owner = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
    } catch {
      continue; // being created right now, or not ours
    }
    if (!Number.isInteger(owner) || owner <= 0 || pidAlive(owner)) continue;
    stopSync(bin, dir, 'immediate');
    rmSync(dir, { recursive: true, force: true });
  }
}

function stopSync(bin: string, dir: string, mode: 'fast' | 'immediate'): void {
  if (!existsSync(join(dir, 'data', 'postmaster.pid'))) return;
  const [cmd, args] = asPostgres(bin, 'pg_ctl', [
    '-D',
    join(dir, 'data'),
    '-m',
    mode,
    '-w',
    '-t',
    '30',
    'stop',
  ]);
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 35_000 });
  } catch {
    // already stopped
  }
}

const liveDirs = new Map<PostgresCluster, string>();
let exitHookInstalled = false;

function installExitHook(bin: string): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const cleanupSync = () => {
    for (const dir of liveDirs.values()) {
      stopSync(bin, dir, 'immediate');
      rmSync(dir, { recursive: true, force: true });
    }
    liveDirs.clear();
  };
  atProcessEnd(cleanupSync);
}

/** Starts a throwaway cluster; see the top of this file. */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresCluster> {
  const bin = ensurePostgresInstalled();
  sweepOrphans(bin);
  installExitHook(bin);
  const dir = mkdtempSync(join(tmpdir(), PREFIX));
  writeFileSync(join(dir, OWNER_FILE), String(process.pid));
  chmodSync(dir, 0o777); // the postgres user writes data/, the log and the socket here
  const data = join(dir, 'data');
  const logFile = join(dir, 'log');
  const [initCmd, initArgs] = asPostgres(bin, 'initdb', [
    '-D',
    data,
    '--auth=trust',
    '-U',
    'postgres',
    '--encoding=UTF8',
    '--locale=C',
    '--no-instructions',
  ]);
  await run(initCmd, initArgs, { timeout: 120_000 });
  // Loopback only, trust: initdb's pg_hba.conf already trusts local and loopback connections.
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: dir,
    fsync: 'on',
    synchronous_commit: 'on',
    max_connections: 300,
    ...options.settings,
  };
  let port = 0;
  const cluster: PostgresCluster = {
    url: '',
    port: 0,
    dir,
    async createDatabase(name?: string) {
      return createDatabase(cluster.url, name);
    },
    async stop(mode = 'fast') {
      const [cmd, args] = asPostgres(bin, 'pg_ctl', [
        '-D',
        data,
        '-m',
        mode,
        '-w',
        '-t',
        '60',
        'stop',
      ]);
      await run(cmd, args, { timeout: 65_000 });
    },
    async start() {
      const serverOptions = [
        `-p ${port}`,
        ...Object.entries(settings).map(([key, value]) => `-c ${key}=${value}`),
      ].join(' ');
      const [cmd, args] = asPostgres(bin, 'pg_ctl', [
        '-D',
        data,
        '-o',
        serverOptions,
        '-l',
        logFile,
        '-w',
        '-t',
        '60',
        'start',
      ]);
      try {
        await run(cmd, args, { timeout: 65_000 });
      } catch (error) {
        throw new Error(
          `PostgreSQL did not start on port ${port}: ${(error as Error).message}\n${cluster.log().slice(-2000)}`,
          { cause: error },
        );
      }
    },
    async restart(mode = 'fast') {
      await cluster.stop(mode);
      await cluster.start();
    },
    async teardown() {
      if (!liveDirs.has(cluster)) return;
      liveDirs.delete(cluster);
      stopSync(bin, dir, 'fast');
      rmSync(dir, { recursive: true, force: true });
    },
    log() {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
  };
  liveDirs.set(cluster, dir);
  // A free port can be taken between our probe and the server's bind: try a few.
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await cluster.start();
      break;
    } catch (error) {
      if (attempt >= 3) {
        await cluster.teardown();
        throw error;
      }
    }
  }
  cluster.port = port;
  cluster.url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return cluster;
}
