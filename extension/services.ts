// What the commands, the chat view and the status bar share: settings, the key store, the client
// factory, the log, the local gateway. Created once in activate and disposed with the extension.
import * as vscode from 'vscode';
import { ACTION_COMMANDS } from './actions.js';
import { ApiKeyStore } from './apiKey.js';
import { ACTION_LABELS } from './chat/protocol.js';
import { GatewayClient } from './client.js';
import { AIHubError, advise, toFailure, type Advice } from './errors.js';
import { LocalGateway } from './localGateway.js';
import { ProviderStore } from './providers/store.js';
import { readSettings, type Settings } from './settings.js';
import { SpendTracker } from './spend.js';

export class Services implements vscode.Disposable {
  readonly log: vscode.LogOutputChannel;
  readonly gatewayOutput: vscode.OutputChannel;
  readonly keys: ApiKeyStore;
  readonly localGateway: LocalGateway;
  readonly spend: SpendTracker;
  /** The model providers the local gateway runs with (keys in SecretStorage). */
  readonly providers: ProviderStore;
  private readonly balanceChanged = new vscode.EventEmitter<{
    balance: number;
    currency: string;
  }>();
  /** Fired whenever a response tells the current balance (x_aihub or /v1/balance). */
  readonly onDidLearnBalance = this.balanceChanged.event;
  private readonly balanceStale = new vscode.EventEmitter<void>();
  /** Fired when money may have moved but the new balance is not known (a stopped or failed reply). */
  readonly onDidStaleBalance = this.balanceStale.event;
  /**
   * The top-up page the last 402 named, with its shortfall; what Top Up opens until a reply
   * is paid for again (the chat view's action button carries no arguments).
   */
  private shortfallTopUpUrl: string | undefined;

  constructor(readonly context: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel('AIHub', { log: true });
    this.gatewayOutput = vscode.window.createOutputChannel('AIHub Local Gateway');
    this.keys = new ApiKeyStore(context.secrets);
    this.localGateway = new LocalGateway({
      scriptPath: vscode.Uri.joinPath(context.extensionUri, 'dist', 'gateway.js').fsPath,
      dataDir: vscode.Uri.joinPath(context.globalStorageUri, 'gateway').fsPath,
      output: this.gatewayOutput,
    });
    this.providers = new ProviderStore(context.globalState, context.secrets);
    this.spend = new SpendTracker(
      context.globalState,
      () => this.settings().spendingCapPerDay,
      async () => (await this.client()).prices(AbortSignal.timeout(10_000)),
    );
  }

  settings(): Settings {
    return readSettings();
  }

  /** A client for the configured gateway and key; throws AIHubError when either is missing or wrong. */
  async client(): Promise<GatewayClient> {
    const settings = this.settings();
    if (!settings.baseUrl.ok)
      throw new AIHubError({ kind: 'badBaseUrl', message: settings.baseUrl.problem });
    const apiKey = await this.keys.get();
    if (!apiKey) throw new AIHubError({ kind: 'missingKey' });
    return new GatewayClient({
      apiBase: settings.baseUrl.apiBase,
      root: settings.baseUrl.root,
      apiKey,
    });
  }

  learnBalance(balance: number, currency: string): void {
    this.shortfallTopUpUrl = undefined;
    this.balanceChanged.fire({ balance, currency });
  }

  balanceMayHaveChanged(): void {
    this.balanceStale.fire();
  }

  advise(error: unknown): Advice | undefined {
    const settings = this.settings();
    const apiBase = settings.baseUrl.ok ? settings.baseUrl.apiBase : '(invalid base URL)';
    const advice = advise(toFailure(error), { apiBase, isLocal: settings.usesLocalGateway });
    if (advice) this.log.warn(advice.message);
    if (advice?.topUpUrl) this.shortfallTopUpUrl = advice.topUpUrl;
    return advice;
  }

  /** The top-up page the last unpaid 402 named (with its shortfall), if any. */
  lastTopUpUrl(): string | undefined {
    return this.shortfallTopUpUrl;
  }

  /** Shows the error as a notification whose buttons run the matching commands. */
  async showError(error: unknown): Promise<Advice | undefined> {
    const advice = this.advise(error);
    if (!advice) return undefined;
    this.offer(advice);
    return advice;
  }

  /** The advice as an error notification whose buttons run the matching commands; not awaited. */
  offer(advice: Advice): void {
    void vscode.window
      .showErrorMessage(advice.message, ...advice.actions.map((a) => ACTION_LABELS[a]))
      .then((picked) => {
        const action = advice.actions.find((a) => ACTION_LABELS[a] === picked);
        if (action) void vscode.commands.executeCommand(ACTION_COMMANDS[action]);
      });
  }

  dispose(): void {
    this.localGateway.dispose();
    this.spend.dispose();
    this.providers.dispose();
    this.keys.dispose();
    this.balanceChanged.dispose();
    this.balanceStale.dispose();
    this.log.dispose();
    this.gatewayOutput.dispose();
  }
}
