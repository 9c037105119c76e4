import * as vscode from 'vscode';
import type { ChatViewProvider } from '../chat/chatViewProvider.js';
import type { ChatSession } from '../chat/session.js';
import { enclosingBlockByIndent } from '../context/estimate.js';
import { explainPrompt, type Enclosing } from '../prompts.js';

const MAX_SELECTION_CHARS = 20_000;
const MAX_ENCLOSING_CHARS = 12_000;
/** How long the language's symbol provider may take before the indentation fallback is used. */
const SYMBOLS_TIMEOUT_MS = 2_000;
const ENCLOSING_KINDS = new Set([
  vscode.SymbolKind.Function,
  vscode.SymbolKind.Method,
  vscode.SymbolKind.Constructor,
  vscode.SymbolKind.Class,
  vscode.SymbolKind.Interface,
  vscode.SymbolKind.Struct,
  vscode.SymbolKind.Enum,
  vscode.SymbolKind.Module,
  vscode.SymbolKind.Namespace,
]);

/**
 * Sends the selection, with the file's language and name and the function or class around it
 * (from the language's document symbols, else by indentation), to the chat; the reply streams there.
 */
export function explainSelection(view: ChatViewProvider, session: ChatSession) {
  return async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.selection.isEmpty) {
      void vscode.window.showWarningMessage('AIHub: select the code to explain first.');
      return undefined;
    }
    const { document, selection } = editor;
    const code = document.getText(selection);
    if (code.length > MAX_SELECTION_CHARS) {
      void vscode.window.showWarningMessage(
        `AIHub: the selection has ${code.length} characters; select at most ${MAX_SELECTION_CHARS}.`,
      );
      return undefined;
    }
    const name = document.isUntitled
      ? document.uri.path
      : vscode.workspace.asRelativePath(document.uri);
    const enclosing = await enclosingOf(document, selection);
    const prompt = explainPrompt(
      code,
      document.languageId,
      name,
      selection.start.line + 1,
      selection.end.line + 1,
      enclosing,
    );
    await view.reveal();
    return session.ask(prompt);
  };
}

/** The smallest function, method or class that contains the selection and is larger than it. */
export async function enclosingOf(
  document: vscode.TextDocument,
  selection: vscode.Range,
): Promise<Enclosing | undefined> {
  const symbols = await Promise.race([
    Promise.resolve(
      vscode.commands.executeCommand<Array<vscode.DocumentSymbol | vscode.SymbolInformation>>(
        'vscode.executeDocumentSymbolProvider',
        document.uri,
      ),
    ).catch(() => undefined),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), SYMBOLS_TIMEOUT_MS)),
  ]);
  let best: { range: vscode.Range; name: string; kind: string } | undefined;
  const visit = (list: ReadonlyArray<vscode.DocumentSymbol | vscode.SymbolInformation>): void => {
    for (const symbol of list) {
      const range = 'range' in symbol ? symbol.range : symbol.location.range;
      if (!range.contains(selection) || range.isEqual(selection)) continue;
      if (ENCLOSING_KINDS.has(symbol.kind) && (!best || best.range.contains(range)))
        best = { range, name: symbol.name, kind: vscode.SymbolKind[symbol.kind].toLowerCase() };
      if ('children' in symbol && symbol.children) visit(symbol.children);
    }
  };
  if (Array.isArray(symbols)) visit(symbols);
  let range = best?.range;
  let label = best ? `${best.kind} \`${best.name}\`` : undefined;
  if (!range) {
    const block = enclosingBlockByIndent(
      document.getText(),
      selection.start.line,
      selection.end.line,
    );
    if (!block || (block.first === selection.start.line && block.last === selection.end.line))
      return undefined;
    range = new vscode.Range(block.first, 0, block.last, document.lineAt(block.last).text.length);
    label = 'the enclosing block';
  }
  const text = document.getText(range);
  if (text.length > MAX_ENCLOSING_CHARS || text.trim() === document.getText(selection).trim())
    return undefined;
  return {
    label: label!,
    code: text,
    firstLine: range.start.line + 1,
    lastLine: range.end.line + 1,
  };
}
