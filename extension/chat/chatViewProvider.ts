// The chat webview view: owns the webview, relays the session's messages to it, and validates and
// carries out what the webview asks for.
import * as vscode from 'vscode';
import { ACTION_COMMANDS } from '../actions.js';
import type { AgentController } from '../agent/controller.js';
import { languageIdForFence } from '../codeFence.js';
import type { ChatContext } from '../context/chatContext.js';
import { pickWorkspaceFile } from '../context/pickFile.js';
import type { Services } from '../services.js';
import { chatHtml } from './html.js';
import { parseFromWebview, type FromWebview } from './protocol.js';
import type { ChatSession } from './session.js';

export const CHAT_VIEW_ID = 'aihub.chatView';

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  private contextTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly services: Services,
    private readonly session: ChatSession,
    private readonly context: ChatContext,
    private readonly agent: AgentController,
  ) {
    this.disposables.push(
      agent.onDidChangeMode((mode) => session.postToView({ type: 'mode', mode })),
      session.onDidPost((message) => void this.view?.webview.postMessage(message)),
      context.onDidChange(() => this.postContext()),
      services.spend.onDidChange((spend) => session.postToView({ type: 'spend', spend })),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration('aihub.context')) this.postContext();
        if (event.affectsConfiguration('aihub.spendingCap')) services.spend.refresh();
      }),
    );
  }

  /** Tells the view what the next message will carry (coalesced: reading files is not free). */
  postContext(): void {
    clearTimeout(this.contextTimer);
    this.contextTimer = setTimeout(() => {
      void this.context
        .view()
        .then((context) => this.session.postToView({ type: 'context', context }));
    }, 50);
  }

  /** Registers the view; its webview is kept while hidden (a reply or a task goes on meanwhile). */
  register(): vscode.Disposable {
    return vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, this, {
      webviewOptions: { retainContextWhenHidden: true },
    });
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const extensionUri = this.services.context.extensionUri;
    view.webview.options = {
      enableScripts: true,
      localResourceRoots: [
        vscode.Uri.joinPath(extensionUri, 'media'),
        vscode.Uri.joinPath(extensionUri, 'dist', 'webview'),
      ],
    };
    view.webview.html = chatHtml(view.webview, extensionUri);
    const subscriptions = [
      view.webview.onDidReceiveMessage((raw) => {
        const message = parseFromWebview(raw);
        if (message) void this.handle(message);
        else this.services.log.warn('Ignored a malformed message from the chat view.');
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
        subscriptions.forEach((s) => s.dispose());
      }),
    ];
  }

  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }

  private async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case 'ready':
        await this.session.ready;
        void this.view?.webview.postMessage(this.session.snapshot());
        this.session.postToView({ type: 'spend', spend: this.services.spend.view() });
        this.session.postToView({ type: 'mode', mode: this.agent.mode() });
        this.postContext();
        return;
      case 'send':
        if (message.mode === 'agent')
          await this.agent.start(message.text, message.model ? { model: message.model } : {});
        else
          await this.session.ask(message.text, {
            withContext: true,
            ...(message.model ? { model: message.model } : {}),
          });
        return;
      case 'toggleActive':
        this.context.setIncludeActive(message.include);
        return;
      case 'addFile':
        await vscode.commands.executeCommand('aihub.addFileToChat');
        return;
      case 'removeContext':
        this.context.removeFile(message.id);
        return;
      case 'mention':
        await this.mention();
        return;
      case 'showHistory':
        this.session.postHistory();
        return;
      case 'openConversation':
        await this.session.open(message.id);
        return;
      case 'renameConversation':
        await this.renameConversation(message.id);
        return;
      case 'deleteConversation':
        await this.session.delete(message.id);
        return;
      case 'stop':
        this.session.stop();
        return;
      case 'newChat':
        await this.session.clear();
        return;
      case 'selectModel':
        await vscode.commands.executeCommand('aihub.selectModel', message.model);
        return;
      case 'copy':
        await vscode.env.clipboard.writeText(message.text);
        void vscode.window.setStatusBarMessage('AIHub: code copied', 2000);
        return;
      case 'insert':
        await insertAtCursor(message.text, message.language);
        return;
      case 'action':
        await vscode.commands.executeCommand(ACTION_COMMANDS[message.action]);
        return;
      case 'openLink':
        await vscode.env.openExternal(vscode.Uri.parse(message.href));
        return;
      default:
        await this.handleAgent(message);
    }
  }

  /** The agent's messages: the mode switch, a step's approval buttons, Open Diff, Undo Task. */
  private async handleAgent(message: FromWebview): Promise<void> {
    switch (message.type) {
      case 'setMode':
        this.agent.setMode(message.mode);
        return;
      case 'setAutoApprove':
        this.agent.setAutoApprove(message.value);
        return;
      // The buttons run the same commands as the palette, the diff's title bar and the tests.
      case 'approve':
        await vscode.commands.executeCommand(
          message.all ? 'aihub.approveAllEdits' : 'aihub.approveStep',
          message.id,
        );
        return;
      case 'reject':
        await vscode.commands.executeCommand('aihub.rejectStep', message.id);
        return;
      case 'openDiff':
        await this.agent.openDiff(message.id);
        return;
      case 'undoTask':
        await vscode.commands.executeCommand('aihub.undoTask', message.id);
        return;
    }
  }

  /** @-mention: pick a workspace file, add it to the context and type its path. */
  private async mention(): Promise<void> {
    const uri = await pickWorkspaceFile('AIHub: mention a file');
    if (!uri) return;
    this.context.addFile(uri);
    this.session.postToView({
      type: 'insertText',
      text: `${vscode.workspace.asRelativePath(uri, false)} `,
    });
  }

  /** Asks for a new, non-empty name for a stored conversation. */
  private async renameConversation(id: string): Promise<void> {
    const current = this.session.conversations().find((c) => c.id === id);
    if (!current) return;
    const title = await vscode.window.showInputBox({
      title: 'AIHub: Rename Conversation',
      value: current.title,
      validateInput: (v) => (v.trim() ? undefined : 'The name is empty.'),
    });
    if (title) await this.session.rename(id, title);
  }

  dispose(): void {
    clearTimeout(this.contextTimer);
    this.disposables.forEach((d) => d.dispose());
  }
}

async function insertAtCursor(text: string, fence_language: string | undefined): Promise<void> {
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) {
    // No editor to insert into: the code opens in a new one, in the block's language.
    const language = languageIdForFence(
      fence_language,
      new Set(await vscode.languages.getLanguages()),
    );
    const document = await vscode.workspace.openTextDocument({ content: text, language });
    await vscode.window.showTextDocument(document, { preview: false });
    void vscode.window.setStatusBarMessage(
      'AIHub: no editor was open, so the code is in a new one',
      4000,
    );
    return;
  }
  const applied = await editor.edit((edit) => {
    for (const selection of editor.selections) edit.replace(selection, text);
  });
  if (!applied) {
    void vscode.window.showWarningMessage(
      'AIHub: the code could not be inserted; the editor may be read-only or have changed meanwhile.',
    );
    return;
  }
  // Back to the editor, so that typing goes on where the code landed.
  await vscode.window.showTextDocument(editor.document, {
    viewColumn: editor.viewColumn,
    preserveFocus: false,
  });
}
