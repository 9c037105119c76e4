// Where the agent's tools may look: the workspace's local folders only. A tool's path is resolved
// under a workspace folder and refused when it leaves it, by `..`, by an absolute path, or through
// a symbolic link (the real path of the file, or of its nearest existing parent, must lie inside
// the folder's real path). Secret files (.env and the like) are refused unless the user allowed them.
import { lstat, readlink, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import * as vscode from 'vscode';
import { checkRelativePath, isGitInternal, isSecretPath } from './policy.js';

export interface ResolvedPath {
  uri: vscode.Uri;
  fsPath: string;
  /** As the model and the user see it: folder-relative with `/` (prefixed by the folder's name in a multi-root workspace). */
  display: string;
  /** Relative to its folder, with `/`. */
  relative: string;
  folder: vscode.WorkspaceFolder;
}

export type Resolution = { ok: true; path: ResolvedPath } | { ok: false; reason: string };

export class WorkspaceAccess {
  constructor(private readonly readableSecrets: () => readonly string[]) {}

  /** The workspace's folders on the local file system (the agent works on those only). */
  folders(): vscode.WorkspaceFolder[] {
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
  }

  /** Resolves a tool's path argument; `purpose` words the secret-file refusal. */
  async resolve(raw: string, purpose: 'read' | 'write' | 'list' = 'read'): Promise<Resolution> {
    const folders = this.folders();
    if (folders.length === 0) return { ok: false, reason: 'no local workspace folder is open' };
    let folder = folders[0]!;
    let rest = raw.trim();
    if (isAbsolute(rest)) {
      // An absolute path is accepted only inside a folder (models sometimes echo them back).
      const inside = folders.find((f) => !relative(f.uri.fsPath, rest).startsWith('..'));
      if (!inside || isAbsolute(relative(inside.uri.fsPath, rest)))
        return { ok: false, reason: `${raw} is outside the workspace` };
      folder = inside;
      rest = relative(inside.uri.fsPath, rest);
    } else if (folders.length > 1) {
      const first = rest.split(/[\\/]/)[0];
      const named = folders.find((f) => f.name === first);
      if (named) {
        folder = named;
        rest = rest.slice(first!.length);
      }
    }
    const checked = checkRelativePath(rest);
    if (!checked.ok) return { ok: false, reason: `${raw}: ${checked.reason}` };
    const fsPath = join(folder.uri.fsPath, ...checked.segments);
    const real = await realPathOfNearest(fsPath);
    const root = await realpath(folder.uri.fsPath).catch(() => folder.uri.fsPath);
    if (real === undefined)
      return { ok: false, reason: `${raw} leads through a cycle of symbolic links` };
    if (real !== root && !real.startsWith(root.endsWith(sep) ? root : root + sep))
      return {
        ok: false,
        reason: `${raw} is outside the workspace (it leads through a symbolic link to ${real})`,
      };
    const rel = checked.segments.join('/');
    const display = folders.length > 1 ? `${folder.name}/${rel}` : rel || '.';
    if (purpose !== 'list' && isGitInternal(rel))
      return {
        ok: false,
        reason: `${display} is inside git's own folder, which the agent does not ${purpose}`,
      };
    if (purpose !== 'list' && rel && isSecretPath(rel, this.readableSecrets()))
      return {
        ok: false,
        reason: `${display} may hold secrets, so the agent does not ${purpose === 'write' ? 'write' : 'read'} it (the user can allow it with the setting aihub.agent.readableSecretFiles)`,
      };
    return {
      ok: true,
      path: { uri: vscode.Uri.file(fsPath), fsPath, display, relative: rel, folder },
    };
  }

  isSecret(relativePath: string): boolean {
    return isSecretPath(relativePath, this.readableSecrets());
  }
}

/**
 * The real path of `path`, or of its nearest existing parent with the rest appended (a new file);
 * a dangling symbolic link is followed to its target. Undefined for a link cycle.
 */
async function realPathOfNearest(path: string): Promise<string | undefined> {
  const missing: string[] = [];
  let current = path;
  for (let hops = 0; hops < 64; hops++) {
    try {
      return join(await realpath(current), ...[...missing].reverse());
    } catch {
      const link = await lstat(current).then(
        (s) => s.isSymbolicLink(),
        () => false,
      );
      if (link) {
        current = resolve(dirname(current), await readlink(current));
        continue;
      }
      const parent = dirname(current);
      if (parent === current) return path;
      missing.push(basename(current));
      current = parent;
    }
  }
  return undefined;
}
