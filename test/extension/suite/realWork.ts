// The extension for real work, in the real extension host against the real gateway whose
// SCRIPTED_MODEL tier is answered by a scripted upstream on loopback: what reached the model is
// read from the upstream's record, what it answers is set per test.
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { AIHubApi } from '../../../extension/api.js';
import type { ChatEntry } from '../../../extension/chat/protocol.js';
import type { GeneratedCode } from '../../../extension/commands/generateCode.js';
import type { ScriptedUpstream } from '../../support/scripted-upstream.js';
import { SCRIPTED_MODEL } from './gateway.js';

type Assistant = Extract<ChatEntry, { role: 'assistant' }>;

export interface RealWorkContext {
  api(): AIHubApi;
  upstream(): ScriptedUpstream;
  workspace(): string;
  configure(values: Record<string, unknown>): Promise<void>;
  until<T>(
    what: string,
    probe: () => T | undefined | Promise<T | undefined>,
    timeout_ms?: number,
  ): Promise<T>;
}

/** A line in the suite's results (the harness prints the results file). */
export function report(line: string): void {
  console.log(`[AIHub test] ${line}`);
  if (process.env.AIHUB_TEST_RESULTS) appendFileSync(process.env.AIHUB_TEST_RESULTS, `${line}\n`);
}

/** The last user message the upstream received. */
function lastUserMessage(upstream: ScriptedUpstream): string {
  const body = upstream.received.at(-1)?.body as
    { messages?: Array<{ role: string; content: string }> } | undefined;
  const user = body?.messages?.filter((m) => m.role === 'user').at(-1);
  assert.ok(user, 'the upstream received a chat request with a user message');
  return user.content;
}

async function openWorkspaceFile(
  folder: string,
  name: string,
  text: string,
): Promise<vscode.TextEditor> {
  const path = join(folder, name);
  writeFileSync(path, text);
  const document = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
  return vscode.window.showTextDocument(document, { preview: false });
}

/** The open diff editors whose proposed side is a document of `scheme` (Generate's, or the agent's). */
export function diffTabs(scheme = 'aihub-proposal'): vscode.Tab[] {
  return vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .filter(
      (t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === scheme,
    );
}

export function registerRealWorkTests(t: RealWorkContext): void {
  it('a chat message carries the active file, and the upstream receives its content', async () => {
    const api = t.api();
    await t.configure({ model: SCRIPTED_MODEL });
    t.upstream().setDefault({ kind: 'ok', content: 'It greets by name.' });
    const editor = await openWorkspaceFile(
      t.workspace(),
      'greeter.ts',
      'export function greet(name: string): string {\n  return `Hi, ${name}!`;\n}\n',
    );
    editor.selection = new vscode.Selection(0, 0, 0, 0);
    const context = await t.until('the context lists greeter.ts', async () => {
      const built = await api.chatContext();
      return built.view.items.some((i) => i.kind === 'active' && i.label === 'greeter.ts')
        ? built
        : undefined;
    });
    assert.ok(context.view.tokens > 0 && context.view.tokens <= context.view.budget);
    const received = t.upstream().received.length;
    const reply = await vscode.commands.executeCommand<Assistant>(
      'aihub.ask',
      'What does this file do?',
    );
    assert.equal(reply.status, 'done', JSON.stringify(reply.error));
    assert.equal(reply.text, 'It greets by name.');
    assert.equal(t.upstream().received.length, received + 1);
    const sent = lastUserMessage(t.upstream());
    assert.ok(
      sent.includes('return `Hi, ${name}!`;'),
      `the file's content reached the model: ${sent}`,
    );
    assert.ok(sent.includes('`greeter.ts`'), 'with its name');
    assert.ok(
      sent.trimEnd().endsWith('What does this file do?'),
      'the question follows the context',
    );
    const question = api.chatTranscript().at(-2)!;
    assert.equal(question.role, 'user');
    assert.equal(question.text, 'What does this file do?', 'the transcript keeps the typed text');
    assert.deepEqual(question.role === 'user' && question.context, [
      'greeter.ts (whole file, 4 lines)',
    ]);
  });

  it('with a selection, only the selection goes', async () => {
    const editor = await openWorkspaceFile(
      t.workspace(),
      'two.py',
      'def one():\n    return 1\n\ndef two():\n    return 2\n',
    );
    editor.selection = new vscode.Selection(3, 0, 4, 12);
    await t.until('the selection in the context', async () =>
      (await t.api().chatContext()).labels.includes('two.py (lines 4-5 selected)')
        ? true
        : undefined,
    );
    await vscode.commands.executeCommand<Assistant>('aihub.ask', 'Explain.');
    const sent = lastUserMessage(t.upstream());
    assert.ok(sent.includes('def two():') && !sent.includes('def one():'), sent);
  });

  it('an oversized file is trimmed around the selection, with a note', async () => {
    await t.configure({ 'context.budgetTokens': 100 });
    try {
      const lines = Array.from({ length: 400 }, (_, i) => `const v${i} = ${i};`);
      const editor = await openWorkspaceFile(t.workspace(), 'big.ts', `${lines.join('\n')}\n`);
      editor.selection = new vscode.Selection(200, 0, 200, 0);
      const built = await t.until('big.ts in the context', async () => {
        const b = await t.api().chatContext();
        return b.view.items.some((i) => i.label === 'big.ts' && i.note) ? b : undefined;
      });
      const item = built.view.items.find((i) => i.label === 'big.ts')!;
      assert.match(item.note!, /trimmed to lines \d+-\d+ of 401 around the selection/);
      assert.ok(built.prompt.includes('const v200 = 200;'), 'the cursor line is kept');
      assert.ok(
        !built.prompt.includes('const v0 = 0;') && !built.prompt.includes('const v399 = 399;'),
      );
      assert.ok(built.view.tokens <= 100);
      assert.match(built.prompt, /\(Note: trimmed to lines/);
    } finally {
      await t.configure({ 'context.budgetTokens': undefined });
    }
  });

  it('Add File to Chat adds a workspace file that the next message carries', async () => {
    const helper = join(t.workspace(), 'helper.py');
    writeFileSync(helper, 'def helper():\n    return "from the helper file"\n');
    await openWorkspaceFile(t.workspace(), 'main.py', 'print(1)\n');
    const added = await vscode.commands.executeCommand<vscode.Uri[]>(
      'aihub.addFileToChat',
      vscode.Uri.file(helper),
    );
    assert.equal(added.length, 1);
    const built = await t.api().chatContext();
    assert.ok(built.view.items.some((i) => i.kind === 'file' && i.label === 'helper.py'));
    await vscode.commands.executeCommand<Assistant>('aihub.ask', 'How do they fit together?');
    const sent = lastUserMessage(t.upstream());
    assert.ok(sent.includes('return "from the helper file"'), 'the added file reached the model');
    assert.ok(sent.includes('print(1)'), 'and the active file too');
  });

  it('Explain adds the enclosing function to the selection', async () => {
    const editor = await openWorkspaceFile(
      t.workspace(),
      'calc.ts',
      'export function total(items: number[]): number {\n  let sum = 0;\n  for (const item of items) sum += item;\n  return sum;\n}\n',
    );
    editor.selection = new vscode.Selection(2, 0, 2, 40);
    const reply = await vscode.commands.executeCommand<Assistant>('aihub.explainSelection');
    assert.equal(reply.status, 'done', JSON.stringify(reply.error));
    const sent = lastUserMessage(t.upstream());
    assert.match(sent, /It is part of (function `total`|the enclosing block) \(lines 1-5\)/);
    assert.ok(sent.includes('export function total(items: number[]): number {'));
  });

  it('Generate sends the code around the cursor and the imports, then opens a diff; Accept writes the file as one undoable edit', async () => {
    const original =
      "import { readFileSync } from 'node:fs';\n\nconst before = 1;\n\nconst after = 2;\n";
    const file = join(t.workspace(), 'generated.ts');
    const editor = await openWorkspaceFile(t.workspace(), 'generated.ts', original);
    editor.selection = new vscode.Selection(3, 0, 3, 0);
    const code = 'export function sum(a: number, b: number): number {\n  return a + b;\n}';
    t.upstream().setDefault({ kind: 'ok', content: `Here it is:\n\`\`\`ts\n${code}\n\`\`\`\n` });
    const result = await vscode.commands.executeCommand<GeneratedCode>(
      'aihub.generateCode',
      'a function that adds two numbers',
    );
    assert.ok(result?.proposed, 'a proposal is open');
    assert.equal(result.text, code, 'fences and prose stripped');
    const sent = lastUserMessage(t.upstream());
    assert.ok(sent.includes("import { readFileSync } from 'node:fs';"), 'the imports were sent');
    assert.ok(
      sent.includes('const before = 1;') && sent.includes('const after = 2;'),
      'the code before and after the cursor was sent',
    );
    assert.equal(diffTabs().length, 1, 'the diff is open');
    assert.equal(t.api().proposalPending(), true);
    assert.equal(readFileSync(file, 'utf8'), original, 'nothing is written before Accept');

    const outcome = await vscode.commands.executeCommand('aihub.acceptProposal');
    assert.equal(outcome, 'accepted');
    const expected = `import { readFileSync } from 'node:fs';\n\nconst before = 1;\n${code}\nconst after = 2;\n`;
    assert.equal(editor.document.getText(), expected);
    assert.equal(
      readFileSync(file, 'utf8'),
      expected,
      'the file on disk changed (it had no unsaved changes, so it is saved)',
    );
    await t.until('the diff closed', () => (diffTabs().length === 0 ? true : undefined));
    await vscode.window.showTextDocument(editor.document);
    await vscode.commands.executeCommand('undo');
    assert.equal(editor.document.getText(), original, 'one undo removes the whole change');
    await editor.document.save();
  });

  it('Generate → Reject leaves the file unchanged and closes the diff', async () => {
    const original = 'const keep = 1;\n';
    const file = join(t.workspace(), 'rejected.ts');
    const editor = await openWorkspaceFile(t.workspace(), 'rejected.ts', original);
    editor.selection = new vscode.Selection(1, 0, 1, 0);
    t.upstream().setDefault({ kind: 'ok', content: 'const extra = 2;' });
    const result = await vscode.commands.executeCommand<GeneratedCode>(
      'aihub.generateCode',
      'another constant',
    );
    assert.ok(result?.proposed);
    assert.equal(diffTabs().length, 1);
    assert.equal(await vscode.commands.executeCommand('aihub.rejectProposal'), 'rejected');
    await t.until('the diff closed', () => (diffTabs().length === 0 ? true : undefined));
    assert.equal(editor.document.getText(), original);
    assert.equal(readFileSync(file, 'utf8'), original);
    assert.equal(t.api().proposalPending(), false);
  });

  it('an inline completion appears as ghost text, is billed into the session spend, and Tab (commit) inserts it', async () => {
    const api = t.api();
    await t.configure({
      'inlineCompletions.model': SCRIPTED_MODEL,
      'inlineCompletions.enabled': true,
      'inlineCompletions.debounceMs': 0,
    });
    t.upstream().setDefault({ kind: 'ok', content: 'a + b;' });
    // The workbench here is a headless page whose editor need not keep the DOM focus while the test
    // drives it through commands, and VS Code drops ghost text on blur; this internal setting (which
    // the API cannot write, hence settings.json) keeps it. The .vsix browser test types and presses Tab for real.
    const settingsFile = join(t.workspace(), '.vscode/settings.json');
    writeFileSync(
      settingsFile,
      JSON.stringify(
        {
          ...JSON.parse(readFileSync(settingsFile, 'utf8')),
          'editor.inlineSuggest.keepOnBlur': true,
        },
        null,
        2,
      ),
    );
    await t.until('keepOnBlur read', () =>
      vscode.workspace.getConfiguration('editor').get('inlineSuggest.keepOnBlur') === true
        ? true
        : undefined,
    );
    const editor = await openWorkspaceFile(
      t.workspace(),
      'inline.ts',
      'export function add(a: number, b: number): number {\n  return\n}\n',
    );
    const position = new vscode.Position(1, 8);
    editor.selection = new vscode.Selection(position, position);
    const spentBefore = api.spend().session;
    const shownBefore = api.inlineStats().shown;
    await vscode.window.showTextDocument(editor.document, { preserveFocus: false });
    // Typed as from the keyboard (the `type` command is what a key press runs): VS Code asks for a completion.
    await vscode.commands.executeCommand('type', { text: ' ' });
    // Waits on the state, not on one event: when the workbench had not given the editor the focus
    // as the key was typed, ask again as Alt+\ does (the provider answers a repeat from its cache).
    await t.until('a completion shown', async () => {
      if (api.inlineStats().shown > shownBefore) return true;
      await vscode.commands.executeCommand('workbench.action.focusActiveEditorGroup');
      await vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
      return undefined;
    });
    // The gateway serves /v1/completions (its probe, an empty body, is a 400 there), so the extension
    // sends a native completion: the code before the cursor as `prompt`, the code after it as `suffix`.
    assert.equal(
      api.inlineStats().client,
      'completions',
      'the gateway serves /v1/completions: the native client, prompt + suffix',
    );
    // The scripted target speaks chat only: the gateway turns prompt + suffix into one fill-in-the-middle message.
    const received = t.upstream().received.at(-1);
    assert.ok(received, 'the completion reached the upstream');
    assert.equal(received.url, '/v1/chat/completions', 'as a chat request');
    const upstreamBody = received.body as {
      messages: Array<{ role: string; content: string }>;
      stream?: boolean;
    };
    assert.match(
      upstreamBody.messages.find((m) => m.role === 'system')?.content ?? '',
      /fill-in-the-middle/,
    );
    const sent = lastUserMessage(t.upstream());
    assert.equal(
      sent,
      '<|fim_prefix|>export function add(a: number, b: number): number {\n  return <|fim_suffix|>\n}\n<|fim_middle|>',
      `the prompt and suffix around the cursor: ${sent}`,
    );
    assert.ok(!upstreamBody.stream, 'a native completion is one JSON answer');
    await t.until('the session spend counts the completion', () =>
      api.spend().session > spentBefore ? true : undefined,
    );
    // Tab runs editor.action.inlineSuggest.commit while the ghost text is visible.
    await t.until('the ghost text accepted', async () => {
      await vscode.commands.executeCommand('workbench.action.focusActiveEditorGroup');
      await vscode.commands.executeCommand('editor.action.inlineSuggest.commit');
      return editor.document.lineAt(1).text !== '  return ' ? true : undefined;
    });
    assert.equal(
      editor.document.getText(),
      'export function add(a: number, b: number): number {\n  return a + b;\n}\n',
    );
    // Saved now, not by the web workbench's auto save a second later (or, on a loaded machine,
    // several): that write once landed in the middle of a later suite's test.
    assert.equal(await editor.document.save(), true);
  });

  it('the status bar toggle turns inline completions off and on', async () => {
    const api = t.api();
    assert.match(api.inlineStatusText(), /AIHub completions$/);
    assert.equal(await vscode.commands.executeCommand('aihub.toggleInlineCompletions'), false);
    assert.equal(
      vscode.workspace.getConfiguration('aihub').get('inlineCompletions.enabled'),
      false,
    );
    await t.until('the status bar says off', () =>
      /completions off/.test(api.inlineStatusText()) ? true : undefined,
    );
    assert.equal(await vscode.commands.executeCommand('aihub.toggleInlineCompletions'), true);
    await t.until('the status bar says on', () =>
      /AIHub completions$/.test(api.inlineStatusText()) ? true : undefined,
    );
  });

  it('the spending cap asks before a request that could pass it; cancelled, nothing is sent; completions pause', async () => {
    const api = t.api();
    assert.ok(api.spend().today > 0, 'earlier tests spent something today');
    await t.configure({ 'spendingCap.perDay': 0.000001 });
    try {
      await t.until('the status bar shows the cap reached', () =>
        /cap reached/.test(api.statusBarText()) ? true : undefined,
      );
      await t.until('inline completions paused', () =>
        /paused/.test(api.inlineStatusText()) ? true : undefined,
      );
      const received = t.upstream().received.length;
      const asked = new Promise<{ purpose: string; worstCase: number; cap: number }>((resolve) => {
        const listener = api.onDidAskSpend((question) => {
          listener.dispose();
          resolve(question);
        });
      });
      const pending = vscode.commands.executeCommand<Assistant>('aihub.ask', 'One more question.');
      const question = await asked;
      assert.equal(question.purpose, 'This chat message');
      assert.ok(question.worstCase > 0 && question.cap === 0.000001);
      // The question is a quick pick: dismiss it, as Escape would.
      await t.until('the question answered', async () => {
        await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
        return Promise.race([
          pending.then(() => true),
          new Promise<undefined>((r) => setTimeout(() => r(undefined), 200)),
        ]);
      });
      const reply = await pending;
      assert.equal(reply.status, 'error');
      assert.match(reply.error!.message, /Not sent: it could pass your daily spending cap/);
      assert.equal(t.upstream().received.length, received, 'nothing reached the model');
    } finally {
      await t.configure({ 'spendingCap.perDay': undefined });
    }
    await t.until('the cap warning gone', () =>
      !/cap reached/.test(api.statusBarText()) ? true : undefined,
    );
  });

  it('conversations persist: New Chat keeps the old one, which reopens, renames and deletes', async () => {
    const api = t.api();
    const before = api.currentConversation();
    const entries = api.chatTranscript().map((e) => e.id);
    assert.ok(entries.length > 0);
    await vscode.commands.executeCommand('aihub.newChat');
    assert.equal(api.chatTranscript().length, 0);
    assert.notEqual(api.currentConversation().id, before.id);
    const saved = api.conversations().find((c) => c.id === before.id);
    assert.ok(saved, 'the previous conversation is in the history');
    assert.equal(saved.messages, entries.length);
    assert.equal(await api.openConversation(before.id), true);
    assert.deepEqual(
      api.chatTranscript().map((e) => e.id),
      entries,
      'reopened with every message',
    );
    assert.equal(await api.renameConversation(before.id, 'Greeter questions'), true);
    assert.equal(api.currentConversation().title, 'Greeter questions');
    assert.equal(await api.openConversation('__proto__'), false);
    assert.equal(await api.deleteConversation(before.id), true);
    assert.equal(
      api.conversations().some((c) => c.id === before.id),
      false,
    );
    assert.equal(api.chatTranscript().length, 0, 'deleting the open conversation starts a new one');
  });
}
