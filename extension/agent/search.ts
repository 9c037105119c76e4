// The agent's workspace search, done the way VS Code's own search does it: with the ripgrep that
// ships inside VS Code, the user's files.exclude and search.exclude patterns, and the ignore files
// (.gitignore, .ignore) as search.useIgnoreFiles says; symbolic links are not followed (they may
// lead outside the workspace). Where the ripgrep binary cannot be found, VS Code's findFiles
// (files.exclude and search.exclude, no ignore files) and a bounded scan stand in.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import * as vscode from 'vscode';
import { minimatch } from 'minimatch';
import { readIfFile } from './files.js';
import { enabledPatterns } from './policy.js';
import type { WorkspaceAccess } from './workspace.js';

export interface SearchRequest {
  query: string;
  kind: 'text' | 'files';
  regex: boolean;
  include?: string;
  maxResults: number;
}

export interface SearchHit {
  /** As the model sees paths (folder-relative, `/`). */
  path: string;
  /** 1-based; absent for a file-name hit. */
  line?: number;
  text?: string;
}

export interface SearchOutcome {
  hits: SearchHit[];
  /** More hits exist than were kept. */
  more: boolean;
  engine: 'ripgrep' | 'findFiles';
}

const MAX_LINE_CHARS = 300;
const MAX_MATCHES_PER_FILE = 20;
const SEARCH_TIMEOUT_MS = 20_000;
/** The fallback scan: files read at most, and their size. */
const FALLBACK_FILES = 2_000;
const FALLBACK_FILE_BYTES = 1_000_000;

let ripgrep: string | null | undefined;

/** VS Code's own ripgrep binary (as its search service finds it), or null. */
export function ripgrepPath(): string | null {
  if (ripgrep !== undefined) return ripgrep;
  const binary = process.platform === 'win32' ? 'rg.exe' : 'rg';
  // VS Code 1.13x ships @vscode/ripgrep-universal (a binary per platform); earlier builds
  // @vscode/ripgrep (one binary).
  const candidates = ['node_modules', 'node_modules.asar.unpacked'].flatMap((dir) => [
    join(
      vscode.env.appRoot,
      dir,
      '@vscode',
      'ripgrep-universal',
      'bin',
      `${process.platform}-${process.arch}`,
      binary,
    ),
    join(vscode.env.appRoot, dir, '@vscode', 'ripgrep', 'bin', binary),
  ]);
  ripgrep = candidates.find((path) => existsSync(path)) ?? null;
  return ripgrep;
}

export async function searchWorkspace(
  access: WorkspaceAccess,
  request: SearchRequest,
  signal: AbortSignal,
): Promise<SearchOutcome> {
  const folders = access.folders();
  const rg = ripgrepPath();
  const hits: SearchHit[] = [];
  let more = false;
  for (const folder of folders) {
    const prefix = folders.length > 1 ? `${folder.name}/` : '';
    const keep = (hit: SearchHit): boolean => {
      // Secret files stay out of the results (names included for text hits: their lines are secrets).
      if (access.isSecret(hit.path) && hit.line !== undefined) return true;
      if (hits.length >= request.maxResults) {
        more = true;
        return false;
      }
      hits.push({ ...hit, path: prefix + hit.path });
      return true;
    };
    if (rg) await ripgrepSearch(rg, folder, request, keep, signal);
    else await fallbackSearch(folder, request, keep, signal);
    if (more) break;
  }
  return { hits, more, engine: rg ? 'ripgrep' : 'findFiles' };
}

/** The exclusions VS Code's search applies in a folder: files.exclude and search.exclude. */
function excludes(folder: vscode.WorkspaceFolder): string[] {
  const files = vscode.workspace.getConfiguration('files', folder.uri).get('exclude');
  const search = vscode.workspace.getConfiguration('search', folder.uri).get('exclude');
  return [...new Set([...enabledPatterns(files), ...enabledPatterns(search)])];
}

function ripgrepArgs(folder: vscode.WorkspaceFolder, request: SearchRequest): string[] {
  const search = vscode.workspace.getConfiguration('search', folder.uri);
  // As VS Code's search: .gitignore holds in a folder that is not a git repository too.
  const args = [
    '--no-config',
    '--hidden',
    '--no-require-git',
    '--max-filesize',
    '1M',
    '--glob',
    '!.git',
  ];
  if (search.get<boolean>('useIgnoreFiles', true) === false) args.push('--no-ignore');
  if (search.get<boolean>('useParentIgnoreFiles', false) !== true) args.push('--no-ignore-parent');
  if (search.get<boolean>('useGlobalIgnoreFiles', false) !== true) args.push('--no-ignore-global');
  for (const pattern of excludes(folder)) args.push('--glob', `!${pattern}`);
  if (request.include) args.push('--glob', request.include);
  if (request.kind === 'files') return [...args, '--files', '.'];
  args.push('--json', '--smart-case', '--max-count', String(MAX_MATCHES_PER_FILE));
  if (!request.regex) args.push('--fixed-strings');
  return [...args, '-e', request.query, '--', '.'];
}

async function ripgrepSearch(
  rg: string,
  folder: vscode.WorkspaceFolder,
  request: SearchRequest,
  keep: (hit: SearchHit) => boolean,
  signal: AbortSignal,
): Promise<void> {
  const child = spawn(rg, ripgrepArgs(folder, request), {
    cwd: folder.uri.fsPath,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stop = (): void => void child.kill();
  const timer = setTimeout(stop, SEARCH_TIMEOUT_MS);
  signal.addEventListener('abort', stop, { once: true });
  let errors = '';
  child.stderr.on('data', (d: Buffer) => {
    if (errors.length < 2_000) errors += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const spawnFailed = new Promise<never>((_, reject) => child.on('error', reject));
  try {
    const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
    const matcher = request.kind === 'files' ? fileNameMatcher(request.query) : undefined;
    for await (const line of lines) {
      const hit = matcher ? fileHit(line, matcher) : textHit(line);
      if (hit && !keep(hit)) {
        stop();
        break;
      }
    }
    const code = await Promise.race([exited, spawnFailed]);
    signal.throwIfAborted();
    // 0: matches, 1: none, 2: some files unreadable (results still valid); a kill is not an error.
    if (code !== null && code > 2)
      throw new Error(`ripgrep failed (${code}): ${errors.trim().slice(0, 500)}`);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', stop);
  }
}

/** A ripgrep --json "match" event. */
interface RipgrepMatch {
  type?: string;
  data?: { path?: { text?: unknown }; lines?: { text?: unknown }; line_number?: unknown };
}

function textHit(line: string): SearchHit | undefined {
  let event: RipgrepMatch;
  try {
    event = JSON.parse(line) as RipgrepMatch;
  } catch {
    return undefined;
  }
  if (event.type !== 'match' || !event.data) return undefined;
  const path = event.data.path?.text;
  const text = event.data.lines?.text;
  if (typeof path !== 'string' || typeof text !== 'string') return undefined;
  return {
    path: path.replace(/^\.[\\/]/, '').replace(/\\/g, '/'),
    line: Number(event.data.line_number),
    text: shortLine(text),
  };
}

function fileNameMatcher(query: string): (path: string) => boolean {
  if (/[*?[\]{}]/.test(query)) {
    const glob = query.includes('/') ? query : `**/${query}`;
    return (path) => minimatch(path, glob, { dot: true, nocase: true });
  }
  const wanted = query.toLowerCase();
  return (path) => path.toLowerCase().includes(wanted);
}

function fileHit(line: string, matches: (path: string) => boolean): SearchHit | undefined {
  const path = line.replace(/^\.[\\/]/, '').replace(/\\/g, '/');
  return path && matches(path) ? { path } : undefined;
}

function shortLine(text: string): string {
  const line = text.replace(/\r?\n$/, '');
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
}

async function fallbackSearch(
  folder: vscode.WorkspaceFolder,
  request: SearchRequest,
  keep: (hit: SearchHit) => boolean,
  signal: AbortSignal,
): Promise<void> {
  const source = new vscode.CancellationTokenSource();
  const cancel = (): void => source.cancel();
  signal.addEventListener('abort', cancel, { once: true });
  try {
    const search = enabledPatterns(
      vscode.workspace.getConfiguration('search', folder.uri).get('exclude'),
    );
    const uris = await vscode.workspace.findFiles(
      new vscode.RelativePattern(folder, request.include ?? '**/*'),
      search.length ? `{${search.join(',')}}` : undefined,
      FALLBACK_FILES,
      source.token,
    );
    signal.throwIfAborted();
    const relativeOf = (uri: vscode.Uri): string => vscode.workspace.asRelativePath(uri, false);
    if (request.kind === 'files') {
      const matches = fileNameMatcher(request.query);
      for (const uri of uris)
        if (matches(relativeOf(uri)) && !keep({ path: relativeOf(uri) })) return;
      return;
    }
    const pattern = request.regex
      ? new RegExp(request.query, /[A-Z]/.test(request.query) ? '' : 'i')
      : undefined;
    const wanted = request.query.toLowerCase();
    const smartCase = /[A-Z]/.test(request.query);
    for (const uri of uris) {
      signal.throwIfAborted();
      const size = await stat(uri.fsPath).then(
        (info) => info.size,
        () => Infinity,
      );
      if (size > FALLBACK_FILE_BYTES) continue;
      const bytes = await readIfFile(uri.fsPath);
      if (!bytes || bytes.subarray(0, 8_000).includes(0)) continue;
      const lines = new TextDecoder().decode(bytes).split('\n');
      let inFile = 0;
      for (const [index, line] of lines.entries()) {
        const found = pattern
          ? pattern.test(line)
          : smartCase
            ? line.includes(request.query)
            : line.toLowerCase().includes(wanted);
        if (!found) continue;
        if (!keep({ path: relativeOf(uri), line: index + 1, text: shortLine(line) })) return;
        if (++inFile >= MAX_MATCHES_PER_FILE) break;
      }
    }
  } finally {
    signal.removeEventListener('abort', cancel);
    source.dispose();
  }
}
