// The inline completions toggle in the status bar: on, off, or paused at the daily spending cap.
import * as vscode from 'vscode';
import type { Services } from '../services.js';
import type { SpendTracker } from '../spend.js';

export class InlineStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(
    'aihub.inlineCompletions',
    vscode.StatusBarAlignment.Right,
    99,
  );
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly services: Services,
    private readonly spend: SpendTracker,
  ) {
    this.item.name = 'AIHub Inline Completions';
    this.item.command = 'aihub.toggleInlineCompletions';
    this.disposables = [
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration('aihub')) this.update();
      }),
      spend.onDidChange(() => this.update()),
    ];
    this.update();
    this.item.show();
  }

  get text(): string {
    return this.item.text;
  }

  update(): void {
    const inline = this.services.settings().inlineCompletions;
    if (!inline.enabled) {
      this.item.text = '$(circle-slash) AIHub completions off';
      this.item.tooltip = 'AIHub inline completions are off. Click to turn them on.';
      this.item.backgroundColor = undefined;
    } else if (this.spend.capReached()) {
      this.item.text = '$(warning) AIHub completions paused';
      this.item.tooltip =
        'AIHub inline completions are paused: the daily spending cap (aihub.spendingCap.perDay) is reached. Click to turn them off.';
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    } else {
      this.item.text = '$(sparkle) AIHub completions';
      this.item.tooltip = `AIHub inline completions are on (${inline.model}, ${inline.mode === 'line' ? 'single line' : 'block'}). Click to turn them off.`;
      this.item.backgroundColor = undefined;
    }
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
    this.item.dispose();
  }
}

/** Flips aihub.inlineCompletions.enabled where it is set (the workspace when it has a value there). */
export function toggleInlineCompletions() {
  return async (enable?: unknown): Promise<boolean> => {
    const config = vscode.workspace.getConfiguration('aihub');
    const next =
      typeof enable === 'boolean'
        ? enable
        : !config.get<boolean>('inlineCompletions.enabled', true);
    const target =
      config.inspect('inlineCompletions.enabled')?.workspaceValue !== undefined
        ? vscode.ConfigurationTarget.Workspace
        : vscode.ConfigurationTarget.Global;
    await config.update('inlineCompletions.enabled', next, target);
    return next;
  };
}
