// Runs the same extension-host suite in the desktop VS Code that @vscode/test-electron downloads
// (for machines with internet access; offline, use run-in-server.ts).
// `node scripts/build.mjs --tests && node --import tsx test/extension/run-electron.ts`
import { runTests } from '@vscode/test-electron';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, VERSIONS, log, makeWorkspace, removeDirs } from './harness.js';

async function main(): Promise<number> {
  const folder = makeWorkspace({ 'aihub.localGateway.autoStart': false });
  const work = mkdtempSync(join(tmpdir(), 'aihub-electron-'));
  const resultsFile = join(work, 'results.txt');
  writeFileSync(resultsFile, '');
  try {
    await runTests({
      version: process.env.AIHUB_VSCODE_VERSION ?? VERSIONS.vscode, // the version run-in-server.ts runs
      extensionDevelopmentPath: REPO,
      extensionTestsPath: join(REPO, 'dist/test/extension/suite.cjs'),
      launchArgs: [
        folder,
        '--disable-workspace-trust',
        '--disable-extensions',
        '--user-data-dir',
        join(work, 'user-data'),
      ],
      extensionTestsEnv: { AIHUB_TEST_RESULTS: resultsFile, AIHUB_TEST_WORKSPACE: folder },
    });
    return 0;
  } catch (error) {
    log(`test-electron: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    process.stdout.write(readFileSync(resultsFile, 'utf8'));
    removeDirs(work, folder);
  }
}

main().then((code) => process.exit(code));
