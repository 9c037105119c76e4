// The API key lives in VS Code's SecretStorage only: never in settings, logs or webview state.
import * as vscode from 'vscode';

const API_KEY = 'aihub.apiKey';

export class ApiKeyStore implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.changed.event;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly secrets: vscode.SecretStorage) {
    this.subscription = secrets.onDidChange((event) => {
      if (event.key === API_KEY) this.changed.fire();
    });
  }

  get(): Thenable<string | undefined> {
    return this.secrets.get(API_KEY);
  }

  async set(key: string): Promise<void> {
    await this.secrets.store(API_KEY, key);
    this.changed.fire();
  }

  async clear(): Promise<void> {
    await this.secrets.delete(API_KEY);
    this.changed.fire();
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
