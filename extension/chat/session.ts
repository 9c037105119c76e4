// The chat: its transcript (kept per workspace), the one reply that may be streaming, and the
// messages the webview needs to mirror it. It works whether or not the view is open.
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import type { ChatTurn } from '../client.js';
import { CHAT_SYSTEM_PROMPT } from '../prompts.js';
import type { Services } from '../services.js';
import type { ChatEntry, ModelChoice, ToWebview } from './protocol.js';

type AssistantEntry = Extract<ChatEntry, { role: 'assistant' }>;

const HISTORY_KEY = 'aihub.chat.history';
const MAX_STORED_ENTRIES = 200;
const MAX_CONTEXT_ENTRIES = 20;
const MAX_CONTEXT_CHARS = 60_000;

export const DEFAULT_MODELS: ModelChoice[] = [
  'service-ai-free',
  'service-ai-lite',
  'service-ai-standard-6',
  'service-ai-pro-4',
  'service-ai-max',
].map((id) => ({ id, label: id }));

export class ChatSession implements vscode.Disposable {
  private entries: ChatEntry[];
  private current: { entry: AssistantEntry; cancel: vscode.CancellationTokenSource } | undefined;
  private models: ModelChoice[] = DEFAULT_MODELS;
  private readonly posted = new vscode.EventEmitter<ToWebview>();
  /** Everything the webview should see, in order; the view provider relays it. */
  readonly onDidPost = this.posted.event;

  constructor(
    private readonly services: Services,
    private readonly memento: vscode.Memento,
  ) {
    const stored = memento.get<ChatEntry[]>(HISTORY_KEY, []);
    this.entries = Array.isArray(stored) ? stored.map(settleInterrupted) : [];
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  transcript(): readonly ChatEntry[] {
    return this.entries;
  }

  snapshot(): ToWebview {
    return { type: 'state', entries: this.entries, models: this.models, model: this.services.settings().model, busy: this.busy };
  }

  setModels(models: ModelChoice[]): void {
    if (models.length > 0) this.models = models;
    this.post({ type: 'models', models: this.models, model: this.services.settings().model });
  }

  availableModels(): readonly ModelChoice[] {
    return this.models;
  }

  /** Sends a user message and streams the reply; resolves with the finished assistant entry. */
  async ask(text: string): Promise<AssistantEntry> {
    if (this.current) this.stop();
    const settings = this.services.settings();
    const user: ChatEntry = { id: randomUUID(), role: 'user', text };
    const reply: AssistantEntry = { id: randomUUID(), role: 'assistant', text: '', model: settings.model, status: 'streaming' };
    const turns = this.contextTurns(text);
    this.append(user);
    this.append(reply);
    const cancel = new vscode.CancellationTokenSource();
    this.current = { entry: reply, cancel };
    this.post({ type: 'busy', busy: true });
    const controller = new AbortController();
    const onCancel = cancel.token.onCancellationRequested(() => controller.abort());
    try {
      const client = await this.services.client();
      const result = await client.streamChat(
        { model: settings.model, messages: turns, maxTokens: settings.maxTokens, temperature: settings.temperature },
        controller.signal,
        (delta) => {
          reply.text += delta;
          this.post({ type: 'delta', id: reply.id, text: delta });
        },
      );
      reply.status = 'done';
      reply.meta = result.meta;
      if (result.meta) {
        this.services.learnBalance(result.meta.balance, result.meta.currency);
        this.services.log.info(
          `chat ${result.meta.requestId}: ${result.meta.tier}, ${result.meta.promptTokens}+${result.meta.completionTokens} tokens, cost ${result.meta.cost} ${result.meta.currency}`,
        );
      }
    } catch (error) {
      const advice = cancel.token.isCancellationRequested ? undefined : this.services.advise(error);
      if (advice) {
        reply.status = 'error';
        reply.error = advice;
      } else {
        reply.status = 'stopped';
      }
    } finally {
      onCancel.dispose();
      cancel.dispose();
      if (this.current?.entry === reply) this.current = undefined;
      if (!reply.meta) this.services.balanceMayHaveChanged();
      this.replace(reply);
      this.post({ type: 'busy', busy: this.busy });
      await this.persist();
    }
    return reply;
  }

  /** The Stop button: cancels the streaming reply; what arrived so far is kept. */
  stop(): void {
    this.current?.cancel.cancel();
  }

  async clear(): Promise<void> {
    this.stop();
    this.entries = [];
    await this.persist();
    this.post(this.snapshot());
  }

  focusInput(): void {
    this.post({ type: 'focusInput' });
  }

  dispose(): void {
    this.stop();
    this.posted.dispose();
  }

  private contextTurns(question: string): ChatTurn[] {
    const turns: ChatTurn[] = [];
    let chars = question.length;
    const usable = this.entries.filter((e) => e.role === 'user' || (e.status !== 'error' && e.text !== ''));
    for (const entry of usable.slice(-MAX_CONTEXT_ENTRIES).reverse()) {
      chars += entry.text.length;
      if (chars > MAX_CONTEXT_CHARS) break;
      turns.unshift({ role: entry.role, content: entry.text });
    }
    while (turns[0]?.role === 'assistant') turns.shift();
    return [{ role: 'system', content: CHAT_SYSTEM_PROMPT }, ...turns, { role: 'user', content: question }];
  }

  private append(entry: ChatEntry): void {
    this.entries.push(entry);
    if (this.entries.length > MAX_STORED_ENTRIES) this.entries.splice(0, this.entries.length - MAX_STORED_ENTRIES);
    this.post({ type: 'entry', entry: { ...entry } });
  }

  private replace(entry: ChatEntry): void {
    this.post({ type: 'entry', entry: { ...entry } });
  }

  private post(message: ToWebview): void {
    this.posted.fire(message);
  }

  private async persist(): Promise<void> {
    await this.memento.update(HISTORY_KEY, this.entries);
  }
}

function settleInterrupted(entry: ChatEntry): ChatEntry {
  return entry.role === 'assistant' && entry.status === 'streaming' ? { ...entry, status: 'stopped' } : entry;
}
