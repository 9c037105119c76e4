// The balance in the status bar: updated from every reply's x_aihub, after key changes, and on a
// timer; a click opens the wallet page (or the action that fixes what is wrong).
import * as vscode from 'vscode';
import { formatMoney } from './chat/protocol.js';
import { toFailure } from './errors.js';
import { keyLimitText, keyLimitTooltip, type KeyLimitInfo } from './keyLimit.js';
import type { Services } from './services.js';

export class BalanceStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(
    'aihub.balance',
    vscode.StatusBarAlignment.Right,
    100,
  );
  private readonly disposables: vscode.Disposable[] = [];
  private timer: NodeJS.Timeout | undefined;
  private refreshing: AbortController | undefined;
  private lastBalance: { balance: number; currency: string } | undefined;
  /** The key's own limit (GET /v1/key), refreshed with the balance. */
  private keyLimit: KeyLimitInfo | undefined;

  constructor(private readonly services: Services) {
    this.item.name = 'AIHub Balance';
    this.disposables.push(
      services.onDidLearnBalance(({ balance, currency }) => this.showBalance(balance, currency)),
      services.spend.onDidChange(() => {
        if (this.lastBalance) this.showBalance(this.lastBalance.balance, this.lastBalance.currency);
      }),
      services.onDidStaleBalance(() => void this.refresh()),
      services.keys.onDidChange(() => void this.refresh()),
      services.localGateway.onDidChangeState((state) => {
        if (state === 'running' || state === 'stopped') void this.refresh();
      }),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration('aihub')) {
          this.schedule();
          void this.refresh();
        }
      }),
    );
    this.schedule();
    this.item.show();
  }

  get text(): string {
    return this.item.text;
  }

  async refresh(): Promise<void> {
    this.refreshing?.abort();
    const controller = new AbortController();
    this.refreshing = controller;
    const timeout = setTimeout(() => controller.abort(), 15_000);
    try {
      const client = await this.services.client();
      const [balance, key] = await Promise.all([
        client.balance(controller.signal),
        client.keyLimit(controller.signal).catch(() => undefined),
      ]);
      if (this.refreshing === controller) {
        this.keyLimit = key;
        this.showBalance(balance.balance, balance.currency);
      }
    } catch (error) {
      if (this.refreshing === controller) this.showProblem(error);
    } finally {
      clearTimeout(timeout);
    }
  }

  /** "AIHub ₹95.00 · session ₹0.0042", and "cap reached" with a warning colour once today's spend reaches the cap. */
  private showBalance(balance: number, currency: string): void {
    this.lastBalance = { balance, currency };
    const spend = this.services.spend.view();
    const session =
      spend.session > 0 ? ` · session ${formatMoney(spend.session, spend.currency)}` : '';
    const capped = spend.capReached;
    this.item.text = `${capped ? '$(warning)' : '$(credit-card)'} AIHub ${formatMoney(balance, currency)}${keyLimitText(this.keyLimit, currency)}${session}${capped ? ' · cap reached' : ''}`;
    const cap =
      spend.cap === undefined
        ? 'No daily cap (aihub.spendingCap.perDay).'
        : `Today ${formatMoney(spend.today, spend.currency)} of the ${formatMoney(spend.cap, spend.currency)} daily cap.`;
    this.item.tooltip = `AIHub balance. This session: ${formatMoney(spend.session, spend.currency)}. ${cap}${keyLimitTooltip(this.keyLimit, currency)} Click to top up.`;
    this.item.command = 'aihub.topUp';
    this.item.backgroundColor = capped
      ? new vscode.ThemeColor('statusBarItem.warningBackground')
      : undefined;
  }

  private showProblem(error: unknown): void {
    const failure = toFailure(error);
    if (failure.kind === 'aborted') return;
    const settings = this.services.settings();
    if (failure.kind === 'missingKey') {
      this.set(
        '$(key) AIHub: Set API Key',
        'No AIHub API key is set.',
        settings.usesLocalGateway ? 'aihub.startLocalGateway' : 'aihub.setApiKey',
      );
    } else if (failure.kind === 'unreachable' || failure.kind === 'timeout') {
      this.set(
        '$(debug-disconnect) AIHub: offline',
        'The AIHub gateway is not reachable. Click to start the local gateway.',
        'aihub.startLocalGateway',
      );
    } else if (failure.kind === 'http' && (failure.status === 401 || failure.status === 403)) {
      this.set('$(warning) AIHub: key rejected', failure.message, 'aihub.setApiKey');
    } else {
      this.set(
        '$(warning) AIHub',
        this.services.advise(error)?.message ?? 'AIHub error',
        'aihub.showBalance',
      );
    }
  }

  private set(text: string, tooltip: string, command: string): void {
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.command = command;
  }

  private schedule(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = setInterval(
      () => void this.refresh(),
      this.services.settings().balanceRefreshSeconds * 1000,
    );
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    this.refreshing?.abort();
    this.disposables.forEach((d) => d.dispose());
    this.item.dispose();
  }
}
