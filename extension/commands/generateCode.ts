import * as vscode from 'vscode';
import { abortSignalFor } from '../cancellation.js';
import { FenceStripper, type StripStep } from '../codeFence.js';
import { generateMessages } from '../prompts.js';
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

const MAX_SELECTION_CHARS = 20_000;

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
    const { document, selection } = editor;
    const fileName = document.isUntitled ? 'an untitled file' : `\`${vscode.workspace.asRelativePath(document.uri)}\``;
    const messages = generateMessages(description, document.languageId, fileName, document.getText(selection).slice(0, MAX_SELECTION_CHARS));

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
              writer.apply(stripper.push(delta));
              progress.report({ message: `${writer.length} characters` });
            },
          );
          writer.apply(stripper.end());
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

/**
 * Applies streamed text as a series of editor edits that form one undo step: only the first edit
 * opens an undo stop, the later ones join it. Edits are serialized; text arriving meanwhile is
 * coalesced into the next edit. A reset step replaces everything inserted so far.
 */
class StreamingEdit {
  text = '';
  private pending = '';
  private pendingReset = false;
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

  apply(step: StripStep): void {
    if (this.failed || (!step.text && !step.reset)) return;
    if (step.reset) {
      this.pendingReset = true;
      this.pending = step.text;
    } else {
      this.pending += step.text;
    }
    this.chain = this.chain.then(() => this.flush());
  }

  async finish(): Promise<void> {
    await this.chain;
    if (this.failed) throw this.failed;
  }

  private async flush(): Promise<void> {
    const reset = this.pendingReset && this.applied > 0 && this.text !== '';
    if ((!this.pending && !reset) || this.failed) return;
    const chunk = this.pending;
    this.pending = '';
    this.pendingReset = false;
    const first = this.applied === 0;
    const document = this.editor.document;
    const start = document.positionAt(this.startOffset);
    const end = document.positionAt(this.startOffset + this.text.length);
    const ok = await this.editor.edit(
      (edit) => {
        if (first && !this.replaced.isEmpty) edit.replace(this.replaced, chunk);
        else if (reset) edit.replace(new vscode.Range(start, end), chunk);
        else edit.insert(end, chunk);
      },
      { undoStopBefore: first, undoStopAfter: false },
    );
    if (!ok) {
      this.failed = new Error('The editor did not accept the generated code (was it closed?).');
      return;
    }
    this.applied++;
    this.text = reset ? chunk : this.text + chunk;
  }
}
