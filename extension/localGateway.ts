// Runs the bundled gateway (dist/gateway.js) as a child process with VS Code's own runtime
// (process.execPath with ELECTRON_RUN_AS_NODE=1), data in the extension's global storage and its
// log lines in an output channel. Owned by the extension: disposed (stopped) on deactivate.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';

export type LocalGatewayState = 'stopped' | 'starting' | 'running' | 'stopping';

export interface LocalGatewayOptions {
  scriptPath: string;
  dataDir: string;
  output: vscode.OutputChannel;
}

/**
 * What one run of the gateway is started with besides its port: the config file (the model
 * providers' engines and tiers, naming their keys by environment variable only) and those
 * variables' values, which reach the child process's environment and nothing else (no file, no
 * log line).
 */
export interface LocalGatewayLaunch {
  configFile?: string;
  env: Record<string, string>;
}

const START_TIMEOUT_MS = 30_000;
const STOP_GRACE_MS = 5_000;
const MAX_LINE_CHARS = 10_000;

export class LocalGateway implements vscode.Disposable {
  private child: ChildProcess | undefined;
  private current: LocalGatewayState = 'stopped';
  private port = 0;
  private readonly stateChanged = new vscode.EventEmitter<LocalGatewayState>();
  readonly onDidChangeState = this.stateChanged.event;

  constructor(private readonly options: LocalGatewayOptions) {}

  get state(): LocalGatewayState {
    return this.current;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get apiBase(): string | undefined {
    return this.current === 'running' ? `http://127.0.0.1:${this.port}/v1` : undefined;
  }

  get dataDir(): string {
    return this.options.dataDir;
  }

  /** Starts the gateway and resolves once it is listening; rejects with the reason it could not start. */
  async start(
    port: number,
    adminToken: string,
    launch: LocalGatewayLaunch = { env: {} },
    token?: vscode.CancellationToken,
  ): Promise<void> {
    if (this.current === 'running' || this.current === 'starting') return;
    await makePrivate(this.options.dataDir);
    const child = this.spawnGateway(port, adminToken, launch);
    this.child = child;
    this.port = port;
    this.setState('starting');

    await this.untilListening(child, token);
  }

  /** Runs the gateway script in this Node (Electron as Node), sandbox mode, loopback only. */
  private spawnGateway(port: number, adminToken: string, launch: LocalGatewayLaunch): ChildProcess {
    const args = [
      this.options.scriptPath,
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--data-dir',
      this.options.dataDir,
      ...(launch.configFile ? ['--config', launch.configFile] : []),
    ];
    this.options.output.appendLine(
      `[aihub] starting local gateway: ${process.execPath} ${args.join(' ')}`,
    );
    return spawn(process.execPath, args, {
      env: {
        ...process.env,
        ...launch.env,
        ELECTRON_RUN_AS_NODE: '1',
        AIHUB_ADMIN_TOKEN: adminToken,
        AIHUB_MODE: 'sandbox',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
  }

  /** Resolves on the gateway's "listening" line; rejects on exit, error, time-out or cancel. */
  private untilListening(child: ChildProcess, token?: vscode.CancellationToken): Promise<void> {
    const lastLines: string[] = [];
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const finish = (error?: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        cancel?.dispose();
        if (error) reject(error);
        else resolve();
      };
      const onLine = (line: string): void => {
        this.options.output.appendLine(
          line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line,
        );
        lastLines.push(line);
        if (lastLines.length > 5) lastLines.shift();
        if (line.includes('"msg":"listening"')) {
          this.setState('running');
          finish();
        }
      };
      forEachLine(child.stdout!, onLine);
      forEachLine(child.stderr!, onLine);
      child.once('error', (error) =>
        finish(new Error(`could not run ${process.execPath}: ${error.message}`)),
      );
      child.once('exit', (code, signal) => {
        this.options.output.appendLine(
          `[aihub] local gateway exited (code ${code ?? 'none'}, signal ${signal ?? 'none'})`,
        );
        if (this.child === child) {
          this.child = undefined;
          this.setState('stopped');
        }
        finish(
          new Error(
            `the local gateway exited during start-up: ${summarize(lastLines) || `code ${code}`}`,
          ),
        );
      });
      const timer = setTimeout(() => {
        void this.stop();
        finish(
          new Error(
            `the local gateway did not report "listening" within ${START_TIMEOUT_MS / 1000} s`,
          ),
        );
      }, START_TIMEOUT_MS);
      const cancel = token?.onCancellationRequested(() => {
        void this.stop();
        finish(new Error('start cancelled'));
      });
    });
  }

  /** SIGTERM (the gateway settles in-flight requests and flushes its store), SIGKILL after a grace period. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      this.child = undefined;
      this.setState('stopped');
      return;
    }
    this.setState('stopping');
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
    if (this.child === child) this.child = undefined;
    this.setState('stopped');
  }

  dispose(): void {
    void this.stop();
    this.stateChanged.dispose();
  }

  private setState(state: LocalGatewayState): void {
    if (state === this.current) return;
    this.current = state;
    this.stateChanged.fire(state);
  }
}

function forEachLine(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      onLine(pending.slice(0, newline).replace(/\r$/, ''));
      pending = pending.slice(newline + 1);
    }
    if (pending.length > MAX_LINE_CHARS) {
      onLine(pending);
      pending = '';
    }
  });
  stream.on('end', () => {
    if (pending) onLine(pending);
  });
}

function summarize(lines: string[]): string {
  for (const line of [...lines].reverse()) {
    try {
      const parsed = JSON.parse(line) as {
        msg?: string;
        err?: { message?: string };
        error?: string;
      };
      const text = parsed.err?.message ?? parsed.error ?? parsed.msg;
      if (text) return text;
    } catch {
      if (line.trim()) return line.trim();
    }
  }
  return '';
}

/**
 * The gateway refuses a data dir that group or others can access. This one belongs to the
 * extension alone (in its global storage) and earlier builds created it with default
 * modes, so the extension tightens it itself: directories 0700, files 0600.
 */
async function makePrivate(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (process.platform === 'win32') return;
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await makePrivate(path);
    else if (entry.isFile()) await chmod(path, 0o600);
  }
}
