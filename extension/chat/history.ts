// Conversations kept per workspace (VS Code's workspaceState): an index of summaries plus one
// entry list per conversation, so opening the history reads only the index and opening a
// conversation reads only that one. Bounded: the oldest conversations beyond the limit are dropped.
import { randomUUID } from 'node:crypto';
import type * as vscode from 'vscode';
import type { ChatEntry, ConversationSummary } from './protocol.js';

const INDEX_KEY = 'aihub.chat.conversations';
const CONVERSATION_KEY = (id: string): string => `aihub.chat.conversation.${id}`;
/** The single transcript of earlier versions, moved into the first conversation. */
const LEGACY_KEY = 'aihub.chat.history';
export const MAX_CONVERSATIONS = 100;
export const MAX_TITLE_CHARS = 80;

export class ConversationStore {
  private index: ConversationSummary[];

  constructor(private readonly memento: vscode.Memento) {
    const stored = memento.get<unknown>(INDEX_KEY, []);
    this.index = Array.isArray(stored) ? stored.filter(isSummary) : [];
  }

  /** Newest first. */
  list(): ConversationSummary[] {
    return [...this.index].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  get(id: string): ConversationSummary | undefined {
    return this.index.find((c) => c.id === id);
  }

  entries(id: string): ChatEntry[] {
    if (!this.get(id)) return [];
    const stored = this.memento.get<unknown>(CONVERSATION_KEY(id), []);
    return Array.isArray(stored) ? (stored as ChatEntry[]) : [];
  }

  newId(): string {
    return randomUUID();
  }

  /** Entries of the legacy single transcript, once (they are then saved as a conversation). */
  async takeLegacy(): Promise<ChatEntry[]> {
    const legacy = this.memento.get<unknown>(LEGACY_KEY);
    if (legacy === undefined) return [];
    await this.memento.update(LEGACY_KEY, undefined);
    return Array.isArray(legacy) ? (legacy as ChatEntry[]) : [];
  }

  /** Saves a conversation; an empty one is not kept. */
  async save(
    id: string,
    entries: ChatEntry[],
    title: string | undefined,
  ): Promise<ConversationSummary | undefined> {
    if (entries.length === 0) return this.get(id);
    const existing = this.get(id);
    const summary: ConversationSummary = {
      id,
      title: existing?.title ?? title ?? titleFor(entries),
      updatedAt: Date.now(),
      messages: entries.length,
    };
    this.index = [summary, ...this.index.filter((c) => c.id !== id)];
    const dropped = this.list().slice(MAX_CONVERSATIONS);
    this.index = this.index.filter((c) => !dropped.includes(c));
    await this.memento.update(CONVERSATION_KEY(id), entries);
    for (const gone of dropped) await this.memento.update(CONVERSATION_KEY(gone.id), undefined);
    await this.memento.update(INDEX_KEY, this.index);
    return summary;
  }

  async rename(id: string, title: string): Promise<boolean> {
    const existing = this.get(id);
    const clean = title.trim().slice(0, MAX_TITLE_CHARS);
    if (!existing || !clean) return false;
    this.index = this.index.map((c) => (c.id === id ? { ...c, title: clean } : c));
    await this.memento.update(INDEX_KEY, this.index);
    return true;
  }

  async delete(id: string): Promise<boolean> {
    if (!this.get(id)) return false;
    this.index = this.index.filter((c) => c.id !== id);
    await this.memento.update(CONVERSATION_KEY(id), undefined);
    await this.memento.update(INDEX_KEY, this.index);
    return true;
  }
}

/** The first user message, on one line and shortened. */
export function titleFor(entries: readonly ChatEntry[]): string {
  const first = entries.find((e) => e.role === 'user')?.text ?? 'New chat';
  const line = first.replace(/\s+/g, ' ').trim();
  return line.length > MAX_TITLE_CHARS
    ? `${line.slice(0, MAX_TITLE_CHARS - 1)}…`
    : line || 'New chat';
}

function isSummary(value: unknown): value is ConversationSummary {
  const c = value as ConversationSummary;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.id === 'string' &&
    typeof c.title === 'string' &&
    typeof c.updatedAt === 'number' &&
    typeof c.messages === 'number'
  );
}
