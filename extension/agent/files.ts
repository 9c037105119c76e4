// Reading and writing workspace files for the agent: what the user sees (an editor's unsaved text
// wins over the disk), bounded in size, text only. The agent works on the workspace's local
// folders, which are the extension host's own file system, so Node's fs is used directly (VS Code's
// workspace.fs would make each call a round trip through the workbench in a remote window).
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as vscode from 'vscode';

/** Files larger than this are neither read whole nor edited (read ranges and search instead). */
export const MAX_FILE_BYTES = 2_000_000;

export type FileText =
  | { ok: true; text: string; exists: true; dirty: boolean }
  | { ok: true; exists: false }
  | { ok: false; reason: string };

/** The editor of a file, when one is open with unsaved changes. */
export function dirtyDocument(fsPath: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find(
    (d) => d.uri.scheme === 'file' && d.uri.fsPath === fsPath && d.isDirty,
  );
}

export async function readWorkspaceText(fsPath: string, display: string): Promise<FileText> {
  const open = dirtyDocument(fsPath);
  if (open) return { ok: true, exists: true, text: open.getText(), dirty: true };
  let info;
  try {
    info = await stat(fsPath);
  } catch {
    return { ok: true, exists: false };
  }
  if (info.isDirectory()) return { ok: false, reason: `${display} is a folder (use list_folder)` };
  if (!info.isFile()) return { ok: false, reason: `${display} is not a regular file` };
  if (info.size > MAX_FILE_BYTES)
    return {
      ok: false,
      reason: `${display} is too large (${info.size} bytes; the limit is ${MAX_FILE_BYTES}); use search to find the part you need`,
    };
  const bytes = await readFile(fsPath);
  if (bytes.subarray(0, 8_000).includes(0))
    return { ok: false, reason: `${display} is a binary file` };
  return { ok: true, exists: true, text: new TextDecoder().decode(bytes), dirty: false };
}

/** Writes a file, making its folders; an open editor of it follows the file on disk. */
export async function writeWorkspaceFile(fsPath: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dirname(fsPath), { recursive: true });
  await writeFile(fsPath, bytes);
}

/** The file's bytes, or undefined when there is no such file. */
export async function readIfFile(fsPath: string): Promise<Buffer | undefined> {
  try {
    return (await stat(fsPath)).isFile() ? await readFile(fsPath) : undefined;
  } catch {
    return undefined;
  }
}
