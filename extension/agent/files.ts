// Reading and writing workspace files for the agent: what the user sees (an editor's unsaved text
// wins over the disk), bounded in size, text only.
import * as vscode from 'vscode';

/** Files larger than this are neither read whole nor edited (read ranges and search instead). */
export const MAX_FILE_BYTES = 2_000_000;

export type FileText =
  | { ok: true; text: string; exists: true; dirty: boolean }
  | { ok: true; exists: false }
  | { ok: false; reason: string };

export async function readWorkspaceText(uri: vscode.Uri, display: string): Promise<FileText> {
  const open = vscode.workspace.textDocuments.find(
    (d) => d.uri.scheme === 'file' && d.uri.fsPath === uri.fsPath,
  );
  if (open?.isDirty) return { ok: true, exists: true, text: open.getText(), dirty: true };
  let stat: vscode.FileStat;
  try {
    stat = await vscode.workspace.fs.stat(uri);
  } catch {
    return { ok: true, exists: false };
  }
  if (stat.type & vscode.FileType.Directory)
    return { ok: false, reason: `${display} is a folder (use list_folder)` };
  if (stat.size > MAX_FILE_BYTES)
    return {
      ok: false,
      reason: `${display} is too large (${stat.size} bytes; the limit is ${MAX_FILE_BYTES}); use search to find the part you need`,
    };
  const bytes = await vscode.workspace.fs.readFile(uri);
  if (bytes.subarray(0, 8_000).includes(0))
    return { ok: false, reason: `${display} is a binary file` };
  return { ok: true, exists: true, text: new TextDecoder().decode(bytes), dirty: false };
}

/** Writes a file (making its folders); an open editor of it shows the new text. */
export async function writeWorkspaceFile(uri: vscode.Uri, bytes: Uint8Array): Promise<void> {
  await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
  await vscode.workspace.fs.writeFile(uri, bytes);
}
