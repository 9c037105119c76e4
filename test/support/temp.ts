// Temp dirs of a test process, removed when it ends: every test file runs in a process of
// its own (node --test), so a dir made here lives as long as the file's tests (a gateway
// restarted on the same data dir still finds it) and goes when the file is done, passed or
// failed, including the data dirs of the gateway processes it started (and their PostgreSQL
// replica dirs, which are inside them). A SIGKILLed test process leaves its dirs behind.
//
//   const dir = tempDir('aihub-store-');   // mkdtemp under os.tmpdir()
//   removeTempDir(dir);                    // at once, when a test wants it gone earlier
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = new Set<string>();
let hooked = false;
const at_end: Array<() => void> = [];

/**
 * Runs `cleanup` (synchronous) when this process ends: at exit, and on SIGINT, SIGTERM or
 * SIGHUP, after which the process dies of the signal as it would have. Shared by the temp
 * dirs here and the PostgreSQL clusters of postgres.ts.
 */
export function atProcessEnd(cleanup: () => void): void {
  at_end.push(cleanup);
  if (hooked) return;
  hooked = true;
  const runAll = () => {
    for (const fn of at_end.splice(0)) {
      try {
        fn();
      } catch {
        // the others still run
      }
    }
  };
  process.on('exit', runAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      runAll();
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal); // die of the signal as we would have
    };
    process.on(signal, onSignal);
  }
}

let removing = false;

function removeAll(): void {
  for (const dir of made) remove(dir);
  made.clear();
}

function remove(dir: string): void {
  try {
    // A gateway child that has not exited yet may still be writing: retry a few times.
    rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
  } catch {
    // Left behind rather than failing a test that passed.
  }
}

/** A new dir `<os tmpdir>/<prefix>XXXXXX`, removed when this process ends. */
export function tempDir(prefix = 'aihub-test-'): string {
  if (!removing) {
    removing = true;
    atProcessEnd(removeAll);
  }
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/** Removes a dir (recursively) now; one made by tempDir is no longer removed at the end. */
export function removeTempDir(dir: string): void {
  made.delete(dir);
  remove(dir);
}

/**
 * Copies a data dir kept in the repository (test/fixtures) to `to`, private as its gateway
 * keeps it: 0700 directories, 0600 files. Git does not keep modes, so a checkout has 0755
 * directories, which the store refuses to open (it holds secrets and personal data).
 */
export function copyFixtureDataDir(fixture: string, to: string): void {
  cpSync(fixture, to, { recursive: true });
  makePrivate(to);
}

function makePrivate(path: string): void {
  const directory = statSync(path).isDirectory();
  chmodSync(path, directory ? 0o700 : 0o600);
  if (directory) for (const name of readdirSync(path)) makePrivate(join(path, name));
}
