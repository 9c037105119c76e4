// Runs the extension-host mocha suite (dist/test/extension/suite.cjs) inside VS Code's server build
// with headless Chromium as the workbench, offline. Exits with the suite's exit code.
// `node --import tsx test/extension/run-in-server.ts [--no-build] [--untrusted]`
// --untrusted: workspace trust stays on, so the folder opens in restricted mode, and the suite runs
// its untrusted-workspace tests only (suite/untrusted.ts).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import {
  REPO,
  freePort,
  launchChromium,
  log,
  makeWorkspace,
  removeDirs,
  run,
  startVSCodeServer,
  tempDir,
  type VSCodeServer,
} from './harness.js';

// Inside the 600 s that scripts/vscode-tests.sh gives this step (the agent's tasks made the suite
// longer).
const SUITE_TIMEOUT_MS = Number(process.env.AIHUB_SUITE_TIMEOUT_MS ?? 9 * 60_000);
const SUITE = join(REPO, 'dist/test/extension/suite.cjs');

async function main(): Promise<number> {
  if (!process.argv.includes('--no-build')) {
    log('building the gateway, the extension and the suite');
    await run(process.execPath, ['scripts/build.mjs', '--tests']);
  }
  if (!existsSync(SUITE)) throw new Error(`${SUITE} is missing; build with --tests`);

  const work = tempDir('host');
  const userDataDir = join(work, 'user-data');
  const extensionsDir = join(work, 'extensions');
  const resultsFile = join(work, 'results.txt');
  writeFileSync(resultsFile, '');
  const untrusted = process.argv.includes('--untrusted');
  const folder = makeWorkspace({ 'aihub.localGateway.autoStart': false });
  const port = await freePort();
  let server: VSCodeServer | undefined;
  let browser: Browser | undefined;
  let exitCode = 1;
  try {
    server = await startVSCodeServer({
      port,
      userDataDir,
      extensionsDir,
      folder,
      trusted: !untrusted,
      extensionTests: true,
      env: {
        AIHUB_TEST_RESULTS: resultsFile,
        AIHUB_TEST_WORKSPACE: folder,
        AIHUB_REPO: REPO,
        ...(untrusted ? { AIHUB_TEST_SUITE: 'untrusted' } : {}),
      },
    });
    log(`VS Code server on port ${port}`);
    browser = await launchChromium();
    const page = await browser.newPage();
    const exited = new Promise<number>((resolveExit) => {
      void page.exposeFunction('codeAutomationExit', (code: unknown) => resolveExit(Number(code)));
    });
    page.on('pageerror', (error) => log(`page error: ${error.message}`));
    const remote = `vscode-remote://127.0.0.1:${port}`;
    const payload = JSON.stringify([
      ['extensionDevelopmentPath', `${remote}${REPO}`],
      ['extensionTestsPath', `${remote}${SUITE}`],
    ]);
    await page.goto(
      `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}&payload=${encodeURIComponent(payload)}`,
    );
    // The workbench window has the focus, as a user's would: editor commands that act on the focused editor work.
    await page.bringToFront();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolveTimeout) => {
      timer = setTimeout(() => resolveTimeout('timeout'), SUITE_TIMEOUT_MS);
    });
    const outcome = await Promise.race([exited, timedOut]);
    clearTimeout(timer);
    mkdirSync(join(REPO, 'test-results'), { recursive: true });
    await page
      .screenshot({
        path: join(REPO, `test-results/extension-host${untrusted ? '-untrusted' : ''}-end.png`),
      })
      .catch(() => undefined);
    const results = readFileSync(resultsFile, 'utf8');
    process.stdout.write(results);
    if (outcome === 'timeout') {
      log(`the suite did not finish within ${SUITE_TIMEOUT_MS / 1000} s`);
      mkdirSync(join(REPO, 'test-results'), { recursive: true });
      await page
        .screenshot({
          path: join(
            REPO,
            `test-results/extension-host${untrusted ? '-untrusted' : ''}-timeout.png`,
          ),
        })
        .catch(() => undefined);
      process.stdout.write(server!.output().slice(-5_000));
      exitCode = 1;
    } else {
      exitCode = outcome;
      if (!/^# (passing|failing)/m.test(results)) {
        log('the suite reported no results (did it load?); server output follows');
        process.stdout.write(server!.output().slice(-8_000));
        if (exitCode === 0) exitCode = 1;
      }
    }
  } finally {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    removeDirs(work, folder);
  }
  log(`extension host suite exit code ${exitCode}`);
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
