import * as vscode from 'vscode';
import type { ChatViewProvider } from '../chat/chatViewProvider.js';
import type { ChatSession } from '../chat/session.js';

export function openChat(view: ChatViewProvider, session: ChatSession) {
  return async (): Promise<void> => {
    await view.reveal();
    session.focusInput();
  };
}

export function newChat(session: ChatSession) {
  return () => session.clear();
}

export function stopReply(session: ChatSession) {
  return () => session.stop();
}

/** Ask in Chat: a message (the argument, or typed in an input box) sent with the editor context, as from the chat view. */
export function askInChat(view: ChatViewProvider, session: ChatSession) {
  return async (textArgument?: unknown) => {
    const text =
      typeof textArgument === 'string'
        ? textArgument
        : await vscode.window.showInputBox({
            title: 'AIHub: Ask in Chat',
            prompt:
              "Your question; the active editor's selection or file and the added files go with it",
            ignoreFocusOut: true,
          });
    if (!text?.trim()) return undefined;
    await view.reveal();
    return session.ask(text, { withContext: true });
  };
}
