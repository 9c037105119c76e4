// The crash tests' round: a child process (a script run with tsx) that writes to a store and
// reports on stdout, killed with SIGKILL at a random moment once it is under way.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * Starts `script` with `args`, hands every line it prints to `onLine`, waits until `ready()`
 * says it is under way (failing if it exits first), lets it run `min_ms` plus a random part
 * of `spread_ms` more, then kills it with SIGKILL. Resolves once it has exited and its output
 * has been read to the end.
 */
export async function runThenKill(
  script: string,
  args: string[],
  options: {
    onLine: (line: string) => void;
    ready: () => boolean;
    min_ms: number;
    spread_ms: number;
  },
): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const closed = new Promise<void>((resolve) => lines.once('close', resolve));
  lines.on('line', options.onLine);
  while (!options.ready()) {
    if (child.exitCode !== null) assert.fail(`the child exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) =>
    setTimeout(r, options.min_ms + Math.floor(Math.random() * options.spread_ms)),
  );
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  await closed;
}
