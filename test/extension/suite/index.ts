// The extension-host test entry point: the same run() serves @vscode/test-electron and the offline
// VS Code server harness. Results go to the console and, when AIHUB_TEST_RESULTS names a file, to
// that file (the server harness prints it, since the extension host's console is not the runner's).
import Mocha from 'mocha';
import { registerExtensionTests } from './extension.test.js';
import { FileReporter } from './reporter.js';
import { registerUntrustedTests } from './untrusted.js';

export function run(): Promise<void> {
  const mocha = new Mocha({
    ui: 'bdd',
    timeout: 60_000,
    reporter: FileReporter as unknown as Mocha.ReporterConstructor,
  });
  // AIHUB_TEST_GREP (a regular expression over the full test titles) runs some tests only, while
  // working on them; the suite's own setup (activation in "registers every contributed command")
  // must be among them.
  if (process.env.AIHUB_TEST_GREP) mocha.grep(new RegExp(process.env.AIHUB_TEST_GREP));
  mocha.suite.emit('pre-require', globalThis, 'aihub-extension-suite', mocha);
  // AIHUB_TEST_SUITE=untrusted: the host opened the folder in restricted mode
  // (run-in-server.ts --untrusted), where only the untrusted-workspace tests apply.
  if (process.env.AIHUB_TEST_SUITE === 'untrusted') registerUntrustedTests();
  else registerExtensionTests();
  return new Promise((resolve, reject) => {
    mocha.run((failures) =>
      failures > 0 ? reject(new Error(`${failures} extension test(s) failed`)) : resolve(),
    );
  });
}
