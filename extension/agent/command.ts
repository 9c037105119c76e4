// Runs one approved command line in a workspace folder: through the user's shell, its own process
// group (so that a timeout or Stop ends everything it started), no input, stdout and stderr
// together in the order they came, kept to a bound (its start and its end), and a time limit.
import { spawn } from 'node:child_process';

export interface CommandRun {
  exitCode: number | null;
  /** The signal that ended it, when one did. */
  signal: string | null;
  timedOut: boolean;
  stopped: boolean;
  /** Combined output, at most `maxOutputChars` (head and tail). */
  output: string;
  /** Characters of output produced in all. */
  totalChars: number;
}

export interface CommandOptions {
  cwd: string;
  timeoutMs: number;
  maxOutputChars: number;
  signal: AbortSignal;
  /** Every piece of output as it arrives (the terminal shows it). */
  onOutput?: (text: string) => void;
}

/** Grace between SIGTERM and SIGKILL when a command is ended. */
const KILL_GRACE_MS = 2_000;

export function runCommand(command: string, options: CommandOptions): Promise<CommandRun> {
  return new Promise((resolve, reject) => {
    if (options.signal.aborted) {
      reject(options.signal.reason ?? new Error('stopped'));
      return;
    }
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };
    // VS Code's own runtime flag would make a `code` or `node` child behave as Node without Electron.
    delete env.ELECTRON_RUN_AS_NODE;
    const child = spawn(command, {
      cwd: options.cwd,
      shell: true,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
      windowsHide: true,
    });
    const output = new OutputBuffer(options.maxOutputChars);
    const collect = (text: string): void => {
      options.onOutput?.(text);
      output.add(text);
    };
    // Decoded as streams, so that a character split between two chunks stays whole.
    child.stdout.setEncoding('utf8').on('data', collect);
    child.stderr.setEncoding('utf8').on('data', collect);
    let timedOut = false;
    let stopped = false;
    let killTimer: NodeJS.Timeout | undefined;
    const end = (): void => {
      kill(child.pid, 'SIGTERM');
      killTimer ??= setTimeout(() => kill(child.pid, 'SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      end();
    }, options.timeoutMs);
    const onAbort = (): void => {
      stopped = true;
      end();
    };
    options.signal.addEventListener('abort', onAbort, { once: true });
    const finish = (): void => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      options.signal.removeEventListener('abort', onAbort);
    };
    child.on('error', (error) => {
      finish();
      reject(error);
    });
    child.on('close', (exitCode, signal) => {
      finish();
      resolve({
        exitCode,
        signal,
        timedOut,
        stopped,
        output: output.text(),
        totalChars: output.total,
      });
    });
  });
}

/** A command's output as it comes: its start and its end are kept, the middle is counted. */
export class OutputBuffer {
  private head = '';
  private tail = '';
  total = 0;
  private readonly half: number;

  constructor(maxChars: number) {
    this.half = Math.max(1, Math.floor(maxChars / 2));
  }

  add(text: string): void {
    this.total += text.length;
    if (this.head.length < this.half) {
      const room = this.half - this.head.length;
      this.head += text.slice(0, room);
      this.tail = (this.tail + text.slice(room)).slice(-this.half);
    } else this.tail = (this.tail + text).slice(-this.half);
  }

  text(): string {
    const cut = this.total - this.head.length - this.tail.length;
    return cut > 0
      ? `${this.head}\n… (${cut} characters of output left out) …\n${this.tail}`
      : this.head + this.tail;
  }
}

/** Ends the command's whole process group (the shell and what it started). */
function kill(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    if (process.platform === 'win32') process.kill(pid, signal);
    else process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}
