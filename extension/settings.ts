// Reads the aihub.* settings into one typed snapshot. The API key is never a setting.
import * as vscode from 'vscode';
import { DEFAULT_EXCLUDES } from './codebase/exclude.js';
import { isLoopbackUrl, localBaseUrl, normalizeBaseUrl, type BaseUrl } from './baseUrl.js';

export const DEFAULT_MODEL = 'service-ai-lite';
/** Not the standalone gateway's 8787: a developer running `npm start` keeps the extension's own gateway too. */
export const DEFAULT_LOCAL_GATEWAY_PORT = 8788;

export interface Settings {
  baseUrl: BaseUrl;
  /** True when the base URL is the bundled local gateway (empty setting or its loopback address). */
  usesLocalGateway: boolean;
  isLoopback: boolean;
  model: string;
  maxTokens: number;
  temperature: number;
  localGatewayPort: number;
  localGatewayAutoStart: boolean;
  /** Wallet currency units per US dollar: the model catalogue's prices converted for the local gateway. */
  exchangeRate: number;
  balanceRefreshSeconds: number;
  context: { includeActiveEditor: boolean; budgetTokens: number };
  inlineCompletions: {
    enabled: boolean;
    model: string;
    mode: 'line' | 'block';
    debounceMs: number;
    maxTokens: number;
  };
  /** Currency units per UTC day; 0 = no cap. */
  spendingCapPerDay: number;
  /** The codebase index (whether it is on is workspace state, not a setting: see codebase/index.ts). */
  codebase: {
    model: string;
    maxFiles: number;
    maxFileBytes: number;
    /** .gitignore-syntax patterns. */
    exclude: string[];
    /** Chunks @codebase adds to a message at most. */
    maxResults: number;
  };
  agent: AgentSettings;
}

export interface AgentSettings {
  /** Model requests per task. */
  maxSteps: number;
  /** max_tokens of each step's request. */
  maxTokensPerStep: number;
  commandTimeoutSeconds: number;
  /** Minutes a task may run in all (waiting for approvals included). */
  maxMinutes: number;
  /** Commands that run without asking; read from the user's settings only. */
  commandAllowList: string[];
  /** Globs of secret files the agent may read; read from the user's settings only. */
  readableSecretFiles: string[];
}

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration('aihub');
  const port = clampInt(
    config.get<number>('localGateway.port', DEFAULT_LOCAL_GATEWAY_PORT),
    1,
    65535,
    DEFAULT_LOCAL_GATEWAY_PORT,
  );
  const configured = (config.get<string>('baseUrl', '') ?? '').trim();
  const baseUrl = normalizeBaseUrl(configured === '' ? localBaseUrl(port) : configured);
  const usesLocalGateway =
    configured === '' ||
    (baseUrl.ok && baseUrl.apiBase === localBaseUrl(port)) ||
    (baseUrl.ok && baseUrl.apiBase === `http://localhost:${port}/v1`);
  return {
    baseUrl,
    usesLocalGateway,
    isLoopback: baseUrl.ok && isLoopbackUrl(baseUrl.apiBase),
    model: config.get<string>('model', DEFAULT_MODEL) || DEFAULT_MODEL,
    maxTokens: clampInt(config.get<number>('maxTokens', 1024), 1, 32_768, 1024),
    temperature: Math.min(2, Math.max(0, Number(config.get<number>('temperature', 0.2)) || 0)),
    localGatewayPort: port,
    localGatewayAutoStart: config.get<boolean>('localGateway.autoStart', true),
    // From the user's settings only: a repository's settings must not make real spending look cheap.
    exchangeRate: exchangeRate(config.inspect<number>('modelProviders.exchangeRate')?.globalValue),
    balanceRefreshSeconds: clampInt(
      config.get<number>('balanceRefreshSeconds', 300),
      30,
      86_400,
      300,
    ),
    context: {
      includeActiveEditor: config.get<boolean>('context.includeActiveEditor', true) !== false,
      budgetTokens: clampInt(config.get<number>('context.budgetTokens', 8_000), 0, 200_000, 8_000),
    },
    inlineCompletions: {
      enabled: config.get<boolean>('inlineCompletions.enabled', true) !== false,
      model: config.get<string>('inlineCompletions.model', DEFAULT_MODEL) || DEFAULT_MODEL,
      mode: config.get<string>('inlineCompletions.mode', 'line') === 'block' ? 'block' : 'line',
      debounceMs: clampInt(config.get<number>('inlineCompletions.debounceMs', 250), 0, 5_000, 250),
      maxTokens: clampInt(config.get<number>('inlineCompletions.maxTokens', 128), 1, 2_048, 128),
    },
    spendingCapPerDay: Math.max(0, Number(config.get<number>('spendingCap.perDay', 0)) || 0),
    codebase: {
      model: config.get<string>('codebase.model', DEFAULT_MODEL) || DEFAULT_MODEL,
      maxFiles: clampInt(config.get<number>('codebase.maxFiles', 5_000), 1, 50_000, 5_000),
      maxFileBytes:
        1024 * clampInt(config.get<number>('codebase.maxFileSizeKB', 256), 1, 4_096, 256),
      exclude: stringList(config.get<unknown>('codebase.exclude'), DEFAULT_EXCLUDES),
      maxResults: clampInt(config.get<number>('codebase.maxResults', 8), 1, 50, 8),
    },
    agent: {
      maxSteps: clampInt(config.get<number>('agent.maxSteps', 25), 1, 200, 25),
      maxTokensPerStep: clampInt(
        config.get<number>('agent.maxTokensPerStep', 4096),
        256,
        32_768,
        4096,
      ),
      commandTimeoutSeconds: clampInt(
        config.get<number>('agent.commandTimeoutSeconds', 120),
        1,
        3_600,
        120,
      ),
      maxMinutes: clampInt(config.get<number>('agent.maxMinutes', 30), 1, 24 * 60, 30),
      commandAllowList: userStrings(config, 'agent.commandAllowList', 200),
      readableSecretFiles: userStrings(config, 'agent.readableSecretFiles', 100),
    },
  };
}

function stringList(value: unknown, fallback: readonly string[]): string[] {
  return Array.isArray(value)
    ? value.filter((v): v is string => typeof v === 'string').slice(0, 1_000)
    : [...fallback];
}

/**
 * A list setting as the user set it (user or remote-machine settings), never a workspace's:
 * a repository must not be able to pre-approve commands or open its secrets to the model.
 */
function userStrings(config: vscode.WorkspaceConfiguration, key: string, max: number): string[] {
  const value = config.inspect<unknown>(key)?.globalValue;
  if (!Array.isArray(value)) return [];
  return value
    .filter((v): v is string => typeof v === 'string' && v.trim() !== '' && v.length <= 500)
    .slice(0, max);
}

export const DEFAULT_EXCHANGE_RATE = 88;

/** Positive, at most 1,000,000 and 6 decimals (what the gateway takes); else the default. */
function exchangeRate(value: unknown): number {
  const rate = Number(value);
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1_000_000) return DEFAULT_EXCHANGE_RATE;
  return Math.round(rate * 1_000_000) / 1_000_000;
}

function clampInt(value: unknown, min: number, max: number, fallback: number): number {
  const n = Number(value);
  if (!Number.isFinite(n)) return fallback;
  return Math.min(max, Math.max(min, Math.round(n)));
}
