// The agent's pure parts: search-and-replace edits and their diffs, the safety rules (allow-list,
// paths, secret files), the tool schemas and the validation of what the model sends, the bound on
// the conversation, the webview's agent messages; and a real command run (shell, timeout, Stop,
// output bound).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { OutputBuffer, runCommand } from '../../../extension/agent/command.js';
import {
  applyReplaceBlocks,
  normalizeText,
  restoreText,
  unifiedDiff,
} from '../../../extension/agent/edits.js';
import { ELIDED, conversationChars, fitConversation } from '../../../extension/agent/messages.js';
import {
  checkRelativePath,
  clip,
  enabledPatterns,
  editAlwaysAsks,
  isAllowListed,
  isGitInternal,
  isSecretPath,
  matchesAny,
} from '../../../extension/agent/policy.js';
import { agentSystemPrompt } from '../../../extension/agent/prompt.js';
import {
  TOOL_NAMES,
  describeCall,
  parseToolCall,
  toolDefinitions,
} from '../../../extension/agent/tools.js';
import { parseFromWebview } from '../../../extension/chat/protocol.js';

test('edits: a block replaces the one place its search text occurs; blocks apply in order', () => {
  const text = 'const a = 1;\nconst b = 2;\nconst c = 3;\n';
  const out = applyReplaceBlocks(text, [
    { search: 'const b = 2;', replace: 'const b = 20;' },
    { search: 'const b = 20;\nconst c = 3;', replace: 'const b = 20;\nconst c = 30;' },
  ]);
  assert.deepEqual(out, { ok: true, text: 'const a = 1;\nconst b = 20;\nconst c = 30;\n' });
});

test('edits: a search text found nowhere, twice, or empty is an error that says what to do', () => {
  const text = 'x();\nx();\ny();\n';
  const twice = applyReplaceBlocks(text, [{ search: 'x();', replace: 'z();' }]);
  assert.equal(twice.ok, false);
  assert.match(
    !twice.ok ? twice.error : '',
    /occurs 2 times; include more of the surrounding lines/,
  );
  const missing = applyReplaceBlocks(text, [{ search: 'w();', replace: 'z();' }]);
  assert.match(!missing.ok ? missing.error : '', /not found; read the file again/);
  const empty = applyReplaceBlocks(text, [{ search: '', replace: 'z' }]);
  assert.match(!empty.ok ? empty.error : '', /empty/);
  const second = applyReplaceBlocks(text, [
    { search: 'y();', replace: 'y2();' },
    { search: 'nothing', replace: '' },
  ]);
  assert.match(!second.ok ? second.error : '', /^edit 2:/, 'the failing block is named');
  assert.equal(applyReplaceBlocks(text, []).ok, false);
});

test('edits: with the indentation wrong, one matching run of lines is still found', () => {
  const text = 'function f() {\n    if (a) {\n        return 1;\n    }\n}\n';
  const out = applyReplaceBlocks(text, [
    { search: 'if (a) {\n  return 1;\n}\n', replace: '    if (a) {\n        return 2;\n    }\n' },
  ]);
  assert.deepEqual(out, {
    ok: true,
    text: 'function f() {\n    if (a) {\n        return 2;\n    }\n}\n',
  });
  const ambiguous = applyReplaceBlocks('  a\n  b\na\nb\n', [{ search: 'a\n b', replace: 'c' }]);
  assert.match(!ambiguous.ok ? ambiguous.error : '', /several places/);
});

test('edits: CRLF line ends and a byte-order mark are kept as the file had them', () => {
  const raw = '\uFEFFone\r\ntwo\r\n';
  const normal = normalizeText(raw);
  assert.deepEqual(normal, { text: 'one\ntwo\n', eol: '\r\n', bom: true });
  const edited = applyReplaceBlocks(normal.text, [{ search: 'two\r\n', replace: 'TWO\nthree\n' }]);
  assert.ok(edited.ok);
  assert.equal(restoreText(edited.text, normal), '\uFEFFone\r\nTWO\r\nthree\r\n');
  assert.equal(restoreText('a\nb\n', normalizeText('a\nb\n')), 'a\nb\n');
});

test('edits: the unified diff of a change and of a new file, with counts, bounded', () => {
  const diff = unifiedDiff('src/a.ts', 'a\nb\nc\n', 'a\nB\nc\nd\n');
  assert.equal(diff.added, 2);
  assert.equal(diff.removed, 1);
  assert.match(
    diff.text,
    /^--- a\/src\/a\.ts\n\+\+\+ b\/src\/a\.ts\n@@ -1,3 \+1,4 @@\n a\n-b\n\+B\n c\n\+d$/,
  );
  const created = unifiedDiff('src/new.ts', undefined, 'x\ny\n');
  assert.match(created.text, /^--- \/dev\/null\n\+\+\+ b\/src\/new\.ts/);
  assert.equal(created.added, 2);
  const long = unifiedDiff('big.txt', '', `${'line\n'.repeat(5_000)}`, 1_000);
  assert.ok(long.text.length < 1_100);
  assert.match(long.text, /more characters of diff not shown/);
});

test('allow-list: an entry allows the command and the command with arguments, never a chain', () => {
  const list = ['npm test', 'git status'];
  assert.equal(isAllowListed('npm test', list), true);
  assert.equal(isAllowListed('  npm   test  -- --grep x ', list), true);
  assert.equal(isAllowListed('git status', list), true);
  assert.equal(isAllowListed('npm testx', list), false);
  assert.equal(isAllowListed('npm', list), false);
  assert.equal(isAllowListed('npm run build', list), false);
  for (const sneaky of [
    'npm test; rm -rf ~',
    'npm test && curl x',
    'npm test | sh',
    'npm test > out',
    'npm test `id`',
    'npm test $(id)',
    'npm test\nrm -rf ~',
    'npm test & sleep 1',
  ])
    assert.equal(isAllowListed(sneaky, list), false, sneaky);
  assert.equal(isAllowListed('npm test', []), false, 'nothing is allowed by default');
  assert.equal(isAllowListed('', ['']), false);
});

test('paths: relative paths only, no "..", no absolute, drive letter or home path', () => {
  assert.deepEqual(checkRelativePath('src/a.ts'), { ok: true, segments: ['src', 'a.ts'] });
  assert.deepEqual(checkRelativePath('./src//b.ts'), { ok: true, segments: ['src', 'b.ts'] });
  assert.deepEqual(checkRelativePath('src\\c.ts'), { ok: true, segments: ['src', 'c.ts'] });
  assert.deepEqual(checkRelativePath('.'), { ok: true, segments: [] });
  for (const outside of [
    '../x',
    'src/../../x',
    '/etc/passwd',
    'C:\\x',
    '~/.ssh/id_rsa',
    '\\\\host\\x',
    'a\0b',
  ])
    assert.equal(checkRelativePath(outside).ok, false, outside);
});

test('secret files are refused unless the user allows them; templates and public keys are not secret', () => {
  for (const secret of [
    '.env',
    'config/.env.local',
    'prod.env',
    'certs/server.pem',
    'id_rsa',
    '.npmrc',
    'deploy/key.p12',
    '.aws/credentials',
  ])
    assert.equal(isSecretPath(secret, []), true, secret);
  for (const plain of [
    'src/a.ts',
    'environment.ts',
    '.env.example',
    'keys/id_ed25519.pub',
    'README.md',
  ])
    assert.equal(isSecretPath(plain, []), false, plain);
  assert.equal(isSecretPath('.env', ['.env']), false);
  assert.equal(
    isSecretPath('config/.env.test', ['.env.test']),
    false,
    'a bare name allows it in any folder',
  );
  assert.equal(isSecretPath('config/.env.prod', ['.env.test']), true);
});

test("git's folder is off limits; the workspace's VS Code settings always ask before an edit", () => {
  assert.equal(isGitInternal('.git/config'), true);
  assert.equal(isGitInternal('.GIT/hooks/pre-commit'), true);
  assert.equal(isGitInternal('.git'), true);
  assert.equal(isGitInternal('.gitignore'), false);
  assert.equal(isGitInternal('src/.git-notes'), false);
  assert.equal(editAlwaysAsks('.vscode/settings.json'), true);
  assert.equal(editAlwaysAsks('.vscode/tasks.json'), true);
  assert.equal(editAlwaysAsks('app.code-workspace'), true);
  assert.equal(editAlwaysAsks('src/vscode/settings.json'), false);
  assert.equal(editAlwaysAsks('src/a.ts'), false);
});

test('files.exclude patterns: the enabled ones, matched with VS Code glob semantics', () => {
  const patterns = enabledPatterns({
    '**/.git': true,
    '**/dist': true,
    off: false,
    '**/*.js': { when: '$(basename).ts' },
  });
  assert.deepEqual(patterns, ['**/.git', '**/dist']);
  assert.equal(matchesAny('dist', patterns), true);
  assert.equal(matchesAny('pkg/dist/x.js', patterns), true);
  assert.equal(matchesAny('src/a.ts', patterns), false);
  assert.deepEqual(enabledPatterns(undefined), []);
});

test('clip keeps the start and the end of a long text and says how much was left out', () => {
  assert.equal(clip('short', 10), 'short');
  const out = clip(`${'a'.repeat(100)}${'z'.repeat(100)}`, 50);
  assert.ok(out.startsWith('a'.repeat(20)) && out.endsWith('z'.repeat(30)));
  assert.match(out, /150 characters left out/);
});

test('tools: the definitions the model gets, one per tool, with JSON schemas', () => {
  const tools = toolDefinitions();
  assert.deepEqual(
    tools.map((t) => t.function.name),
    ['read_file', 'list_folder', 'search', 'edit_file', 'write_file', 'run_command', 'finish'],
  );
  assert.deepEqual(
    TOOL_NAMES,
    tools.map((t) => t.function.name),
  );
  for (const tool of tools) {
    assert.equal(tool.type, 'function');
    assert.ok(tool.function.description.length > 20, tool.function.name);
    assert.equal(tool.function.parameters.type, 'object');
    assert.equal('$schema' in tool.function.parameters, false);
  }
  const read = tools[0]!.function.parameters as {
    required: string[];
    properties: Record<string, unknown>;
  };
  assert.deepEqual(read.required, ['path']);
  assert.ok('start_line' in read.properties && 'end_line' in read.properties);
});

test('tools: what the model sends is validated: unknown tool, bad JSON, wrong arguments', () => {
  assert.match(
    (parseToolCall('rm_rf', '{}') as { error: string }).error,
    /there is no tool "rm_rf"/,
  );
  assert.match((parseToolCall('__proto__', '{}') as { error: string }).error, /there is no tool/);
  assert.match(
    (parseToolCall('read_file', '{"path":') as { error: string }).error,
    /not valid JSON/,
  );
  assert.match(
    (parseToolCall('read_file', '{"path":"a.ts","start_line":0}') as { error: string }).error,
    /start_line/,
  );
  assert.match(
    (parseToolCall('edit_file', '{"path":"a.ts","edits":[]}') as { error: string }).error,
    /edits/,
  );
  const ok = parseToolCall('read_file', '{"path":"src/a.ts","start_line":3,"end_line":9}');
  assert.deepEqual(ok, {
    ok: true,
    call: { name: 'read_file', args: { path: 'src/a.ts', start_line: 3, end_line: 9 } },
  });
  assert.equal(parseToolCall('list_folder', '').ok, true, 'no arguments at all is {}');
  if (ok.ok) assert.equal(describeCall(ok.call), 'Read src/a.ts (lines 3-9)');
  const run = parseToolCall('run_command', '{"command":"npm test"}');
  if (run.ok) assert.equal(describeCall(run.call), 'Run `npm test`');
});

test('the conversation is kept within its bound by eliding the oldest tool results, never the recent ones', () => {
  const big = 'x'.repeat(10_000);
  const messages = [
    { role: 'system' as const, content: 'rules' },
    { role: 'user' as const, content: 'task' },
    ...Array.from({ length: 6 }, (_, i) => [
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [
          {
            id: `c${i}`,
            type: 'function' as const,
            function: { name: 'read_file', arguments: '{}' },
          },
        ],
      },
      { role: 'tool' as const, tool_call_id: `c${i}`, content: big },
    ]).flat(),
  ];
  assert.deepEqual(fitConversation(messages, 1_000_000), messages, 'all of it while it fits');
  const fitted = fitConversation(messages, 35_000, 4);
  assert.ok(conversationChars(fitted) <= 35_000);
  assert.equal(fitted[3]!.content, ELIDED, 'the oldest result went first');
  assert.equal(fitted.at(-1)!.content, big, 'the latest result stays');
  assert.equal(
    fitted.length,
    messages.length,
    'every message stays (tool calls need their results)',
  );
  assert.equal(messages[3]!.content, big, 'the task keeps its own copy whole');
});

test('the system prompt names the workspace folders and the step budget', () => {
  const one = agentSystemPrompt({
    folders: ['app'],
    platform: 'linux',
    maxSteps: 7,
    codebaseIndex: false,
  });
  assert.match(one, /workspace folder is "app"/);
  assert.match(one, /at most 7 steps/);
  assert.doesNotMatch(one, /codebase index is on/);
  const two = agentSystemPrompt({
    folders: ['api', 'web'],
    platform: 'linux',
    maxSteps: 3,
    codebaseIndex: true,
  });
  assert.match(two, /several folders: api, web/);
  assert.match(two, /codebase index is on/);
});

test('webview: the agent messages are accepted well-formed only', () => {
  const good = [
    { type: 'send', text: 'fix the tests', model: 'service-ai-pro-4', mode: 'agent' },
    { type: 'setMode', mode: 'agent' },
    { type: 'setMode', mode: 'chat' },
    { type: 'setAutoApprove', value: true },
    { type: 'approve', id: 'a1b2-c3' },
    { type: 'approve', id: 'a1b2-c3', all: true },
    { type: 'reject', id: 'a1b2-c3' },
    { type: 'openDiff', id: 'call_1-2' },
    { type: 'undoTask', id: '0f0e-11' },
  ];
  for (const message of good) assert.deepEqual(parseFromWebview(message), message);
  for (const bad of [
    { type: 'send', text: 'x', mode: 'root' },
    { type: 'setMode', mode: 'yolo' },
    { type: 'setAutoApprove', value: 'yes' },
    { type: 'approve', id: '../../etc' },
    { type: 'approve' },
    { type: 'reject', id: 'a b' },
    { type: 'undoTask', id: 'x'.repeat(101) },
  ]) {
    const parsed = parseFromWebview(bad);
    if (bad.type === 'send')
      assert.deepEqual(parsed, { type: 'send', text: 'x' }, 'an unknown mode is a chat message');
    else assert.equal(parsed, undefined, JSON.stringify(bad));
  }
});

test('output buffer: the start and the end of a long output, the middle counted', () => {
  const buffer = new OutputBuffer(20);
  for (let i = 0; i < 10; i++) buffer.add(`${i}`.repeat(10));
  assert.equal(buffer.total, 100);
  assert.equal(buffer.text(), '0000000000\n… (80 characters of output left out) …\n9999999999');
  const small = new OutputBuffer(100);
  small.add('a\n');
  small.add('b\n');
  assert.equal(small.text(), 'a\nb\n');
});

const never = new AbortController().signal;

/** Whether a process runs (a zombie left for a PID 1 that does not reap counts as ended). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

test('a command runs in its folder through the shell; output and exit code come back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aihub-agent-cmd-'));
  try {
    const run = await runCommand('echo out; echo err 1>&2; pwd; exit 3', {
      cwd: dir,
      timeoutMs: 30_000,
      maxOutputChars: 10_000,
      signal: never,
    });
    assert.equal(run.exitCode, 3);
    assert.equal(run.timedOut, false);
    assert.match(run.output, /out\n/);
    assert.match(run.output, /err\n/);
    assert.ok(run.output.includes(dir), 'it ran in the folder');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a command past its time limit is ended with everything it started', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aihub-agent-cmd-'));
  try {
    // The shell starts a child that never ends (its pid written at once) and waits for it.
    const run = await runCommand('sleep 1000 & echo $! > pid; wait', {
      cwd: dir,
      timeoutMs: 2_000,
      maxOutputChars: 1_000,
      signal: never,
    });
    assert.equal(run.timedOut, true);
    assert.equal(run.exitCode, null);
    const pid = Number(readFileSync(join(dir, 'pid'), 'utf8'));
    assert.equal(running(pid), false, 'the child is gone too');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Stop (the task signal) ends a running command; a chatty one keeps only its bound', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aihub-agent-cmd-'));
  try {
    const controller = new AbortController();
    let seen = 0;
    const pending = runCommand(
      `node -e "for (;;) process.stdout.write('y'.repeat(1000) + '\\n')"`,
      {
        cwd: dir,
        timeoutMs: 60_000,
        maxOutputChars: 2_000,
        signal: controller.signal,
        // Stopped once plenty of output has come, whatever the speed.
        onOutput: (text) => {
          seen += text.length;
          if (seen > 20_000) controller.abort();
        },
      },
    );
    const run = await pending;
    assert.equal(run.stopped, true);
    assert.equal(run.timedOut, false);
    assert.ok(run.output.length < 2_200, `bounded: ${run.output.length}`);
    assert.match(run.output, /characters of output left out/);
    assert.ok(run.totalChars > 2_000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
