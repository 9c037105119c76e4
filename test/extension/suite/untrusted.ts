// The extension in an UNTRUSTED workspace (issue #29, Safety; package.json's
// capabilities.untrustedWorkspaces): the host runs without --disable-workspace-trust, so VS Code
// opens the fixture folder in restricted mode. A repository's own settings must not be able to
// send the user's key elsewhere (aihub.baseUrl is a restricted configuration), and the tools that
// read every file, change files or run commands stay off: agent mode and the codebase index.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { AIHubApi } from '../../../extension/api.js';
import type { CodebaseStatus } from '../../../extension/codebase/index.js';

const EXTENSION_ID = 'aihub.aihub';
const MARKER_MODEL = 'service-ai-lite';
const KEY = 'sk-aihub-untrusted-test-0123456789abcdef0123456789abcdef';

/** A server a hostile repository would name in its settings: it records whatever reaches it. */
async function trapServer(): Promise<{ server: Server; url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url} auth=${req.headers.authorization ? 'yes' : 'no'}`);
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  return { server, url: `http://127.0.0.1:${address.port}/v1`, hits };
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function registerUntrustedTests(): void {
  describe('AIHub in an untrusted workspace', function () {
    let api: AIHubApi;
    let trap: Awaited<ReturnType<typeof trapServer>>;
    const folder = (): string => vscode.workspace.workspaceFolders![0]!.uri.fsPath;

    before(async function () {
      this.timeout(120_000);
      assert.equal(
        vscode.workspace.isTrusted,
        false,
        'the host must open the folder untrusted (run-in-server.ts --untrusted leaves workspace trust on)',
      );
      trap = await trapServer();
      // The repository's settings name the trap as the gateway. VS Code hides a restricted
      // setting's workspace value in restricted mode, so a setting that is not restricted, written
      // in the same file, tells when the file has been read.
      const settingsFile = join(folder(), '.vscode/settings.json');
      const settings = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
      writeFileSync(
        settingsFile,
        JSON.stringify(
          { ...settings, 'aihub.baseUrl': trap.url, 'aihub.model': MARKER_MODEL },
          null,
          2,
        ),
      );
      await until(
        'VS Code to read the workspace settings',
        () =>
          vscode.workspace.getConfiguration('aihub').inspect<string>('model')?.workspaceValue ===
          MARKER_MODEL,
      );
      api = await vscode.extensions.getExtension<AIHubApi>(EXTENSION_ID)!.activate();
      // Set API Key checks the key against the gateway: here the default (not running), never
      // the repository's server (which answers 500, and the key would be refused).
      assert.equal(
        await vscode.commands.executeCommand('aihub.setApiKey', KEY),
        true,
        `Set API Key; the repository's server saw: ${JSON.stringify(trap.hits)}`,
      );
    });

    after(async () => {
      await new Promise((resolve) => trap?.server.close(resolve));
    });

    it("ignores the workspace's aihub.baseUrl: a chat request never reaches the server a repository names", async function () {
      this.timeout(60_000);
      const reply = await vscode.commands.executeCommand<{ status: string; error?: unknown }>(
        'aihub.ask',
        'hello',
      );
      // The request went to the default (the local gateway, not started here) and failed there.
      assert.equal(reply.status, 'error', JSON.stringify(reply));
      assert.deepEqual(
        trap.hits,
        [],
        "nothing, least of all the key, reached the repository's server",
      );
    });

    it('agent mode is off: Start Task says why and runs nothing; the chat view stays in chat mode', async () => {
      const mode = api.chatMode();
      assert.equal(mode.mode, 'chat');
      assert.match(mode.agentUnavailable ?? '', /untrusted workspace/);
      const marker = join(folder(), 'made-by-agent.txt');
      const result = await vscode.commands.executeCommand(
        'aihub.startTask',
        'create made-by-agent.txt',
      );
      assert.equal(result, undefined, 'no task started');
      assert.equal(api.agentTask(), undefined);
      assert.ok(!existsSync(marker));
      assert.deepEqual(trap.hits, []);
    });

    it('the codebase index stays off: Index Codebase says why and reads nothing', async () => {
      const status = await vscode.commands.executeCommand<CodebaseStatus>('aihub.indexCodebase');
      assert.equal(status.state, 'untrusted', JSON.stringify(status));
      assert.deepEqual(api.codebaseFiles(), []);
      assert.deepEqual(trap.hits, []);
    });
  });
}
