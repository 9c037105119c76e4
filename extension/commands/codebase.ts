// The codebase index's commands: Index Codebase (turn on, or sync and resume), Rebuild, Turn Off
// (and delete the index), and the status bar item's menu.
import * as vscode from 'vscode';
import type { CodebaseIndex } from '../codebase/index.js';
import { CodebaseStatusBar } from '../codebase/statusBar.js';

/** The index's commands and its status bar item. */
export function codebaseCommands(index: CodebaseIndex): vscode.Disposable[] {
  const commands: Record<string, () => unknown> = {
    'aihub.indexCodebase': indexCodebase(index),
    'aihub.rebuildCodebaseIndex': rebuildCodebaseIndex(index),
    'aihub.turnOffCodebaseIndex': turnOffCodebaseIndex(index),
    'aihub.codebaseIndexMenu': codebaseIndexMenu(index),
  };
  return [
    new CodebaseStatusBar(index),
    ...Object.entries(commands).map(([id, run]) => vscode.commands.registerCommand(id, run)),
  ];
}

export function indexCodebase(index: CodebaseIndex) {
  return () => index.enable();
}

export function rebuildCodebaseIndex(index: CodebaseIndex) {
  return () => index.rebuild();
}

export function turnOffCodebaseIndex(index: CodebaseIndex) {
  return async () => {
    await index.disable();
    void vscode.window.setStatusBarMessage('AIHub: codebase index turned off and deleted', 4000);
  };
}

export function codebaseIndexMenu(index: CodebaseIndex) {
  return async () => {
    const status = index.status();
    const items = [
      {
        label:
          status.state === 'paused' ? '$(debug-continue) Resume Indexing' : '$(sync) Index Now',
        detail: 'Brings the index up to date with the workspace (unchanged files cost nothing).',
        run: () => index.enable(),
      },
      {
        label: '$(refresh) Rebuild Codebase Index',
        detail: 'Embeds every file again.',
        run: () => index.rebuild(),
      },
      {
        label: '$(trash) Turn Off Codebase Index',
        detail: 'Stops indexing this workspace and deletes the index.',
        run: () => index.disable(),
      },
    ];
    const picked = await vscode.window.showQuickPick(items, {
      title: `AIHub codebase index: ${status.files} files, ${status.chunks} chunks${status.detail ? ` — ${status.detail}` : ''}`,
    });
    await picked?.run();
  };
}
