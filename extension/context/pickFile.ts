import * as vscode from 'vscode';

/** Files listed in the quick pick at most (the workspace may be huge). */
const MAX_PICK_FILES = 5_000;
const EXCLUDE =
  '{**/node_modules/**,**/.git/**,**/dist/**,**/out/**,**/.venv/**,**/__pycache__/**}';

/** A quick pick over the workspace's files (the open editors' files first). */
export async function pickWorkspaceFile(title: string): Promise<vscode.Uri | undefined> {
  const files = await vscode.workspace.findFiles('**/*', EXCLUDE, MAX_PICK_FILES);
  const open = new Set(
    vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .map((t) => (t.input instanceof vscode.TabInputText ? t.input.uri.toString() : '')),
  );
  const items = files
    .map((uri) => ({
      uri,
      label: vscode.workspace.asRelativePath(uri, false),
      open: open.has(uri.toString()),
    }))
    .sort((a, b) => Number(b.open) - Number(a.open) || a.label.localeCompare(b.label))
    .map(({ uri, label, open: isOpen }) => ({
      label,
      description: isOpen ? 'open' : undefined,
      uri,
    }));
  const picked = await vscode.window.showQuickPick(items, {
    title,
    placeHolder: 'Type to find a workspace file',
    matchOnDescription: true,
  });
  return picked?.uri;
}
