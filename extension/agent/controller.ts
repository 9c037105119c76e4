// Agent mode: the chat view's mode switch, the one task that may run, its approvals, Stop, and
// Undo Task. Untrusted workspaces (and virtual ones, which have no local files to work on) get no
// agent at all.
import * as vscode from 'vscode';
import type { ModeView, TaskResultEntry } from '../chat/protocol.js';
import type { ChatSession } from '../chat/session.js';
import type { CodebaseSearch } from '../codebase/types.js';
import type { Services } from '../services.js';
import { Approvals } from './approvals.js';
import { CheckpointStore, type UndoResult } from './checkpoint.js';
import { DiffPresenter } from './diffs.js';
import { AgentTask, type TaskResult } from './task.js';
import { AgentTerminal } from './terminal.js';
import { WorkspaceAccess } from './workspace.js';

export interface StartOptions {
  model?: string;
  autoApproveEdits?: boolean;
  /** Send the editor context with the task, as the chat view does with a message (default true). */
  withContext?: boolean;
}

export class AgentController implements vscode.Disposable {
  readonly approvals = new Approvals();
  private readonly diffs = new DiffPresenter();
  private readonly terminal = new AgentTerminal();
  private readonly checkpoints: CheckpointStore;
  private readonly access: WorkspaceAccess;
  private running: { task: AgentTask; done: Promise<TaskResult> } | undefined;
  private currentMode: 'chat' | 'agent' = 'chat';
  private autoApproveEdits = false;
  private readonly modeChanged = new vscode.EventEmitter<ModeView>();
  readonly onDidChangeMode = this.modeChanged.event;
  private readonly finished = new vscode.EventEmitter<TaskResult>();
  readonly onDidFinishTask = this.finished.event;
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly services: Services,
    private readonly session: ChatSession,
    private readonly codebase: CodebaseSearch | undefined,
  ) {
    this.checkpoints = new CheckpointStore(services.context.storageUri);
    this.access = new WorkspaceAccess(() => services.settings().agent.readableSecretFiles);
    this.disposables = [
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.postMode()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.postMode()),
    ];
  }

  /** Why agent mode cannot be used here, or undefined when it can. */
  unavailable(): string | undefined {
    if (!vscode.workspace.isTrusted)
      return 'Agent mode is off in an untrusted workspace: its tools read and change files and run commands. Trust the workspace to use it.';
    if (this.access.folders().length === 0)
      return 'Agent mode needs a folder on this machine open in the workspace.';
    return undefined;
  }

  mode(): ModeView {
    const reason = this.unavailable();
    return {
      mode: reason ? 'chat' : this.currentMode,
      autoApproveEdits: this.autoApproveEdits,
      ...(reason ? { agentUnavailable: reason } : {}),
    };
  }

  setMode(mode: 'chat' | 'agent'): void {
    this.currentMode = mode;
    this.postMode();
  }

  setAutoApprove(value: boolean): void {
    this.autoApproveEdits = value;
    if (this.running) this.running.task.autoApproveEdits = value;
    this.postMode();
  }

  private postMode(): void {
    this.modeChanged.fire(this.mode());
  }

  /** The running task, if any. */
  get task(): AgentTask | undefined {
    return this.running?.task;
  }

  /** Runs a task to its end; undefined when agent mode is unavailable or a task already runs. */
  async start(text: string, options: StartOptions = {}): Promise<TaskResult | undefined> {
    const reason = this.unavailable();
    if (reason) {
      void vscode.window.showWarningMessage(`AIHub: ${reason}`);
      return undefined;
    }
    if (this.running) {
      void vscode.window.showWarningMessage(
        'AIHub: a task is running; stop it (Stop in the chat view, or AIHub: Stop Task) before starting another.',
      );
      return undefined;
    }
    this.session.stop();
    const built = options.withContext === false ? undefined : await this.session.contextFor(text);
    const task = new AgentTask(
      {
        services: this.services,
        session: this.session,
        checkpoints: this.checkpoints,
        access: this.access,
        approvals: this.approvals,
        diffs: this.diffs,
        terminal: this.terminal,
        codebase: this.codebase,
      },
      {
        text,
        model: options.model ?? this.services.settings().model,
        autoApproveEdits: options.autoApproveEdits ?? this.autoApproveEdits,
        ...(built?.prompt ? { context: { prompt: built.prompt, labels: built.labels } } : {}),
      },
    );
    const done = task.run();
    this.running = { task, done };
    this.session.setWork(() => task.stop());
    try {
      const result = await done;
      this.services.log.info(
        `task ${result.taskId}: ${result.status} (${result.reason}) after ${result.steps} steps, cost ${result.cost} ${result.currency}`,
      );
      this.finished.fire(result);
      return result;
    } finally {
      this.running = undefined;
      this.session.setWork(undefined);
    }
  }

  stop(): void {
    this.running?.task.stop();
  }

  /** Approves a pending step (the oldest when no id); `allEdits` applies the task's later edits without asking. */
  approve(id?: string, allEdits = false): boolean {
    if (allEdits && this.running) this.running.task.autoApproveEdits = true;
    return this.approvals.answer(id, 'approved');
  }

  reject(id?: string): boolean {
    return this.approvals.answer(id, 'rejected');
  }

  /** Shows the diff of an agent edit, by its tool call id. */
  async openDiff(callId: string): Promise<boolean> {
    if (!this.diffs.has(callId)) {
      void vscode.window.showInformationMessage(
        'AIHub: that edit is no longer kept in memory (only the latest edits are).',
      );
      return false;
    }
    await this.diffs.show(callId, undefined);
    return true;
  }

  /**
   * Undo Task: restores every file the task (by default the latest one not undone) changed and
   * deletes the files it made. A running task is stopped first.
   */
  async undo(taskId?: string): Promise<UndoResult | undefined> {
    if (this.running && (!taskId || taskId === this.running.task.taskId)) {
      this.running.task.stop();
      await this.running.done.catch(() => undefined);
    }
    const checkpoint = await this.checkpoints.load(taskId);
    if (!checkpoint || checkpoint.files.length === 0) {
      void vscode.window.showInformationMessage(
        'AIHub: there is no task whose changes can be undone.',
      );
      return undefined;
    }
    if (checkpoint.undone) {
      void vscode.window.showInformationMessage('AIHub: this task was already undone.');
      return undefined;
    }
    const result = await this.checkpoints.undo(checkpoint, async (changed) => {
      const undo = 'Undo Anyway';
      const picked = await vscode.window.showWarningMessage(
        `AIHub: ${changed.join(', ')} changed after the task. Undo the task anyway? Those later changes would be lost.`,
        { modal: true },
        undo,
      );
      return picked === undo;
    });
    if (result.declined.length > 0) return result;
    for (const entry of this.session.transcript()) {
      if (entry.role === 'task' && entry.taskId === checkpoint.taskId) {
        (entry as TaskResultEntry).undone = true;
        this.session.showEntry(entry, this.session.conversation.id);
      }
    }
    await this.session.save();
    const parts = [
      result.restored.length ? `restored ${result.restored.join(', ')}` : '',
      result.deleted.length ? `deleted ${result.deleted.join(', ')}` : '',
    ].filter(Boolean);
    void vscode.window.setStatusBarMessage(`AIHub: task undone (${parts.join('; ')})`, 8_000);
    return result;
  }

  dispose(): void {
    this.running?.task.stop();
    this.approvals.dispose();
    this.diffs.dispose();
    this.terminal.dispose();
    this.modeChanged.dispose();
    this.finished.dispose();
    this.disposables.forEach((d) => d.dispose());
  }
}
