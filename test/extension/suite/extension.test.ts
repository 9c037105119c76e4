// Runs inside a real VS Code extension host (the `vscode` API is the real one) against a real
// gateway process. Mocha's describe/it come from the globals that index.ts installs.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import * as vscode from 'vscode';
import type { AIHubApi } from '../../../extension/api.js';
import type { ChatEntry, ToWebview } from '../../../extension/chat/protocol.js';
import type { GeneratedCode } from '../../../extension/commands/generateCode.js';
import type { LocalGatewayInfo } from '../../../extension/commands/localGateway.js';
import { stripCodeFences } from '../../../extension/codeFence.js';
import { ScriptedUpstream } from '../../support/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './gateway.js';
import { registerAgentTests } from './agent.js';
import { registerCodebaseTests } from './codebase.js';
import { registerLanguageModelTests } from './languageModels.js';
import { registerProviderTests } from './providers.js';
import { registerRealWorkTests, report } from './realWork.js';

type Assistant = Extract<ChatEntry, { role: 'assistant' }>;

const EXTENSION_ID = 'aihub.aihub';
const CREDIT = 100;
const micros = (amount: number): number => Math.round(amount * 1_000_000);

/** The tier name the gateway reports in x_aihub for a model id, from GET /v1/models. */
async function tierOf(apiBase: string, key: string, model: string): Promise<string> {
  const models = await new OpenAI({ baseURL: apiBase, apiKey: key }).models.list();
  const found = models.data.find((m) => m.id === model) as { tier?: string } | undefined;
  assert.ok(found?.tier, `${model} is listed with its tier`);
  return found.tier;
}

async function configure(values: Record<string, unknown>): Promise<void> {
  const config = vscode.workspace.getConfiguration('aihub');
  for (const [key, value] of Object.entries(values))
    await config.update(key, value, vscode.ConfigurationTarget.Workspace);
}

async function openSample(text: string, language = 'typescript'): Promise<vscode.TextEditor> {
  const document = await vscode.workspace.openTextDocument({ content: text, language });
  return vscode.window.showTextDocument(document);
}

async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeout_ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function portIsClosed(port: number): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
    () => false,
    () => true,
  );
}

export function registerExtensionTests(): void {
  describe('AIHub extension', function () {
    let extension: vscode.Extension<AIHubApi>;
    let api: AIHubApi;
    let gateway: TestGateway;
    let funded: { key: string; keyId: string };
    let repo: string;
    let upstream: ScriptedUpstream;

    before(async function () {
      this.timeout(120_000);
      extension = vscode.extensions.getExtension<AIHubApi>(EXTENSION_ID)!;
      assert.ok(extension, `extension ${EXTENSION_ID} is loaded`);
      repo = extension.extensionPath;
      upstream = await ScriptedUpstream.start();
      gateway = await startTestGateway(repo, { scripted: upstream.base_url });
      funded = await gateway.account(CREDIT);
      await configure({
        baseUrl: gateway.apiBase,
        model: 'service-ai-lite',
        'localGateway.autoStart': false,
      });
    });

    after(async function () {
      this.timeout(30_000);
      await gateway?.stop();
      await upstream?.close();
    });

    it('runs as desktop VS Code saves: files.autoSave off (set in the workspace settings by the harness), so a test saves what it means to', () => {
      assert.equal(vscode.workspace.getConfiguration('files').get('autoSave'), 'off');
    });

    it('is not active before its first command or view (lazy activation)', () => {
      assert.equal(extension.isActive, false);
      const manifest = extension.packageJSON as { activationEvents?: string[] };
      assert.deepEqual(manifest.activationEvents ?? [], []);
    });

    it('registers every contributed command, all in the AIHub category', async () => {
      const started = performance.now();
      api = await extension.activate();
      report(
        `activation: activate() ${api.activationMs.toFixed(1)} ms; extension.activate() as seen by the test ${(performance.now() - started).toFixed(1)} ms`,
      );
      const contributed = extension.packageJSON.contributes.commands as Array<{
        command: string;
        category: string;
      }>;
      assert.ok(contributed.length >= 12);
      const registered = new Set(await vscode.commands.getCommands(true));
      for (const { command, category } of contributed) {
        assert.ok(registered.has(command), `${command} is registered`);
        assert.equal(category, 'AIHub', command);
      }
      for (const wanted of [
        'aihub.setApiKey',
        'aihub.clearApiKey',
        'aihub.explainSelection',
        'aihub.generateCode',
        'aihub.showBalance',
        'aihub.startLocalGateway',
        'aihub.stopLocalGateway',
        'aihub.selectModel',
        'aihub.openChat',
      ]) {
        assert.ok(registered.has(wanted), wanted);
      }
    });

    it('Set API Key checks the key, keeps it in SecretStorage only, and shows the balance', async () => {
      await vscode.commands.executeCommand('aihub.clearApiKey');
      assert.equal(await api.hasApiKey(), false);

      const rejected = await vscode.commands.executeCommand<boolean>(
        'aihub.setApiKey',
        'aih_not_a_real_key_0000000000',
      );
      assert.equal(rejected, false, 'a key the gateway rejects is not stored');
      assert.equal(await api.hasApiKey(), false);

      const stored = await vscode.commands.executeCommand<boolean>('aihub.setApiKey', funded.key);
      assert.equal(stored, true);
      assert.equal(await api.hasApiKey(), true);

      const inspected = JSON.stringify(vscode.workspace.getConfiguration('aihub'));
      assert.ok(!inspected.includes(funded.key), 'the key is not in any aihub setting');
      const workspaceSettings = join(
        process.env.AIHUB_TEST_WORKSPACE ?? vscode.workspace.workspaceFolders![0]!.uri.fsPath,
        '.vscode/settings.json',
      );
      assert.ok(existsSync(workspaceSettings));
      assert.ok(
        !readFileSync(workspaceSettings, 'utf8').includes(funded.key),
        'the key is not in settings.json',
      );

      const balance = await until('status bar balance', () =>
        api.statusBarText().includes(CREDIT.toFixed(2)) ? api.statusBarText() : undefined,
      );
      assert.match(balance, /AIHub ₹100\.00/);
    });

    it('Show Balance answers from /v1/balance', async () => {
      const balance = await vscode.commands.executeCommand<{ balance: number; currency: string }>(
        'aihub.showBalance',
      );
      assert.equal(balance.balance, CREDIT);
      assert.equal(balance.currency, 'INR');
    });

    it('Explain Selection streams the explanation into the chat, with cost and balance', async () => {
      const editor = await openSample('function add(a: number, b: number) {\n  return a + b;\n}\n');
      editor.selection = new vscode.Selection(0, 0, 2, 1);
      const posted: ToWebview[] = [];
      const listener = api.onDidPostToChat((message) => posted.push(message));
      const before = (
        await vscode.commands.executeCommand<{ balance: number }>('aihub.showBalance')
      ).balance;
      let reply: Assistant;
      try {
        reply = await vscode.commands.executeCommand<Assistant>('aihub.explainSelection');
      } finally {
        listener.dispose();
      }
      assert.equal(reply.status, 'done', JSON.stringify(reply.error));
      assert.ok(reply.text.trim().length > 0);

      const deltas = posted.filter(
        (m): m is Extract<ToWebview, { type: 'delta' }> => m.type === 'delta' && m.id === reply.id,
      );
      assert.ok(deltas.length >= 2, `the reply streamed in ${deltas.length} piece(s)`);
      assert.equal(
        deltas.map((d) => d.text).join(''),
        reply.text,
        'the streamed pieces make up the reply',
      );

      const transcript = api.chatTranscript();
      const question = transcript[transcript.length - 2]!;
      assert.equal(question.role, 'user');
      assert.match(question.text, /typescript/);
      assert.match(question.text, /Untitled|untitled/);
      assert.ok(question.text.includes('return a + b;'));
      assert.equal(transcript[transcript.length - 1]!.id, reply.id);

      const meta = reply.meta!;
      assert.ok(meta, 'the reply carries x_aihub');
      assert.equal(meta.tier, await tierOf(gateway.apiBase, funded.key, 'service-ai-lite'));
      assert.ok(meta.cost > 0, 'a paid tier costs something');
      assert.equal(
        micros(meta.balance),
        micros(before) - micros(meta.cost),
        'balance after = before − cost',
      );
      await until(
        'status bar after the reply',
        () => api.statusBarText().includes(meta.balance.toFixed(2)) || undefined,
      );
    });

    it('Generate Code proposes the code, fences stripped; Accept inserts it as one undoable edit', async function () {
      const original = '// header\n\n// footer\n';
      const editor = await openSample(original);
      editor.selection = new vscode.Selection(1, 0, 1, 0);
      const result = await vscode.commands.executeCommand<GeneratedCode>(
        'aihub.generateCode',
        'a function that adds two numbers',
      );
      assert.ok(result && !result.cancelled);
      assert.ok(result.text.trim().length > 0, 'some code was inserted');
      assert.equal(result.text, stripCodeFences(result.reply));
      if (result.reply.includes('```')) {
        assert.ok(
          !result.text.includes('```'),
          'the fences and the prose around them are not in the editor',
        );
        assert.ok(result.text.length < result.reply.length);
      }
      // The built-in engine answers with a skeleton of the requested function in the file's language.
      assert.match(result.text, /function/);
      assert.equal(result.proposed, true);
      assert.equal(editor.document.getText(), original, 'nothing lands before Accept');
      assert.equal(await vscode.commands.executeCommand('aihub.acceptProposal'), 'accepted');
      const text = editor.document.getText();
      assert.equal(text, `// header\n${result.text}\n// footer\n`);
      assert.ok(result.meta && result.meta.cost >= 0);

      await vscode.commands.executeCommand('undo');
      assert.equal(
        editor.document.getText(),
        original,
        'one undo removes the whole generated code',
      );
    });

    it('Generate Code over a selection replaces it', async () => {
      const editor = await openSample('const keep = 1;\nconst old = 2;\n');
      editor.selection = new vscode.Selection(1, 0, 1, 15);
      const result = await vscode.commands.executeCommand<GeneratedCode>(
        'aihub.generateCode',
        'rewrite this as a function',
      );
      assert.ok(result && result.text.length > 0);
      assert.equal(await vscode.commands.executeCommand('aihub.acceptProposal'), 'accepted');
      assert.equal(editor.document.getText(), `const keep = 1;\n${result.text}\n`);
    });

    it('Stop cancels a streaming reply and keeps what arrived', async () => {
      const editor = await openSample('let x = 1;\n'.repeat(40));
      editor.selection = new vscode.Selection(0, 0, 39, 10);
      await configure({ maxTokens: 2000 });
      const listener = api.onDidPostToChat((message) => {
        if (message.type === 'delta') void vscode.commands.executeCommand('aihub.stopReply');
      });
      let reply: Assistant;
      try {
        reply = await vscode.commands.executeCommand<Assistant>('aihub.explainSelection');
      } finally {
        listener.dispose();
        await configure({ maxTokens: undefined });
      }
      assert.equal(reply.status, 'stopped');
      assert.equal(reply.error, undefined, 'a stop is not an error');
      assert.ok(reply.text.length > 0, 'the text that arrived is kept');
    });

    it('Select Model changes the tier that the next reply uses', async () => {
      const picked = await vscode.commands.executeCommand<string>(
        'aihub.selectModel',
        'service-ai-standard-6',
      );
      assert.equal(picked, 'service-ai-standard-6');
      assert.equal(
        vscode.workspace.getConfiguration('aihub').get('model'),
        'service-ai-standard-6',
      );
      const editor = await openSample('x = 1\n', 'python');
      editor.selection = new vscode.Selection(0, 0, 0, 5);
      const reply = await vscode.commands.executeCommand<Assistant>('aihub.explainSelection');
      assert.equal(reply.status, 'done', JSON.stringify(reply.error));
      assert.equal(
        reply.meta?.tier,
        await tierOf(gateway.apiBase, funded.key, 'service-ai-standard-6'),
      );
      await configure({ model: 'service-ai-lite' });
    });

    it('a base URL given as a full endpoint path is normalized', async () => {
      await configure({ baseUrl: `${gateway.apiBase}/chat/completions` });
      try {
        const balance = await vscode.commands.executeCommand<{ balance: number }>(
          'aihub.showBalance',
        );
        assert.ok(balance && balance.balance > 0);
        await configure({ baseUrl: gateway.root });
        const again = await vscode.commands.executeCommand<{ balance: number }>(
          'aihub.showBalance',
        );
        assert.equal(again?.balance, balance.balance);
      } finally {
        await configure({ baseUrl: gateway.apiBase });
      }
    });

    it('402 offers Top Up, which opens <gateway>/wallet with the shortfall filled in', async () => {
      const broke = await gateway.account(0);
      assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', broke.key), true);
      const editor = await openSample('print(1)\n', 'python');
      editor.selection = new vscode.Selection(0, 0, 0, 8);
      const reply = await vscode.commands.executeCommand<Assistant>('aihub.explainSelection');
      assert.equal(reply.status, 'error');
      assert.deepEqual(reply.error?.actions, ['topUp']);
      // The 402's message names the amount short; Top Up opens the wallet page with it.
      const short = /the wallet is ([\d.]+) [A-Z]{3} short/.exec(reply.error?.message ?? '');
      assert.ok(short, reply.error?.message);
      const opened = await vscode.commands.executeCommand<string>('aihub.topUp');
      const amount = /^(.*)\/wallet\?amount=(\d+\.\d\d)$/.exec(opened);
      assert.ok(amount, opened);
      assert.equal(amount[1], gateway.root);
      assert.ok(
        Number(amount[2]) >= Number(short[1]) && Number(amount[2]) - Number(short[1]) < 0.01,
      );
    });

    it('401 offers Set API Key', async () => {
      const account = await gateway.account(10);
      assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', account.key), true);
      await gateway.revokeKey(account.keyId);
      const editor = await openSample('print(2)\n', 'python');
      editor.selection = new vscode.Selection(0, 0, 0, 8);
      const reply = await vscode.commands.executeCommand<Assistant>('aihub.explainSelection');
      assert.equal(reply.status, 'error');
      assert.deepEqual(reply.error?.actions, ['setApiKey']);
      await until(
        'status bar shows the rejected key',
        () => /key rejected/.test(api.statusBarText()) || undefined,
      );
    });

    it('an unreachable gateway offers Start Local Gateway', async () => {
      await vscode.commands.executeCommand('aihub.setApiKey', funded.key);
      const closed = await freePort();
      await configure({ baseUrl: `http://127.0.0.1:${closed}/v1` });
      try {
        const editor = await openSample('print(3)\n', 'python');
        editor.selection = new vscode.Selection(0, 0, 0, 8);
        const reply = await vscode.commands.executeCommand<Assistant>('aihub.explainSelection');
        assert.equal(reply.status, 'error');
        assert.ok(reply.error?.actions.includes('startLocalGateway'), JSON.stringify(reply.error));
      } finally {
        await configure({ baseUrl: gateway.apiBase });
      }
    });

    it('New Chat clears the transcript, which is otherwise kept', async () => {
      assert.ok(api.chatTranscript().length > 0);
      await vscode.commands.executeCommand('aihub.newChat');
      assert.equal(api.chatTranscript().length, 0);
    });

    /** What the nested suites read of this one's state (set by its hooks and first tests). */
    const shared = {
      api: () => api,
      upstream: () => upstream,
      workspace: () =>
        process.env.AIHUB_TEST_WORKSPACE ?? vscode.workspace.workspaceFolders![0]!.uri.fsPath,
      configure,
      until,
    };

    describe('for real work', () => {
      // Mocha runs these after the outer tests, the local gateway's included: back to the test gateway and key.
      before(async () => {
        await configure({ baseUrl: gateway.apiBase, 'localGateway.port': undefined });
        assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', funded.key), true);
      });
      registerRealWorkTests(shared);
    });

    describe('codebase as context', () => {
      before(async () => {
        await configure({ baseUrl: gateway.apiBase, 'localGateway.port': undefined });
      });
      registerCodebaseTests({ ...shared, gateway: () => gateway });
    });

    describe('agent mode', () => {
      before(async () => {
        await configure({ baseUrl: gateway.apiBase, 'localGateway.port': undefined });
      });
      registerAgentTests({ ...shared, gateway: () => gateway });
    });

    describe("VS Code's chat models (vendor aihub)", () => {
      before(async () => {
        await configure({ baseUrl: gateway.apiBase, 'localGateway.port': undefined });
      });
      registerLanguageModelTests({ ...shared, gateway: () => gateway });
    });

    describe('model providers on the local gateway', () => {
      registerProviderTests({ ...shared, freePort });
    });

    it('the local gateway starts with a new account and key, answers, and stops', async function () {
      this.timeout(120_000);
      const port = await freePort();
      await vscode.commands.executeCommand('aihub.clearApiKey');
      await configure({ baseUrl: undefined, 'localGateway.port': port });
      try {
        const info =
          await vscode.commands.executeCommand<LocalGatewayInfo>('aihub.startLocalGateway');
        assert.ok(info, 'the local gateway started');
        assert.equal(info.apiBase, `http://127.0.0.1:${port}/v1`);
        assert.equal(api.localGateway().state, 'running');
        assert.ok(info.pid && info.pid !== process.pid);
        assert.equal(await api.hasApiKey(), true, 'the local key was stored');
        await until('the AIHub chat models on the local gateway', async () =>
          (await vscode.lm.selectChatModels({ vendor: 'aihub' })).length === 5 ? true : undefined,
        );

        const health = await fetch(`http://127.0.0.1:${port}/healthz`);
        assert.deepEqual(await health.json(), { status: 'ok' });
        const balance = await vscode.commands.executeCommand<{ balance: number }>(
          'aihub.showBalance',
        );
        assert.ok(balance && balance.balance > 0, 'the local account has sandbox credit');

        const editor = await openSample('const local = true;\n');
        editor.selection = new vscode.Selection(0, 0, 0, 19);
        const reply = await vscode.commands.executeCommand<Assistant>('aihub.explainSelection');
        assert.equal(reply.status, 'done', JSON.stringify(reply.error));
        assert.ok(reply.text.length > 0);

        // The openai SDK from outside the extension sees the same gateway and the same account.
        const client = new OpenAI({ baseURL: info.apiBase, apiKey: 'wrong-key' });
        await assert.rejects(
          client.models.list(),
          (error: unknown) => error instanceof OpenAI.APIError && error.status === 401,
        );

        await vscode.commands.executeCommand('aihub.stopLocalGateway');
        assert.equal(api.localGateway().state, 'stopped');
        assert.ok(await portIsClosed(port), 'nothing answers on the port after stop');
        assert.throws(() => process.kill(info.pid!, 0), 'the gateway process is gone');

        // A second start reuses the data dir and the stored key: no new account.
        const second =
          await vscode.commands.executeCommand<LocalGatewayInfo>('aihub.startLocalGateway');
        assert.ok(second);
        const again = await vscode.commands.executeCommand<{ balance: number }>(
          'aihub.showBalance',
        );
        assert.equal(
          again?.balance,
          reply.meta!.balance,
          'same account, balance kept across restarts',
        );
        await vscode.commands.executeCommand('aihub.stopLocalGateway');
        assert.ok(await portIsClosed(port));
      } finally {
        await vscode.commands.executeCommand('aihub.stopLocalGateway');
        await configure({ baseUrl: gateway.apiBase, 'localGateway.port': undefined });
      }
    });
  });
}

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
