// What the extension exports (vscode.extensions.getExtension('aihub.aihub').exports): read-only
// views used by the extension-host tests and by other extensions. Never exposes the key.
import type * as vscode from 'vscode';
import type { ChatEntry, ToWebview } from './chat/protocol.js';
import type { LocalGatewayState } from './localGateway.js';

export interface AIHubApi {
  chatTranscript(): readonly ChatEntry[];
  /** The messages the chat view receives, as they are sent. */
  onDidPostToChat: vscode.Event<ToWebview>;
  statusBarText(): string;
  hasApiKey(): Promise<boolean>;
  localGateway(): { state: LocalGatewayState; pid: number | undefined; apiBase: string | undefined };
}
