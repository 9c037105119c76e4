// The agent's commands: Start Task (also the chat view's Agent mode), Stop Task, Undo Task, and the
// answers to a step's approval (the chat view's buttons and the diff's title bar run these too).
import * as vscode from 'vscode';
import type { AgentController } from '../agent/controller.js';
import type { ChatViewProvider } from '../chat/chatViewProvider.js';

/** The agent's commands by id. */
export function agentCommands(
  view: ChatViewProvider,
  agent: AgentController,
): Record<string, (...args: never[]) => unknown> {
  return {
    'aihub.startTask': startTask(view, agent),
    'aihub.stopTask': () => agent.stop(),
    'aihub.undoTask': (taskId?: unknown) =>
      agent.undo(typeof taskId === 'string' ? taskId : undefined),
    'aihub.approveStep': (id?: unknown) => agent.approve(idOf(id)),
    'aihub.approveAllEdits': (id?: unknown) => agent.approve(idOf(id), true),
    'aihub.rejectStep': (id?: unknown) => agent.reject(idOf(id)),
  };
}

function idOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function startTask(view: ChatViewProvider, agent: AgentController) {
  return async (textArgument?: unknown, options?: unknown) => {
    const reason = agent.unavailable();
    if (reason) {
      void vscode.window.showWarningMessage(`AIHub: ${reason}`);
      return undefined;
    }
    const text =
      typeof textArgument === 'string'
        ? textArgument
        : await vscode.window.showInputBox({
            title: 'AIHub: Start Task',
            prompt:
              'What should the agent do? It reads, edits (you review each change) and runs commands (you approve each one).',
            ignoreFocusOut: true,
          });
    if (!text?.trim()) return undefined;
    const given = (typeof options === 'object' && options !== null ? options : {}) as {
      model?: unknown;
      autoApproveEdits?: unknown;
    };
    agent.setMode('agent');
    await view.reveal();
    return agent.start(text.trim(), {
      ...(typeof given.model === 'string' ? { model: given.model } : {}),
      ...(typeof given.autoApproveEdits === 'boolean'
        ? { autoApproveEdits: given.autoApproveEdits }
        : {}),
    });
  };
}
