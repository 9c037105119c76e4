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
