import * as vscode from 'vscode';
import type { Services } from '../services.js';

/** Opens the gateway's wallet page; returns the address it opened. */
export function topUp(services: Services) {
  return async (): Promise<string | undefined> => {
    const settings = services.settings();
    if (!settings.baseUrl.ok) {
      void vscode.window.showErrorMessage(`AIHub base URL: ${settings.baseUrl.problem}`);
      return undefined;
    }
    const url = `${settings.baseUrl.root}/wallet`;
    await vscode.env.openExternal(vscode.Uri.parse(url));
    return url;
  };
}

export function openSettings() {
  return async (): Promise<void> => {
    await vscode.commands.executeCommand('workbench.action.openSettings', '@ext:aihub.aihub');
  };
}
