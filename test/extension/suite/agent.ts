// Agent mode in the real extension host against the real gateway, whose SCRIPTED_MODEL tier is
// answered by a scripted upstream that plays a model doing a task (its tool calls are scripted;
// what the extension sent back, the tools' results, is read from the upstream's record). The
// approvals are answered through the commands the chat view's buttons run (aihub.approveStep,
// aihub.rejectStep), after the test has seen what the user would see.
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import * as vscode from 'vscode';
import type { ApprovalRequest } from '../../../extension/agent/approvals.js';
import type { TaskResult } from '../../../extension/agent/task.js';
import type { UndoResult } from '../../../extension/agent/checkpoint.js';
import type { CodebaseStatus } from '../../../extension/codebase/index.js';
import type {
  AgentStepEntry,
  ChatEntry,
  TaskResultEntry,
  ToolCallView,
} from '../../../extension/chat/protocol.js';
import { toolCallsReply, type ScriptedUpstream } from '../../support/scripted-upstream.js';
import type { CodebaseTestContext } from './codebase.js';
import { SCRIPTED_MODEL } from './gateway.js';
import { diffTabs, report } from './realWork.js';

/** The suite's shared state, with the gateway (its usage records are asked). */
type AgentTestContext = CodebaseTestContext;

const A_TS =
  'export function formatTotal(cents: number): string {\n  return (cents / 100).toFixed(2);\n}\n';
const B_TS =
  "import { formatTotal } from './a.js';\n\nexport function receiptLine(label: string, cents: number): string {\n  return `${label}: ${formatTotal(cents)}`;\n}\n";
/** The fixture's `npm test`: checks that formatTotal takes a currency, counts its runs. */
const CHECK_MJS = `import { appendFileSync, readFileSync } from 'node:fs';
appendFileSync('test-runs.log', 'run\\n');
const a = readFileSync('src/a.ts', 'utf8');
const b = readFileSync('src/b.ts', 'utf8');
const checks = [
  ['formatTotal takes a currency', a.includes('currency: string')],
  ['receiptLine passes INR', b.includes("formatTotal(cents, 'INR')")],
];
for (const [name, ok] of checks) console.log(\`\${ok ? 'ok' : 'FAIL'} - \${name}\`);
const failed = checks.filter(([, ok]) => !ok).length;
console.log(failed ? \`AGENT-FIXTURE \${failed} checks failed\` : 'AGENT-FIXTURE 2 checks passed');
process.exit(failed ? 1 : 0);
`;
const FIXTURE: Record<string, string> = {
  'package.json': JSON.stringify(
    { name: 'agent-fixture', private: true, scripts: { test: 'node check.mjs' } },
    null,
    2,
  ),
  'check.mjs': CHECK_MJS,
  'src/a.ts': A_TS,
  'src/b.ts': B_TS,
  // Where VS Code's search does not look: ignored by .gitignore, hidden by files.exclude; and a secret.
  '.gitignore': 'dist/\n',
  'dist/bundle.js': 'function formatTotal(c) { return c; }\n',
  'hidden/old.ts': 'export const formatTotal = 1;\n',
  '.env': 'API_TOKEN=formatTotal-secret-7731\n',
};
const SECRET = 'formatTotal-secret-7731';

const A_AFTER =
  'export function formatTotal(cents: number, currency: string): string {\n  return `${currency} ${(cents / 100).toFixed(2)}`;\n}\n';
const B_AFTER = B_TS.replace('formatTotal(cents)}', "formatTotal(cents, 'INR')}");
const C_TS = "export const CURRENCY = 'INR';\n";

type Step = Extract<ChatEntry, { role: 'agent' }>;

const calls = toolCallsReply;

/** The tool results the upstream's request number `index` carried (what the model was told). */
function toolResults(upstream: ScriptedUpstream, index: number): string[] {
  const body = upstream.received[index]?.body as
    { messages?: Array<{ role: string; content: string }> } | undefined;
  return (body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => m.content);
}

const micros = (amount: number): number => Math.round(amount * 1_000_000);

export function registerAgentTests(t: AgentTestContext): void {
  let key = '';
  let outside = '';
  const file = (path: string): string => join(t.workspace(), path);
  const steps = (taskId: string): Step[] =>
    t
      .api()
      .chatTranscript()
      .filter((e): e is AgentStepEntry => e.role === 'agent' && e.taskId === taskId);
  const callsOf = (taskId: string): ToolCallView[] => steps(taskId).flatMap((s) => s.calls);
  const resultEntry = (taskId: string): TaskResultEntry | undefined =>
    t
      .api()
      .chatTranscript()
      .find((e): e is TaskResultEntry => e.role === 'task' && e.taskId === taskId);
  const balance = async (): Promise<{
    balance: number;
    usage: { requests: number; cost: number };
  }> => {
    const response = await fetch(`${t.gateway().apiBase}/balance`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(response.status, 200);
    return (await response.json()) as {
      balance: number;
      usage: { requests: number; cost: number };
    };
  };

  type Decide = (request: ApprovalRequest) => Promise<'approve' | 'reject' | 'leave'>;
  const noApprovals: Decide = async (request) =>
    assert.fail(`no approval was expected, but "${request.title}" was asked`);

  /**
   * Runs a task (AIHub: Start Task) to its end, answering its approvals in order with `decide`
   * through the commands the chat view's buttons run. A failure inside `decide` stops the task and
   * is thrown here.
   */
  async function runTask(
    text: string,
    decide: Decide = noApprovals,
  ): Promise<{ result: TaskResult; asked: ApprovalRequest[] }> {
    const asked: ApprovalRequest[] = [];
    const errors: unknown[] = [];
    let chain = Promise.resolve();
    const listener = t.api().onDidAskApproval((request) => {
      asked.push(request);
      chain = chain
        .then(async () => {
          const decision = await decide(request);
          const command = { approve: 'aihub.approveStep', reject: 'aihub.rejectStep' } as const;
          if (decision !== 'leave')
            assert.equal(await vscode.commands.executeCommand(command[decision], request.id), true);
        })
        .catch((error: unknown) => {
          errors.push(error);
          void vscode.commands.executeCommand('aihub.stopTask');
        });
    });
    try {
      const result = await vscode.commands.executeCommand<TaskResult>('aihub.startTask', text);
      await chain;
      if (errors.length) throw errors[0];
      assert.ok(result, 'the task ran');
      return { result, asked };
    } finally {
      listener.dispose();
    }
  }

  before(async () => {
    // An account of its own: the gateway's usage records of it are this suite's requests only.
    ({ key } = await t.gateway().account(50));
    assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', key), true);
    await t.configure({ model: SCRIPTED_MODEL, 'spendingCap.perDay': undefined });
    await vscode.workspace
      .getConfiguration('files')
      .update('exclude', { '**/hidden': true }, vscode.ConfigurationTarget.Workspace);
    for (const [path, text] of Object.entries(FIXTURE)) {
      mkdirSync(join(file(path), '..'), { recursive: true });
      writeFileSync(file(path), text);
    }
    outside = mkdtempSync(join(tmpdir(), 'aihub-outside-'));
    writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE-SECRET-4242\n');
    symlinkSync(outside, file('linked'));
    assert.equal(t.api().chatMode().agentUnavailable, undefined, 'agent mode is available here');
  });

  after(async () => {
    await vscode.workspace
      .getConfiguration('files')
      .update('exclude', undefined, vscode.ConfigurationTarget.Workspace);
    const config = vscode.workspace.getConfiguration('aihub');
    for (const setting of ['agent.commandAllowList', 'agent.readableSecretFiles'])
      await config.update(setting, undefined, vscode.ConfigurationTarget.Global);
    for (const path of [
      ...Object.keys(FIXTURE),
      'src',
      'dist',
      'hidden',
      'linked',
      'test-runs.log',
      'pid',
    ])
      rmSync(file(path), { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it("a task reads, searches, edits two files and makes one (each approved as a diff), runs npm test, and finishes; its cost is the gateway's", async function () {
    this.timeout(120_000);
    const api = t.api();
    const upstream = t.upstream();
    const first = upstream.received.length;
    const usageBefore = (await balance()).usage;
    upstream.script(
      calls('I will read a.ts first.', ['read_file', { path: 'src/a.ts' }]),
      calls('', ['search', { query: 'formatTotal' }]),
      calls(
        'formatTotal gets a currency; b.ts passes INR; c.ts holds the constant.',
        [
          'edit_file',
          {
            path: 'src/a.ts',
            edits: [
              {
                search:
                  'export function formatTotal(cents: number): string {\n  return (cents / 100).toFixed(2);',
                replace:
                  'export function formatTotal(cents: number, currency: string): string {\n  return `${currency} ${(cents / 100).toFixed(2)}`;',
              },
            ],
          },
        ],
        [
          'edit_file',
          {
            path: 'src/b.ts',
            edits: [{ search: 'formatTotal(cents)}', replace: "formatTotal(cents, 'INR')}" }],
          },
        ],
        ['write_file', { path: 'src/c.ts', content: C_TS }],
      ),
      calls('', ['run_command', { command: 'npm test' }]),
      calls('', [
        'finish',
        { summary: 'formatTotal now takes a currency; `npm test` passes (2 checks).' },
      ]),
    );
    const seen: string[] = [];
    const decide: Decide = async (request) => {
      if (request.kind === 'edit') {
        // What the user sees before deciding: the diff open, the file on disk untouched, the question in the transcript.
        await t.until('the diff open', () =>
          diffTabs('aihub-agent').length === 1 ? true : undefined,
        );
        const path = request.path!;
        if (path !== 'src/c.ts') assert.equal(readFileSync(file(path), 'utf8'), FIXTURE[path]);
        else assert.equal(existsSync(file(path)), false);
        const call = callsOf(api.agentTask()!.taskId).find((c) => c.approval?.id === request.id);
        assert.ok(
          call?.status === 'awaiting' && call.diff?.includes('+++ b/' + path),
          JSON.stringify(call),
        );
        seen.push(`diff ${path}`);
      }
      return 'approve';
    };
    const { result, asked } = await runTask(
      'Make formatTotal take a currency and use INR in receipts; run the tests.',
      decide,
    );
    assert.equal(result.status, 'done', result.text);
    assert.equal(result.reason, 'finished');
    assert.equal(result.steps, 5);
    assert.equal(result.text, 'formatTotal now takes a currency; `npm test` passes (2 checks).');

    // The approvals asked, in order, and the diffs seen.
    assert.deepEqual(
      asked.map((a) => `${a.kind} ${a.path ?? a.command}`),
      ['edit src/a.ts', 'edit src/b.ts', 'edit src/c.ts', 'command npm test'],
    );
    assert.deepEqual(seen, ['diff src/a.ts', 'diff src/b.ts', 'diff src/c.ts']);
    await t.until('each diff closed once decided', () =>
      diffTabs('aihub-agent').length === 0 ? true : undefined,
    );
    assert.deepEqual(api.pendingApprovals(), []);

    // The files on disk.
    assert.equal(readFileSync(file('src/a.ts'), 'utf8'), A_AFTER);
    assert.equal(readFileSync(file('src/b.ts'), 'utf8'), B_AFTER);
    assert.equal(readFileSync(file('src/c.ts'), 'utf8'), C_TS);
    assert.deepEqual(result.changed, ['src/a.ts', 'src/b.ts']);
    assert.deepEqual(result.created, ['src/c.ts']);

    // What went to the model: the tools, then each result.
    const requests = upstream.received.slice(first);
    assert.equal(requests.length, 5);
    const body = requests[0]!.body as {
      tools: Array<{ function: { name: string } }>;
      stream: boolean;
    };
    assert.deepEqual(
      body.tools.map((tool) => tool.function.name),
      ['read_file', 'list_folder', 'search', 'edit_file', 'write_file', 'run_command', 'finish'],
    );
    assert.equal(body.stream, true);
    const [read] = toolResults(upstream, first + 1);
    assert.ok(read?.includes('1| export function formatTotal(cents: number): string {'), read);
    const search = toolResults(upstream, first + 2).at(-1)!;
    assert.match(search, /src\/a\.ts:1: export function formatTotal/);
    assert.match(search, /src\/b\.ts:4: .*formatTotal\(cents\)/);
    assert.doesNotMatch(search, /dist\/bundle\.js/, '.gitignore holds');
    assert.doesNotMatch(search, /hidden\/old\.ts/, 'files.exclude holds');
    assert.ok(
      !search.includes(SECRET) && !search.includes('.env'),
      'the secret file is not searched',
    );
    const edits = toolResults(upstream, first + 3).slice(-3);
    assert.deepEqual(edits, [
      'Edited src/a.ts (+2 −2 lines).',
      'Edited src/b.ts (+1 −1 lines).',
      'Created src/c.ts (+1 −0 lines).',
    ]);
    const output = toolResults(upstream, first + 4).at(-1)!;
    assert.match(output, /^\$ npm test\n\(exit code 0\)/);
    assert.match(
      output,
      /AGENT-FIXTURE 2 checks passed/,
      "the command's output came back to the model",
    );

    // The transcript: every step with its tool, arguments, result and cost; the command's output.
    const taskSteps = steps(result.taskId);
    assert.equal(taskSteps.length, 5);
    assert.equal(
      taskSteps[0]!.text,
      'I will read a.ts first.',
      "the model's words streamed into the step",
    );
    const run = callsOf(result.taskId).find((c) => c.tool === 'run_command')!;
    assert.equal(run.title, 'Run `npm test`');
    assert.equal(run.status, 'done');
    assert.match(run.result!, /AGENT-FIXTURE 2 checks passed/);
    assert.equal(JSON.parse(run.args).command, 'npm test');
    for (const step of taskSteps)
      assert.ok(step.meta && step.meta.cost > 0, 'each step shows its cost');
    const entry = resultEntry(result.taskId)!;
    assert.equal(entry.status, 'done');
    assert.equal(entry.cost, result.cost);

    // The total cost is the gateway's: the steps' x_aihub costs add up to its usage records.
    const stepsTotal = taskSteps.reduce((sum, s) => sum + micros(s.meta!.cost), 0);
    assert.equal(micros(result.cost), stepsTotal);
    const usageAfter = (await balance()).usage;
    assert.equal(usageAfter.requests - usageBefore.requests, 5, 'one billed request per step');
    assert.equal(micros(usageAfter.cost) - micros(usageBefore.cost), micros(result.cost));
    report(`agent task: 5 steps, cost ${result.cost} INR (the gateway's usage records agree)`);
  });

  it('Undo Task restores both edited files and deletes the file the task made', async () => {
    const undone = await vscode.commands.executeCommand<UndoResult>('aihub.undoTask');
    assert.ok(undone);
    assert.deepEqual(undone.restored, ['src/a.ts', 'src/b.ts']);
    assert.deepEqual(undone.deleted, ['src/c.ts']);
    assert.equal(readFileSync(file('src/a.ts'), 'utf8'), A_TS);
    assert.equal(readFileSync(file('src/b.ts'), 'utf8'), B_TS);
    assert.equal(existsSync(file('src/c.ts')), false);
    assert.equal(existsSync(file('src')), true, 'the folder existed before the task, so it stays');
    const entry = resultEntry(undone.taskId)!;
    assert.equal(entry.undone, true, 'the transcript says the task was undone');
    assert.equal(
      await vscode.commands.executeCommand('aihub.undoTask'),
      undefined,
      'nothing left to undo',
    );
  });

  it('paths outside the workspace (.., absolute, through a symbolic link) and secret files are refused; a rejected edit is not written', async function () {
    this.timeout(120_000);
    const upstream = t.upstream();
    const first = upstream.received.length;
    const name = basename(outside);
    upstream.script(
      calls(
        '',
        ['read_file', { path: `../${name}/secret.txt` }],
        ['read_file', { path: join(outside, 'secret.txt') }],
        ['read_file', { path: 'linked/secret.txt' }],
        ['write_file', { path: 'linked/planted.txt', content: 'x' }],
        ['list_folder', { path: '..' }],
        ['read_file', { path: '.env' }],
        ['read_file', { path: '.git/config' }],
        [
          'edit_file',
          { path: 'src/a.ts', edits: [{ search: 'cents / 100', replace: 'cents / 1000' }] },
        ],
      ),
      calls('', ['finish', { summary: 'Could not reach those files.' }]),
    );
    const { result, asked } = await runTask('Read the secrets.', async () => 'reject');
    assert.equal(result.status, 'done', result.text);
    const views = callsOf(result.taskId);
    assert.deepEqual(
      views.map((c) => c.status),
      [...Array(7).fill('refused'), 'rejected', 'done'],
    );
    assert.deepEqual(
      asked.map((a) => `${a.kind} ${a.path}`),
      ['edit src/a.ts'],
      'only the edit asked',
    );
    const told = toolResults(upstream, first + 1);
    assert.equal(told.length, 8);
    for (const refusal of told.slice(0, 5))
      assert.match(refusal, /^Refused: .*outside the workspace/);
    assert.match(told[2]!, /symbolic link/);
    assert.match(told[5]!, /^Refused: \.env may hold secrets/);
    assert.match(told[6]!, /^Refused: \.git\/config is inside git's own folder/);
    assert.match(told[7]!, /rejected this change to src\/a\.ts; nothing was written/);
    const everything = JSON.stringify(upstream.received.slice(first).map((r) => r.body));
    assert.ok(
      !everything.includes('OUTSIDE-SECRET-4242'),
      'no byte of the outside file reached the model',
    );
    assert.ok(!everything.includes(SECRET), 'nor the secret');
    assert.equal(existsSync(join(outside, 'planted.txt')), false, 'nothing was written outside');
    assert.equal(readFileSync(file('src/a.ts'), 'utf8'), A_TS, 'the rejected edit was not written');
    assert.deepEqual(result.changed, []);

    // The user allows the file in their settings: then it is read.
    const config = vscode.workspace.getConfiguration('aihub');
    await config.update('agent.readableSecretFiles', ['.env'], vscode.ConfigurationTarget.Global);
    try {
      upstream.script(
        calls('', ['read_file', { path: '.env' }]),
        calls('', ['finish', { summary: 'Read it.' }]),
      );
      const again = (await runTask('Read .env.')).result;
      assert.equal(again.status, 'done');
      assert.match(toolResults(upstream, upstream.received.length - 1).at(-1)!, new RegExp(SECRET));
    } finally {
      await config.update(
        'agent.readableSecretFiles',
        undefined,
        vscode.ConfigurationTarget.Global,
      );
    }
  });

  it("Apply All Edits applies this edit and the task's later ones without asking (not the workspace's VS Code settings); Undo Task reverts them", async function () {
    this.timeout(120_000);
    t.upstream().script(
      calls(
        '',
        [
          'edit_file',
          { path: 'src/a.ts', edits: [{ search: 'cents / 100', replace: 'cents / 100.0' }] },
        ],
        ['write_file', { path: 'src/d.ts', content: 'export {};\n' }],
        ['write_file', { path: '.vscode/tasks.json', content: '{"tasks": []}\n' }],
      ),
      calls('', ['finish', { summary: 'Both done.' }]),
    );
    const { result, asked } = await runTask('Two edits.', async (request) => {
      if (request.path === '.vscode/tasks.json') return 'reject';
      assert.equal(await vscode.commands.executeCommand('aihub.approveAllEdits', request.id), true);
      return 'leave';
    });
    assert.equal(result.status, 'done', result.text);
    assert.deepEqual(
      asked.map((a) => a.path),
      ['src/a.ts', '.vscode/tasks.json'],
      'asked once, and for the VS Code settings folder again',
    );
    assert.equal(existsSync(file('.vscode/tasks.json')), false);
    assert.match(readFileSync(file('src/a.ts'), 'utf8'), /cents \/ 100\.0/);
    assert.equal(readFileSync(file('src/d.ts'), 'utf8'), 'export {};\n');
    const undone = await vscode.commands.executeCommand<UndoResult>(
      'aihub.undoTask',
      result.taskId,
    );
    assert.deepEqual([undone?.restored, undone?.deleted], [['src/a.ts'], ['src/d.ts']]);
    assert.equal(readFileSync(file('src/a.ts'), 'utf8'), A_TS);
  });

  it('an error the task cannot recover from (402: the wallet is empty) ends it with Top Up', async () => {
    const broke = await t.gateway().account(0);
    assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', broke.key), true);
    try {
      const result = (await runTask('Anything.')).result;
      assert.equal(result.status, 'error');
      assert.equal(result.reason, 'error');
      assert.equal(result.steps, 1);
      assert.match(result.text, /balance is too low/);
      assert.deepEqual(resultEntry(result.taskId)?.actions, ['topUp']);
      assert.equal(steps(result.taskId)[0]!.status, 'error');
    } finally {
      assert.equal(await vscode.commands.executeCommand('aihub.setApiKey', key), true);
    }
  });

  it('the task stops at the step budget', async function () {
    this.timeout(120_000);
    const upstream = t.upstream();
    await t.configure({ 'agent.maxSteps': 2 });
    const first = upstream.received.length;
    upstream.setDefault(calls('Looking around.', ['list_folder', { path: 'src' }]));
    try {
      const result = (await runTask('Look forever.')).result;
      assert.equal(result.status, 'stopped');
      assert.equal(result.reason, 'steps');
      assert.equal(result.steps, 2);
      assert.match(result.text, /step budget: 2 steps/);
      assert.equal(upstream.received.length - first, 2, 'no third request');
      assert.match(toolResults(upstream, first + 1).at(-1)!, /a\.ts\nb\.ts/);
    } finally {
      upstream.setDefault({ kind: 'ok' });
      await t.configure({ 'agent.maxSteps': undefined });
    }
  });

  it('Stop while a command waits for approval: it never runs, the task ends stopped', async function () {
    this.timeout(120_000);
    const api = t.api();
    const upstream = t.upstream();
    const runs = (): number =>
      existsSync(file('test-runs.log')) ? readFileSync(file('test-runs.log'), 'utf8').length : 0;
    const before = runs();
    // A repository's settings try to pre-approve the command: they are ignored (user settings only).
    const settingsFile = file('.vscode/settings.json');
    const original = readFileSync(settingsFile, 'utf8');
    writeFileSync(
      settingsFile,
      JSON.stringify({
        ...JSON.parse(original),
        'aihub.agent.commandAllowList': ['npm test'],
        'aihub.agent.maxSteps': 3,
      }),
    );
    // Read in the same pass as the allow-list would be.
    await t.until('the workspace settings read', () =>
      vscode.workspace.getConfiguration('aihub').get('agent.maxSteps') === 3 ? true : undefined,
    );
    upstream.script(calls('', ['run_command', { command: 'npm test' }]));
    let outcome: Awaited<ReturnType<typeof runTask>>;
    try {
      outcome = await runTask('Run the tests.', async () => {
        assert.equal(await vscode.commands.executeCommand('aihub.stopTask'), undefined);
        return 'leave';
      });
    } finally {
      writeFileSync(settingsFile, original);
      await t.until('the workspace settings back', () =>
        vscode.workspace.getConfiguration('aihub').get('agent.maxSteps') === 25 ? true : undefined,
      );
    }
    const { result, asked } = outcome;
    assert.equal(asked.length, 1, 'asked, although the workspace allow-lists it');
    assert.equal(result.status, 'stopped');
    assert.equal(result.reason, 'stopped');
    assert.equal(runs(), before, 'the command did not run');
    assert.deepEqual(api.pendingApprovals(), [], 'the question was withdrawn');
    assert.equal(callsOf(result.taskId)[0]!.status, 'stopped');
    assert.equal(api.agentTask(), undefined);
  });

  it('Stop while the model answers: the request is aborted all the way to the upstream', async function () {
    this.timeout(120_000);
    const upstream = t.upstream();
    const first = upstream.received.length;
    upstream.script(calls('', ['list_folder', {}]), { kind: 'hang' });
    const pending = runTask('List, then think.').then((r) => r.result);
    await t.until('the second step at the upstream', () =>
      upstream.received.length === first + 2 ? true : undefined,
    );
    await vscode.commands.executeCommand('aihub.stopTask');
    const result = (await pending)!;
    assert.equal(result.reason, 'stopped');
    assert.equal(result.steps, 2);
    assert.equal(steps(result.taskId)[1]!.status, 'stopped');
    await t.until('the upstream request aborted', () =>
      upstream.received[first + 1]!.aborted ? true : undefined,
    );
  });

  it('Stop while an allow-listed command runs (no approval asked): the command and its children end', async function () {
    this.timeout(120_000);
    const api = t.api();
    const upstream = t.upstream();
    writeFileSync(
      file('slow.mjs'),
      "import { writeFileSync } from 'node:fs';\nwriteFileSync('pid', String(process.pid));\nsetInterval(() => {}, 1000);\n",
    );
    // The allow-list is read from the user's settings only.
    await vscode.workspace
      .getConfiguration('aihub')
      .update('agent.commandAllowList', ['node slow.mjs'], vscode.ConfigurationTarget.Global);
    rmSync(file('pid'), { force: true });
    upstream.script(calls('', ['run_command', { command: 'node slow.mjs' }]));
    let asked = 0;
    const listener = api.onDidAskApproval(() => asked++);
    try {
      const pending = runTask('Run slow.').then((r) => r.result);
      const pid = await t.until('the command running', () =>
        existsSync(file('pid')) && readFileSync(file('pid'), 'utf8')
          ? Number(readFileSync(file('pid'), 'utf8'))
          : undefined,
      );
      await vscode.commands.executeCommand('aihub.stopTask');
      const result = (await pending)!;
      assert.equal(result.reason, 'stopped');
      assert.equal(asked, 0, 'an allow-listed command runs without asking');
      assert.equal(callsOf(result.taskId)[0]!.status, 'stopped');
      await t.until('the command ended', () => {
        try {
          process.kill(pid, 0);
        } catch {
          return true;
        }
        return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8')) ? true : undefined;
      });
    } finally {
      listener.dispose();
      rmSync(file('slow.mjs'), { force: true });
    }
  });

  it("with the codebase index on, the search tool adds the closest chunks by meaning; their embedding is in the task's cost", async function () {
    this.timeout(120_000);
    const api = t.api();
    const upstream = t.upstream();
    const status = await vscode.commands.executeCommand<CodebaseStatus>('aihub.indexCodebase');
    assert.equal(status.state, 'ready', JSON.stringify(status));
    try {
      await t.until('the index settled', () =>
        api.codebase().state === 'ready' && api.codebase().pending === 0 ? true : undefined,
      );
      const usageBefore = (await balance()).usage;
      upstream.script(
        calls('', ['search', { query: 'formatTotal' }]),
        calls('', ['finish', { summary: 'Found it.' }]),
      );
      const result = (await runTask('Where are totals formatted?')).result;
      assert.equal(result.status, 'done', result.text);
      const search = toolResults(upstream, upstream.received.length - 1).at(-1)!;
      assert.match(search, /src\/a\.ts:1: export function formatTotal/, 'the text hits');
      assert.match(
        search,
        /Closest code by meaning \(codebase index\):\n--- src\/[ab]\.ts:1-\d+ \(score /,
        search,
      );
      assert.ok(!search.includes(SECRET), 'no secret through the index either');
      const call = callsOf(result.taskId).find((c) => c.tool === 'search')!;
      assert.ok(call.cost && call.cost > 0, 'the query embedding shows its cost on the step');
      const usageAfter = (await balance()).usage;
      assert.equal(usageAfter.requests - usageBefore.requests, 3, 'two steps and one embedding');
      assert.equal(micros(usageAfter.cost) - micros(usageBefore.cost), micros(result.cost));
    } finally {
      await vscode.commands.executeCommand('aihub.turnOffCodebaseIndex');
    }
  });

  it('the task stops before a step that could pass the daily spending cap; nothing is sent', async () => {
    const upstream = t.upstream();
    await t.configure({ 'spendingCap.perDay': 0.000001 });
    const first = upstream.received.length;
    try {
      const result = (await runTask('Anything.')).result;
      assert.equal(result.reason, 'cap');
      assert.equal(result.steps, 0);
      assert.match(result.text, /daily spending cap/);
      assert.equal(upstream.received.length, first);
    } finally {
      await t.configure({ 'spendingCap.perDay': undefined });
    }
  });
}
