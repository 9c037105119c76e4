// Which workspace files the codebase index takes: listed with workspace.findFiles (so that
// files.exclude holds), then filtered by the folder's .gitignore files, aihub.codebase.exclude,
// secret names and binary extensions (see exclude.ts), sorted, and cut at aihub.codebase.maxFiles.
import * as vscode from 'vscode';
import { findFilesExclude, IgnoreRules, isBinaryPath, isSecretPath } from './exclude.js';

/** At most this many .gitignore files are read per folder. */
const MAX_GITIGNORES = 1_000;
/** findFiles is asked for at most this many paths (the filters then keep maxFiles of them). */
const MAX_LISTED = 200_000;

export interface FolderRules {
  folder: vscode.WorkspaceFolder;
  rules: IgnoreRules;
  /** For findFiles: the big directories not to walk. */
  exclude: string | undefined;
}

export interface Listing {
  files: vscode.Uri[];
  rules: FolderRules[];
  skipped: { ignored: number; secret: number; binary: number; overLimit: number };
}

/** The folder-relative path of a URI inside `folder` ('/'-separated), or undefined outside it. */
export function folderRelative(
  folder: vscode.WorkspaceFolder,
  uri: vscode.Uri,
): string | undefined {
  if (uri.scheme !== folder.uri.scheme || uri.authority !== folder.uri.authority) return undefined;
  const base = folder.uri.path.endsWith('/') ? folder.uri.path : `${folder.uri.path}/`;
  return uri.path.startsWith(base) ? uri.path.slice(base.length) : undefined;
}

/** Reads the folders' .gitignore files (and .git/info/exclude) into rules. */
export async function loadRules(
  extra: readonly string[],
  token: vscode.CancellationToken,
): Promise<FolderRules[]> {
  const out: FolderRules[] = [];
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const rules = new IgnoreRules(extra);
    const root = (await readText(vscode.Uri.joinPath(folder.uri, '.gitignore'))) ?? '';
    const info = (await readText(vscode.Uri.joinPath(folder.uri, '.git/info/exclude'))) ?? '';
    rules.addGitignore('', `${info}\n${root}`);
    const rootLines = `${info}\n${root}`.split('\n');
    const exclude = findFilesExclude([...extra, ...rootLines]);
    const nested = await vscode.workspace.findFiles(
      new vscode.RelativePattern(folder, '**/.gitignore'),
      exclude,
      MAX_GITIGNORES,
      token,
    );
    for (const uri of nested) {
      const relative = folderRelative(folder, uri);
      if (!relative || relative === '.gitignore') continue;
      const dir = relative.slice(0, -'/.gitignore'.length);
      if (rules.ignores(`${dir}/.gitignore`)) continue; // inside an ignored directory
      rules.addGitignore(dir, (await readText(uri)) ?? '');
    }
    out.push({ folder, rules, exclude });
  }
  return out;
}

/** Whether the index takes this file (its folder's rules, secrets, binaries); the reason when not. */
export function verdict(
  rules: FolderRules[],
  uri: vscode.Uri,
): 'ok' | 'outside' | 'ignored' | 'secret' | 'binary' {
  for (const { folder, rules: folderRules } of rules) {
    const relative = folderRelative(folder, uri);
    if (relative === undefined) continue;
    if (isSecretPath(relative)) return 'secret';
    if (folderRules.ignores(relative)) return 'ignored';
    if (isBinaryPath(relative)) return 'binary';
    return 'ok';
  }
  return 'outside';
}

/** The files to index, in path order, at most maxFiles. */
export async function listFiles(
  rules: FolderRules[],
  maxFiles: number,
  token: vscode.CancellationToken,
): Promise<Listing> {
  const skipped = { ignored: 0, secret: 0, binary: 0, overLimit: 0 };
  const kept: vscode.Uri[] = [];
  for (const folderRules of rules) {
    const found = await vscode.workspace.findFiles(
      new vscode.RelativePattern(folderRules.folder, '**/*'),
      folderRules.exclude,
      Math.min(MAX_LISTED, maxFiles * 4 + 1_000),
      token,
    );
    for (const uri of found) {
      const why = verdict([folderRules], uri);
      if (why === 'ok') kept.push(uri);
      else if (why !== 'outside') skipped[why]++;
    }
  }
  kept.sort((a, b) => (a.toString() < b.toString() ? -1 : a.toString() > b.toString() ? 1 : 0));
  if (kept.length > maxFiles) {
    skipped.overLimit = kept.length - maxFiles;
    kept.length = maxFiles;
  }
  return { files: kept, rules, skipped };
}

async function readText(uri: vscode.Uri): Promise<string | undefined> {
  try {
    const bytes = await vscode.workspace.fs.readFile(uri);
    return new TextDecoder().decode(bytes.subarray(0, 1024 * 1024));
  } catch {
    return undefined;
  }
}
