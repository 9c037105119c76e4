import * as vscode from 'vscode';
import type { ChatViewProvider } from '../chat/chatViewProvider.js';
import type { ChatSession } from '../chat/session.js';
import { explainPrompt } from '../prompts.js';

const MAX_SELECTION_CHARS = 20_000;

/** Sends the selection, with the file's language and name, to the chat; the reply streams there. */
export function explainSelection(view: ChatViewProvider, session: ChatSession) {
  return async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.selection.isEmpty) {
      void vscode.window.showWarningMessage('AIHub: select the code to explain first.');
      return undefined;
    }
    const { document, selection } = editor;
    const code = document.getText(selection);
    if (code.length > MAX_SELECTION_CHARS) {
      void vscode.window.showWarningMessage(
        `AIHub: the selection has ${code.length} characters; select at most ${MAX_SELECTION_CHARS}.`,
      );
      return undefined;
    }
    const name = document.isUntitled ? document.uri.path : vscode.workspace.asRelativePath(document.uri);
    const prompt = explainPrompt(code, document.languageId, name, selection.start.line + 1, selection.end.line + 1);
    await view.reveal();
    return session.ask(prompt);
  };
}
