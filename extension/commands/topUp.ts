import * as vscode from 'vscode';
import type { Services } from '../services.js';
import { topUpAddress } from '../topUpUrl.js';

/**
 * Opens the gateway's wallet page, with the shortfall of the last refused request filled in
 * (or of the top-up URL passed as the argument); returns the address it opened.
 */
export function topUp(services: Services) {
  return async (topUpUrl?: unknown): Promise<string | undefined> => {
    const settings = services.settings();
    if (!settings.baseUrl.ok) {
      void vscode.window.showErrorMessage(`AIHub base URL: ${settings.baseUrl.problem}`);
      return undefined;
    }
    const url = topUpAddress(
      settings.baseUrl.root,
      typeof topUpUrl === 'string' ? topUpUrl : services.lastTopUpUrl(),
    );
    await vscode.env.openExternal(vscode.Uri.parse(url));
    return url;
  };
}

export function openSettings() {
  return async (): Promise<void> => {
    await vscode.commands.executeCommand('workbench.action.openSettings', '@ext:aihub.aihub');
  };
}
