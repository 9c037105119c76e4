// Add Model Provider, Manage Model Providers, Edit and Remove: the local gateway's upstreams.
// Each command takes its answers as an argument too (scripts and the extension-host tests);
// without one it asks in quick picks and input boxes. A change is saved (the list in global
// state, a key in SecretStorage) and the running local gateway restarts with it.
import * as vscode from 'vscode';
import { catalogueModel } from '../../gateway/catalogue/catalogue.js';
import {
  isProviderKindId,
  LOCAL_PROVIDER_KINDS,
  PROVIDER_KINDS,
  providerKind,
  type ProviderKindId,
} from '../../gateway/catalogue/kinds.js';
import { TIER_IDS, type TierId } from '../../gateway/catalogue/tiers.js';
import { normalizeBaseUrl } from '../baseUrl.js';
import { listModels, ListingError, probeLocal } from '../providers/listing.js';
import {
  MAX_PROVIDERS,
  type ProviderEntry,
  type ProviderSet,
  type UserPrice,
} from '../providers/store.js';
import {
  chatModels,
  defaultTiers,
  TIER_LABELS,
  withCataloguePrices,
  type TierMap,
} from '../providers/tiers.js';
import type { Services } from '../services.js';
import { restartLocalGateway } from './localGateway.js';
import { showToolEnvironment } from './toolEnvironment.js';

/** What a script or test gives Add Model Provider instead of answering its questions. */
export interface AddProviderArgs {
  kind: ProviderKindId;
  /** The API root; a local kind's default is its configured loopback port, a hosted kind's its own. */
  baseUrl?: string;
  apiKey?: string;
  /** Tier → model; missing tiers take the suggested defaults. */
  tiers?: TierMap;
  /** The built-in offline engine after every provider (default: as it was; off for the first provider). */
  offlineFallback?: boolean;
  /** Prices (wallet currency per million tokens) of mapped models the catalogue lacks; the others are served unpriced. */
  prices?: Record<string, UserPrice>;
}

export interface ProviderChange {
  providers: ProviderSet;
  /** The provider added or edited. */
  provider?: ProviderEntry;
  /** Its models as the provider listed them. */
  models?: string[];
  /** Whether the running local gateway restarted with the change. */
  restarted: boolean;
}

export interface EditProviderArgs {
  id: string;
  tiers?: TierMap;
  apiKey?: string;
  /** New place in the failover order (0 = first). */
  position?: number;
  offlineFallback?: boolean;
}

const LOCAL_PORT_SETTING: Partial<Record<ProviderKindId, string>> = {
  ollama: 'modelProviders.ollamaPort',
  lmstudio: 'modelProviders.lmStudioPort',
};

/** The model-provider commands, by id. */
export function providerCommands(
  services: Services,
): Record<string, (...args: never[]) => unknown> {
  return {
    'aihub.addModelProvider': addModelProvider(services),
    'aihub.manageModelProviders': manageModelProviders(services),
    'aihub.editModelProvider': editModelProvider(services),
    'aihub.removeModelProvider': removeModelProvider(services),
    'aihub.showToolEnvironment': showToolEnvironment(services),
  };
}

/** The loopback root a local kind is looked for at: its default port, or the setting's. */
export function localRoot(kind: ProviderKindId): string | undefined {
  const info = providerKind(kind);
  const setting = LOCAL_PORT_SETTING[kind];
  if (info.local_port === null || !setting) return undefined;
  const port = vscode.workspace.getConfiguration('aihub').get<number>(setting, info.local_port);
  const valid = Number.isInteger(port) && port > 0 && port < 65536 ? port : info.local_port;
  return `http://127.0.0.1:${valid}/v1`;
}

export function addModelProvider(services: Services) {
  return async (args?: AddProviderArgs): Promise<ProviderChange | undefined> => {
    const current = services.providers.get();
    if (current.providers.length >= MAX_PROVIDERS) {
      void vscode.window.showErrorMessage(
        `AIHub: at most ${MAX_PROVIDERS} model providers; remove one first.`,
      );
      return undefined;
    }
    const chosen = args ? fromArgs(args) : await askProvider();
    if (!chosen) return undefined;
    let models: string[];
    try {
      models = await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `AIHub: listing ${providerKind(chosen.kind).label}'s models`,
        },
        () => listModels(chosen.kind, chosen.baseUrl, chosen.apiKey),
      );
    } catch (error) {
      const message = error instanceof ListingError ? error.message : String(error);
      void vscode.window.showErrorMessage(`AIHub: could not list the models: ${message}`);
      return undefined;
    }
    const suggested = defaultTiers(withCataloguePrices(chosen.kind, models));
    const tiers = args
      ? { ...suggested, ...args.tiers }
      : await askTiers(chosen.kind, models, suggested);
    if (!tiers || Object.keys(tiers).length === 0) return undefined;
    const prices = args ? args.prices : await askPrices(chosen.kind, tiers);
    if (prices === null) return undefined;
    const offlineFallback =
      args?.offlineFallback ??
      (current.providers.length === 0 && !args
        ? await askOfflineFallback()
        : current.offlineFallback);
    if (offlineFallback === undefined) return undefined;

    const provider: ProviderEntry = {
      id: services.providers.newId(chosen.kind),
      kind: chosen.kind,
      label: providerKind(chosen.kind).label,
      baseUrl: chosen.baseUrl,
      hasKey: chosen.apiKey !== undefined && chosen.apiKey !== '',
      tiers,
      ...(prices && Object.keys(prices).length ? { prices } : {}),
    };
    const next = { providers: [...current.providers, provider], offlineFallback };
    const keys = provider.hasKey ? { [provider.id]: chosen.apiKey! } : {};
    const change = await apply(services, next, keys);
    void vscode.window.showInformationMessage(
      `AIHub: ${provider.label} added${next.providers.length > 1 ? ` (#${next.providers.length} in the failover order)` : ''}. ${describeTiers(tiers)}`,
    );
    return { ...change, provider, models };
  };
}

export function editModelProvider(services: Services) {
  return async (args?: EditProviderArgs): Promise<ProviderChange | undefined> => {
    const current = services.providers.get();
    const id = args?.id ?? (await pickProvider(current, 'Edit which provider?'))?.id;
    const index = current.providers.findIndex((p) => p.id === id);
    if (index < 0) return undefined;
    const existing = current.providers[index]!;
    let edited: ProviderEntry = { ...existing };
    const keys: Record<string, string> = {};
    const given =
      args !== undefined &&
      (args.tiers ?? args.apiKey ?? args.position ?? args.offlineFallback) !== undefined;
    if (given) {
      if (args!.tiers) edited.tiers = { ...edited.tiers, ...args!.tiers };
      if (args!.apiKey) {
        keys[edited.id] = args!.apiKey;
        edited.hasKey = true;
      }
    } else {
      const asked = await askEdit(services, existing);
      if (!asked) return undefined;
      edited = asked.provider;
      Object.assign(keys, asked.keys);
      if (asked.move !== undefined) args = { id: existing.id, position: index + asked.move };
    }
    const providers = current.providers.filter((p) => p.id !== edited.id);
    const position = Math.max(0, Math.min(providers.length, args?.position ?? index));
    providers.splice(position, 0, edited);
    const next = {
      providers,
      offlineFallback: args?.offlineFallback ?? current.offlineFallback,
    };
    return { ...(await apply(services, next, keys)), provider: edited };
  };
}

export function removeModelProvider(services: Services) {
  return async (idArgument?: unknown): Promise<ProviderChange | undefined> => {
    const current = services.providers.get();
    const id =
      typeof idArgument === 'string'
        ? idArgument
        : (await pickProvider(current, 'Remove which provider?'))?.id;
    const gone = current.providers.find((p) => p.id === id);
    if (!gone) return undefined;
    if (typeof idArgument !== 'string') {
      const sure = await vscode.window.showWarningMessage(
        `Remove ${gone.label} (${gone.baseUrl}) and its key?`,
        { modal: true },
        'Remove',
      );
      if (sure !== 'Remove') return undefined;
    }
    const next = {
      providers: current.providers.filter((p) => p.id !== gone.id),
      offlineFallback: current.offlineFallback,
    };
    return apply(services, next, {});
  };
}

/** The list in order, with the offline engine's switch and Add; a provider opens its Edit menu. */
export function manageModelProviders(services: Services) {
  return async (): Promise<void> => {
    const current = services.providers.get();
    type Item = vscode.QuickPickItem & { run: () => Thenable<unknown> };
    const items: Item[] = [
      ...current.providers.map((p, i) => ({
        label: `${i + 1}. ${p.label}`,
        description: p.baseUrl,
        detail: describeTiers(p.tiers),
        run: () => editModelProvider(services)({ id: p.id }),
      })),
      {
        label: '$(add) Add Model Provider…',
        run: () => addModelProvider(services)(),
      },
      {
        label: `Offline engine as the last resort: ${current.offlineFallback ? 'on' : 'off'}`,
        description: `turn it ${current.offlineFallback ? 'off' : 'on'}`,
        run: () => apply(services, { ...current, offlineFallback: !current.offlineFallback }, {}),
      },
    ];
    const picked = await vscode.window.showQuickPick(items, {
      title: 'AIHub: Model Providers (failover order)',
      placeHolder: current.providers.length
        ? 'A tier tries the first provider, then the next'
        : 'No provider yet: the built-in offline engine answers',
    });
    await picked?.run();
  };
}

/** Saves the set (and keys), restarts the running local gateway with it, refreshes the model lists. */
async function apply(
  services: Services,
  next: ProviderSet,
  keys: Record<string, string>,
): Promise<ProviderChange> {
  await services.providers.save(next, keys);
  const restarted = await restartLocalGateway(services);
  return { providers: services.providers.get(), restarted };
}

function fromArgs(
  args: AddProviderArgs,
): { kind: ProviderKindId; baseUrl: string; apiKey?: string } | undefined {
  if (!isProviderKindId(String(args.kind))) throw new Error(`unknown provider kind ${args.kind}`);
  const baseUrl = args.baseUrl ?? localRoot(args.kind) ?? providerKind(args.kind).base_url;
  if (!baseUrl) throw new Error(`${args.kind} needs a baseUrl`);
  return { kind: args.kind, baseUrl, ...(args.apiKey ? { apiKey: args.apiKey } : {}) };
}

/** Kind (local servers that answer first), URL when needed, key when needed. */
async function askProvider(): Promise<
  { kind: ProviderKindId; baseUrl: string; apiKey?: string } | undefined
> {
  const found = await localServers();
  const picked = await vscode.window.showQuickPick<KindItem>(kindItems(found), {
    title: 'AIHub: Add Model Provider',
    placeHolder: 'Where should the models come from?',
  });
  if (!picked?.provider) return undefined;
  const kind = picked.provider;
  const info = providerKind(kind);
  let baseUrl = picked.root ?? info.base_url ?? undefined;
  if (!baseUrl) {
    const typed = await vscode.window.showInputBox({
      title: 'AIHub: OpenAI-compatible URL',
      prompt: 'The API root its chat completions are under (…/v1)',
      placeHolder: 'http://127.0.0.1:8000/v1',
      ignoreFocusOut: true,
      validateInput: (value) => {
        const normalized = normalizeBaseUrl(value);
        return normalized.ok ? undefined : normalized.problem;
      },
    });
    const normalized = typed ? normalizeBaseUrl(typed) : undefined;
    if (!normalized?.ok) return undefined;
    baseUrl = normalized.apiBase;
  }
  if (info.key === 'none') return { kind, baseUrl };
  const key = await vscode.window.showInputBox({
    title: `AIHub: ${info.label} API key`,
    prompt: `${info.key_url ? `From ${info.key_url}. ` : ''}Kept in VS Code's SecretStorage and given to the local gateway only.${info.base_url ? '' : ' Leave empty for a server without a key.'}`,
    password: true,
    ignoreFocusOut: true,
    validateInput: (value) =>
      info.base_url && value.trim() === '' ? 'The key is empty.' : undefined,
  });
  if (key === undefined) return undefined;
  return { kind, baseUrl, ...(key.trim() ? { apiKey: key.trim() } : {}) };
}

export interface LocalServer {
  kind: (typeof LOCAL_PROVIDER_KINDS)[number];
  root: string;
  /** Its models, or undefined when nothing answered in time. */
  models: string[] | undefined;
}

/** Ollama and LM Studio looked for at once on their (configured) loopback ports, each within a fraction of a second. */
export function localServers(): Promise<LocalServer[]> {
  return Promise.all(
    LOCAL_PROVIDER_KINDS.map(async (kind) => {
      const root = localRoot(kind.id)!;
      return { kind, root, models: await probeLocal(kind.id, root) };
    }),
  );
}

export type KindItem = vscode.QuickPickItem & { provider?: ProviderKindId; root?: string };

/** The local servers that answered first, then the hosted providers, then the local ones not found. */
export function kindItems(found: LocalServer[]): KindItem[] {
  const running: KindItem[] = found
    .filter((f) => f.models)
    .map((f) => ({
      label: `$(vm-running) ${f.kind.label}`,
      description: `running at ${f.root}, ${f.models!.length} model${f.models!.length === 1 ? '' : 's'}`,
      provider: f.kind.id,
      root: f.root,
    }));
  const hosted: KindItem[] = PROVIDER_KINDS.filter((k) => k.local_port === null).map((k) => ({
    label: k.label,
    description: k.base_url ?? 'any server that speaks OpenAI chat completions',
    provider: k.id,
  }));
  const absent: KindItem[] = found
    .filter((f) => !f.models)
    .map((f) => ({
      label: f.kind.label,
      description: `not answering at ${f.root}`,
      provider: f.kind.id,
      root: f.root,
    }));
  const separator = (label: string): KindItem => ({
    label,
    kind: vscode.QuickPickItemKind.Separator,
  });
  return [
    ...(running.length ? [separator('running on this machine'), ...running] : []),
    separator('hosted'),
    ...hosted,
    ...(absent.length ? [separator('local servers not found'), ...absent] : []),
  ];
}

/** Shows the suggested mapping; a tier opens the model list; "Use these" accepts. */
async function askTiers(
  kind: ProviderKindId,
  models: string[],
  suggested: TierMap,
): Promise<TierMap | undefined> {
  const tiers: TierMap = { ...suggested };
  const usable = chatModels(models.map((id) => ({ id }))).map((m) => m.id);
  for (;;) {
    type Item = vscode.QuickPickItem & { tier?: TierId };
    const accept: Item = { label: '$(check) Use these models' };
    const picked = await vscode.window.showQuickPick<Item>(
      [
        accept,
        ...TIER_IDS.map((tier) => ({
          label: TIER_LABELS[tier],
          description: tiers[tier] ?? '(not mapped)',
          detail: tiers[tier] ? priceText(kind, tiers[tier]) : undefined,
          tier,
        })),
      ],
      { title: 'AIHub: models for the tiers', placeHolder: 'Pick a tier to change its model' },
    );
    if (!picked) return undefined;
    if (!picked.tier) return tiers;
    const model = await vscode.window.showQuickPick(
      [...usable, ...models.filter((m) => !usable.includes(m))].map((id) => ({
        label: id,
        description: priceText(kind, id),
      })),
      { title: `AIHub: model for ${TIER_LABELS[picked.tier]}`, matchOnDescription: true },
    );
    if (model) tiers[picked.tier] = model.label;
  }
}

/**
 * Asks the price of each mapped model the catalogue lacks (a hosted provider's); an empty answer
 * leaves it unpriced. Null: the user cancelled.
 */
async function askPrices(
  kind: ProviderKindId,
  tiers: TierMap,
): Promise<Record<string, UserPrice> | undefined | null> {
  if (providerKind(kind).local_port !== null) return undefined;
  const prices: Record<string, UserPrice> = {};
  for (const model of new Set(Object.values(tiers))) {
    if (catalogueModel(kind, model)) continue;
    const typed = await vscode.window.showInputBox({
      title: `AIHub: ${model} is not in the model catalogue`,
      prompt:
        'Its prices per million tokens in the wallet currency, input and output ("15, 60"); leave empty to serve it unpriced (free in the wallet, marked in every answer)',
      ignoreFocusOut: true,
      validateInput: (value) =>
        value.trim() === '' || parsePricePair(value) ? undefined : 'Two numbers: input, output.',
    });
    if (typed === undefined) return null;
    const price = parsePricePair(typed);
    if (price) prices[model] = price;
  }
  return prices;
}

function parsePricePair(text: string): UserPrice | undefined {
  const parts = text
    .split(/[,\s/]+/)
    .filter(Boolean)
    .map(Number);
  if (parts.length !== 2 || parts.some((n) => !Number.isFinite(n) || n < 0 || n > 1_000_000))
    return undefined;
  return { input_per_million: parts[0]!, output_per_million: parts[1]! };
}

async function askOfflineFallback(): Promise<boolean | undefined> {
  const picked = await vscode.window.showQuickPick(
    [
      { label: 'No: an error when every provider fails', value: false },
      { label: 'Yes: the built-in offline engine answers last', value: true },
    ],
    { title: 'AIHub: keep the offline engine as the last resort?' },
  );
  return picked?.value;
}

async function askEdit(
  services: Services,
  existing: ProviderEntry,
): Promise<{ provider: ProviderEntry; keys: Record<string, string>; move?: number } | undefined> {
  const info = providerKind(existing.kind);
  const picked = await vscode.window.showQuickPick(
    [
      { label: 'Change the tiers’ models', action: 'tiers' as const },
      ...(info.key !== 'none' ? [{ label: 'Replace the key', action: 'key' as const }] : []),
      { label: 'Move up in the failover order', action: 'up' as const },
      { label: 'Move down', action: 'down' as const },
      { label: 'Remove', action: 'remove' as const },
    ],
    { title: `AIHub: ${existing.label} (${existing.baseUrl})` },
  );
  if (!picked) return undefined;
  if (picked.action === 'remove') {
    await removeModelProvider(services)(undefined);
    return undefined;
  }
  if (picked.action === 'up' || picked.action === 'down')
    return { provider: existing, keys: {}, move: picked.action === 'up' ? -1 : 1 };
  if (picked.action === 'key') {
    const key = await vscode.window.showInputBox({
      title: `AIHub: ${info.label} API key`,
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() === '' ? 'The key is empty.' : undefined),
    });
    if (!key) return undefined;
    return { provider: { ...existing, hasKey: true }, keys: { [existing.id]: key.trim() } };
  }
  const key = await services.providers.key(existing.id);
  const models = await listModels(existing.kind, existing.baseUrl, key).catch((error: unknown) => {
    void vscode.window.showErrorMessage(`AIHub: could not list the models: ${String(error)}`);
    return undefined;
  });
  if (!models) return undefined;
  const tiers = await askTiers(existing.kind, models, existing.tiers);
  return tiers ? { provider: { ...existing, tiers }, keys: {} } : undefined;
}

async function pickProvider(set: ProviderSet, title: string): Promise<ProviderEntry | undefined> {
  if (set.providers.length === 0) {
    void vscode.window.showInformationMessage('AIHub: no model provider yet.');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    set.providers.map((p, i) => ({
      label: `${i + 1}. ${p.label}`,
      description: p.baseUrl,
      id: p.id,
    })),
    { title: `AIHub: ${title}` },
  );
  return set.providers.find((p) => p.id === picked?.id);
}

function priceText(kind: ProviderKindId, model: string): string | undefined {
  if (providerKind(kind).local_port !== null) return 'local: free';
  const known = catalogueModel(kind, model);
  return known
    ? `$${known.input} in / $${known.output} out per 1M tokens`
    : 'not in the catalogue: unpriced';
}

function describeTiers(tiers: TierMap): string {
  const lite = tiers['service-ai-lite'];
  const pro = tiers['service-ai-pro-4'];
  return [lite ? `Lite: ${lite}` : '', pro ? `Pro: ${pro}` : ''].filter(Boolean).join(', ');
}
