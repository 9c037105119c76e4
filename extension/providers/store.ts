// The model providers the local gateway is started with: an ordered list (the failover chain)
// in the extension's global state, each provider's key in SecretStorage only.
//
// Why global state and not a setting: a provider pairs a key with the URL it is sent to, and a
// setting can come from a workspace's .vscode/settings.json, so a repository could add a
// provider of its own or move a provider's URL and receive the user's key; settings sync would
// also copy the list to machines that lack the keys. Global state is this user's on this
// machine, in no file a repository carries, and the commands own every change to it.
import * as vscode from 'vscode';
import type { ProviderKindId } from '../../gateway/catalogue/kinds.js';
import { parseProviderSet, type ProviderSet } from './set.js';

export type { ProviderEntry, ProviderSet, UserPrice } from './set.js';
export { MAX_PROVIDERS } from './set.js';

const STATE_KEY = 'aihub.modelProviders';
const SECRET_PREFIX = 'aihub.modelProvider.';
export class ProviderStore implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ProviderSet>();
  /** Fired after every change the commands make (the local gateway restarts on it). */
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly state: vscode.Memento,
    private readonly secrets: vscode.SecretStorage,
  ) {}

  get(): ProviderSet {
    return parseProviderSet(this.state.get<unknown>(STATE_KEY));
  }

  get isEmpty(): boolean {
    return this.get().providers.length === 0;
  }

  /** Replaces the set; a provider's key is stored with `keys` (id → key) and removed with the provider. */
  async save(next: ProviderSet, keys: Record<string, string> = {}): Promise<void> {
    const previous = this.get();
    for (const [id, key] of Object.entries(keys)) await this.secrets.store(secretName(id), key);
    for (const gone of previous.providers)
      if (!next.providers.some((p) => p.id === gone.id))
        await this.secrets.delete(secretName(gone.id));
    await this.state.update(STATE_KEY, next);
    this.changed.fire(next);
  }

  key(id: string): Thenable<string | undefined> {
    return this.secrets.get(secretName(id));
  }

  /** A new id for a provider of this kind: `openai`, then `openai-2`... */
  newId(kind: ProviderKindId): string {
    const base = kind.replace(/[^a-z0-9-]/g, '-');
    const taken = new Set(this.get().providers.map((p) => p.id));
    if (!taken.has(base)) return base;
    for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function secretName(id: string): string {
  return `${SECRET_PREFIX}${id}.apiKey`;
}
