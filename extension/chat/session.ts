// The chat: the open conversation (conversations are kept per workspace), the one reply that may
// be streaming, and the messages the webview needs to mirror it. It works whether or not the view
// is open. A message carries the editor context (see context/chatContext.ts) and is asked about
// first when it could pass the daily spending cap.
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import type { ChatTurn } from '../client.js';
import { codebaseQuery, mentionsCodebase, mergeHits } from '../codebase/mention.js';
import type { CodebaseSearch } from '../codebase/types.js';
import type { BuiltContext, ChatContext, CodebaseContext } from '../context/chatContext.js';
import { CHAT_SYSTEM_PROMPT } from '../prompts.js';
import type { Services } from '../services.js';
import { promptChars } from '../spendMath.js';
import { ConversationStore, titleFor } from './history.js';
import { formatMoney, type ChatEntry, type ModelChoice, type ToWebview } from './protocol.js';

type AssistantEntry = Extract<ChatEntry, { role: 'assistant' }>;

export interface AskOptions {
  /** Send the editor context with the message (the chat view's messages do; Explain carries its own code). */
  withContext?: boolean;
  /** The tier for this message (the view's picker); the aihub.model setting otherwise. */
  model?: string;
}

/** The codebase index as the chat uses it: the search, and its state to explain why it is not ready. */
type ChatCodebase = CodebaseSearch & {
  status(): { state: string; progress: { done: number; total: number } | undefined };
};

const MAX_STORED_ENTRIES = 200;
/** @mentions resolved per message. */
const MAX_MENTIONS = 10;
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
  private entries: ChatEntry[] = [];
  private conversationId: string;
  private readonly store: ConversationStore;
  /** Resolves once earlier versions' single transcript is moved into the history. */
  readonly ready: Promise<void>;
  private current: { entry: AssistantEntry; cancel: vscode.CancellationTokenSource } | undefined;
  /** Stops the work other than a chat reply that is running (an agent task). */
  private work: (() => void) | undefined;
  private models: ModelChoice[] = DEFAULT_MODELS;
  private readonly posted = new vscode.EventEmitter<ToWebview>();
  private readonly follow: vscode.Disposable[];
  /** Everything the webview should see, in order; the view provider relays it. */
  readonly onDidPost = this.posted.event;

  constructor(
    private readonly services: Services,
    memento: vscode.Memento,
    private readonly context: ChatContext,
    private readonly codebase?: ChatCodebase,
  ) {
    this.store = new ConversationStore(memento);
    const latest = this.store.list()[0];
    this.conversationId = latest?.id ?? this.store.newId();
    if (latest) this.entries = this.store.entries(latest.id).map(settleInterrupted);
    this.ready = this.migrate();
    // The picker's tiers (their prices) and its Add Model Provider entry follow the providers.
    this.follow = [
      services.providers.onDidChange(() => void this.refreshModels()),
      services.localGateway.onDidChangeState((state) => {
        if (state === 'running') void this.refreshModels();
      }),
    ];
  }

  /** The tiers as the gateway lists them now (kept as they were when it does not answer). */
  async refreshModels(): Promise<readonly ModelChoice[]> {
    try {
      this.setModels(await (await this.services.client()).models(AbortSignal.timeout(10_000)));
    } catch (error) {
      this.services.log.warn(
        `Could not list models: ${error instanceof Error ? error.message : String(error)}`,
      );
      this.setModels([]);
    }
    return this.models;
  }

  private async migrate(): Promise<void> {
    const legacy = await this.store.takeLegacy();
    if (legacy.length === 0 || this.entries.length > 0) return;
    this.entries = legacy.map(settleInterrupted);
    await this.persist();
    this.post(this.snapshot());
  }

  get conversation(): { id: string; title: string } {
    return {
      id: this.conversationId,
      title:
        this.store.get(this.conversationId)?.title ??
        (this.entries.length ? titleFor(this.entries) : 'New chat'),
    };
  }

  get busy(): boolean {
    return this.current !== undefined || this.work !== undefined;
  }

  transcript(): readonly ChatEntry[] {
    return this.entries;
  }

  snapshot(): ToWebview {
    return {
      type: 'state',
      entries: this.entries,
      models: this.models,
      model: this.services.settings().model,
      offerProviders: this.offerProviders(),
      busy: this.busy,
      conversation: this.conversation,
    };
  }

  setModels(models: ModelChoice[]): void {
    if (models.length > 0) this.models = models;
    this.post({
      type: 'models',
      models: this.models,
      model: this.services.settings().model,
      offerProviders: this.offerProviders(),
    });
  }

  /** Only the built-in offline engine answers: the local gateway without a model provider. */
  private offerProviders(): boolean {
    return this.services.settings().usesLocalGateway && this.services.providers.isEmpty;
  }

  availableModels(): readonly ModelChoice[] {
    return this.models;
  }

  /** Sends a user message and streams the reply; resolves with the finished assistant entry. */
  async ask(text: string, options: AskOptions = {}): Promise<AssistantEntry> {
    this.current?.cancel.cancel();
    const settings = { ...this.services.settings() };
    if (options.model) settings.model = options.model;
    const built = options.withContext ? await this.contextFor(text) : undefined;
    const { user, reply } = newTurn(text, built?.labels, settings.model);
    const question = built?.prompt ? `${built.prompt}\n\n${text}` : text;
    const turns = this.contextTurns(question);
    this.append(user);
    this.append(reply);
    const spend = this.services.spend;
    const allowed = await spend.confirm({
      model: settings.model,
      promptChars: promptChars(turns),
      messages: turns.length,
      maxTokens: settings.maxTokens,
      purpose: 'This chat message',
    });
    if (!allowed) {
      this.refuseOverCap(reply);
      await this.persist();
      return reply;
    }
    const cancel = new vscode.CancellationTokenSource();
    this.current = { entry: reply, cancel };
    this.post({ type: 'busy', busy: true });
    const controller = new AbortController();
    const onCancel = cancel.token.onCancellationRequested(() => controller.abort());
    try {
      const client = await this.services.client();
      const result = await client.streamChat(
        {
          model: settings.model,
          messages: turns,
          maxTokens: settings.maxTokens,
          temperature: settings.temperature,
        },
        controller.signal,
        (delta) => {
          reply.text += delta;
          this.post({ type: 'delta', id: reply.id, text: delta });
        },
      );
      reply.status = 'done';
      reply.meta = result.meta;
      if (result.meta) this.recordMeta(result.meta);
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

  /** `@codebase`: the passages closest to the message, or why there are none. */
  private async searchCodebase(text: string): Promise<CodebaseContext> {
    const status = this.codebase?.status();
    if (this.codebase && !this.codebase.ready && status && status.state !== 'off') {
      const progress = status.progress
        ? ` (${status.progress.done}/${status.progress.total} files)`
        : '';
      const why =
        status.state === 'untrusted'
          ? 'not available in an untrusted workspace'
          : status.state === 'indexing' || status.state === 'starting'
            ? `the index is being built${progress}; ask again in a moment`
            : `the index is ${status.state}`;
      return { problem: why };
    }
    if (!this.codebase?.ready) {
      void vscode.window
        .showInformationMessage(
          'AIHub: @codebase needs the codebase index, which is off for this workspace. Indexing embeds your files through the gateway (billed like other requests).',
          'Index Codebase',
        )
        .then((picked) => {
          if (picked) void vscode.commands.executeCommand('aihub.indexCodebase');
        });
      return { problem: 'not indexed: run AIHub: Index Codebase' };
    }
    try {
      const limit = this.services.settings().codebase.maxResults;
      const result = await this.codebase.search(codebaseQuery(text), {
        limit,
        signal: AbortSignal.timeout(60_000),
      });
      return { hits: mergeHits(result.hits) };
    } catch (error) {
      const message = this.services.advise(error)?.message ?? (error as Error).message;
      return { problem: `search failed: ${message}` };
    }
  }

  /** The editor context a message would carry: the active editor, added and @-mentioned files, @codebase. */
  async contextFor(text: string): Promise<BuiltContext> {
    const codebase = mentionsCodebase(text) ? await this.searchCodebase(text) : undefined;
    return this.context.build(await mentionedFiles(text), codebase);
  }

  /** The reply refused before sending: it could pass the daily spending cap. */
  private refuseOverCap(reply: AssistantEntry): void {
    const cap = this.services.spend.view();
    reply.status = 'error';
    reply.error = {
      message: `Not sent: it could pass your daily spending cap of ${formatMoney(cap.cap ?? 0, cap.currency)} (aihub.spendingCap.perDay).`,
      actions: ['openSettings'],
    };
    this.replace(reply);
  }

  /** What the gateway reported for a reply: the spend, the balance and a log line. */
  private recordMeta(meta: NonNullable<AssistantEntry['meta']>): void {
    this.services.spend.record(meta.cost, meta.currency);
    this.services.learnBalance(meta.balance, meta.currency);
    this.services.log.info(
      `chat ${meta.requestId}: ${meta.tier}, ${meta.promptTokens}+${meta.completionTokens} tokens, cost ${meta.cost} ${meta.currency}`,
    );
  }

  /** The Stop button: cancels the streaming reply (what arrived so far is kept) or the running task. */
  stop(): void {
    this.current?.cancel.cancel();
    this.work?.();
  }

  /** Work other than a chat reply (an agent task): the view is busy meanwhile and Stop ends it. */
  setWork(stop: (() => void) | undefined): void {
    this.work = stop;
    this.post({ type: 'busy', busy: this.busy });
  }

  /**
   * Shows an entry that the agent made or changed, in the conversation it belongs to: appended
   * when new, sent again when changed (the view replaces it by id). Nothing when another
   * conversation is open meanwhile.
   */
  showEntry(entry: ChatEntry, conversationId: string): void {
    if (this.entries.includes(entry)) this.replace(entry);
    else if (conversationId === this.conversationId) this.append(entry);
  }

  /** Streams text into an entry the view shows (an agent step's words). */
  streamInto(id: string, text: string): void {
    this.post({ type: 'delta', id, text });
  }

  /** Saves the open conversation (the agent saves after every step). */
  save(): Promise<void> {
    return this.persist();
  }

  /** New Chat: the current conversation stays in the history; an empty one starts. */
  async clear(): Promise<void> {
    this.stop();
    await this.persist();
    this.entries = [];
    this.conversationId = this.store.newId();
    this.post(this.snapshot());
    this.postHistory();
  }

  conversations() {
    return this.store.list();
  }

  /** Reopens a saved conversation; false when there is none with that id. */
  async open(id: string): Promise<boolean> {
    if (!this.store.get(id)) return false;
    this.stop();
    await this.persist();
    this.conversationId = id;
    this.entries = this.store.entries(id).map(settleInterrupted);
    this.post(this.snapshot());
    this.postHistory();
    return true;
  }

  async rename(id: string, title: string): Promise<boolean> {
    const renamed = await this.store.rename(id, title);
    if (renamed) {
      if (id === this.conversationId) this.post(this.snapshot());
      this.postHistory();
    }
    return renamed;
  }

  /** Deletes a saved conversation; deleting the open one starts a new chat. */
  async delete(id: string): Promise<boolean> {
    if (id === this.conversationId) {
      this.stop();
      this.entries = [];
      this.conversationId = this.store.newId();
    }
    const deleted = await this.store.delete(id);
    this.post(this.snapshot());
    this.postHistory();
    return deleted;
  }

  postHistory(): void {
    this.post({
      type: 'history',
      conversations: this.store.list(),
      currentId: this.conversationId,
    });
  }

  /** Relays a message to the view (the context and spend views). */
  postToView(message: ToWebview): void {
    this.post(message);
  }

  focusInput(): void {
    this.post({ type: 'focusInput' });
  }

  dispose(): void {
    this.stop();
    for (const subscription of this.follow) subscription.dispose();
    this.posted.dispose();
  }

  private contextTurns(question: string): ChatTurn[] {
    const turns: ChatTurn[] = [];
    let chars = question.length;
    // An agent task is remembered by its request and its result; its steps are not re-sent.
    const usable = this.entries.filter(
      (e) =>
        e.role === 'user' ||
        e.role === 'task' ||
        (e.role === 'assistant' && e.status !== 'error' && e.text !== ''),
    );
    for (const entry of usable.slice(-MAX_CONTEXT_ENTRIES).reverse()) {
      chars += entry.text.length;
      if (chars > MAX_CONTEXT_CHARS) break;
      turns.unshift({ role: entry.role === 'user' ? 'user' : 'assistant', content: entry.text });
    }
    while (turns[0]?.role === 'assistant') turns.shift();
    return [
      { role: 'system', content: CHAT_SYSTEM_PROMPT },
      ...turns,
      { role: 'user', content: question },
    ];
  }

  private append(entry: ChatEntry): void {
    this.entries.push(entry);
    if (this.entries.length > MAX_STORED_ENTRIES)
      this.entries.splice(0, this.entries.length - MAX_STORED_ENTRIES);
    this.post({ type: 'entry', entry: { ...entry } });
  }

  private replace(entry: ChatEntry): void {
    this.post({ type: 'entry', entry: { ...entry } });
  }

  private post(message: ToWebview): void {
    this.posted.fire(message);
  }

  private async persist(): Promise<void> {
    await this.store.save(this.conversationId, this.entries, undefined);
    this.post({ type: 'conversation', conversation: this.conversation });
  }
}

/** Workspace files named with @path in a message (those that exist). */
async function mentionedFiles(text: string): Promise<vscode.Uri[]> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length === 0) return [];
  const found: vscode.Uri[] = [];
  for (const match of text.matchAll(/(?:^|\s)@([\w./-]{1,300})/g)) {
    if (found.length >= MAX_MENTIONS) break;
    const path = match[1]!.replace(/[.,;:]+$/, '');
    if (path.toLowerCase() === 'codebase') continue; // @codebase: the index, not a file
    if (path.split('/').includes('..')) continue;
    for (const folder of folders) {
      const uri = vscode.Uri.joinPath(folder.uri, path);
      try {
        const stat = await vscode.workspace.fs.stat(uri);
        if (stat.type & vscode.FileType.File) {
          found.push(uri);
          break;
        }
      } catch {
        /* not a file of this folder */
      }
    }
  }
  return found;
}

/** Entries saved while a reply or a task ran (VS Code closed meanwhile) show as stopped. */
function settleInterrupted(entry: ChatEntry): ChatEntry {
  if (entry.role === 'assistant' && entry.status === 'streaming')
    return { ...entry, status: 'stopped' };
  if (entry.role === 'agent' && (entry.status === 'streaming' || entry.calls.some(unsettled)))
    return {
      ...entry,
      status: entry.status === 'streaming' ? 'stopped' : entry.status,
      calls: entry.calls.map((c) =>
        unsettled(c) ? { ...c, status: 'stopped' as const, approval: undefined } : c,
      ),
    };
  return entry;
}

function unsettled(call: { status: string }): boolean {
  return call.status === 'running' || call.status === 'awaiting';
}

/** The user's message (with the labels of the context sent) and the empty streaming reply. */
function newTurn(
  text: string,
  labels: string[] | undefined,
  model: string,
): { user: ChatEntry; reply: AssistantEntry } {
  const user: ChatEntry = {
    id: randomUUID(),
    role: 'user',
    text,
    ...(labels?.length ? { context: labels } : {}),
  };
  const reply: AssistantEntry = {
    id: randomUUID(),
    role: 'assistant',
    text: '',
    model,
    status: 'streaming',
  };
  return { user, reply };
}
