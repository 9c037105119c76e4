// Inline (ghost text) completions: debounced while the user types, cancelled by VS Code as soon as
// the text changes, cached per prefix (and continued from the cache while the user types what it
// already suggested), single-line or block by setting, on their own model. Every answer is billed
// by the gateway and added to the session's spend; at the daily cap they pause instead of asking.
import { createHash } from 'node:crypto';
import * as vscode from 'vscode';
import { toFailure } from '../errors.js';
import type { Services } from '../services.js';
import type { SpendTracker } from '../spend.js';
import { CompletionClientChooser, type CompletionRequest } from './completionClient.js';
import { MAX_PREFIX_CHARS, MAX_SUFFIX_CHARS, cleanCompletion } from './fim.js';

const CACHE_ENTRIES = 200;

export interface InlineStats {
  /** Requests sent to the gateway. */
  requests: number;
  /** Completions handed to VS Code to show. */
  shown: number;
  cacheHits: number;
  /** Requests skipped because the daily cap would be passed. */
  paused: number;
  /** The last request's client kind. */
  client: 'chat-fim' | 'completions' | undefined;
}

export class InlineCompletionProvider
  implements vscode.InlineCompletionItemProvider, vscode.Disposable
{
  /** Registers the provider for the schemes a workspace's files come in. */
  register(): vscode.Disposable {
    return vscode.languages.registerInlineCompletionItemProvider(
      ['file', 'untitled', 'vscode-remote', 'vscode-vfs'].map((scheme) => ({ scheme })),
      this,
    );
  }

  private readonly cache = new Map<string, string>();
  private last: { uri: string; prefix: string; suffixHead: string; text: string } | undefined;
  private readonly chooser = new CompletionClientChooser();
  readonly stats: InlineStats = {
    requests: 0,
    shown: 0,
    cacheHits: 0,
    paused: 0,
    client: undefined,
  };
  private readonly changed = new vscode.EventEmitter<InlineStats>();
  /**
   * Fired after every request and every completion shown. (Not named onDidChange: VS Code reads a
   * provider's onDidChange as "ask me again", which would loop and never let the ghost text show.)
   */
  readonly onDidUpdateStats = this.changed.event;
  private readonly configListener: vscode.Disposable;

  constructor(
    private readonly services: Services,
    private readonly spend: SpendTracker,
  ) {
    this.configListener = vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('aihub')) {
        this.cache.clear();
        this.last = undefined;
        this.chooser.forget();
      }
    });
  }

  async provideInlineCompletionItems(
    document: vscode.TextDocument,
    position: vscode.Position,
    context: vscode.InlineCompletionContext,
    token: vscode.CancellationToken,
  ): Promise<vscode.InlineCompletionItem[] | undefined> {
    const settings = this.services.settings();
    const inline = settings.inlineCompletions;
    if (!inline.enabled) return undefined;
    const offset = document.offsetAt(position);
    const text = document.getText();
    const prefix = text.slice(Math.max(0, offset - MAX_PREFIX_CHARS), offset);
    const suffix = text.slice(offset, offset + MAX_SUFFIX_CHARS);
    if (prefix.trim() === '' && suffix.trim() === '') return undefined;
    const uri = document.uri.toString();
    const suffixHead = suffix.slice(0, 200);

    const continued = this.continueLast(uri, prefix, suffixHead);
    if (continued !== undefined) return this.show(continued, position);
    const key = cacheKey(uri, inline, prefix, suffixHead);
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      this.stats.cacheHits++;
      this.remember(uri, prefix, suffixHead, cached);
      return this.show(cached, position);
    }

    // Wait for a pause in typing; VS Code cancels the token when the user types on.
    if (
      context.triggerKind === vscode.InlineCompletionTriggerKind.Automatic &&
      !(await pause(inline.debounceMs, token))
    )
      return undefined;
    if (token.isCancellationRequested) return undefined;

    const request = completionRequest(document, inline, prefix, suffix);
    const controller = new AbortController();
    const cancel = token.onCancellationRequested(() => controller.abort());
    try {
      const gateway = await this.services.client();
      const client = await this.chooser.choose(gateway, controller.signal);
      const size = client.size(request);
      const allowed = await this.spend.allowsQuietly({
        model: request.model,
        promptChars: size.chars,
        messages: size.messages,
        maxTokens: request.maxTokens,
        purpose: 'An inline completion',
      });
      if (!allowed) {
        this.stats.paused++;
        this.changed.fire(this.stats);
        return undefined;
      }
      if (token.isCancellationRequested) return undefined;
      this.stats.requests++;
      this.stats.client = client.kind;
      const answer = await client.complete(request, controller.signal);
      // Billed whether or not it is still wanted: the gateway charged for it.
      if (answer.meta) this.bill(answer.meta);
      const completion = cleanCompletion(answer.text, request);
      this.store(key, completion);
      this.changed.fire(this.stats);
      if (token.isCancellationRequested || completion === '') return undefined;
      this.remember(uri, prefix, suffixHead, completion);
      return this.show(completion, position);
    } catch (error) {
      this.logFailure(error);
      return undefined;
    } finally {
      cancel.dispose();
    }
  }
  /** Records what the gateway charged and the balance it reported. */
  private bill(meta: { cost: number; currency: string; balance: number }): void {
    this.spend.record(meta.cost, meta.currency);
    this.services.learnBalance(meta.balance, meta.currency);
  }

  /** A failed completion is logged (with advice) unless it was cancelled. */
  private logFailure(error: unknown): void {
    const failure = toFailure(error);
    if (failure.kind !== 'aborted')
      this.services.log.warn(
        `Inline completion: ${this.services.advise(error)?.message ?? failure.kind}`,
      );
  }

  /** The user typed the start of the last suggestion: the rest of it, without a request. */
  private continueLast(uri: string, prefix: string, suffixHead: string): string | undefined {
    const last = this.last;
    if (
      !last ||
      last.uri !== uri ||
      last.suffixHead !== suffixHead ||
      !prefix.startsWith(last.prefix)
    )
      return undefined;
    const typed = prefix.slice(last.prefix.length);
    if (typed === '' || !last.text.startsWith(typed) || typed.length >= last.text.length)
      return undefined;
    this.stats.cacheHits++;
    return last.text.slice(typed.length);
  }

  private remember(uri: string, prefix: string, suffixHead: string, text: string): void {
    this.last = { uri, prefix, suffixHead, text };
  }

  private store(key: string, completion: string): void {
    this.cache.delete(key);
    this.cache.set(key, completion);
    if (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
  }

  private show(text: string, position: vscode.Position): vscode.InlineCompletionItem[] {
    this.stats.shown++;
    this.changed.fire(this.stats);
    return [new vscode.InlineCompletionItem(text, new vscode.Range(position, position))];
  }

  dispose(): void {
    this.configListener.dispose();
    this.changed.dispose();
  }
}

function pause(ms: number, token: vscode.CancellationToken): Promise<boolean> {
  if (ms <= 0) return Promise.resolve(!token.isCancellationRequested);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      listener.dispose();
      resolve(!token.isCancellationRequested);
    }, ms);
    const listener = token.onCancellationRequested(() => {
      clearTimeout(timer);
      listener.dispose();
      resolve(false);
    });
  });
}

type InlineSettings = ReturnType<Services['settings']>['inlineCompletions'];

/** The cache key: the file, the model and mode, and the text around the cursor. */
function cacheKey(uri: string, inline: InlineSettings, prefix: string, suffixHead: string): string {
  return createHash('sha256')
    .update(`${uri}\0${inline.model}\0${inline.mode}\0${prefix}\0${suffixHead}`)
    .digest('base64');
}

function completionRequest(
  document: vscode.TextDocument,
  inline: InlineSettings,
  prefix: string,
  suffix: string,
): CompletionRequest {
  return {
    model: inline.model,
    prefix,
    suffix,
    languageId: document.languageId,
    fileName: document.isUntitled ? 'untitled' : vscode.workspace.asRelativePath(document.uri),
    mode: inline.mode,
    maxTokens: inline.maxTokens,
  };
}
