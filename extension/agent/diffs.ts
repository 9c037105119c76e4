// Shows an agent edit as a diff: the file as it is against the file with the change (a read-only
// virtual document), opened while the edit waits for approval and on "Open Diff" afterwards. The
// texts of the last edits are kept in memory (bounded) for that.
import * as vscode from 'vscode';

export const AGENT_DIFF_SCHEME = 'aihub-agent';
const KEEP_EDITS = 30;
const KEEP_CHARS = 20_000_000;

interface EditTexts {
  display: string;
  /** Undefined for a new file. */
  before: string | undefined;
  after: string;
}

export class DiffPresenter implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly edits = new Map<string, EditTexts>();
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(
      AGENT_DIFF_SCHEME,
      this,
    );
  }

  /** Keeps an edit's texts under its tool call id (the oldest are dropped past the bounds). */
  remember(callId: string, texts: EditTexts): void {
    this.edits.delete(callId);
    this.edits.set(callId, texts);
    let chars = 0;
    for (const [id, kept] of [...this.edits].reverse()) {
      chars += (kept.before?.length ?? 0) + kept.after.length;
      if (chars > KEEP_CHARS || this.edits.size > KEEP_EDITS) this.edits.delete(id);
    }
  }

  has(callId: string): boolean {
    return this.edits.has(callId);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const [, callId, side] = uri.path.split('/');
    const texts = callId ? this.edits.get(callId) : undefined;
    if (!texts) return '';
    return side === 'before' ? (texts.before ?? '') : texts.after;
  }

  /**
   * Opens the diff of an edit: against the file on disk while it waits (`live`), against the text
   * it had before once applied.
   */
  async show(callId: string, file: vscode.Uri | undefined): Promise<void> {
    const texts = this.edits.get(callId);
    if (!texts) return;
    const name = texts.display.split('/').pop() || texts.display;
    const side = (which: string): vscode.Uri =>
      vscode.Uri.from({ scheme: AGENT_DIFF_SCHEME, path: `/${callId}/${which}/${name}` });
    const left = file && texts.before !== undefined ? file : side('before');
    const title =
      texts.before === undefined
        ? `${name} (new file) ↔ AIHub task edit`
        : `${name} ↔ AIHub task edit`;
    await vscode.commands.executeCommand('vscode.diff', left, side('after'), title, {
      preview: false,
      preserveFocus: true,
    });
  }

  /** Closes the diff tabs of an edit. */
  async close(callId: string): Promise<void> {
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter(
        (tab) =>
          tab.input instanceof vscode.TabInputTextDiff &&
          tab.input.modified.scheme === AGENT_DIFF_SCHEME &&
          tab.input.modified.path.startsWith(`/${callId}/`),
      );
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
  }

  dispose(): void {
    this.registration.dispose();
    this.edits.clear();
  }
}
