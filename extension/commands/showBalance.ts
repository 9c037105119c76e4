import * as vscode from 'vscode';
import { formatMoney } from '../chat/protocol.js';
import type { Balance } from '../client.js';
import type { Services } from '../services.js';

export function showBalance(services: Services) {
  return async (): Promise<Balance | undefined> => {
    try {
      const balance = await (await services.client()).balance(AbortSignal.timeout(15_000));
      services.learnBalance(balance.balance, balance.currency);
      const usage = balance.usage;
      const spent =
        usage?.cost !== undefined
          ? `, ${formatMoney(usage.cost, balance.currency)} spent on ${usage.requests ?? 0} requests`
          : '';
      void vscode.window
        .showInformationMessage(
          `AIHub balance: ${formatMoney(balance.balance, balance.currency)}${spent}.`,
          'Top Up',
        )
        .then((picked) => picked && vscode.commands.executeCommand('aihub.topUp'));
      return balance;
    } catch (error) {
      await services.showError(error);
      return undefined;
    }
  };
}
