// What the translations share about tools a client sends that are not plain functions: how a
// warning names one (client text, bounded), and the chat name of a namespaced function.
import { createHash } from 'node:crypto';

/** A client-given name or type, quoted in a warning: bounded, printable. */
export function quoted(value: unknown): string {
  return String(value)
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 80);
}

/** Chat completions function names: `^[a-zA-Z0-9_-]{1,64}$` (OpenAI's rule, which others follow). */
const CHAT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The chat function name of `name` in `namespace`: `<namespace>__<name>`, the convention MCP
 * clients use; when that is not a valid chat name (too long, other characters), a shortened
 * form with a hash of both, so the same pair always gets the same name.
 */
export function flatName(namespace: string, name: string): string {
  const joined = `${namespace}__${name}`;
  if (CHAT_NAME.test(joined)) return joined;
  const hash = createHash('sha256').update(`${namespace}\0${name}`).digest('hex').slice(0, 8);
  return `${joined.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 55)}_${hash}`;
}
