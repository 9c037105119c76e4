import * as vscode from 'vscode';
import { GatewayClient } from '../client.js';
import { AIHubError, toFailure } from '../errors.js';
import { formatMoney } from '../chat/protocol.js';
import type { Services } from '../services.js';

/**
 * Asks for the key in a password box (or takes it as the argument, for scripts), checks it against
 * /v1/balance, and stores it in SecretStorage. A key the gateway rejects is not stored.
 */
export function setApiKey(services: Services) {
  return async (keyArgument?: unknown): Promise<boolean> => {
    const typed =
      typeof keyArgument === 'string'
        ? keyArgument
        : await vscode.window.showInputBox({
            title: 'AIHub: Set API Key',
            prompt:
              "Paste your AIHub API key (shown once when it is created on the gateway's API Keys page).",
            password: true,
            ignoreFocusOut: true,
            validateInput: (value) => (value.trim() === '' ? 'The key is empty.' : undefined),
          });
    const key = typed?.trim();
    if (!key) return false;
    const settings = services.settings();
    if (!settings.baseUrl.ok) {
      await services.showError(
        new AIHubError({ kind: 'badBaseUrl', message: settings.baseUrl.problem }),
      );
      return false;
    }
    const client = new GatewayClient({
      apiBase: settings.baseUrl.apiBase,
      root: settings.baseUrl.root,
      apiKey: key,
    });
    try {
      const balance = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Window, title: 'AIHub: checking the key' },
        () => client.balance(AbortSignal.timeout(15_000)),
      );
      await services.keys.set(key);
      services.learnBalance(balance.balance, balance.currency);
      void vscode.window.showInformationMessage(
        `AIHub API key saved. Balance: ${formatMoney(balance.balance, balance.currency)}.`,
      );
      return true;
    } catch (error) {
      const failure = toFailure(error);
      if (failure.kind === 'unreachable' || failure.kind === 'timeout') {
        await services.keys.set(key);
        void vscode.window.showWarningMessage(
          `AIHub API key saved, but it could not be checked: the gateway at ${settings.baseUrl.apiBase} did not answer.`,
        );
        return true;
      }
      await services.showError(error);
      return false;
    }
  };
}
