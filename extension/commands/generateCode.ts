import * as vscode from 'vscode';
import { abortSignalFor } from '../cancellation.js';
import { stripCodeFences } from '../codeFence.js';
import { headChars, importLines, tailChars } from '../context/estimate.js';
import type { ProposalManager } from '../generate/proposal.js';
import { generateMessages } from '../prompts.js';
import type { ReplyMeta } from '../chat/protocol.js';
import type { Services } from '../services.js';
import { promptChars } from '../spendMath.js';

export interface GeneratedCode {
  /** What is proposed: the reply without its code fence. */
  text: string;
  /** The reply as the model sent it. */
  reply: string;
  meta: ReplyMeta | undefined;
  cancelled: boolean;
  /** The diff with Accept / Reject is open. */
  proposed: boolean;
  /** What was sent, for the record (and the tests): the user message. */
  prompt: string;
}

const MAX_SELECTION_CHARS = 20_000;
/** The code around the cursor that is sent with the request. */
const MAX_BEFORE_CHARS = 6_000;
const MAX_AFTER_CHARS = 3_000;

/**
 * Asks for a description, sends it with the code before and after the cursor (bounded) and the
 * file's imports, and opens the result as a diff against the file, to be accepted (one undoable
 * edit) or rejected. Cancelling leaves the file untouched: nothing is written while it streams.
 */
export function generateCode(services: Services, proposals: ProposalManager) {
  return async (descriptionArgument?: unknown): Promise<GeneratedCode | undefined> => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showWarningMessage('AIHub: open an editor to generate code into.');
      return undefined;
    }
    const description =
      typeof descriptionArgument === 'string' ? descriptionArgument : await askDescription(editor);
    if (!description?.trim()) return undefined;

    let client;
    try {
      client = await services.client();
    } catch (error) {
      await services.showError(error);
      return undefined;
    }
    const settings = services.settings();
    const { document, selection, whole, start, end, messages, prompt } = generateRequest(
      editor,
      description,
    );
    const allowed = await services.spend.confirm({
      model: settings.model,
      promptChars: promptChars(messages),
      messages: messages.length,
      maxTokens: settings.maxTokens,
      purpose: 'Generate Code',
    });
    if (!allowed)
      return { text: '', reply: '', meta: undefined, cancelled: true, proposed: false, prompt };

    const outcome = await generateWithProgress(services, client, settings, messages);
    if (!outcome) return undefined;
    const text = stripCodeFences(outcome.reply);
    if (outcome.cancelled || text.trim() === '') {
      if (!outcome.cancelled)
        void vscode.window.showWarningMessage('AIHub: the model answered no code.');
      return {
        text,
        reply: outcome.reply,
        meta: outcome.meta,
        cancelled: outcome.cancelled,
        proposed: false,
        prompt,
      };
    }
    // At the end of a file that ends with a line break, the code gets its own final line break too.
    const atEnd =
      end === whole.length && start === end && whole.endsWith('\n') && !text.endsWith('\n');
    await proposals.propose(document, selection, atEnd ? `${text}\n` : text);
    return {
      text,
      reply: outcome.reply,
      meta: outcome.meta,
      cancelled: false,
      proposed: true,
      prompt,
    };
  };
}

/** The description of the code, asked for in an input box. */
function askDescription(editor: vscode.TextEditor): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    title: 'AIHub: Generate Code',
    prompt: editor.selection.isEmpty
      ? 'Describe the code to insert at the cursor'
      : 'Describe how to rewrite the selection',
    placeHolder: 'e.g. a function that parses an ISO 8601 date',
    ignoreFocusOut: true,
  });
}

/** The messages for the model: the description, the selection and the bounded surroundings. */
function generateRequest(editor: vscode.TextEditor, description: string) {
  const { document } = editor;
  const selection = new vscode.Range(editor.selection.start, editor.selection.end);
  const fileName = document.isUntitled
    ? 'an untitled file'
    : `\`${vscode.workspace.asRelativePath(document.uri)}\``;
  const whole = document.getText();
  const start = document.offsetAt(selection.start);
  const end = document.offsetAt(selection.end);
  const surroundings = {
    imports: importLines(whole),
    before: tailChars(whole.slice(0, start), MAX_BEFORE_CHARS),
    after: headChars(whole.slice(end), MAX_AFTER_CHARS),
  };
  const messages = generateMessages(
    description,
    document.languageId,
    fileName,
    document.getText(selection).slice(0, MAX_SELECTION_CHARS),
    surroundings,
  );
  const prompt = messages[messages.length - 1]!.content;
  return { document, selection, whole, start, end, messages, prompt };
}

/** Streams the generated code under a cancellable progress notification; undefined after an error shown. */
function generateWithProgress(
  services: Services,
  client: Awaited<ReturnType<Services['client']>>,
  settings: ReturnType<Services['settings']>,
  messages: ReturnType<typeof generateMessages>,
) {
  return vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: 'AIHub: generating code',
      cancellable: true,
    },
    async (progress, token) => {
      const abort = abortSignalFor(token);
      let received = 0;
      try {
        const result = await client.streamChat(
          {
            model: settings.model,
            messages,
            maxTokens: settings.maxTokens,
            temperature: settings.temperature,
          },
          abort.signal,
          (delta) => {
            received += delta.length;
            progress.report({ message: `${received} characters` });
          },
        );
        if (result.meta) {
          services.learnBalance(result.meta.balance, result.meta.currency);
          services.spend.record(result.meta.cost, result.meta.currency);
        }
        // A stream stopped mid-way resolves with what arrived (the chat keeps it); a cancelled
        // Generate proposes nothing, whichever way the stream ended.
        if (token.isCancellationRequested) return { reply: '', meta: result.meta, cancelled: true };
        return { reply: result.text, meta: result.meta, cancelled: false };
      } catch (error) {
        services.balanceMayHaveChanged();
        if (token.isCancellationRequested) return { reply: '', meta: undefined, cancelled: true };
        await services.showError(error);
        return undefined;
      } finally {
        abort.dispose();
      }
    },
  );
}

export function acceptProposal(proposals: ProposalManager) {
  return () => proposals.accept();
}

export function rejectProposal(proposals: ProposalManager) {
  return () => proposals.reject();
}
