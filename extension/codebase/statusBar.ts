// The codebase index in the status bar (only while indexing is on for the workspace): files done
// of total while it indexes, the size when ready, "paused" with the reason; a click opens the
// index's menu (Index now or Resume, Rebuild, Turn off and delete).
import * as vscode from 'vscode';
import { formatMoney } from '../chat/protocol.js';
import type { CodebaseIndex, CodebaseStatus } from './index.js';

export class CodebaseStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(
    'aihub.codebaseIndex',
    vscode.StatusBarAlignment.Right,
    98,
  );
  private readonly subscription: vscode.Disposable;

  constructor(index: CodebaseIndex) {
    this.item.name = 'AIHub Codebase Index';
    this.item.command = 'aihub.codebaseIndexMenu';
    this.subscription = index.onDidChange((status) => this.update(status));
    this.update(index.status());
  }

  get text(): string {
    return this.item.text;
  }

  private update(status: CodebaseStatus): void {
    if (status.state === 'off') {
      this.item.hide();
      return;
    }
    const size = `${status.files.toLocaleString('en-US')} files, ${status.chunks.toLocaleString('en-US')} chunks`;
    const lines = [
      `AIHub codebase index (${status.model}): ${size}`,
      `${status.dims} dimensions, ${(status.vectorBytes / 1_048_576).toFixed(1)} MB in memory, ${(status.diskBytes / 1_048_576).toFixed(1)} MB on disk`,
      `Embeddings this session: ${formatMoney(status.cost, status.currency)}`,
    ];
    if (status.detail) lines.push(status.detail);
    this.item.backgroundColor = undefined;
    switch (status.state) {
      case 'indexing':
      case 'starting':
        this.item.text = status.progress
          ? `$(sync~spin) Indexing ${status.progress.done}/${status.progress.total}`
          : '$(sync~spin) Indexing';
        break;
      case 'ready':
        this.item.text = `$(database) ${status.files.toLocaleString('en-US')} files indexed`;
        break;
      case 'paused':
        this.item.text = '$(debug-pause) Index paused';
        this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
        break;
      case 'untrusted':
      case 'unavailable':
        this.item.text = '$(circle-slash) No codebase index';
        break;
    }
    this.item.tooltip = lines.join('\n');
    this.item.show();
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
