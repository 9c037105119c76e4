// Browser test of the packaged extension: dist/aihub.vsix installed into VS Code's server build,
// driven in headless Chromium like a user would: Set API Key through the command palette, a
// message typed into the chat view, the reply streaming in, the status bar balance going down,
// the Insert and Copy buttons of the reply's code block clicked with their effect on the editor
// (saved to disk), on a new editor when none is open, and on the clipboard.
// `node --import tsx test/extension/vsix-ui.ts` (after `npm run package`)
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, FrameLocator, Locator, Page } from 'playwright-core';
import {
  REPO,
  SERVER_MAIN,
  SERVER_NODE,
  chatModelPicker,
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
import { ScriptedUpstream, toolCallsReply } from '../support/scripted-upstream.js';
import { SCRIPTED_MODEL, startTestGateway, type TestGateway } from './suite/gateway.js';

const VSIX = join(REPO, 'dist/aihub.vsix');
const CREDIT = 100;
const STEP_TIMEOUT_MS = 60_000;
const PROMPT = 'Write a hello world program in Python.';
/** The workspace file the Insert steps edit (written by makeWorkspace). */
const SAMPLE = 'sample.ts';

const steps: Array<{ name: string; run: () => Promise<void> }> = [];
const step = (name: string, body: () => Promise<void>): void =>
  void steps.push({ name, run: body });

/**
 * Opens the command palette. A quick input that is still closing (the password box of Set API
 * Key) or a toast holding the focus can swallow F1, so the palette is opened only once no quick
 * input shows, and F1 is pressed again if it does not appear.
 */
async function openPalette(page: Page): Promise<Locator> {
  const widget = page.locator('.quick-input-widget');
  const input = page.locator(
    '.quick-input-widget input[aria-label="Type the name of a command to run."]',
  );
  for (let attempt = 1; ; attempt++) {
    if (await widget.isVisible()) {
      await page.keyboard.press('Escape');
      await widget.waitFor({ state: 'hidden', timeout: 5_000 }).catch(() => undefined);
    }
    await page.keyboard.press('F1');
    try {
      await input.waitFor({ state: 'visible', timeout: 5_000 });
      return input;
    } catch (error) {
      if (attempt >= 4) throw error;
    }
  }
}

/** Runs a command through the palette. */
async function palette(page: Page, command: string): Promise<void> {
  const input = await openPalette(page);
  await input.fill(`>${command}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: command }).first().waitFor();
  await page.keyboard.press('Enter');
}

/** Opens a workspace file through the quick open (F1 with the '>' removed) and waits for its editor. */
async function openFile(page: Page, name: string): Promise<void> {
  const input = await openPalette(page);
  await input.fill(name);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor();
  await page.keyboard.press('Enter');
  await page.locator('.tabs-container .tab.active', { hasText: name }).waitFor();
  await page.locator('.editor-instance .monaco-editor.focused').waitFor();
}

/** The editor tab of a file while it has unsaved changes (auto save is off in the test workspace). */
function dirtyTab(page: Page, name: string): Locator {
  return page.locator('.tabs-container .tab.dirty', { hasText: name });
}

/**
 * Gives the focus back to the editor (its cursor and selection unchanged), saves it with
 * Ctrl+S and returns the file's text on disk: what the user ends up with.
 */
async function saveAndRead(page: Page, folder: string, name: string): Promise<string> {
  if ((await page.locator('.editor-instance .monaco-editor.focused').count()) === 0)
    await palette(page, 'View: Focus Active Editor Group');
  await page.locator('.editor-instance .monaco-editor.focused').waitFor();
  await page.keyboard.press('Control+S');
  await dirtyTab(page, name).waitFor({ state: 'detached' });
  return readFileSync(join(folder, name), 'utf8');
}

/** The code of the first fenced block of a Markdown text, without its fences. */
function firstCodeBlock(markdown: string): string {
  const match = /^```[^\n`]*\n([\s\S]*?)\n```[ \t]*$/m.exec(markdown);
  assert.ok(match, `a fenced code block in: ${markdown}`);
  return match[1]!;
}

/** A reply with what models write all the time: a table, nested, ordered and task lists, and code. */
const MARKDOWN_REPLY = [
  '| Tier | Price |',
  '| --- | ---: |',
  '| lite | 15 |',
  '| max | 1250 |',
  '',
  '- outer',
  '  - inner one',
  '  - inner two',
  '',
  '1. first',
  '2. second',
  '',
  '- [x] done',
  '- [ ] todo',
  '',
  '```ts',
  'const total: number = 1 + 2;',
  '```',
].join('\n');

/** The last user message the scripted upstream received. */
function lastUserMessage(upstream: ScriptedUpstream): string {
  const body = upstream.received.at(-1)?.body as
    { messages?: Array<{ role: string; content: string }> } | undefined;
  return body?.messages?.filter((m) => m.role === 'user').at(-1)?.content ?? '';
}

/** Polls a condition on state (a file, a record), up to the step timeout. */
async function until(
  what: string,
  probe: () => boolean | Promise<boolean>,
  timeout_ms = STEP_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeout_ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let settingsFile = '';

/**
 * The workspace settings file as it is on disk; undefined while VS Code writes it (it writes the
 * file in place: a read can see it empty or cut short, as it once did here).
 */
function savedSettings(): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** Merges values into the workspace's settings.json (the workbench picks the change up). */
function writeSettings(values: Record<string, unknown>): void {
  const current = JSON.parse(readFileSync(settingsFile, 'utf8')) as Record<string, unknown>;
  writeFileSync(settingsFile, JSON.stringify({ ...current, ...values }, null, 2));
}

/**
 * Screenshots for review in the dark and the light theme (test-results/vsix-ui-<name>-<theme>.png),
 * waiting on the workbench's theme class, then back to dark.
 */
async function shots(page: Page, name: string): Promise<void> {
  mkdirSync(join(REPO, 'test-results'), { recursive: true });
  for (const [theme, css] of [
    ['Default Dark Modern', 'vs-dark'],
    ['Default Light Modern', 'vs'],
  ] as const) {
    writeSettings({ 'workbench.colorTheme': theme });
    await page.locator(`.monaco-workbench.${css}`).waitFor();
    await page.waitForTimeout(300); // the webview restyles from the theme variables it is sent
    await page.screenshot({
      path: join(REPO, 'test-results', `vsix-ui-${name}-${css === 'vs' ? 'light' : 'dark'}.png`),
    });
  }
  writeSettings({ 'workbench.colorTheme': 'Default Dark Modern' });
  await page.locator('.monaco-workbench.vs-dark').waitFor();
}

function balanceIn(text: string): number {
  const match = /AIHub ₹([\d.]+)/.exec(text);
  assert.ok(match, `a balance in the status bar: "${text}"`);
  return Number(match[1]);
}

async function main(): Promise<number> {
  if (!existsSync(VSIX)) throw new Error(`${VSIX} is missing: run npm run package`);
  const work = tempDir('vsix');
  const userDataDir = join(work, 'user-data');
  const extensionsDir = join(work, 'extensions');
  let gateway: TestGateway | undefined;
  let upstream: ScriptedUpstream | undefined;
  let server: VSCodeServer | undefined;
  let browser: Browser | undefined;
  let folder: string | undefined;
  let page: Page | undefined;
  let passed = 0;
  let failed = 0;
  try {
    log(`installing ${VSIX}`);
    await run(SERVER_NODE, [
      SERVER_MAIN,
      '--install-extension',
      VSIX,
      '--extensions-dir',
      extensionsDir,
      '--user-data-dir',
      userDataDir,
      '--accept-server-license-terms',
    ]);
    upstream = await ScriptedUpstream.start();
    gateway = await startTestGateway(REPO, { scripted: upstream.base_url });
    const account = await gateway.account(CREDIT);
    // Auto save off (the web workbench's default is after a delay): the Insert steps save explicitly.
    // Inline completions start off (the toggle step turns them on), so the earlier steps' edits ask for none.
    folder = makeWorkspace({
      'aihub.baseUrl': gateway.apiBase,
      'aihub.localGateway.autoStart': false,
      'aihub.model': 'service-ai-standard-6',
      'files.autoSave': 'off',
      'aihub.inlineCompletions.enabled': false,
      'aihub.inlineCompletions.model': SCRIPTED_MODEL,
      'aihub.inlineCompletions.debounceMs': 0,
      'workbench.colorTheme': 'Default Dark Modern',
    });
    settingsFile = join(folder, '.vscode/settings.json');
    const port = await freePort();
    server = await startVSCodeServer({ port, userDataDir, extensionsDir, folder });
    browser = await launchChromium();
    // Chromium lets a focused page write the clipboard; reading it back needs the permission a user
    // would grant. (Granted permissions replace the defaults, so writing is listed too.)
    page = await browser.newPage({
      viewport: { width: 1400, height: 900 },
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    page.setDefaultTimeout(STEP_TIMEOUT_MS);
    const p = page;
    let chat: FrameLocator;
    let before = 0;
    // The code of the reply's code block, from the same question asked of the gateway directly
    // (the built-in engine answers deterministically) with another account, so that this
    // account's balance stays what the chat shows.
    const reference = await gateway.account(10);
    const referenceReply = await fetch(`${gateway.apiBase}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${reference.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'service-ai-standard-6',
        max_tokens: 1024,
        messages: [{ role: 'user', content: PROMPT }],
      }),
    });
    assert.equal(referenceReply.status, 200, await referenceReply.clone().text());
    const code = firstCodeBlock(
      ((await referenceReply.json()) as { choices: Array<{ message: { content: string } }> })
        .choices[0]!.message.content,
    );
    assert.ok(
      code.includes('\n') && !code.includes('```'),
      `multi-line code without fences: ${code}`,
    );
    const codeBlock = (): Locator =>
      chat.locator('.message.assistant[data-status="done"]').last().locator('.code-block').first();

    step('the workbench loads with the extension installed and not yet active', async () => {
      await p.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder!)}`);
      await p.locator('.monaco-workbench .part.statusbar').waitFor();
      await p.locator('.activitybar a.action-label[aria-label="AIHub"]').waitFor();
      await p.waitForTimeout(2_000);
      assert.equal(
        await p.locator('.statusbar-item', { hasText: 'AIHub' }).count(),
        0,
        'no AIHub status bar item before activation',
      );
    });

    step(
      'Set API Key through the command palette stores the key and shows the balance',
      async () => {
        await palette(p, 'AIHub: Set API Key');
        const keyInput = p.locator('.quick-input-widget input[type="password"]');
        await keyInput.waitFor({ state: 'visible' });
        await keyInput.fill(account.key);
        // On a cold workbench the first Enter can land while the box is still being set up (it
        // then stays open, key typed): press it again, in the box, until the box closes.
        for (let attempt = 1; ; attempt++) {
          await keyInput.press('Enter');
          try {
            await keyInput.waitFor({ state: 'hidden', timeout: 5_000 });
            break;
          } catch (error) {
            if (attempt >= 4) throw error;
          }
        }
        await p
          .locator('.notifications-toasts', { hasText: 'AIHub API key saved. Balance: ₹100.00' })
          .waitFor();
        const item = p.locator('.statusbar-item', { hasText: 'AIHub ₹' });
        await item.waitFor();
        before = balanceIn(await item.innerText());
        assert.equal(before, CREDIT);
      },
    );

    step(
      'the chat view opens from the command palette, in its own activity-bar container',
      async () => {
        await palette(p, 'AIHub: Open Chat');
        chat = p
          .frameLocator('iframe.webview.ready[src*="extensionId=aihub.aihub"]')
          .frameLocator('#active-frame');
        await chat.locator('#input').waitFor();
        await assert.doesNotReject(chat.locator('#model').waitFor());
        assert.equal(await chat.locator('#model').inputValue(), 'service-ai-standard-6');
      },
    );

    step('a typed message gets a streamed reply with its cost and balance', async () => {
      await chat.locator('#input').click();
      await chat.locator('#input').fill(PROMPT);
      // Record every length the reply is rendered with, to see it grow while it streams.
      await chat.locator('body').evaluate(() => {
        const seen = new Set<number>();
        (window as unknown as { __replyLengths: Set<number> }).__replyLengths = seen;
        new MutationObserver(() => {
          const reply = document.querySelector('.message.assistant:last-of-type .markdown');
          if (reply && reply.textContent) seen.add(reply.textContent.length);
        }).observe(document.getElementById('transcript')!, {
          childList: true,
          subtree: true,
          characterData: true,
        });
      });
      await chat.locator('#input').press('Enter');
      await chat.locator('.message.user', { hasText: PROMPT }).waitFor();
      const reply = chat.locator('.message.assistant[data-status="done"]').last();
      await reply.waitFor();
      const text = await reply.locator('.markdown').innerText();
      assert.ok(text.trim().length > 0, 'the reply is visible');
      const lengths = await chat
        .locator('body')
        .evaluate(() => [...(window as unknown as { __replyLengths: Set<number> }).__replyLengths]);
      assert.ok(
        lengths.length >= 2,
        `the reply was shown while streaming (${lengths.length} renders: ${lengths.join(', ')})`,
      );
      assert.match(await reply.locator('.meta').innerText(), /Cost ₹[\d.]+ · Balance ₹[\d.]+/);
      assert.equal(await reply.locator('.code-block').count(), 1, 'the reply has one code block');
      await codeBlock().locator('button', { hasText: 'Copy' }).waitFor();
      await codeBlock().locator('button', { hasText: 'Insert' }).waitFor();
      assert.equal(
        await codeBlock().locator('pre code').textContent(),
        code,
        'the code block shows the code, without its fences',
      );
    });

    step('the status bar balance is lower afterwards', async () => {
      const item = p.locator('.statusbar-item', { hasText: 'AIHub ₹' });
      const deadline = Date.now() + 20_000;
      let after = before;
      while (Date.now() < deadline && after >= before) {
        after = balanceIn(await item.innerText());
        if (after < before) break;
        await p.waitForTimeout(200);
      }
      assert.ok(after < before, `balance went from ${before} to ${after}`);
      const meta = await chat.locator('.message.assistant .meta').last().innerText();
      assert.ok(
        meta.includes(`Balance ₹${after.toFixed(2)}`) || meta.includes(`Balance ₹${after}`),
        `${meta} matches the status bar ₹${after}`,
      );
      mkdirSync(join(REPO, 'test-results'), { recursive: true });
      await p.screenshot({ path: join(REPO, 'test-results/vsix-ui-chat.png') });
    });

    step(
      'Insert on a code block puts exactly its code at the editor cursor, as one undoable edit',
      async () => {
        const original = readFileSync(join(folder!, SAMPLE), 'utf8');
        await openFile(p, SAMPLE);
        // The cursor at the start of the second line.
        await p.keyboard.press('Control+Home');
        await p.keyboard.press('ArrowDown');
        await codeBlock().locator('button', { hasText: 'Insert' }).click();
        await dirtyTab(p, SAMPLE).waitFor();
        // Insert gives the focus back to the editor, so typing goes on where the code landed.
        await p.locator('.editor-instance .monaco-editor.focused').waitFor({ timeout: 10_000 });
        const lines = original.split('\n');
        assert.equal(
          await saveAndRead(p, folder!, SAMPLE),
          [lines[0], code + lines.slice(1).join('\n')].join('\n'),
        );
        await p.keyboard.press('Control+Z');
        await dirtyTab(p, SAMPLE).waitFor();
        assert.equal(
          await saveAndRead(p, folder!, SAMPLE),
          original,
          'one undo removes the whole inserted code',
        );
      },
    );

    step('Insert over a selection replaces the selection with the code', async () => {
      const original = readFileSync(join(folder!, SAMPLE), 'utf8');
      // The focus is in the editor after the save: select the whole first line.
      await p.keyboard.press('Control+Home');
      await p.keyboard.press('Shift+End');
      await codeBlock().locator('button', { hasText: 'Insert' }).click();
      await dirtyTab(p, SAMPLE).waitFor();
      await p.locator('.editor-instance .monaco-editor.focused').waitFor({ timeout: 10_000 });
      const [, ...rest] = original.split('\n');
      assert.equal(await saveAndRead(p, folder!, SAMPLE), [code, ...rest].join('\n'));
      await p.keyboard.press('Control+Z');
      await dirtyTab(p, SAMPLE).waitFor();
      assert.equal(
        await saveAndRead(p, folder!, SAMPLE),
        original,
        'one undo brings the selected text back',
      );
    });

    step(
      'Copy on a code block puts exactly its code into the clipboard and says so in the status bar',
      async () => {
        await p.evaluate(() => navigator.clipboard.writeText('before the copy'));
        assert.equal(await p.evaluate(() => navigator.clipboard.readText()), 'before the copy');
        await codeBlock().locator('button', { hasText: 'Copy' }).click();
        await p
          .locator('.part.statusbar .statusbar-item', { hasText: 'AIHub: code copied' })
          .waitFor();
        assert.equal(await p.evaluate(() => navigator.clipboard.readText()), code);
        assert.equal(await dirtyTab(p, SAMPLE).count(), 0, 'Copy leaves the editor alone');
      },
    );

    step(
      "Insert with no editor open puts the code in a new editor, in the code block's language",
      async () => {
        await palette(p, 'View: Close All Editors');
        await p.locator('.tabs-container .tab').first().waitFor({ state: 'detached' });
        await codeBlock().locator('button', { hasText: 'Insert' }).click();
        await p.locator('.tabs-container .tab.active', { hasText: 'Untitled' }).waitFor();
        // The language mode in the status bar: the fence said python.
        await p.locator('[id="status.editor.mode"]', { hasText: 'Python' }).waitFor();
        const shown = (await p.locator('.editor-instance .view-lines').first().innerText()).replace(
          /\u00a0/g,
          ' ',
        );
        assert.equal(shown.trim(), code.trim(), 'the new editor holds exactly the code');
        await p
          .locator('.part.statusbar .statusbar-item', { hasText: 'no editor was open' })
          .waitFor();
        // Leave nothing unsaved behind.
        await palette(p, 'View: Revert and Close Editor');
        await p.locator('.tabs-container .tab').first().waitFor({ state: 'detached' });
      },
    );

    // ---- The extension for real work: context, Markdown, Add File, Generate review, inline completions, spending cap, history.
    const otherFile = 'other.py';
    writeFileSync(join(folder!, otherFile), 'def other():\n    return "the other file"\n');
    const chatReply = (): Locator => chat.locator('.message.assistant[data-status="done"]').last();

    step(
      'the chat shows the active file as context, sends its content, and renders a table, a nested list and a task list',
      async () => {
        await openFile(p, SAMPLE);
        // No selection (an earlier step left one): the whole file goes.
        await p.keyboard.press('Control+End');
        const active = chat.locator('.context-item.active');
        await active.filter({ hasText: SAMPLE }).filter({ hasText: 'whole file' }).waitFor();
        assert.match(
          await chat.locator('#context-tokens').innerText(),
          /≈\d+ \/ 8,000 tokens of context/,
        );
        await chat.locator('#model').selectOption(SCRIPTED_MODEL);
        await until(
          'the model setting saved',
          () => savedSettings()?.['aihub.model'] === SCRIPTED_MODEL,
        );
        upstream!.setDefault({ kind: 'ok', content: MARKDOWN_REPLY });
        const received = upstream!.received.length;
        await chat.locator('#input').fill('Summarize this file as a table.');
        await chat.locator('#input').press('Enter');
        await chat
          .locator('.message.assistant[data-status="done"] .markdown table')
          .last()
          .waitFor();
        assert.equal(upstream!.received.length, received + 1);
        assert.equal(
          await chatReply().locator('.role').innerText(),
          `AIHub · ${SCRIPTED_MODEL}`,
          'the tier picked in the view answered',
        );
        const sent = lastUserMessage(upstream!);
        assert.ok(
          sent.includes(readFileSync(join(folder!, SAMPLE), 'utf8').trim()),
          `the file's content reached the model: ${sent}`,
        );
        assert.ok(sent.trimEnd().endsWith('Summarize this file as a table.'));
        assert.match(
          await chat.locator('.message.user').last().locator('.sent-context').innerText(),
          /with sample\.ts/,
        );
        const reply = chatReply();
        assert.deepEqual(await reply.locator('table thead th').allInnerTexts(), ['Tier', 'Price']);
        assert.deepEqual(
          await reply
            .locator('table tbody tr')
            .evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => c.textContent))),
          [
            ['lite', '15'],
            ['max', '1250'],
          ],
        );
        assert.deepEqual(
          await reply.locator('.markdown > ul > li > ul > li').allInnerTexts(),
          ['inner one', 'inner two'],
          'a list inside a list item',
        );
        assert.equal(await reply.locator('.markdown > ol > li').count(), 2);
        const boxes = reply.locator('li.task-list-item input[type="checkbox"][disabled]');
        assert.equal(await boxes.count(), 2);
        assert.deepEqual(
          await boxes.evaluateAll((list) => list.map((b) => (b as HTMLInputElement).checked)),
          [true, false],
        );
        assert.ok(
          (await reply.locator('.code-block pre code .hljs-keyword').count()) > 0,
          'the code block is highlighted',
        );
        assert.equal(
          await reply.locator('.code-block pre code').textContent(),
          'const total: number = 1 + 2;',
        );
        await reply.locator('.code-block button', { hasText: 'Copy' }).waitFor();
        await reply.locator('.code-block button', { hasText: 'Insert' }).waitFor();
        assert.equal(await reply.locator('script, img, iframe').count(), 0);
        await shots(p, 'chat-context-markdown');
      },
    );

    step(
      'Add File to Chat from the chat view: the file is listed, sent, and removable',
      async () => {
        await chat.locator('#add-file').click();
        const pick = p.locator('.quick-input-widget input');
        await pick.waitFor({ state: 'visible' });
        await pick.fill(otherFile);
        await p
          .locator('.quick-input-list .monaco-list-row', { hasText: otherFile })
          .first()
          .waitFor();
        await p.keyboard.press('Enter');
        const chip = chat.locator('.context-item.file', { hasText: otherFile });
        await chip.waitFor();
        upstream!.setDefault({ kind: 'ok', content: 'They are two small files.' });
        await chat.locator('#input').fill('How do these relate?');
        await chat.locator('#input').press('Enter');
        await chat
          .locator('.message.assistant[data-status="done"]', {
            hasText: 'They are two small files.',
          })
          .waitFor();
        assert.ok(
          lastUserMessage(upstream!).includes('return "the other file"'),
          'the added file reached the model',
        );
        await shots(p, 'chat-added-file');
        await chip.locator('.context-remove').click();
        await chip.waitFor({ state: 'detached' });

        // "@" in the message: the same quick pick; the path goes into the message and the file into the context.
        await chat.locator('#input').fill('');
        await chat.locator('#input').pressSequentially('Compare with @');
        await pick.waitFor({ state: 'visible' });
        await pick.fill(otherFile);
        await p
          .locator('.quick-input-list .monaco-list-row', { hasText: otherFile })
          .first()
          .waitFor();
        await p.keyboard.press('Enter');
        await chip.waitFor();
        await until(
          'the mention in the message',
          async () => (await chat.locator('#input').inputValue()) === `Compare with @${otherFile} `,
        );
        await chip.locator('.context-remove').click();
        await chip.waitFor({ state: 'detached' });
        await chat.locator('#input').fill('');
      },
    );

    step('the active-file toggle off: the next message carries no editor content', async () => {
      await chat.locator('#include-active').uncheck();
      await chat.locator('.context-item.active.excluded').waitFor();
      await chat.locator('#input').fill('Just a question.');
      await chat.locator('#input').press('Enter');
      await until('the message sent', () =>
        lastUserMessage(upstream!).includes('Just a question.'),
      );
      assert.ok(!lastUserMessage(upstream!).includes('Hello, '), 'no file content was sent');
      await chat.locator('#include-active').check();
      await chat.locator('.context-item.active:not(.excluded)').waitFor();
    });

    step(
      'Generate Code opens a diff; Accept (Ctrl+Alt+Enter) writes the file; Reject (Ctrl+Alt+Backspace) leaves it',
      async () => {
        const original = readFileSync(join(folder!, SAMPLE), 'utf8');
        await openFile(p, SAMPLE);
        await p.keyboard.press('Control+End');
        upstream!.setDefault({ kind: 'ok', content: '```ts\nexport const answer = 42;\n```' });
        await palette(p, 'AIHub: Generate Code');
        const box = p.locator('.quick-input-widget input');
        await box.waitFor({ state: 'visible' });
        await box.fill('a constant for the answer');
        await box.press('Enter');
        const diffTab = p.locator('.tabs-container .tab', { hasText: 'AIHub proposal' });
        await diffTab.waitFor();
        await p.locator('.monaco-diff-editor').first().waitFor();
        assert.ok(
          lastUserMessage(upstream!).includes('export function greet(name: string)'),
          'the code before the cursor was sent',
        );
        assert.equal(
          readFileSync(join(folder!, SAMPLE), 'utf8'),
          original,
          'nothing written before Accept',
        );
        await shots(p, 'generate-diff');
        await p.locator('.monaco-diff-editor').first().click();
        await p.keyboard.press('Control+Alt+Enter');
        await diffTab.waitFor({ state: 'detached' });
        await until(
          'the file on disk changed',
          () =>
            readFileSync(join(folder!, SAMPLE), 'utf8') ===
            `${original}export const answer = 42;\n`,
        );

        const accepted = readFileSync(join(folder!, SAMPLE), 'utf8');
        // Accept ends by showing the file with the cursor after the new code.
        await p.locator('.tabs-container .tab.active', { hasText: SAMPLE }).waitFor();
        await p.locator('.editor-instance .monaco-editor.focused').waitFor();
        await palette(p, 'AIHub: Generate Code');
        await box.waitFor({ state: 'visible' });
        await box.fill('another constant');
        await box.press('Enter');
        await diffTab.waitFor();
        await p.locator('.monaco-diff-editor').first().click();
        await p.keyboard.press('Control+Alt+Backspace');
        await diffTab.waitFor({ state: 'detached' });
        assert.equal(
          readFileSync(join(folder!, SAMPLE), 'utf8'),
          accepted,
          'Reject leaves the file as it was',
        );
        assert.equal(await dirtyTab(p, SAMPLE).count(), 0);

        // Cancelled while it streams: no diff, the file untouched. The answer streams for longer
        // than the step may last (100 chunks, a second apart), so only the cancel can end it: the
        // extension host starts the request before the workbench shows the toast (0.9 s later in
        // one run here), and under load the click can come later than a 10-second answer takes to
        // finish and open its diff, which the cancel then no longer stops (CI saw that diff).
        // A finished generation's toast stays at least 800 ms (VS Code's minimum): the earlier
        // ones are waited out, so that the Cancel clicked is this generation's.
        const progress = p.locator('.notification-toast', { hasText: 'AIHub: generating code' });
        await progress.waitFor({ state: 'detached' });
        upstream!.setDefault({
          kind: 'ok',
          content: 'export const slow = 1;\n'.repeat(100),
          chunks: 100,
          chunk_delay_ms: 1_000,
        });
        const received = upstream!.received.length;
        await palette(p, 'AIHub: Generate Code');
        await box.waitFor({ state: 'visible' });
        await box.fill('something slow');
        await box.press('Enter');
        await progress.waitFor();
        await progress.locator('.monaco-button', { hasText: 'Cancel' }).click();
        await progress.waitFor({ state: 'detached' });
        // The cancel reached the extension, which hung up: the gateway aborted the upstream request.
        await until('the request aborted', () => upstream!.received[received]?.aborted === true);
        assert.ok(upstream!.received[received]!.chunks_sent < 100, 'ended by the cancel');
        assert.equal(await diffTab.count(), 0, 'no diff after a cancel');
        assert.equal(readFileSync(join(folder!, SAMPLE), 'utf8'), accepted);
        assert.equal(await dirtyTab(p, SAMPLE).count(), 0, 'the editor untouched too');
      },
    );

    step(
      'the status bar toggle turns inline completions on; a completion shows as ghost text and Tab accepts it',
      async () => {
        const off = p.locator('.statusbar-item', { hasText: 'AIHub completions off' });
        await off.waitFor();
        await off.click();
        await p
          .locator('.statusbar-item', { hasText: 'AIHub completions', hasNotText: /off|paused/ })
          .waitFor();
        upstream!.setDefault({ kind: 'ok', content: '1 + 2;' });
        await openFile(p, SAMPLE);
        await p.keyboard.press('Control+End');
        await p.keyboard.press('Enter');
        await p.keyboard.type('const total = ');
        const ghost = p.locator('.ghost-text-decoration, .ghost-text');
        await ghost.first().waitFor();
        // The ghost text is rendered in several spans (it is syntax-highlighted).
        await until('the whole ghost text', async () =>
          (await ghost.allInnerTexts())
            .join('')
            .replace(/\u00a0/g, ' ')
            .includes('1 + 2;'),
        );
        await shots(p, 'inline-ghost-text');
        await p.keyboard.press('Tab');
        const text = await saveAndRead(p, folder!, SAMPLE);
        assert.ok(
          text.endsWith('\nconst total = 1 + 2;'),
          `Tab accepted the completion: ${JSON.stringify(text.slice(-60))}`,
        );
        await p
          .locator('.statusbar-item', { hasText: 'AIHub completions', hasNotText: /off|paused/ })
          .click();
        await off.waitFor();
      },
    );

    step(
      'the spending cap: the status bar says it is reached, and a chat message is asked about first',
      async () => {
        writeSettings({ 'aihub.spendingCap.perDay': 0.000001 });
        await p.locator('.statusbar-item', { hasText: 'cap reached' }).waitFor();
        await chat.locator('#spend.cap-reached').waitFor();
        const received = upstream!.received.length;
        await chat.locator('#input').fill('Is this too expensive?');
        await chat.locator('#input').press('Enter');
        await p.locator('.quick-input-widget', { hasText: 'daily spending cap' }).waitFor();
        await shots(p, 'spending-cap-question');
        await p.keyboard.press('Escape');
        await chat
          .locator('.message.assistant[data-status="error"]', {
            hasText: 'Not sent: it could pass your daily spending cap',
          })
          .waitFor();
        assert.equal(upstream!.received.length, received, 'nothing reached the model');
        writeSettings({ 'aihub.spendingCap.perDay': 0 });
        await p
          .locator('.statusbar-item', { hasText: 'cap reached' })
          .waitFor({ state: 'detached' });
      },
    );

    step(
      'History: New Chat keeps the conversation, which reopens from the history list',
      async () => {
        const messages = await chat.locator('.message').count();
        assert.ok(messages > 0);
        await chat.locator('#new-chat').click();
        await until(
          'the transcript empty',
          async () => (await chat.locator('.message').count()) === 0,
        );
        await chat.locator('#history-button').click();
        const first = chat.locator('.history-list li').first();
        await first.waitFor();
        await shots(p, 'history');
        assert.match(
          await first.locator('.history-open').innerText(),
          /Write a hello world program in Python\./,
        );
        await first.locator('.history-open').click();
        await until(
          'the conversation reopened',
          async () => (await chat.locator('.message').count()) === messages,
        );
        await chat.locator('.message.user', { hasText: PROMPT }).first().waitFor();
        await chat.locator('.history').waitFor({ state: 'hidden' });
      },
    );

    step(
      'Agent mode: a task started from the chat view shows its edit as a diff; Apply clicked writes the file; the task finishes with its cost',
      async () => {
        const name = 'price.ts';
        const before = 'export function price(rupees: number): number {\n  return rupees;\n}\n';
        const after =
          'export function price(rupees: number): number {\n  return Math.round(rupees * 100) / 100;\n}\n';
        writeFileSync(join(folder!, name), before);
        upstream!.script(
          toolCallsReply('I will read price.ts.', ['read_file', { path: name }]),
          toolCallsReply('Rounding to paise.', [
            'edit_file',
            {
              path: name,
              edits: [
                { search: '  return rupees;', replace: '  return Math.round(rupees * 100) / 100;' },
              ],
            },
          ]),
          toolCallsReply('', ['finish', { summary: 'price() now rounds to two decimals.' }]),
        );
        await chat.locator('#mode').selectOption('agent');
        await chat.locator('#auto-approve-label').waitFor();
        assert.equal(await chat.locator('#send').innerText(), 'Start Task');
        await chat.locator('#input').fill('Round prices to two decimals in price.ts.');
        await chat.locator('#input').press('Enter');
        await chat.locator('.message.user.task-request', { hasText: 'Round prices' }).waitFor();
        // The edit waits for the user: the card in the chat with its diff, and the diff editor.
        const card = chat.locator('.tool-call[data-status="awaiting"]');
        await card.waitFor();
        assert.match(await card.locator('.tool-title').innerText(), /Edit price\.ts/);
        assert.match(
          await card
            .locator('.tool-diff .diff-add')
            .allInnerTexts()
            .then((l) => l.join('')),
          /Math\.round\(rupees \* 100\) \/ 100/,
        );
        const diffTab = p.locator('.tabs-container .tab', { hasText: 'AIHub task edit' });
        await diffTab.waitFor();
        await p.locator('.monaco-diff-editor').first().waitFor();
        assert.equal(
          readFileSync(join(folder!, name), 'utf8'),
          before,
          'nothing written before Apply',
        );
        await shots(p, 'agent-approval');
        await card.locator('button[data-agent-action="approve"]').click();
        const result = chat.locator('.message.task[data-status="done"]');
        await result.waitFor();
        await until(
          'the file on disk changed',
          () => readFileSync(join(folder!, name), 'utf8') === after,
        );
        await diffTab.waitFor({ state: 'detached' });
        assert.match(
          await result.locator('.role').innerText(),
          /^Task done · 3 steps · Cost ₹[\d.]+$/,
        );
        assert.match(
          await result.locator('.markdown').innerText(),
          /price\(\) now rounds to two decimals/,
        );
        assert.match(await result.locator('.task-files').innerText(), /Changed: price\.ts/);
        assert.equal((await chat.locator('.message.agent').count()) >= 3, true);
        assert.equal(
          await chat.locator('.tool-call[data-tool="edit_file"][data-status="done"]').count(),
          1,
        );
        await result.locator('button[data-agent-action="undo-task"]').waitFor();
        await shots(p, 'agent-result');
        await chat.locator('#mode').selectOption('chat');
        await chat.locator('#auto-approve-label').waitFor({ state: 'hidden' });
      },
    );

    step(
      "VS Code's own chat lists the AIHub tiers in its model picker; sending there asks for a GitHub sign-in first",
      async () => {
        const usage = async (): Promise<number> => {
          const reply = await fetch(`${gateway!.apiBase}/balance`, {
            headers: { authorization: `Bearer ${account.key}` },
          });
          return ((await reply.json()) as { usage: { requests: number } }).usage.requests;
        };
        // Opens VS Code's chat and its picker until the provider's models arrive (after activation).
        const listed = await chatModelPicker(p, { expected: ['AIHub Free'] });
        log(`VS Code's chat model picker lists: ${listed.join(' | ')}`);
        const picker = p.locator('.interactive-input-part .model-picker-item .model-picker-name');
        // The picker (its first model, "Other Models" opened) in both themes.
        for (const [theme, css, name] of [
          ['Default Dark Modern', 'vs-dark', 'dark'],
          ['Default Light Modern', 'vs', 'light'],
        ] as const) {
          writeSettings({ 'workbench.colorTheme': theme });
          await p.locator(`.monaco-workbench.${css}`).waitFor();
          await picker.click();
          await p.getByText('Other Models', { exact: true }).click();
          for (const tier of ['Free', 'Lite', 'Standard', 'Pro', 'Max'])
            await p.getByText(`AIHub ${tier}`, { exact: true }).last().waitFor();
          await p.getByText('60 INR per 1M tokens in/out', { exact: false }).first().waitFor();
          await p.screenshot({
            path: join(REPO, 'test-results', `vsix-ui-vscode-chat-models-${name}.png`),
          });
          await p.keyboard.press('Escape');
        }
        writeSettings({ 'workbench.colorTheme': 'Default Dark Modern' });
        await p.locator('.monaco-workbench.vs-dark').waitFor();
        // The chat's agent is GitHub Copilot's: a message asks for a sign-in and reaches no model.
        const requests = await usage();
        await p.locator('[aria-label^="Chat Input"]').first().focus();
        await p.keyboard.type('Say hello.');
        await p.keyboard.press('Enter');
        const dialog = p.locator('.monaco-dialog-box', {
          hasText: 'Sign in to use GitHub Copilot',
        });
        await dialog.waitFor();
        await p.screenshot({
          path: join(REPO, 'test-results', 'vsix-ui-vscode-chat-sign-in-dark.png'),
        });
        await p.keyboard.press('Escape');
        await dialog.waitFor({ state: 'hidden' });
        assert.equal(await usage(), requests, 'nothing reached the gateway');
      },
    );

    step(
      'one click offline: Start Local Gateway runs the bundled gateway, creates a key, and the chat answers',
      async () => {
        const localPort = await freePort();
        writeFileSync(
          join(folder!, '.vscode/settings.json'),
          JSON.stringify({
            'aihub.baseUrl': '',
            'aihub.localGateway.port': localPort,
            'aihub.localGateway.autoStart': false,
            'aihub.model': 'service-ai-standard-6',
            'files.autoSave': 'off',
          }),
        );
        await p.waitForTimeout(1_500);
        await palette(p, 'AIHub: Start Local Gateway');
        await p.locator('.statusbar-item', { hasText: 'AIHub ₹500.00' }).waitFor();
        const health = await fetch(`http://127.0.0.1:${localPort}/healthz`);
        assert.equal(health.status, 200);
        const replies = chat.locator('.message.assistant[data-status="done"]');
        const earlier = await replies.count();
        await chat.locator('#input').fill('Write a function that reverses a string in Python.');
        await chat.locator('#input').press('Enter');
        await replies.nth(earlier).waitFor();
        assert.equal(await replies.count(), earlier + 1);
        assert.ok((await replies.last().locator('.markdown').innerText()).trim().length > 0);
        assert.match(await replies.last().locator('.meta').innerText(), /Balance ₹499\./);
        await palette(p, 'AIHub: Stop Local Gateway');
        await p
          .locator('.notifications-toasts', { hasText: 'AIHub local gateway stopped.' })
          .waitFor();
        await assert.rejects(
          fetch(`http://127.0.0.1:${localPort}/healthz`),
          'the local gateway is stopped',
        );
      },
    );

    for (const { name, run: body } of steps) {
      try {
        await body();
        passed++;
        process.stdout.write(`  ok ${name}\n`);
      } catch (error) {
        failed++;
        process.stdout.write(`  FAILED ${name}\n${(error as Error).stack ?? error}\n`);
        mkdirSync(join(REPO, 'test-results'), { recursive: true });
        const shot = join(REPO, 'test-results', `vsix-ui-${passed + failed}.png`);
        await p.screenshot({ path: shot }).catch(() => undefined);
        process.stdout.write(`  screenshot: ${shot}\n`);
        break;
      }
    }
  } finally {
    await browser?.close().catch(() => undefined);
    await server?.stop();
    await gateway?.stop();
    await upstream?.close();
    removeDirs(work, folder);
  }
  const skipped = steps.length - passed - failed;
  process.stdout.write(
    `# vsix browser test: passing ${passed}, failing ${failed}, not run ${skipped}\n`,
  );
  return failed === 0 && skipped === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
