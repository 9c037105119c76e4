// Turns whatever a user typed as the gateway address into the OpenAI-style API base ("…/v1")
// plus the gateway root (for pages such as /wallet). Pure: no vscode import, unit-tested.

export type BaseUrl =
  { ok: true; apiBase: string; root: string; notes: string[] } | { ok: false; problem: string };

const ENDPOINT_SUFFIXES = [
  '/chat/completions',
  '/completions',
  '/models',
  '/balance',
  '/embeddings',
  '/responses',
];
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '0.0.0.0']);

export function localBaseUrl(port: number): string {
  return `http://127.0.0.1:${port}/v1`;
}

export function isLoopbackUrl(apiBase: string): boolean {
  try {
    return (
      LOOPBACK_HOSTS.has(new URL(apiBase).hostname) || new URL(apiBase).hostname.startsWith('127.')
    );
  } catch {
    return false;
  }
}

export function normalizeBaseUrl(input: string): BaseUrl {
  const notes: string[] = [];
  let text = input.trim();
  if (text === '') return { ok: false, problem: 'The base URL is empty.' };

  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    if (!/^[\w.-]+(:\d+)?(\/.*)?$|^\[[0-9a-f:]+\](:\d+)?(\/.*)?$/i.test(text)) {
      return {
        ok: false,
        problem: `"${input.trim()}" is not a URL. Use e.g. http://127.0.0.1:8787/v1.`,
      };
    }
    const host = text.split(/[/:]/)[0]!.toLowerCase();
    const scheme =
      LOOPBACK_HOSTS.has(host) || host.startsWith('127.') || text.startsWith('[')
        ? 'http'
        : 'https';
    text = `${scheme}://${text}`;
    notes.push(`No scheme given; assumed ${scheme}://.`);
  }

  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, problem: `"${input.trim()}" is not a valid URL.` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return {
      ok: false,
      problem: `The base URL must start with http:// or https://, not ${url.protocol}//.`,
    };
  }
  if (url.username || url.password) {
    return {
      ok: false,
      problem:
        'The base URL contains credentials. Remove them and use "AIHub: Set API Key" instead.',
    };
  }
  if (url.search || url.hash) {
    notes.push('Dropped the query string and fragment from the base URL.');
    url.search = '';
    url.hash = '';
  }

  let path = url.pathname.replace(/\/+$/, '');
  for (const suffix of ENDPOINT_SUFFIXES) {
    if (path.toLowerCase().endsWith(suffix)) {
      path = path.slice(0, -suffix.length);
      notes.push(`"${suffix}" is an endpoint, not part of the base URL; it was removed.`);
      break;
    }
  }
  const v1Index = path.toLowerCase().lastIndexOf('/v1');
  if (v1Index >= 0 && (path.length === v1Index + 3 || path[v1Index + 3] === '/')) {
    if (path.length !== v1Index + 3) notes.push(`Ignored "${path.slice(v1Index + 3)}" after /v1.`);
    path = path.slice(0, v1Index + 3);
  } else {
    path = `${path}/v1`;
    notes.push('Added the missing "/v1" to the base URL.');
  }

  const origin = `${url.protocol}//${url.host}`;
  return { ok: true, apiBase: `${origin}${path}`, root: `${origin}${path.slice(0, -3)}`, notes };
}
