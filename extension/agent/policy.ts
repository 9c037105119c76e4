// The agent's safety rules and bounds as pure functions (unit-tested): which commands run without
// asking, which paths a tool may name, which files hold secrets, and how long texts are cut.
import { minimatch } from 'minimatch';
import { isSecretPath as holdsSecrets } from '../codebase/exclude.js';

/** Templates that hold names, not values: readable. */
const SECRET_TEMPLATES = /^\.env\.(?:example|sample|template|dist)$|\.pub$/i;

const GLOB = { dot: true, nocase: true } as const;

/**
 * Whether a workspace-relative path is a secret file (.env and its kin, keys, credentials: the
 * codebase index's list) that the user has not allowed with one of the `readable` globs.
 */
export function isSecretPath(relative: string, readable: readonly string[]): boolean {
  const path = relative.replace(/\\/g, '/');
  if (!holdsSecrets(path)) return false;
  if (SECRET_TEMPLATES.test(path.split('/').at(-1) ?? '')) return false;
  return !readable.some((p) => minimatch(path, p, GLOB) || minimatch(path, `**/${p}`, GLOB));
}

/**
 * Git's own folder: neither read (its config may hold credentials in remote URLs) nor written
 * (a hook would run code later) by the agent.
 */
export function isGitInternal(relative: string): boolean {
  return relative.replace(/\\/g, '/').split('/')[0]?.toLowerCase() === '.git';
}

/**
 * Files whose edits always ask, even when the user lets the task's edits apply at once: the
 * workspace's VS Code settings and tasks (they could redirect the API key or run code).
 */
export function editAlwaysAsks(relative: string): boolean {
  const path = relative.replace(/\\/g, '/').toLowerCase();
  return path.split('/')[0] === '.vscode' || path.endsWith('.code-workspace');
}

/** Whether a path matches one of the glob patterns of a `files.exclude`-style setting. */
export function matchesAny(relative: string, patterns: readonly string[]): boolean {
  const path = relative.replace(/\\/g, '/');
  return patterns.some((p) => minimatch(path, p, GLOB) || minimatch(path, `${p}/**`, GLOB));
}

/** The patterns of a `files.exclude` / `search.exclude` value that are on (`true`, not a `when` clause). */
export function enabledPatterns(setting: unknown): string[] {
  if (typeof setting !== 'object' || setting === null) return [];
  return Object.entries(setting as Record<string, unknown>)
    .filter(([, on]) => on === true)
    .map(([pattern]) => pattern);
}

/** Characters that make a shell line more than one plain command (chains, pipes, redirects, substitutions). */
const SHELL_SYNTAX = /[;&|<>`$(){}\n\r\\]/;

/**
 * Whether a command may run without asking: it is one plain command (no chaining, piping,
 * redirecting or substitution) that equals an allow-list entry or starts with it followed by a
 * space (`npm test` allows `npm test -- --grep x`, not `npm testx` nor `npm test; rm -rf ~`).
 */
export function isAllowListed(command: string, allowList: readonly string[]): boolean {
  // The shell's syntax is looked for in the line as given (a line break separates commands too).
  if (SHELL_SYNTAX.test(command)) return false;
  const line = command.trim().replace(/\s+/g, ' ');
  if (line === '') return false;
  return allowList.some((entry) => {
    const allowed = entry.trim().replace(/\s+/g, ' ');
    return allowed !== '' && (line === allowed || line.startsWith(`${allowed} `));
  });
}

export type PathCheck = { ok: true; segments: string[] } | { ok: false; reason: string };

/**
 * A tool's path argument as segments under the workspace folder: relative, `/` or `\` separated,
 * no `..`, no drive letter or absolute path (an absolute path inside the folder is given as
 * `folder`-relative by the caller before this check).
 */
export function checkRelativePath(path: string): PathCheck {
  const trimmed = path.trim();
  if (trimmed === '' || trimmed === '.' || trimmed === './') return { ok: true, segments: [] };
  if (trimmed.includes('\0')) return { ok: false, reason: 'the path contains a NUL character' };
  if (/^([a-zA-Z]:|[\\/]|~)/.test(trimmed))
    return {
      ok: false,
      reason: 'the path is outside the workspace (use a workspace-relative path)',
    };
  const segments = trimmed.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
  if (segments.includes('..'))
    return { ok: false, reason: 'the path is outside the workspace ("..")' };
  return { ok: true, segments };
}

/**
 * The text cut to `max` characters: its start and its end with a note of what was left out in
 * the middle (a command's last lines matter as much as its first).
 */
export function clip(text: string, max: number, what = 'characters'): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.4);
  const tail = max - head;
  return `${text.slice(0, head)}\n… (${text.length - max} ${what} left out) …\n${text.slice(-tail)}`;
}

/** The text cut to `max` characters at its start only, with a note. */
export function clipEnd(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n… (${text.length - max} more characters left out)`;
}
