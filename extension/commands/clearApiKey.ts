import * as vscode from 'vscode';
import type { Services } from '../services.js';

export function clearApiKey(services: Services) {
  return async (): Promise<void> => {
    await services.keys.clear();
    void vscode.window.showInformationMessage('AIHub API key removed from this machine.');
  };
}
