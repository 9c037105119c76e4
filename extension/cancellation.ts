import * as vscode from 'vscode';

/** An AbortSignal that aborts when the VS Code token is cancelled; dispose the result when done. */
export function abortSignalFor(token: vscode.CancellationToken): {
  signal: AbortSignal;
  dispose(): void;
} {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  const listener = token.onCancellationRequested(() => controller.abort());
  return { signal: controller.signal, dispose: () => listener.dispose() };
}
