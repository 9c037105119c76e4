// The model providers a developer can add (OpenAI, Anthropic, Gemini, OpenRouter, Groq,
// Mistral, DeepSeek, Ollama, LM Studio, or any OpenAI-compatible URL): where each one is, how
// its key is sent, which client protocols it speaks natively, and which part of the catalogue
// prices it. Pure data and pure functions (no I/O, no express, no SDK), so that the
// extension's bundle and the gateway's CLI read the same table.

/** How a provider's key travels on each kind of request (the engine sends it; see llm/engines/openai-compatible.ts). */
export type KeyScheme =
  /** `Authorization: Bearer <key>` on chat completions and `/models`. */
  | 'bearer'
  /** Bearer on chat completions (Anthropic's OpenAI-compatible endpoint); `x-api-key` + `anthropic-version` on Messages and `/models`. */
  | 'bearer+x-api-key'
  /** Bearer on chat completions (Google's OpenAI-compatible endpoint); `x-goog-api-key` alone on the Gemini API. */
  | 'bearer+x-goog-api-key'
  /** A local server without authentication. */
  | 'none';

/** A client protocol a target may pass through unchanged (the `protocols` of an openai-compatible engine). */
export type NativeProtocol = 'responses' | 'messages' | 'completions' | 'gemini';

export interface ProviderKind {
  readonly id: ProviderKindId;
  readonly label: string;
  /** The chat-completions API root; null when the user must give one (any OpenAI-compatible URL). */
  readonly base_url: string | null;
  readonly key: KeyScheme;
  /** The environment variable the key is read from unless the entry names another. */
  readonly default_key_env: string | null;
  /** Where the user gets a key (shown beside the key prompt). */
  readonly key_url: string | null;
  /**
   * Client protocols passed through as they came (prompt caching, thinking and the
   * protocol's own fields kept): Anthropic's Messages to an Anthropic target, the Gemini API
   * to a Gemini target, OpenAI's Responses to OpenAI.
   */
  readonly protocols: readonly NativeProtocol[];
  /** The `litellm_provider` of the catalogue's entries for this provider; null: not in it. */
  readonly catalogue: string | null;
  /** A local server: free to use (priced at zero), looked for on this port of 127.0.0.1. */
  readonly local_port: number | null;
  /** OpenAI's newer models take the output cap only as `max_completion_tokens`. */
  readonly max_tokens_field: 'max_tokens' | 'max_completion_tokens';
}

export const PROVIDER_KIND_IDS = [
  'openai',
  'anthropic',
  'gemini',
  'openrouter',
  'groq',
  'mistral',
  'deepseek',
  'ollama',
  'lmstudio',
  'openai-compatible',
] as const;
export type ProviderKindId = (typeof PROVIDER_KIND_IDS)[number];

export const OLLAMA_PORT = 11434;
export const LMSTUDIO_PORT = 1234;

const KINDS: Record<ProviderKindId, ProviderKind> = {
  openai: {
    id: 'openai',
    label: 'OpenAI',
    base_url: 'https://api.openai.com/v1',
    key: 'bearer',
    default_key_env: 'OPENAI_API_KEY',
    key_url: 'https://platform.openai.com/api-keys',
    protocols: ['responses'],
    catalogue: 'openai',
    local_port: null,
    max_tokens_field: 'max_completion_tokens',
  },
  anthropic: {
    id: 'anthropic',
    label: 'Anthropic',
    base_url: 'https://api.anthropic.com/v1',
    key: 'bearer+x-api-key',
    default_key_env: 'ANTHROPIC_API_KEY',
    key_url: 'https://console.anthropic.com/settings/keys',
    protocols: ['messages'],
    catalogue: 'anthropic',
    local_port: null,
    max_tokens_field: 'max_tokens',
  },
  gemini: {
    id: 'gemini',
    label: 'Google Gemini',
    base_url: 'https://generativelanguage.googleapis.com/v1beta/openai',
    key: 'bearer+x-goog-api-key',
    default_key_env: 'GEMINI_API_KEY',
    key_url: 'https://aistudio.google.com/apikey',
    protocols: ['gemini'],
    catalogue: 'gemini',
    local_port: null,
    max_tokens_field: 'max_tokens',
  },
  openrouter: {
    id: 'openrouter',
    label: 'OpenRouter',
    base_url: 'https://openrouter.ai/api/v1',
    key: 'bearer',
    default_key_env: 'OPENROUTER_API_KEY',
    key_url: 'https://openrouter.ai/settings/keys',
    protocols: [],
    catalogue: 'openrouter',
    local_port: null,
    max_tokens_field: 'max_tokens',
  },
  groq: {
    id: 'groq',
    label: 'Groq',
    base_url: 'https://api.groq.com/openai/v1',
    key: 'bearer',
    default_key_env: 'GROQ_API_KEY',
    key_url: 'https://console.groq.com/keys',
    protocols: [],
    catalogue: 'groq',
    local_port: null,
    max_tokens_field: 'max_tokens',
  },
  mistral: {
    id: 'mistral',
    label: 'Mistral',
    base_url: 'https://api.mistral.ai/v1',
    key: 'bearer',
    default_key_env: 'MISTRAL_API_KEY',
    key_url: 'https://console.mistral.ai/api-keys',
    protocols: [],
    catalogue: 'mistral',
    local_port: null,
    max_tokens_field: 'max_tokens',
  },
  deepseek: {
    id: 'deepseek',
    label: 'DeepSeek',
    base_url: 'https://api.deepseek.com/v1',
    key: 'bearer',
    default_key_env: 'DEEPSEEK_API_KEY',
    key_url: 'https://platform.deepseek.com/api_keys',
    protocols: [],
    catalogue: 'deepseek',
    local_port: null,
    max_tokens_field: 'max_tokens',
  },
  ollama: {
    id: 'ollama',
    label: 'Ollama',
    base_url: `http://127.0.0.1:${OLLAMA_PORT}/v1`,
    key: 'none',
    default_key_env: null,
    key_url: null,
    protocols: [],
    catalogue: null,
    local_port: OLLAMA_PORT,
    max_tokens_field: 'max_tokens',
  },
  lmstudio: {
    id: 'lmstudio',
    label: 'LM Studio',
    base_url: `http://127.0.0.1:${LMSTUDIO_PORT}/v1`,
    key: 'none',
    default_key_env: null,
    key_url: null,
    protocols: [],
    catalogue: null,
    local_port: LMSTUDIO_PORT,
    max_tokens_field: 'max_tokens',
  },
  'openai-compatible': {
    id: 'openai-compatible',
    label: 'OpenAI-compatible URL',
    base_url: null,
    key: 'bearer',
    default_key_env: null,
    key_url: null,
    protocols: [],
    catalogue: null,
    local_port: null,
    max_tokens_field: 'max_tokens',
  },
};

export function isProviderKindId(value: string): value is ProviderKindId {
  return (PROVIDER_KIND_IDS as readonly string[]).includes(value);
}

export function providerKind(id: ProviderKindId): ProviderKind {
  return KINDS[id];
}

export const PROVIDER_KINDS: readonly ProviderKind[] = PROVIDER_KIND_IDS.map((id) => KINDS[id]);

/** The local servers to look for, in the order they are offered when they answer. */
export const LOCAL_PROVIDER_KINDS: readonly ProviderKind[] = PROVIDER_KINDS.filter(
  (kind) => kind.local_port !== null,
);

/**
 * How to list a provider's models: the request to make (GET) and where the ids are in the
 * answer (`data[].id` for all of them: Anthropic's `/v1/models` and the OpenAI-compatible
 * `/models` of the others). `key` is the key itself, never written anywhere.
 */
export function modelsRequest(
  kind: ProviderKindId,
  base_url: string,
  key: string | null,
): { url: string; headers: Record<string, string> } {
  const root = base_url.replace(/\/+$/, '');
  const headers: Record<string, string> = { accept: 'application/json' };
  const scheme = KINDS[kind].key;
  if (key && scheme === 'bearer+x-api-key') {
    headers['x-api-key'] = key;
    headers['anthropic-version'] = '2023-06-01';
  } else if (key && scheme !== 'none') headers.authorization = `Bearer ${key}`;
  return { url: `${root}/models`, headers };
}

/**
 * The model ids of a `/models` answer (`{data: [{id}]}`), bounded; [] for any other shape.
 * Google's ids come as `models/<id>`; the id its APIs take is the part after it.
 */
export function modelIds(body: unknown, limit = 1_000): string[] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return [];
  const ids: string[] = [];
  for (const entry of data) {
    const raw = (entry as { id?: unknown } | null)?.id;
    const id = typeof raw === 'string' ? raw.replace(/^models\//, '') : '';
    if (id.length > 0 && id.length <= 256) ids.push(id);
    if (ids.length >= limit) break;
  }
  return ids;
}
