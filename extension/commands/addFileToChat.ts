import * as vscode from 'vscode';
import type { ChatViewProvider } from '../chat/chatViewProvider.js';
import type { ChatContext } from '../context/chatContext.js';
import { MAX_CONTEXT_FILES } from '../context/chatContext.js';
import { pickWorkspaceFile } from '../context/pickFile.js';

/**
 * Add File to Chat: from the explorer's or an editor tab's context menu (the clicked file, or every
 * selected one), from the command palette (a quick pick over the workspace files), or with a Uri
 * argument. Returns the files added.
 */
export function addFileToChat(view: ChatViewProvider, context: ChatContext) {
  return async (clicked?: unknown, selected?: unknown): Promise<vscode.Uri[]> => {
    let uris: vscode.Uri[] = [];
    if (
      Array.isArray(selected) &&
      selected.every((u) => u instanceof vscode.Uri) &&
      selected.length > 0
    )
      uris = selected as vscode.Uri[];
    else if (clicked instanceof vscode.Uri) uris = [clicked];
    else if (typeof clicked === 'string') uris = [vscode.Uri.file(clicked)];
    else {
      const picked = await pickWorkspaceFile('AIHub: Add File to Chat');
      if (picked) uris = [picked];
    }
    const added: vscode.Uri[] = [];
    for (const uri of uris) {
      if (!context.addFile(uri)) {
        void vscode.window.showWarningMessage(
          `AIHub: the chat carries at most ${MAX_CONTEXT_FILES} files; remove one first.`,
        );
        break;
      }
      added.push(uri);
    }
    if (added.length > 0) await view.reveal();
    return added;
  };
}
