import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as vscode from 'vscode';
import { GatewayClient } from '../client.js';
import { toFailure } from '../errors.js';
import { isHealthy, provisionLocalAccount } from '../localAccount.js';
import type { LocalGatewayLaunch } from '../localGateway.js';
import { gatewayConfig, launchEnvironment } from '../providers/launch.js';
import type { Services } from '../services.js';

const ADMIN_TOKEN = 'aihub.localGateway.adminToken';
const LOCAL_KEY = 'aihub.localGateway.apiKey';
const LOCAL_ACCOUNT_ID = 'aihub.localGateway.accountId';

export interface LocalGatewayInfo {
  apiBase: string;
  pid: number | undefined;
}

/**
 * Starts the bundled gateway and, on its first start, creates a local account and key and stores
 * the key, so that the chat works offline in one click.
 */
export function startLocalGateway(services: Services) {
  return async (options?: { silent?: boolean }): Promise<LocalGatewayInfo | undefined> => {
    const location = options?.silent
      ? vscode.ProgressLocation.Window
      : vscode.ProgressLocation.Notification;
    try {
      return await vscode.window.withProgress(
        { location, title: 'AIHub: starting the local gateway', cancellable: !options?.silent },
        (_progress, token) => start(services, token),
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      services.log.error(`Local gateway: ${message}`);
      void vscode.window
        .showErrorMessage(`AIHub local gateway: ${message}`, 'Show Log')
        .then((picked) => {
          if (picked) services.gatewayOutput.show(true);
        });
      return undefined;
    }
  };
}

export function stopLocalGateway(services: Services) {
  return async (): Promise<void> => {
    const wasRunning = services.localGateway.state !== 'stopped';
    await services.localGateway.stop();
    if (wasRunning) void vscode.window.showInformationMessage('AIHub local gateway stopped.');
  };
}

async function start(
  services: Services,
  token: vscode.CancellationToken,
): Promise<LocalGatewayInfo> {
  const { secrets, globalState } = services.context;
  const settings = services.settings();
  const port = settings.localGatewayPort;
  const root = `http://127.0.0.1:${port}`;
  const apiBase = `${root}/v1`;

  if (services.localGateway.state !== 'running') {
    if (
      !existsSync(vscode.Uri.joinPath(services.context.extensionUri, 'dist', 'gateway.js').fsPath)
    ) {
      throw new Error(
        'dist/gateway.js is missing from the extension; rebuild it with "npm run build".',
      );
    }
    if (await isHealthy(root)) {
      throw new Error(
        `another process already answers on port ${port}. Stop it, or set "aihub.localGateway.port" to a free port.`,
      );
    }
    let adminToken = await secrets.get(ADMIN_TOKEN);
    if (!adminToken) {
      adminToken = randomBytes(32).toString('hex');
      await secrets.store(ADMIN_TOKEN, adminToken);
    }
    await services.localGateway.start(port, adminToken, await providerLaunch(services), token);
    services.log.info(`Local gateway listening at ${apiBase} (pid ${services.localGateway.pid})`);
  }

  const localKey = await ensureLocalKey(
    services,
    root,
    await secrets.get(ADMIN_TOKEN),
    globalState,
  );
  if (settings.usesLocalGateway) {
    const current = await services.keys.get();
    if (current !== localKey && !(current && (await keyWorks(apiBase, root, current))))
      await services.keys.set(localKey);
  } else {
    void vscode.window
      .showInformationMessage(
        `AIHub local gateway running at ${apiBase}, but "aihub.baseUrl" points at ${settings.baseUrl.ok ? settings.baseUrl.apiBase : 'an invalid URL'}.`,
        'Use Local Gateway',
      )
      .then(async (picked) => {
        if (!picked) return;
        await vscode.workspace
          .getConfiguration('aihub')
          .update('baseUrl', '', vscode.ConfigurationTarget.Global);
        await services.keys.set(localKey);
      });
  }
  return { apiBase, pid: services.localGateway.pid };
}

/**
 * Restarts a running local gateway with the current providers (same data dir: the wallet, the
 * account and the history stay); a stopped one stays stopped and takes them at its next start.
 */
export async function restartLocalGateway(services: Services): Promise<boolean> {
  if (services.localGateway.state === 'stopped') return false;
  await services.localGateway.stop();
  return (await startLocalGateway(services)({ silent: true })) !== undefined;
}

/** Beside the gateway's data dir, in the extension's global storage. */
export function localGatewayConfigFile(context: vscode.ExtensionContext): string {
  return vscode.Uri.joinPath(context.globalStorageUri, 'local-gateway-config.json').fsPath;
}

/**
 * The providers' chat config as a file beside the gateway's data dir (0600, naming the keys'
 * environment variables only) and the keys themselves, from SecretStorage, for the child's
 * environment. No providers: no config file, the gateway's built-in defaults.
 */
async function providerLaunch(services: Services): Promise<LocalGatewayLaunch> {
  const configFile = localGatewayConfigFile(services.context);
  const set = services.providers.get();
  const config = gatewayConfig(set, services.settings().exchangeRate);
  if (!config) {
    await rm(configFile, { force: true });
    return { env: {} };
  }
  const keys: Record<string, string | undefined> = {};
  for (const provider of set.providers)
    if (provider.hasKey) keys[provider.id] = await services.providers.key(provider.id);
  await mkdir(dirname(configFile), { recursive: true, mode: 0o700 });
  await writeFile(configFile, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return { configFile, env: launchEnvironment(set, keys) };
}

/** The local account's key: stored once, re-created when the gateway no longer knows it (data wiped). */
async function ensureLocalKey(
  services: Services,
  root: string,
  adminToken: string | undefined,
  globalState: vscode.Memento,
): Promise<string> {
  const { secrets } = services.context;
  const stored = await secrets.get(LOCAL_KEY);
  if (stored && (await keyWorks(`${root}/v1`, root, stored))) return stored;
  if (!adminToken) throw new Error('the local admin token is missing.');
  let accountId = globalState.get<string>(LOCAL_ACCOUNT_ID);
  let account;
  try {
    account = await provisionLocalAccount(root, adminToken, accountId);
  } catch (error) {
    if (!accountId) throw error;
    accountId = undefined;
    account = await provisionLocalAccount(root, adminToken, undefined);
  }
  await globalState.update(LOCAL_ACCOUNT_ID, account.accountId);
  await secrets.store(LOCAL_KEY, account.apiKey);
  services.log.info(`Created the local account ${account.accountId} and its API key.`);
  return account.apiKey;
}

async function keyWorks(apiBase: string, root: string, apiKey: string): Promise<boolean> {
  try {
    await new GatewayClient({ apiBase, root, apiKey }).balance(AbortSignal.timeout(10_000));
    return true;
  } catch (error) {
    const failure = toFailure(error);
    return !(failure.kind === 'http' && (failure.status === 401 || failure.status === 403));
  }
}
