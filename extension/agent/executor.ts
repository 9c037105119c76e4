// What each tool does in the workspace, with the safety rules: paths resolved under the workspace
// (workspace.ts), secret files refused, edits shown as a diff and applied on approval (or at once
// when the user allows the task's edits) after a checkpoint, commands run only when approved or
// allow-listed, and every result bounded before it reaches the model.
import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import * as vscode from 'vscode';
import type { ToolCallView } from '../chat/protocol.js';
import type { CodebaseSearch } from '../codebase/types.js';
import { toMicros } from '../spendMath.js';
import type { Approvals, ApprovalAnswer, ApprovalKind } from './approvals.js';
import type { TaskCheckpoint } from './checkpoint.js';
import { runCommand } from './command.js';
import type { DiffPresenter } from './diffs.js';
import {
  applyReplaceBlocks,
  normalizeText,
  restoreText,
  unifiedDiff,
  type NormalizedText,
} from './edits.js';
import { readWorkspaceText, writeWorkspaceFile } from './files.js';
import { clip, editAlwaysAsks, enabledPatterns, isAllowListed, matchesAny } from './policy.js';
import { searchWorkspace } from './search.js';
import type { AgentTerminal } from './terminal.js';
import type { ToolArgs, ToolCallArgs } from './tools.js';
import type { ResolvedPath, WorkspaceAccess } from './workspace.js';
import type { AgentSettings } from '../settings.js';

/** Lines and characters one read_file call returns at most. */
export const MAX_READ_LINES = 500;
export const MAX_READ_CHARS = 24_000;
/** Entries one list_folder call returns at most. */
const MAX_LIST_ENTRIES = 400;
/** Search hits per call. */
const MAX_SEARCH_HITS = 80;
const SEMANTIC_HITS = 5;
const SEMANTIC_CHUNK_CHARS = 600;
/** A command's output kept for the model (its start and end). */
export const MAX_COMMAND_OUTPUT_CHARS = 16_000;

/** What a tool gives back: the text for the model, and how the transcript shows the call. */
export interface ToolOutcome {
  status: ToolCallView['status'];
  /** For the model. */
  text: string;
  /** The semantic search's embedding cost, in micro-units. */
  costMicros?: number;
}

/** The running task as the tools need it. */
export interface TaskScope {
  readonly taskId: string;
  readonly signal: AbortSignal;
  readonly settings: AgentSettings;
  autoApproveEdits: boolean;
  /** The task's checkpoint, made before its first edit. */
  checkpoint(): TaskCheckpoint;
  /** Saves the checkpoint (after each write). */
  saveCheckpoint(): Promise<void>;
  /** Shows the call's new state in the transcript. */
  refresh(): void;
}

export interface ToolDeps {
  access: WorkspaceAccess;
  approvals: Approvals;
  diffs: DiffPresenter;
  terminal: AgentTerminal;
  codebase: CodebaseSearch | undefined;
}

export class StopTask extends Error {
  constructor() {
    super('stopped');
    this.name = 'StopTask';
  }
}

export class ToolExecutor {
  constructor(
    private readonly deps: ToolDeps,
    private readonly scope: TaskScope,
  ) {}

  async execute(
    call: Exclude<ToolCallArgs, { name: 'finish' }>,
    view: ToolCallView,
  ): Promise<ToolOutcome> {
    switch (call.name) {
      case 'read_file':
        return this.readFile(call.args);
      case 'list_folder':
        return this.listFolder(call.args);
      case 'search':
        return this.search(call.args);
      case 'edit_file':
        return this.change(view, call.args.path, (current) => {
          if (!current)
            return {
              ok: false,
              error: `${call.args.path} does not exist (use write_file to create it)`,
            };
          return applyReplaceBlocks(current.text, call.args.edits);
        });
      case 'write_file':
        return this.change(view, call.args.path, () => ({
          ok: true,
          text: call.args.content.replace(/\r\n/g, '\n'),
        }));
      case 'run_command':
        return this.run(call.args, view);
    }
  }

  private async resolve(
    path: string,
    purpose: 'read' | 'write' | 'list',
  ): Promise<ResolvedPath | ToolOutcome> {
    const resolved = await this.deps.access.resolve(path, purpose);
    return resolved.ok
      ? resolved.path
      : { status: 'refused', text: `Refused: ${resolved.reason}.` };
  }

  private async readFile(args: ToolArgs<'read_file'>): Promise<ToolOutcome> {
    const path = await this.resolve(args.path, 'read');
    if (!('uri' in path)) return path;
    const file = await readWorkspaceText(path.fsPath, path.display);
    if (!file.ok) return { status: 'failed', text: `Error: ${file.reason}.` };
    if (!file.exists)
      return {
        status: 'failed',
        text: `Error: ${path.display} does not exist (search for the file name).`,
      };
    const lines = normalizeText(file.text).text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const total = lines.length;
    const from = args.start_line ?? 1;
    if (total === 0) return { status: 'done', text: `${path.display} is empty.` };
    if (from > total)
      return {
        status: 'failed',
        text: `Error: ${path.display} has ${total} lines; start_line ${from} is past its end.`,
      };
    let to = Math.min(total, args.end_line ?? total, from + MAX_READ_LINES - 1);
    if (to < from) to = from;
    const out: string[] = [];
    let chars = 0;
    for (let n = from; n <= to; n++) {
      const line = `${n}| ${lines[n - 1]}`;
      if (chars + line.length > MAX_READ_CHARS && out.length > 0) {
        to = n - 1;
        break;
      }
      out.push(
        line.length > MAX_READ_CHARS ? `${line.slice(0, MAX_READ_CHARS)}… (line cut)` : line,
      );
      chars += line.length + 1;
    }
    const range =
      from === 1 && to === total ? `all ${total} lines` : `lines ${from}-${to} of ${total}`;
    const more = to < total ? `\n(more: read on with start_line ${to + 1})` : '';
    const unsaved = file.dirty ? ' (as open in the editor, with unsaved changes)' : '';
    return {
      status: 'done',
      text: `${path.display}, ${range}${unsaved}:\n${out.join('\n')}${more}`,
    };
  }

  private async listFolder(args: ToolArgs<'list_folder'>): Promise<ToolOutcome> {
    const path = await this.resolve(args.path ?? '', 'list');
    if (!('uri' in path)) return path;
    let entries: Dirent[];
    try {
      entries = await readdir(path.fsPath, { withFileTypes: true });
    } catch {
      return { status: 'failed', text: `Error: ${path.display} is not a folder of the workspace.` };
    }
    const excluded = enabledPatterns(
      vscode.workspace.getConfiguration('files', path.folder.uri).get('exclude'),
    );
    const shown = entries
      .map((e) => ({ entry: e, relative: path.relative ? `${path.relative}/${e.name}` : e.name }))
      .filter((e) => !matchesAny(e.relative, excluded))
      .sort(
        (a, b) =>
          Number(b.entry.isDirectory()) - Number(a.entry.isDirectory()) ||
          a.entry.name.localeCompare(b.entry.name),
      );
    const lines = shown.slice(0, MAX_LIST_ENTRIES).map(({ entry, relative }) => {
      const folder = entry.isDirectory() ? '/' : '';
      const link = entry.isSymbolicLink() ? ' (symbolic link)' : '';
      const secret =
        !folder && this.deps.access.isSecret(relative) ? ' (may hold secrets: not readable)' : '';
      return `${entry.name}${folder}${link}${secret}`;
    });
    if (shown.length > MAX_LIST_ENTRIES)
      lines.push(`… and ${shown.length - MAX_LIST_ENTRIES} more`);
    const hidden = entries.length - shown.length;
    return {
      status: 'done',
      text: `${path.display === '' ? '.' : path.display}/ (${shown.length} entries${hidden ? `, ${hidden} hidden by files.exclude` : ''}):\n${lines.join('\n') || '(empty)'}`,
    };
  }

  private async search(args: ToolArgs<'search'>): Promise<ToolOutcome> {
    const kind = args.kind ?? 'text';
    if (args.regex) {
      try {
        new RegExp(args.query);
      } catch (error) {
        return {
          status: 'failed',
          text: `Error: the regular expression is invalid: ${(error as Error).message}`,
        };
      }
    }
    const found = await searchWorkspace(
      this.deps.access,
      {
        query: args.query,
        kind,
        regex: args.regex ?? false,
        ...(args.include ? { include: args.include } : {}),
        maxResults: MAX_SEARCH_HITS,
      },
      this.scope.signal,
    );
    const lines =
      kind === 'files'
        ? found.hits.map((h) => h.path)
        : found.hits.map((h) => `${h.path}:${h.line}: ${h.text}`);
    const parts = [
      found.hits.length === 0
        ? `No ${kind === 'files' ? 'file names' : 'text'} matched "${args.query}".`
        : `${found.hits.length}${found.more ? '+' : ''} ${kind === 'files' ? 'files' : 'matching lines'} for "${args.query}"${found.more ? ' (more not shown; narrow the search)' : ''}:\n${lines.join('\n')}`,
    ];
    let costMicros: number | undefined;
    const codebase = this.deps.codebase;
    if (kind === 'text' && codebase?.ready) {
      try {
        const semantic = await codebase.search(args.query, {
          limit: SEMANTIC_HITS,
          signal: this.scope.signal,
        });
        if (semantic.meta) costMicros = toMicros(semantic.meta.cost);
        if (semantic.hits.length > 0)
          parts.push(
            `Closest code by meaning (codebase index):\n${semantic.hits
              .filter((h) => !this.deps.access.isSecret(h.path))
              .map(
                (h) =>
                  `--- ${h.path}:${h.startLine}-${h.endLine} (score ${h.score.toFixed(2)})\n${clip(h.text, SEMANTIC_CHUNK_CHARS)}`,
              )
              .join('\n')}`,
          );
      } catch (error) {
        if (this.scope.signal.aborted) throw error;
        parts.push(`(The codebase index could not be searched: ${(error as Error).message})`);
      }
    }
    return {
      status: 'done',
      text: parts.join('\n\n'),
      ...(costMicros !== undefined ? { costMicros } : {}),
    };
  }

  /** An edit or a new file: computed, shown as a diff, approved, checkpointed, written. */
  private async change(
    view: ToolCallView,
    rawPath: string,
    compute: (
      current: NormalizedText | undefined,
    ) => { ok: true; text: string } | { ok: false; error: string },
  ): Promise<ToolOutcome> {
    const path = await this.resolve(rawPath, 'write');
    if (!('uri' in path)) return path;
    const file = await readWorkspaceText(path.fsPath, path.display);
    if (!file.ok) return { status: 'failed', text: `Error: ${file.reason}.` };
    if (file.exists && file.dirty)
      return {
        status: 'failed',
        text: `Error: ${path.display} has unsaved changes in the editor; the user must save or revert them before it can be edited.`,
      };
    const current = file.exists ? normalizeText(file.text) : undefined;
    const next = compute(current);
    if (!next.ok) return { status: 'failed', text: `Error: ${next.error}. Nothing was changed.` };
    if (current && next.text === current.text)
      return {
        status: 'done',
        text: `${path.display} already has this content; nothing was changed.`,
      };
    const diff = unifiedDiff(path.display, current?.text, next.text);
    view.diff = diff.text;
    this.deps.diffs.remember(view.id, {
      display: path.display,
      before: current?.text,
      after: next.text,
    });
    const answer =
      this.scope.autoApproveEdits && !editAlwaysAsks(path.relative)
        ? 'approved'
        : await this.approve(view, 'edit', { path: path.display }, () =>
            this.deps.diffs.show(view.id, path.uri),
          );
    // Closed meanwhile: the workbench takes its time, the task need not wait for it.
    void this.deps.diffs.close(view.id).catch(() => undefined);
    if (answer === 'cancelled') throw new StopTask();
    if (answer === 'rejected')
      return {
        status: 'rejected',
        text: `The user rejected this change to ${path.display}; nothing was written. Do not make the same change again.`,
      };
    // The file may have changed while the diff was open.
    const again = await readWorkspaceText(path.fsPath, path.display);
    const unchanged =
      again.ok &&
      (again.exists
        ? current !== undefined && normalizeText(again.text).text === current.text && !again.dirty
        : current === undefined);
    if (!unchanged)
      return {
        status: 'failed',
        text: `Error: ${path.display} changed while the edit waited for approval; nothing was written. Read it again.`,
      };
    const checkpoint = this.scope.checkpoint();
    await checkpoint.before(path.fsPath, path.display);
    await this.scope.saveCheckpoint();
    const bytes = Buffer.from(restoreText(next.text, current ?? { eol: '\n', bom: false }), 'utf8');
    await writeWorkspaceFile(path.fsPath, bytes);
    checkpoint.wrote(path.fsPath, bytes);
    await this.scope.saveCheckpoint();
    return {
      status: 'done',
      text: `${current ? 'Edited' : 'Created'} ${path.display} (+${diff.added} −${diff.removed} lines).`,
    };
  }

  private async run(args: ToolArgs<'run_command'>, view: ToolCallView): Promise<ToolOutcome> {
    const folder = this.deps.access.folders()[0];
    if (!folder) return { status: 'failed', text: 'Error: no local workspace folder is open.' };
    const allowed = isAllowListed(args.command, this.scope.settings.commandAllowList);
    const answer = allowed
      ? 'approved'
      : await this.approve(view, 'command', { command: args.command });
    if (answer === 'cancelled') throw new StopTask();
    if (answer === 'rejected')
      return {
        status: 'rejected',
        text: `The user did not allow the command \`${args.command}\`; it did not run.`,
      };
    const limit = this.scope.settings.commandTimeoutSeconds;
    const seconds = Math.min(args.timeout_seconds ?? limit, limit);
    await this.deps.terminal.begin(args.command, folder.uri.fsPath);
    const ran = await runCommand(args.command, {
      cwd: folder.uri.fsPath,
      timeoutMs: seconds * 1_000,
      maxOutputChars: MAX_COMMAND_OUTPUT_CHARS,
      signal: this.scope.signal,
      onOutput: (text) => this.deps.terminal.write(text),
    });
    const ending = ran.timedOut
      ? `stopped after ${seconds} s (the time limit)`
      : ran.stopped
        ? 'stopped with the task'
        : ran.exitCode !== null
          ? `exit code ${ran.exitCode}`
          : `ended by ${ran.signal}`;
    this.deps.terminal.end(ending);
    if (ran.stopped) throw new StopTask();
    return {
      status: 'done',
      text: `$ ${args.command}\n(${ending}${allowed ? '; on the allow-list' : ''})\n${ran.output || '(no output)'}`,
    };
  }

  /** Asks the user and waits; the view shows the question meanwhile. */
  private async approve(
    view: ToolCallView,
    kind: ApprovalKind,
    about: { path?: string; command?: string },
    show?: () => Promise<void>,
  ): Promise<ApprovalAnswer> {
    // The diff is open before the question is asked.
    await show?.().catch(() => undefined);
    const { answer } = this.deps.approvals.ask(
      { taskId: this.scope.taskId, callId: view.id, kind, title: view.title, ...about },
      this.scope.signal,
      (id) => {
        view.status = 'awaiting';
        view.approval = { id, kind };
        this.scope.refresh();
      },
    );
    const result = await answer;
    delete view.approval;
    view.status = 'running';
    this.scope.refresh();
    return result;
  }
}
