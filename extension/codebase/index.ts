// The codebase index: the workspace's files in chunks, embedded through the gateway's
// /v1/embeddings on the user's key (every request counted in spend and held to the daily cap),
// kept in the extension's workspace storage (store.ts), updated as files change, searched by
// cosine similarity (search.ts) for @codebase and the agent's search tool.
//
// It is off until the user runs "AIHub: Index Codebase" in a workspace (the choice is kept in the
// workspace's state, not in a settings file a repository could carry), never runs in an untrusted
// workspace, and "AIHub: Turn Off Codebase Index" stops it and deletes the index.
//
// One worker does everything in turn: a full sync (list the files, drop what is gone, re-embed what
// changed by content hash, so a restart re-embeds nothing unchanged), or the changes the file
// watcher and saves queued (debounced, at most MAX_PENDING; more means a full sync instead).
import { createHash } from 'node:crypto';
import * as vscode from 'vscode';
import type { ReplyMeta } from '../chat/protocol.js';
import type { EmbedResult } from '../client.js';
import { toFailure } from '../errors.js';
import type { Services } from '../services.js';
import { fromMicros, toMicros } from '../spendMath.js';
import { chunkText, DEFAULT_CHUNK_OPTIONS, embeddingInput, type Chunk } from './chunker.js';
import { decodeText } from './exclude.js';
import { normalize, topK } from './search.js';
import { IndexStore, type IndexedFile, type StoreStats } from './store.js';
import type { CodebaseHit, CodebaseSearch, CodebaseSearchResult } from './types.js';
import { listFiles, loadRules, verdict, type FolderRules } from './workspaceFiles.js';

const ENABLED_KEY = 'aihub.codebase.enabled';
/** Inputs and characters per embeddings request. */
const BATCH_INPUTS = 64;
const BATCH_CHARS = 120_000;
/** Changes waiting for the worker; past this, a full sync replaces them. */
const MAX_PENDING = 5_000;
const DEBOUNCE_MS = 1_000;
/** The vectors held in memory at most (256 dimensions: 131,072 chunks; 1,536: 21,845). */
export const MAX_VECTOR_BYTES = 128 * 1024 * 1024;
const MAX_SEARCH_LIMIT = 50;
const MAX_QUERY_CHARS = 8_000;
/** A hit's text at most (a chunk is at most 1,800 characters, but a minified line is longer). */
const MAX_HIT_CHARS = 4 * DEFAULT_CHUNK_OPTIONS.maxChars;

export type IndexState =
  'off' | 'untrusted' | 'unavailable' | 'starting' | 'indexing' | 'ready' | 'paused';

export interface CodebaseStatus extends StoreStats {
  state: IndexState;
  /** Why it is paused or unavailable, or what the last run found. */
  detail: string | undefined;
  model: string;
  /** Files of the current run: done of total. */
  progress: { done: number; total: number } | undefined;
  /** What the last full sync left out, by reason. */
  skipped: {
    ignored: number;
    secret: number;
    binary: number;
    tooLarge: number;
    overLimit: number;
  };
  /** Changes waiting for the worker. */
  pending: number;
  /** What embedding cost since VS Code started (indexing and queries), in currency units. */
  cost: number;
  currency: string;
  /** The index file, when there is one. */
  storagePath: string | undefined;
}

/** A request refused before it is sent: it could pass the daily spending cap. */
class OverCap extends Error {
  constructor() {
    super(
      'it could pass your daily spending cap (aihub.spendingCap.perDay); raise the cap to go on',
    );
  }
}

/** Thrown inside a run to stop it; the worker decides what comes next. */
class Stop extends Error {
  constructor(readonly why: 'cancelled' | 'rebuild' | 'paused') {
    super(why);
  }
}

interface PendingFile {
  key: string;
  path: string;
  hash: string;
  size: number;
  mtime: number;
  chunks: Chunk[];
}

interface Run {
  token: vscode.CancellationToken;
  signal: AbortSignal;
  report: (done: number, total: number) => void;
}

export class CodebaseIndex implements CodebaseSearch, vscode.Disposable {
  private store: IndexStore | undefined;
  private opening: Promise<IndexStore | undefined> | undefined;
  private state: IndexState = 'off';
  private detail: string | undefined;
  private progress: CodebaseStatus['progress'];
  private skipped: CodebaseStatus['skipped'] = {
    ignored: 0,
    secret: 0,
    binary: 0,
    tooLarge: 0,
    overLimit: 0,
  };
  private rules: FolderRules[] | undefined;
  private readonly pending = new Map<string, vscode.Uri | 'deleted'>();
  private fullSyncWanted = false;
  private notifyNextSync = false;
  private worker: Promise<void> | undefined;
  private runCancel: vscode.CancellationTokenSource | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private watchers: vscode.Disposable[] = [];
  private costMicros = 0;
  private currency = 'INR';
  private toldPause: string | undefined;
  /** Set while the worker is stopped on purpose (rebuild, model change, turning off): no pause then. */
  private stoppingQuietly = false;
  private pauseReason: 'cancelled' | 'cap' | 'error' = 'cancelled';
  private readonly changed = new vscode.EventEmitter<CodebaseStatus>();
  /** Fired on every change of state, progress or size (tests wait on it). */
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly services: Services,
    private readonly context: vscode.ExtensionContext,
  ) {
    this.disposables.push(
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        if (this.wanted) void this.start();
      }),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (!this.isRunning()) return;
        if (event.affectsConfiguration('aihub.codebase.model')) void this.reopen();
        else if (
          event.affectsConfiguration('aihub.codebase') ||
          event.affectsConfiguration('files.exclude')
        )
          this.requestFullSync();
        else if (event.affectsConfiguration('aihub.spendingCap')) this.resumeAfter('cap');
      }),
      // What a failed run waited for: the local gateway up, a key set.
      services.localGateway.onDidChangeState((state) => {
        if (state === 'running') this.resumeAfter('error');
      }),
      services.keys.onDidChange(() => this.resumeAfter('error')),
      vscode.workspace.onDidChangeWorkspaceFolders(() => {
        if (this.isRunning()) this.requestFullSync();
      }),
    );
    if (this.wanted) void this.start();
    else this.setState('off');
  }

  /** Whether the user turned indexing on for this workspace. */
  get wanted(): boolean {
    return this.context.workspaceState.get<boolean>(ENABLED_KEY) === true;
  }

  get ready(): boolean {
    return (
      this.wanted &&
      vscode.workspace.isTrusted &&
      (this.state === 'ready' || this.state === 'indexing' || this.state === 'paused') &&
      (this.store?.chunks ?? 0) > 0
    );
  }

  status(): CodebaseStatus {
    const stats = this.store?.stats() ?? {
      files: 0,
      chunks: 0,
      dims: 0,
      vectorBytes: 0,
      diskBytes: 0,
    };
    return {
      ...stats,
      state: this.state,
      detail: this.detail,
      model: this.services.settings().codebase.model,
      progress: this.progress,
      skipped: { ...this.skipped },
      pending: this.pending.size,
      cost: fromMicros(this.costMicros),
      currency: this.currency,
      storagePath: this.store?.path,
    };
  }

  /** The indexed files (workspace-relative paths, sorted) with their content hash and chunks. */
  indexedFiles(): Array<{ path: string; sha256: string; chunks: number }> {
    return [...(this.store?.files.values() ?? [])]
      .map((file) => ({
        path: vscode.workspace.asRelativePath(vscode.Uri.parse(file.key), false),
        sha256: file.hash,
        chunks: file.lines.length / 2,
      }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /**
   * "AIHub: Index Codebase": turns indexing on for this workspace (or resumes it) and runs a full
   * sync under a cancellable progress notification; resolves when that sync ends.
   */
  async enable(): Promise<CodebaseStatus> {
    if (!vscode.workspace.isTrusted) {
      this.setState('untrusted', 'Codebase indexing is off in an untrusted workspace.');
      void vscode.window.showWarningMessage(
        'AIHub: codebase indexing needs a trusted workspace (it reads every file and sends it to the gateway).',
      );
      return this.status();
    }
    await this.context.workspaceState.update(ENABLED_KEY, true);
    this.toldPause = undefined;
    if (!(await this.start())) return this.status();
    this.fullSyncWanted = true;
    this.notifyNextSync = true;
    if (this.state === 'paused') this.setState('indexing');
    await this.kick();
    return this.status();
  }

  /** "AIHub: Rebuild Codebase Index": drops every vector and embeds everything again. */
  async rebuild(): Promise<CodebaseStatus> {
    if (!this.wanted) return this.enable();
    await this.stopWorker();
    await this.store?.clear();
    return this.enable();
  }

  /** "AIHub: Turn Off Codebase Index": stops indexing and deletes the index from disk. */
  async disable(): Promise<void> {
    await this.context.workspaceState.update(ENABLED_KEY, false);
    await this.stopWorker();
    this.stopWatching();
    this.pending.clear();
    await this.opening;
    const store = this.store;
    this.store = undefined;
    this.rules = undefined;
    await store?.destroy();
    this.progress = undefined;
    this.setState('off');
  }

  /**
   * Pauses the worker: the user cancelled (Index Codebase resumes), the spending cap would be
   * passed (a change of the cap resumes too), or a request failed (the local gateway coming up or
   * a new key resumes too).
   */
  pause(detail: string, reason: 'cancelled' | 'cap' | 'error' = 'cancelled'): void {
    this.runCancel?.cancel();
    this.pauseReason = reason;
    this.setState('paused', detail);
  }

  private resumeAfter(reason: 'cap' | 'error'): void {
    if (this.wanted && this.store && this.paused && this.pauseReason === reason) this.resume();
  }

  private resume(): void {
    this.toldPause = undefined;
    this.setState('indexing');
    this.fullSyncWanted = true;
    void this.kick();
  }

  async search(
    query: string,
    options: { limit: number; signal?: AbortSignal },
  ): Promise<CodebaseSearchResult> {
    const store = this.store;
    if (!this.ready || !store) throw new Error('The codebase index is not ready.');
    const limit = Math.max(1, Math.min(MAX_SEARCH_LIMIT, Math.floor(options.limit)));
    const signal = options.signal ?? new AbortController().signal;
    // A query is a message: its first 8,000 characters say what it is about (and stay well
    // within the 8,192 tokens an embeddings input may have).
    let embedded: EmbedResult;
    try {
      embedded = await this.embed(
        [query.slice(0, MAX_QUERY_CHARS)],
        'Searching the codebase',
        signal,
      );
    } catch (error) {
      // The SDK's abort error is its own class: callers are promised a plain AbortError.
      if (signal.aborted) throw new DOMException('The search was aborted.', 'AbortError');
      throw error;
    }
    const { vectors, meta } = embedded;
    const query_vector = normalize(vectors[0]!);
    if (query_vector.length !== store.dims) {
      this.services.log.warn(
        `Codebase index: the embeddings model now answers ${query_vector.length} dimensions, the index holds ${store.dims}; rebuilding.`,
      );
      void this.rebuildForDims(query_vector.length);
      throw new Error('The embeddings model changed; the codebase index is being rebuilt.');
    }
    const scored = topK(query_vector, store.files.values(), store.dims, limit);
    const hits = await this.resolveHits(store, scored);
    return meta ? { hits, meta } : { hits };
  }

  private async rebuildForDims(dims: number): Promise<void> {
    await this.stopWorker();
    await this.store?.clear(dims);
    this.requestFullSync();
  }

  /** The chunks' current lines, read once per file; gone files are dropped (and queued). */
  private async resolveHits(
    store: IndexStore,
    scored: Array<{ key: string; chunk: number; score: number }>,
  ): Promise<CodebaseHit[]> {
    const texts = new Map<string, string[] | undefined>();
    const hits: CodebaseHit[] = [];
    for (const { key, chunk, score } of scored) {
      const file = store.files.get(key);
      if (!file) continue;
      const uri = vscode.Uri.parse(key);
      if (!texts.has(key)) texts.set(key, await currentLines(uri));
      const lines = texts.get(key);
      if (!lines) {
        this.queue(uri, 'deleted');
        continue;
      }
      const startLine = file.lines[2 * chunk]!;
      const endLine = Math.min(file.lines[2 * chunk + 1]!, lines.length);
      if (startLine > endLine) continue;
      hits.push({
        path: vscode.workspace.asRelativePath(uri, false),
        startLine,
        endLine,
        score,
        // A piece of a minified line stands for the whole line: bounded here.
        text: lines
          .slice(startLine - 1, endLine)
          .join('\n')
          .slice(0, MAX_HIT_CHARS),
      });
    }
    return hits;
  }

  // ---- lifecycle -------------------------------------------------------------------------

  private isRunning(): boolean {
    return this.wanted && this.store !== undefined;
  }

  /** Opens the store and watches the workspace; false when that is not possible here. */
  private async start(): Promise<boolean> {
    if (!vscode.workspace.isTrusted) {
      this.setState('untrusted', 'Codebase indexing is off in an untrusted workspace.');
      return false;
    }
    const store = await this.open();
    if (!store) return false;
    if (this.watchers.length === 0) this.watch();
    if (this.state === 'off' || this.state === 'untrusted' || this.state === 'starting') {
      this.setState('indexing');
      this.requestFullSync(0);
    }
    return true;
  }

  private open(): Promise<IndexStore | undefined> {
    if (this.store) return Promise.resolve(this.store);
    this.opening ??= (async () => {
      const storageUri = this.context.storageUri;
      if (!storageUri || storageUri.scheme !== 'file') {
        this.setState(
          'unavailable',
          storageUri
            ? `This workspace's storage (${storageUri.scheme}:) is not on the local file system.`
            : 'Open a folder or workspace to index it.',
        );
        return undefined;
      }
      this.setState('starting');
      const model = this.services.settings().codebase.model;
      const { store, reset } = await IndexStore.open(storageUri.fsPath, { model });
      if (reset) this.services.log.info(`Codebase index: starting anew: ${reset}.`);
      this.store = store;
      return store;
    })().finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** The embeddings model changed: the store reopens, finds another model and starts empty. */
  private async reopen(): Promise<void> {
    await this.stopWorker();
    await this.store?.close();
    this.store = undefined;
    this.setState('starting');
    if (await this.start()) this.requestFullSync(0);
  }

  private watch(): void {
    const watcher = vscode.workspace.createFileSystemWatcher('**/*');
    this.watchers.push(
      watcher,
      watcher.onDidCreate((uri) => this.queue(uri, uri)),
      watcher.onDidChange((uri) => this.queue(uri, uri)),
      watcher.onDidDelete((uri) => this.queue(uri, 'deleted')),
      vscode.workspace.onDidSaveTextDocument((document) => this.queue(document.uri, document.uri)),
    );
  }

  private stopWatching(): void {
    this.watchers.forEach((d) => d.dispose());
    this.watchers = [];
    clearTimeout(this.debounce);
  }

  /** A file event: queued for the worker, debounced; a .gitignore change means a full sync. */
  private queue(uri: vscode.Uri, change: vscode.Uri | 'deleted'): void {
    if (!this.isRunning()) return;
    if (uri.path.endsWith('/.gitignore') || uri.path.endsWith('/.git/info/exclude')) {
      this.requestFullSync();
      return;
    }
    if (this.rules && verdict(this.rules, uri) !== 'ok') {
      // Not indexable (ignored, secret, binary, outside): only a copy we hold is to be dropped.
      if (!this.store?.files.has(uri.toString())) return;
      change = 'deleted';
    }
    if (this.pending.size >= MAX_PENDING && !this.pending.has(uri.toString())) {
      this.pending.clear();
      this.requestFullSync();
      return;
    }
    this.pending.set(uri.toString(), change);
    this.schedule(DEBOUNCE_MS);
  }

  private requestFullSync(delay = DEBOUNCE_MS): void {
    this.fullSyncWanted = true;
    this.schedule(delay);
  }

  private schedule(delay: number): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => void this.kick(), delay);
  }

  /** Starts the worker unless it runs; resolves when it has nothing left to do. */
  private kick(): Promise<void> {
    clearTimeout(this.debounce);
    this.worker ??= this.work().finally(() => (this.worker = undefined));
    return this.worker;
  }

  private async stopWorker(): Promise<void> {
    clearTimeout(this.debounce);
    this.stoppingQuietly = true;
    try {
      this.runCancel?.cancel();
      await this.worker?.catch(() => undefined);
    } finally {
      this.stoppingQuietly = false;
    }
  }

  private async work(): Promise<void> {
    while (this.wanted && this.store && !this.paused) {
      const full = this.fullSyncWanted;
      if (!full && this.pending.size === 0) break;
      const notify = full && this.notifyNextSync;
      this.fullSyncWanted = false;
      if (full) this.notifyNextSync = false;
      const store = this.store;
      const outcome = await this.withRun(notify, (run) =>
        full ? this.fullSync(store, run) : this.applyChanges(store, run),
      );
      if (outcome === 'cancelled') {
        if (this.wanted && !this.paused && !this.stoppingQuietly)
          this.pause('Cancelled. Run "AIHub: Index Codebase" to go on.');
        break;
      }
      if (outcome === 'rebuild') this.fullSyncWanted = true;
    }
    if (this.store?.wasteful) await this.store.compact();
    if (this.wanted && this.store && this.state === 'indexing') {
      this.progress = undefined;
      this.setState('ready', this.summary());
    }
  }

  /** Runs one job with its progress shown (a notification for Index Codebase, else the status bar). */
  private async withRun(
    notify: boolean,
    job: (run: Run) => Promise<void>,
  ): Promise<'done' | 'cancelled' | 'rebuild' | 'paused'> {
    const cancel = new vscode.CancellationTokenSource();
    this.runCancel = cancel;
    const controller = new AbortController();
    const onCancel = cancel.token.onCancellationRequested(() => controller.abort());
    this.setState('indexing');
    const body = async (
      progress: vscode.Progress<{ message?: string; increment?: number }>,
      token?: vscode.CancellationToken,
    ): Promise<'done' | 'cancelled' | 'rebuild' | 'paused'> => {
      const onUserCancel = token?.onCancellationRequested(() => cancel.cancel());
      let shown = 0;
      try {
        await job({
          token: cancel.token,
          signal: controller.signal,
          report: (done, total) => {
            this.progress = { done, total };
            const percent = total > 0 ? (100 * done) / total : 100;
            progress.report({ message: `${done} / ${total} files`, increment: percent - shown });
            shown = percent;
            this.fire();
          },
        });
        return 'done';
      } catch (error) {
        if (error instanceof Stop) return error.why;
        if (cancel.token.isCancellationRequested) return 'cancelled';
        this.failed(error);
        return 'paused';
      } finally {
        onUserCancel?.dispose();
      }
    };
    try {
      return notify
        ? await vscode.window.withProgress(
            {
              location: vscode.ProgressLocation.Notification,
              title: 'AIHub: indexing the codebase',
              cancellable: true,
            },
            body,
          )
        : await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Window, title: 'AIHub: indexing' },
            (progress) => body(progress),
          );
    } finally {
      onCancel.dispose();
      cancel.dispose();
      if (this.runCancel === cancel) this.runCancel = undefined;
      await this.store?.flush().catch(() => undefined);
    }
  }

  /** A run failed: pause and say why once (402 → Top Up, 401 → Set API Key, …). */
  private failed(error: unknown): void {
    const failure = toFailure(error);
    const advice = this.services.advise(error);
    const message = advice?.message ?? (error instanceof Error ? error.message : String(error));
    this.pause(`Paused: ${message}`, error instanceof OverCap ? 'cap' : 'error');
    this.services.log.warn(`Codebase index paused: ${message}`);
    if (this.toldPause === message) return;
    this.toldPause = message;
    if (failure.kind === 'http' || failure.kind === 'missingKey' || failure.kind === 'unreachable')
      void this.services.showError(error);
    else void vscode.window.showWarningMessage(`AIHub: codebase indexing paused: ${message}`);
  }

  // ---- the jobs ------------------------------------------------------------------------

  private async fullSync(store: IndexStore, run: Run): Promise<void> {
    const settings = this.services.settings().codebase;
    this.pending.clear();
    const rules = await loadRules(settings.exclude, run.token);
    this.check(run);
    const listing = await listFiles(rules, settings.maxFiles, run.token);
    this.check(run);
    this.rules = rules;
    this.skipped = { ...listing.skipped, tooLarge: 0 };
    const wanted = new Set(listing.files.map((uri) => uri.toString()));
    for (const key of [...store.files.keys()]) if (!wanted.has(key)) await store.remove(key);
    const batch = new Batcher(this, store, run);
    run.report(0, listing.files.length);
    let done = 0;
    for (const uri of listing.files) {
      this.check(run);
      await this.indexFile(store, batch, uri, settings.maxFileBytes);
      run.report(++done, listing.files.length);
    }
    await batch.flush();
    this.services.log.info(`Codebase index: ${this.summary()}`);
  }

  private async applyChanges(store: IndexStore, run: Run): Promise<void> {
    const settings = this.services.settings().codebase;
    const changes = [...this.pending.entries()];
    this.pending.clear();
    const batch = new Batcher(this, store, run);
    let done = 0;
    run.report(0, changes.length);
    for (const [key, change] of changes) {
      this.check(run);
      if (change === 'deleted') {
        await store.remove(key);
        // A deleted folder: everything under it.
        for (const known of [...store.files.keys()])
          if (known.startsWith(`${key}/`)) await store.remove(known);
      } else if (this.rules && verdict(this.rules, change) === 'ok') {
        await this.indexFile(store, batch, change, settings.maxFileBytes);
      } else {
        await store.remove(key);
      }
      run.report(++done, changes.length);
    }
    await batch.flush();
  }

  /** Queues one file for embedding when its content changed; false when it was not taken. */
  private async indexFile(
    store: IndexStore,
    batch: Batcher,
    uri: vscode.Uri,
    maxBytes: number,
  ): Promise<boolean> {
    const key = uri.toString();
    let stat: vscode.FileStat;
    try {
      stat = await vscode.workspace.fs.stat(uri);
    } catch {
      await store.remove(key);
      return false;
    }
    if (stat.type & vscode.FileType.Directory) {
      // A folder appeared (moved in, checked out): its files come with a full sync.
      this.fullSyncWanted = true;
      return false;
    }
    if (stat.size > maxBytes) {
      this.skipped.tooLarge++;
      await store.remove(key);
      return false;
    }
    const known = store.files.get(key);
    if (known && known.size === stat.size && known.mtime === stat.mtime) return true;
    const isNew = !known;
    const maxFiles = this.services.settings().codebase.maxFiles;
    if (isNew && store.files.size + batch.newFiles >= maxFiles) {
      this.skipped.overLimit++;
      return false;
    }
    let bytes: Uint8Array;
    try {
      bytes = await vscode.workspace.fs.readFile(uri);
    } catch {
      await store.remove(key);
      return false;
    }
    const hash = createHash('sha256').update(bytes).digest('hex');
    if (known && known.hash === hash) {
      // Touched, not changed: remember the new time in memory (it is rechecked by hash next time).
      known.mtime = stat.mtime;
      known.size = stat.size;
      return true;
    }
    const text = decodeText(bytes);
    if (text === undefined) {
      this.skipped.binary++;
      await store.remove(key);
      return false;
    }
    const path = vscode.workspace.asRelativePath(uri, false);
    const chunks = chunkText(text);
    if (chunks.length === 0) {
      await store.remove(key);
      return false;
    }
    const dims = store.dims || 1_536;
    if ((store.chunks + batch.newChunks + chunks.length) * dims * 4 > MAX_VECTOR_BYTES) {
      this.skipped.overLimit++;
      return false;
    }
    await batch.add({ key, path, hash, size: stat.size, mtime: stat.mtime, chunks }, isNew);
    return true;
  }

  private check(run: Run): void {
    if (run.token.isCancellationRequested) throw new Stop('cancelled');
    if (this.paused) throw new Stop('paused');
  }

  /** A getter, so that TypeScript does not narrow the state across awaits. */
  private get paused(): boolean {
    return this.state === 'paused';
  }

  /** One embeddings request, held to the daily cap and recorded in the spend. */
  async embed(input: string[], purpose: string, signal: AbortSignal): Promise<EmbedResult> {
    const model = this.services.settings().codebase.model;
    const spend = this.services.spend;
    const promptChars = input.reduce((sum, text) => sum + text.length, 0);
    if (!(await spend.allowsQuietly({ model, promptChars, maxTokens: 0, messages: 0, purpose })))
      throw new OverCap();
    await this.localGatewayStarted(signal);
    const client = await this.services.client();
    const result = await client.embed({ model, input }, signal);
    if (result.meta) this.record(result.meta);
    else this.services.balanceMayHaveChanged();
    return result;
  }

  /** While the bundled gateway starts (with VS Code), requests wait for it rather than fail. */
  private async localGatewayStarted(signal: AbortSignal): Promise<void> {
    const gateway = this.services.localGateway;
    if (!this.services.settings().usesLocalGateway || gateway.state !== 'starting') return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        subscription.dispose();
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, 60_000);
      const subscription = gateway.onDidChangeState((state) => {
        if (state !== 'starting') done();
      });
      signal.addEventListener('abort', done);
    });
  }

  private record(meta: ReplyMeta): void {
    this.costMicros += toMicros(meta.cost);
    this.currency = meta.currency;
    this.services.spend.record(meta.cost, meta.currency);
    this.services.learnBalance(meta.balance, meta.currency);
  }

  /** The first answer sets the index's dimension; another one later means a rebuild. */
  async acceptDims(store: IndexStore, dims: number): Promise<void> {
    if (store.dims === dims) return;
    if (store.dims === 0 || store.files.size === 0) {
      await store.clear(dims);
      return;
    }
    this.services.log.warn(
      `Codebase index: the embeddings model now answers ${dims} dimensions instead of ${store.dims}; rebuilding the index.`,
    );
    await store.clear(dims);
    throw new Stop('rebuild');
  }

  private summary(): string {
    const s = this.status();
    const left = Object.entries(s.skipped)
      .filter(([, n]) => n > 0)
      .map(([why, n]) => `${n} ${why === 'overLimit' ? 'over the limits' : why}`);
    return `${s.files} files, ${s.chunks} chunks of ${s.dims} dimensions (${(s.vectorBytes / 1_048_576).toFixed(1)} MB in memory)${left.length ? `; left out: ${left.join(', ')}` : ''}`;
  }

  private setState(state: IndexState, detail?: string): void {
    this.state = state;
    this.detail = detail;
    if (state !== 'indexing') this.progress = undefined;
    this.fire();
  }

  private fire(): void {
    this.changed.fire(this.status());
  }

  dispose(): void {
    this.stopWatching();
    this.runCancel?.cancel();
    void this.store?.close();
    this.disposables.forEach((d) => d.dispose());
    this.changed.dispose();
  }
}

/** Collects changed files and embeds their chunks in requests of BATCH_INPUTS / BATCH_CHARS. */
class Batcher {
  private files: PendingFile[] = [];
  private inputs = 0;
  private chars = 0;
  newFiles = 0;
  newChunks = 0;

  constructor(
    private readonly index: CodebaseIndex,
    private readonly store: IndexStore,
    private readonly run: Run,
  ) {}

  async add(file: PendingFile, isNew: boolean): Promise<void> {
    this.files.push(file);
    if (isNew) this.newFiles++;
    this.newChunks += file.chunks.length;
    this.inputs += file.chunks.length;
    for (const chunk of file.chunks) this.chars += chunk.text.length + file.path.length + 16;
    if (this.inputs >= BATCH_INPUTS || this.chars >= BATCH_CHARS) await this.flush();
  }

  /** Embeds everything collected and writes each file's record. */
  async flush(): Promise<void> {
    const files = this.files;
    this.files = [];
    this.inputs = this.chars = this.newFiles = this.newChunks = 0;
    if (files.length === 0) return;
    const inputs = files.flatMap((file) => file.chunks.map((c) => embeddingInput(file.path, c)));
    const vectors: Float32Array[] = [];
    for (let at = 0; at < inputs.length;) {
      let end = at;
      let chars = 0;
      while (
        end < inputs.length &&
        end - at < BATCH_INPUTS &&
        (end === at || chars + inputs[end]!.length <= BATCH_CHARS)
      )
        chars += inputs[end++]!.length;
      if (this.run.token.isCancellationRequested) throw new Stop('cancelled');
      const result = await this.index.embed(
        inputs.slice(at, end),
        'Codebase indexing',
        this.run.signal,
      );
      vectors.push(...result.vectors);
      at = end;
    }
    const dims = vectors[0]!.length;
    if (vectors.some((v) => v.length !== dims)) throw new Error('the embeddings differ in length');
    await this.index.acceptDims(this.store, dims);
    let next = 0;
    for (const file of files) {
      const lines = new Uint32Array(file.chunks.length * 2);
      const packed = new Float32Array(file.chunks.length * dims);
      file.chunks.forEach((chunk, i) => {
        lines[2 * i] = chunk.startLine;
        lines[2 * i + 1] = chunk.endLine;
        packed.set(normalize(vectors[next++]!), i * dims);
      });
      const record: IndexedFile = {
        key: file.key,
        hash: file.hash,
        size: file.size,
        mtime: file.mtime,
        lines,
        vectors: packed,
      };
      await this.store.put(record);
    }
    await this.store.flush();
  }
}

/** A file's lines as they are now: its open editor's text, else the file on disk. */
async function currentLines(uri: vscode.Uri): Promise<string[] | undefined> {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open) return open.getText().split('\n');
  try {
    const text = decodeText(await vscode.workspace.fs.readFile(uri));
    return text?.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  } catch {
    return undefined;
  }
}
