import * as vscode from 'vscode';
import { abortSignalFor } from '../cancellation.js';
import type { ChatTurn } from '../client.js';
import { FenceStripper, fenced } from '../codeFence.js';
import type { ReplyMeta } from '../chat/protocol.js';
import type { Services } from '../services.js';

export interface GeneratedCode {
  /** What was inserted: the reply without its code fence. */
  text: string;
  /** The reply as the model sent it. */
  reply: string;
  meta: ReplyMeta | undefined;
  cancelled: boolean;
}

const MAX_CONTEXT_CHARS = 20_000;

/**
 * Asks for a description and streams the code into the editor at the cursor (or over the
 * selection), fences stripped, as one undoable edit under a cancellable progress notification.
 */
export function generateCode(services: Services) {
  return async (descriptionArgument?: unknown): Promise<GeneratedCode | undefined> => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showWarningMessage('AIHub: open an editor to generate code into.');
      return undefined;
    }
    const description =
      typeof descriptionArgument === 'string'
        ? descriptionArgument
        : await vscode.window.showInputBox({
            title: 'AIHub: Generate Code',
            prompt: editor.selection.isEmpty ? 'Describe the code to insert at the cursor' : 'Describe how to rewrite the selection',
            placeHolder: 'e.g. a function that parses an ISO 8601 date',
            ignoreFocusOut: true,
          });
    if (!description?.trim()) return undefined;

    let client;
    try {
      client = await services.client();
    } catch (error) {
      await services.showError(error);
      return undefined;
    }
    const settings = services.settings();
    const messages = buildPrompt(editor, description.trim());

    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'AIHub: generating code', cancellable: true },
      async (progress, token) => {
        const writer = new StreamingEdit(editor, editor.selection);
        const stripper = new FenceStripper();
        const abort = abortSignalFor(token);
        try {
          const result = await client.streamChat(
            { model: settings.model, messages, maxTokens: settings.maxTokens, temperature: settings.temperature },
            abort.signal,
            (delta) => {
              writer.append(stripper.push(delta));
              progress.report({ message: `${writer.length} characters` });
            },
          );
          writer.append(stripper.end());
          await writer.finish();
          if (result.meta) services.learnBalance(result.meta.balance, result.meta.currency);
          return { text: writer.text, reply: result.text, meta: result.meta, cancelled: false };
        } catch (error) {
          await writer.finish().catch(() => undefined);
          services.balanceMayHaveChanged();
          if (token.isCancellationRequested) return { text: writer.text, reply: '', meta: undefined, cancelled: true };
          await services.showError(error);
          return undefined;
        } finally {
          abort.dispose();
        }
      },
    );
  };
}

function buildPrompt(editor: vscode.TextEditor, description: string): ChatTurn[] {
  const { document, selection } = editor;
  const language = document.languageId;
  const name = document.isUntitled ? 'an untitled file' : `\`${vscode.workspace.asRelativePath(document.uri)}\``;
  const system =
    `You write ${language} code for ${name}. Reply with the code only: no explanation, no Markdown code fences. ` +
    'The reply is inserted into the editor as it is.';
  const selected = document.getText(selection).slice(0, MAX_CONTEXT_CHARS);
  const user = selection.isEmpty
    ? description
    : `${description}\n\nRewrite this selected code; your reply replaces it:\n${fenced(selected, language)}`;
  return [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
}

/**
 * Applies streamed text as a series of editor edits that form one undo step: only the first edit
 * opens an undo stop, the later ones join it. Edits are serialized; text arriving meanwhile is
 * coalesced into the next edit.
 */
class StreamingEdit {
  text = '';
  private pending = '';
  private applied = 0;
  private chain: Promise<void> = Promise.resolve();
  private failed: Error | undefined;
  private readonly startOffset: number;

  constructor(
    private readonly editor: vscode.TextEditor,
    private readonly replaced: vscode.Selection,
  ) {
    this.startOffset = editor.document.offsetAt(replaced.start);
  }

  get length(): number {
    return this.text.length + this.pending.length;
  }

  append(text: string): void {
    if (!text || this.failed) return;
    this.pending += text;
    this.chain = this.chain.then(() => this.flush());
  }

  async finish(): Promise<void> {
    await this.chain;
    if (this.failed) throw this.failed;
  }

  private async flush(): Promise<void> {
    if (!this.pending || this.failed) return;
    const chunk = this.pending;
    this.pending = '';
    const first = this.applied === 0;
    const document = this.editor.document;
    const at = document.positionAt(this.startOffset + this.text.length);
    const ok = await this.editor.edit(
      (edit) => {
        if (first && !this.replaced.isEmpty) edit.replace(this.replaced, chunk);
        else edit.insert(at, chunk);
      },
      { undoStopBefore: first, undoStopAfter: false },
    );
    if (!ok) {
      this.failed = new Error('The editor did not accept the generated code (was it closed?).');
      return;
    }
    this.applied++;
    this.text += chunk;
  }
}
