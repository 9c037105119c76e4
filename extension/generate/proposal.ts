// Generated code is proposed, not written: it opens as a diff of the file against the file with
// the change (a read-only virtual document), with Accept and Reject in the diff's title bar, in a
// notification and on keybindings. Accepting applies one WorkspaceEdit (one undo step) and saves
// a file that had no unsaved changes before; rejecting, or closing the diff, leaves the file as it is.
import * as vscode from 'vscode';

export const PROPOSAL_SCHEME = 'aihub-proposal';
const CONTEXT_KEY = 'aihub.proposalOpen';

interface Proposal {
  uri: vscode.Uri;
  document: vscode.TextDocument;
  range: vscode.Range;
  originalText: string;
  newText: string;
  proposedText: string;
  wasDirty: boolean;
}

export type ProposalOutcome = 'accepted' | 'rejected' | 'stale';

export class ProposalManager implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private current: Proposal | undefined;
  private counter = 0;
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly decided = new vscode.EventEmitter<ProposalOutcome>();
  readonly onDidDecide = this.decided.event;
  private readonly disposables: vscode.Disposable[];

  constructor() {
    this.disposables = [
      vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, this),
      // Closing the diff is a rejection.
      vscode.window.tabGroups.onDidChangeTabs((event) => {
        const current = this.current;
        if (current && event.closed.some((tab) => isDiffOf(tab, current.uri)))
          void this.finish('rejected', false);
      }),
    ];
  }

  get pending(): boolean {
    return this.current !== undefined;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.current && this.current.uri.toString() === uri.toString()
      ? this.current.proposedText
      : '';
  }

  /** Opens the diff of `document` with `range` replaced by `newText`. A pending proposal is rejected first. */
  async propose(
    document: vscode.TextDocument,
    range: vscode.Range,
    newText: string,
  ): Promise<void> {
    if (this.current) await this.finish('rejected', true);
    const whole = document.getText();
    const start = document.offsetAt(range.start);
    const end = document.offsetAt(range.end);
    const name = document.uri.path.split('/').pop() || 'untitled';
    const uri = vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: `/${++this.counter}/${name}` });
    this.current = {
      uri,
      document,
      range,
      newText,
      originalText: document.getText(range),
      proposedText: whole.slice(0, start) + newText + whole.slice(end),
      wasDirty: document.isDirty,
    };
    await vscode.commands.executeCommand('setContext', CONTEXT_KEY, true);
    await vscode.commands.executeCommand(
      'vscode.diff',
      document.uri,
      uri,
      `${name} ↔ AIHub proposal (Accept: Ctrl+Alt+Enter, Reject: Ctrl+Alt+Backspace)`,
      {
        preview: false,
      },
    );
    // A hint in the status bar for as long as the proposal is open (a notification would outlive it).
    const decided = new Promise<void>((resolve) => {
      const listener = this.decided.event(() => {
        listener.dispose();
        resolve();
      });
    });
    vscode.window.setStatusBarMessage(
      "$(diff) AIHub proposal: Accept Ctrl+Alt+Enter · Reject Ctrl+Alt+Backspace (or the ✓ / ✕ in the diff's title bar)",
      decided,
    );
  }

  /** Applies the proposal as one undoable edit; false when there is none or the file changed under it. */
  async accept(): Promise<ProposalOutcome | undefined> {
    const proposal = this.current;
    if (!proposal) return undefined;
    const { document, range } = proposal;
    if (document.isClosed || document.getText(range) !== proposal.originalText) {
      void vscode.window.showWarningMessage(
        'AIHub: the file changed where the code was to go; the proposal was not applied.',
      );
      await this.finish('stale', true);
      return 'stale';
    }
    const edit = new vscode.WorkspaceEdit();
    edit.replace(document.uri, range, proposal.newText);
    const applied = await vscode.workspace.applyEdit(edit);
    if (!applied) {
      void vscode.window.showWarningMessage(
        'AIHub: the editor did not accept the change (is it read-only?).',
      );
      await this.finish('stale', true);
      return 'stale';
    }
    if (!proposal.wasDirty && !document.isUntitled) await document.save();
    // The file, cursor after the new code, comes forward before the diff closes, so that the focus
    // has settled once the diff is gone.
    const editor = await vscode.window.showTextDocument(document, { preview: false });
    const start = range.start;
    const end = document.positionAt(document.offsetAt(start) + proposal.newText.length);
    editor.selection = new vscode.Selection(end, end);
    editor.revealRange(new vscode.Range(start, end));
    await this.finish('accepted', true);
    return 'accepted';
  }

  async reject(): Promise<ProposalOutcome | undefined> {
    if (!this.current) return undefined;
    await this.finish('rejected', true);
    return 'rejected';
  }

  private async finish(outcome: ProposalOutcome, closeDiff: boolean): Promise<void> {
    const proposal = this.current;
    if (!proposal) return;
    this.current = undefined;
    await vscode.commands.executeCommand('setContext', CONTEXT_KEY, false);
    if (closeDiff) {
      const tabs = vscode.window.tabGroups.all
        .flatMap((group) => group.tabs)
        .filter((tab) => isDiffOf(tab, proposal.uri));
      if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
    }
    this.decided.fire(outcome);
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
    this.changed.dispose();
    this.decided.dispose();
  }
}

function isDiffOf(tab: vscode.Tab, uri: vscode.Uri): boolean {
  return (
    tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === uri.toString()
  );
}
