// The approvals an agent task waits for: an edit to apply, a command to run. The chat view's
// buttons, the diff's title bar, the keybindings and the commands aihub.approveStep /
// aihub.rejectStep all answer through answer(); a stopped task's questions are withdrawn.
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';

export type ApprovalKind = 'edit' | 'command';
export type ApprovalAnswer = 'approved' | 'rejected' | 'cancelled';

export interface ApprovalRequest {
  id: string;
  taskId: string;
  /** The tool call the approval is for. */
  callId: string;
  kind: ApprovalKind;
  /** "Edit src/a.ts", "Run `npm test`". */
  title: string;
  /** The file an edit changes (as displayed). */
  path?: string;
  /** The command line to run. */
  command?: string;
}

const CONTEXT_KEY = 'aihub.agentApprovalPending';

export class Approvals implements vscode.Disposable {
  private readonly pending = new Map<
    string,
    { request: ApprovalRequest; resolve: (answer: ApprovalAnswer) => void }
  >();
  private readonly asked = new vscode.EventEmitter<ApprovalRequest>();
  /** Fired when the agent asks (tests wait on it, then answer through the commands). */
  readonly onDidAsk = this.asked.event;
  private readonly settled = new vscode.EventEmitter<{
    request: ApprovalRequest;
    answer: ApprovalAnswer;
  }>();
  readonly onDidSettle = this.settled.event;

  list(): ApprovalRequest[] {
    return [...this.pending.values()].map((p) => p.request);
  }

  /**
   * Waits for the user's answer; 'cancelled' when `signal` aborts first. `shown(id)` runs before
   * anyone is told of the question (the transcript shows it by then).
   */
  ask(
    request: Omit<ApprovalRequest, 'id'>,
    signal: AbortSignal,
    shown?: (id: string) => void,
  ): {
    id: string;
    answer: Promise<ApprovalAnswer>;
  } {
    const full: ApprovalRequest = { ...request, id: randomUUID() };
    if (signal.aborted) return { id: full.id, answer: Promise.resolve('cancelled') };
    const answer = new Promise<ApprovalAnswer>((resolve) => {
      const onAbort = (): void => void this.settle(full.id, 'cancelled');
      signal.addEventListener('abort', onAbort, { once: true });
      this.pending.set(full.id, {
        request: full,
        resolve: (value) => {
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        },
      });
    });
    shown?.(full.id);
    void this.updateContext();
    this.asked.fire(full);
    return { id: full.id, answer };
  }

  /** Answers a pending approval (by id, or the oldest one); false when there is none. */
  answer(id: string | undefined, answer: 'approved' | 'rejected'): boolean {
    const target = id ?? this.pending.keys().next().value;
    return target !== undefined && this.settle(target, answer);
  }

  private settle(id: string, answer: ApprovalAnswer): boolean {
    const pending = this.pending.get(id);
    if (!pending) return false;
    this.pending.delete(id);
    pending.resolve(answer);
    void this.updateContext();
    this.settled.fire({ request: pending.request, answer });
    return true;
  }

  private async updateContext(): Promise<void> {
    await vscode.commands.executeCommand('setContext', CONTEXT_KEY, this.pending.size > 0);
  }

  dispose(): void {
    for (const id of [...this.pending.keys()]) this.settle(id, 'cancelled');
    this.asked.dispose();
    this.settled.dispose();
  }
}
