import * as vscode from 'vscode';
import {
  allToolSetups,
  isTool,
  TOOL_LABELS,
  TOOLS,
  toolSetup,
  type Tool,
} from '../providers/toolEnvironment.js';
import type { Services } from '../services.js';

export interface ToolEnvironmentArgs {
  /** One tool, or all four. */
  tool?: Tool | 'all';
  /** Copy without asking (scripts and tests). */
  copy?: boolean;
}

/**
 * Shows the lines that point Claude Code, Codex CLI, opencode or Gemini CLI at the local
 * gateway (its base URL and the local key), with Copy. Resolves with the lines shown.
 */
export function showToolEnvironment(services: Services) {
  return async (args?: ToolEnvironmentArgs): Promise<string | undefined> => {
    const settings = services.settings();
    if (!settings.usesLocalGateway || !settings.baseUrl.ok) {
      void vscode.window.showInformationMessage(
        'AIHub: "aihub.baseUrl" points at another gateway; these lines are for the local one. Use that gateway\'s own URL and a key made on it.',
      );
      return undefined;
    }
    const key = await services.keys.get();
    if (!key) {
      void vscode.window
        .showWarningMessage(
          'AIHub: the local gateway has no key yet; start it once.',
          'Start Local Gateway',
        )
        .then((picked) => {
          if (picked) void vscode.commands.executeCommand('aihub.startLocalGateway');
        });
      return undefined;
    }
    const tool =
      args?.tool ??
      (
        await vscode.window.showQuickPick(
          [
            ...TOOLS.map((id) => ({ label: TOOL_LABELS[id], id: id as Tool | 'all' })),
            { label: 'All four', id: 'all' as const },
          ],
          { title: 'AIHub: use the local gateway in…' },
        )
      )?.id;
    if (!tool || !(tool === 'all' || isTool(tool))) return undefined;
    const root = settings.baseUrl.root;
    const lines = tool === 'all' ? allToolSetups(root, key) : toolSetup(tool, root, key);
    const copy =
      args?.copy ??
      (await vscode.window.showInformationMessage(
        `AIHub: ${tool === 'all' ? 'your AI tools' : TOOL_LABELS[tool]} on the local gateway`,
        {
          modal: true,
          detail: `${lines}\n\nThe key is the local gateway's: spending shows in its wallet and history. It works while VS Code runs the gateway.`,
        },
        'Copy',
      )) === 'Copy';
    if (copy) {
      await vscode.env.clipboard.writeText(`${lines}\n`);
      vscode.window.setStatusBarMessage('AIHub: lines copied', 3_000);
    }
    return lines;
  };
}
