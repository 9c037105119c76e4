// What the chat sends besides the typed message: the active editor's selection (or its whole file)
// when the toggle is on, and files added with Add File to Chat, the context menus or @ mentions.
// Everything is fitted into aihub.context.budgetTokens: the active editor around its selection
// first, then the added files in the order they were added; what does not fit is trimmed (with a
// note in the prompt and in the view) or left out.
import * as vscode from 'vscode';
import type { ContextItemView, ContextView } from '../chat/protocol.js';
import { fenced } from '../codeFence.js';
import type { CodebaseHit } from '../codebase/types.js';
import type { Settings } from '../settings.js';
import { CHARS_PER_TOKEN, estimateTokens, trimAround } from './estimate.js';

/** At most this many added files (each one is read for every message). */
export const MAX_CONTEXT_FILES = 20;
/** Larger files are read only up to this size. */
const MAX_FILE_BYTES = 1024 * 1024;
const ACTIVE_ID = 'active';

export interface BuiltContext {
  /** The context block that precedes the typed message; empty when there is none. */
  prompt: string;
  /** Labels of what was sent, e.g. "sample.ts (lines 2-3)". */
  labels: string[];
  view: ContextView;
}

/** What `@codebase` found for the message: passages, or why there are none. */
export type CodebaseContext = { hits: CodebaseHit[] } | { problem: string };

interface Piece {
  id: string;
  kind: 'active' | 'file' | 'codebase';
  label: string;
  language: string;
  text: string;
  focus: { first: number; last: number } | undefined;
  detail: string;
  included: boolean;
}

export class ChatContext implements vscode.Disposable {
  private includeActiveEditor: boolean;
  private readonly files = new Map<string, vscode.Uri>();
  private lastEditor: vscode.TextEditor | undefined;
  private nextId = 1;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fired when what would be sent may have changed (editor, selection, files, toggle). */
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];
  private selectionTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly budgetTokens: () => number,
    includeActiveDefault: boolean,
  ) {
    this.includeActiveEditor = includeActiveDefault;
    this.lastEditor = usable(vscode.window.activeTextEditor);
    this.disposables.push(
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        // Focus moving to the chat view leaves no active editor: keep the last one.
        if (usable(editor)) {
          this.lastEditor = editor;
          this.changed.fire();
        }
      }),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        if (event.textEditor !== this.lastEditor) return;
        clearTimeout(this.selectionTimer);
        this.selectionTimer = setTimeout(() => this.changed.fire(), 200);
      }),
      vscode.workspace.onDidCloseTextDocument((document) => {
        if (this.lastEditor?.document === document) {
          this.lastEditor = usable(vscode.window.activeTextEditor);
          this.changed.fire();
        }
      }),
    );
  }

  /** The chat's context, with its budget and default from the aihub.context settings. */
  static forSettings(services: { settings(): { context: Settings['context'] } }): ChatContext {
    return new ChatContext(
      () => services.settings().context.budgetTokens,
      services.settings().context.includeActiveEditor,
    );
  }

  get includeActive(): boolean {
    return this.includeActiveEditor;
  }

  setIncludeActive(include: boolean): void {
    this.includeActiveEditor = include;
    this.changed.fire();
  }

  /** Adds a file; returns false when the list is full. Adding a file twice keeps one entry. */
  addFile(uri: vscode.Uri): boolean {
    for (const known of this.files.values()) if (known.toString() === uri.toString()) return true;
    if (this.files.size >= MAX_CONTEXT_FILES) return false;
    this.files.set(`file-${this.nextId++}`, uri);
    this.changed.fire();
    return true;
  }

  removeFile(id: string): void {
    if (this.files.delete(id)) this.changed.fire();
  }

  addedFiles(): vscode.Uri[] {
    return [...this.files.values()];
  }

  async view(): Promise<ContextView> {
    return (await this.build()).view;
  }

  /**
   * The context for the next message; `extra` are files mentioned in it with @path, `codebase`
   * what @codebase found (after everything else, each passage whole or not at all).
   */
  async build(extra: vscode.Uri[] = [], codebase?: CodebaseContext): Promise<BuiltContext> {
    const budget = Math.max(0, this.budgetTokens());
    const pieces: Piece[] = [];
    const active = this.activePiece();
    if (active) pieces.push(active);
    const seen = new Set<string>();
    if (active?.included && this.lastEditor) seen.add(this.lastEditor.document.uri.toString());
    const entries: Array<[string, vscode.Uri]> = [...this.files.entries()];
    extra.forEach((uri, i) => entries.push([`mention-${i}`, uri]));
    for (const [id, uri] of entries) {
      if (seen.has(uri.toString())) continue;
      seen.add(uri.toString());
      pieces.push(await filePiece(id, uri));
    }
    pieces.push(...codebasePieces(codebase, pieces));

    let remainingChars = budget * CHARS_PER_TOKEN;
    const items: ContextItemView[] = [];
    const blocks: string[] = [];
    const labels: string[] = [];
    let tokens = 0;
    for (const piece of pieces) {
      if (!piece.included) {
        items.push(itemOf(piece, estimateTokens(piece.text)));
        // Why @codebase added nothing shows with the message.
        if (piece.kind === 'codebase') labels.push(`@codebase (${piece.detail})`);
        continue;
      }
      const focus = piece.focus ?? { first: 0, last: 0 };
      // A passage @codebase found goes whole or not at all (a smaller one further down may fit).
      const fitted =
        piece.kind === 'codebase' && piece.text.length > remainingChars
          ? { text: '', firstLine: 0, lastLine: 0, totalLines: 0, trimmed: true }
          : trimAround(piece.text, focus.first, focus.last, Math.max(0, remainingChars));
      const kept = fitted.text;
      const note =
        kept === ''
          ? 'left out: the context budget is used up'
          : fitted.trimmed
            ? `trimmed to lines ${fitted.firstLine}-${fitted.lastLine} of ${fitted.totalLines}${piece.focus ? ' around the selection' : ''} to fit the context budget`
            : undefined;
      const itemTokens = estimateTokens(kept);
      items.push({ ...itemOf(piece, itemTokens), ...(note ? { note } : {}) });
      if (kept === '') continue;
      remainingChars -= kept.length;
      tokens += itemTokens;
      const where = fitted.trimmed
        ? `lines ${fitted.firstLine}-${fitted.lastLine} of ${fitted.totalLines}`
        : piece.detail;
      const noteLine = note ? `\n(Note: ${note}.)` : '';
      blocks.push(
        `\`${piece.label}\` (${piece.language}, ${where}):${noteLine}\n${fenced(kept, piece.language)}`,
      );
      labels.push(piece.kind === 'file' ? piece.label : `${piece.label} (${piece.detail})`);
    }
    if (codebase && 'hits' in codebase && !labels.some((l) => l.endsWith('via @codebase)')))
      labels.push(
        codebase.hits.length
          ? '@codebase (no passage fit in the context budget)'
          : '@codebase (nothing found)',
      );
    const prompt = blocks.length ? `Context from the editor:\n\n${blocks.join('\n\n')}` : '';
    return {
      prompt,
      labels,
      view: { includeActive: this.includeActiveEditor, items, tokens, budget },
    };
  }

  private activePiece(): Piece | undefined {
    const editor = this.lastEditor;
    if (!editor || editor.document.isClosed) return undefined;
    const { document, selection } = editor;
    const label = document.isUntitled
      ? document.uri.path
      : vscode.workspace.asRelativePath(document.uri);
    const base = {
      id: ACTIVE_ID,
      kind: 'active' as const,
      label,
      language: document.languageId,
      included: this.includeActiveEditor,
    };
    if (!selection.isEmpty) {
      const first = selection.start.line;
      const last =
        selection.end.character === 0 && selection.end.line > first
          ? selection.end.line - 1
          : selection.end.line;
      return {
        ...base,
        text: document.getText(selection),
        focus: undefined,
        detail: `lines ${first + 1}-${last + 1} selected`,
      };
    }
    return {
      ...base,
      text: document.getText(),
      focus: { first: selection.active.line, last: selection.active.line },
      detail: `whole file, ${document.lineCount} lines`,
    };
  }

  dispose(): void {
    clearTimeout(this.selectionTimer);
    this.disposables.forEach((d) => d.dispose());
    this.changed.dispose();
  }
}

function itemOf(piece: Piece, tokens: number): ContextItemView {
  return { id: piece.id, kind: piece.kind, label: piece.label, detail: piece.detail, tokens };
}

/** The pieces of @codebase's passages, leaving out files already sent whole. */
function codebasePieces(codebase: CodebaseContext | undefined, earlier: Piece[]): Piece[] {
  if (!codebase) return [];
  if ('problem' in codebase)
    return [
      {
        id: 'codebase',
        kind: 'codebase',
        label: '@codebase',
        language: 'plaintext',
        text: '',
        focus: undefined,
        detail: codebase.problem,
        included: false,
      },
    ];
  const whole = new Set(
    earlier.filter((p) => p.included && p.detail.startsWith('whole file')).map((p) => p.label),
  );
  return codebase.hits
    .filter((hit) => !whole.has(hit.path))
    .map((hit, i) => ({
      id: `codebase-${i}`,
      kind: 'codebase' as const,
      label: hit.path,
      language: languageForPath(hit.path),
      text: hit.text,
      focus: undefined,
      detail: `lines ${hit.startLine}-${hit.endLine} via @codebase`,
      included: true,
    }));
}

/** Documents that are not the user's code: output panels, Generate's and the agent's proposed changes. */
const NOT_CODE = new Set(['output', 'aihub-proposal', 'aihub-agent']);

function usable(editor: vscode.TextEditor | undefined): vscode.TextEditor | undefined {
  return editor && !NOT_CODE.has(editor.document.uri.scheme) ? editor : undefined;
}

async function filePiece(id: string, uri: vscode.Uri): Promise<Piece> {
  const label = vscode.workspace.asRelativePath(uri);
  const base = { id, kind: 'file' as const, label, focus: undefined, included: true };
  try {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (open)
      return {
        ...base,
        language: open.languageId,
        text: open.getText(),
        detail: `whole file, ${open.lineCount} lines`,
      };
    const stat = await vscode.workspace.fs.stat(uri);
    if (stat.type & vscode.FileType.Directory)
      return {
        ...base,
        language: 'plaintext',
        text: '',
        detail: 'a folder: not sent',
        included: false,
      };
    const bytes = await vscode.workspace.fs.readFile(uri);
    if (bytes.subarray(0, 8000).includes(0))
      return {
        ...base,
        language: 'plaintext',
        text: '',
        detail: 'binary: not sent',
        included: false,
      };
    const text = new TextDecoder().decode(bytes.subarray(0, MAX_FILE_BYTES));
    const lines = text.split('\n').length;
    const language = languageForPath(uri.path);
    return {
      ...base,
      language,
      text,
      detail:
        stat.size > MAX_FILE_BYTES
          ? `first ${MAX_FILE_BYTES / 1024} KB`
          : `whole file, ${lines} lines`,
    };
  } catch (error) {
    return {
      ...base,
      language: 'plaintext',
      text: '',
      detail: `unreadable: ${error instanceof Error ? error.message : String(error)}`,
      included: false,
    };
  }
}

const EXTENSION_LANGUAGES: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescriptreact',
  js: 'javascript',
  jsx: 'javascriptreact',
  mjs: 'javascript',
  cjs: 'javascript',
  py: 'python',
  rb: 'ruby',
  rs: 'rust',
  go: 'go',
  java: 'java',
  kt: 'kotlin',
  cs: 'csharp',
  c: 'c',
  h: 'c',
  cpp: 'cpp',
  hpp: 'cpp',
  cc: 'cpp',
  json: 'json',
  md: 'markdown',
  yml: 'yaml',
  yaml: 'yaml',
  sh: 'shellscript',
  css: 'css',
  html: 'html',
  sql: 'sql',
  php: 'php',
  swift: 'swift',
};

function languageForPath(path: string): string {
  const extension = /\.([\w]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
  return Object.hasOwn(EXTENSION_LANGUAGES, extension)
    ? EXTENSION_LANGUAGES[extension]!
    : 'plaintext';
}
