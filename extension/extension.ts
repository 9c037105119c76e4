// AIHub for VS Code: chat, explain and generate code through the AIHub gateway.
// activate() only wires the parts together; each command lives in its own file under commands/.
import * as vscode from 'vscode';
import type { AIHubApi } from './api.js';
import { BalanceStatusBar } from './balanceStatusBar.js';
import { ChatViewProvider } from './chat/chatViewProvider.js';
import { ChatSession } from './chat/session.js';
import { askInChat, newChat, openChat, stopReply } from './commands/chat.js';
import { clearApiKey } from './commands/clearApiKey.js';
import { explainSelection } from './commands/explainSelection.js';
import { addFileToChat } from './commands/addFileToChat.js';
import { CodebaseIndex } from './codebase/index.js';
import { codebaseCommands } from './commands/codebase.js';
import { AgentController } from './agent/controller.js';
import { agentCommands } from './commands/agent.js';
import { acceptProposal, generateCode, rejectProposal } from './commands/generateCode.js';
import { ChatContext } from './context/chatContext.js';
import { ProposalManager } from './generate/proposal.js';
import { InlineCompletionProvider } from './inline/provider.js';
import { InlineStatusBar, toggleInlineCompletions } from './inline/statusBar.js';
import { AIHubChatProvider } from './lm/provider.js';
import {
  localGatewayConfigFile,
  startLocalGateway,
  stopLocalGateway,
} from './commands/localGateway.js';
import { providerCommands } from './commands/providers.js';
import { selectModel } from './commands/selectModel.js';
import { setApiKey } from './commands/setApiKey.js';
import { showBalance } from './commands/showBalance.js';
import { openSettings, topUp } from './commands/topUp.js';
import { Services } from './services.js';

let services: Services | undefined;

export function activate(context: vscode.ExtensionContext): AIHubApi {
  const activationStarted = performance.now();
  services = new Services(context);
  const chatContext = ChatContext.forSettings(services);
  const codebase = new CodebaseIndex(services, context);
  const session = new ChatSession(services, context.workspaceState, chatContext, codebase);
  const agent = new AgentController(services, session, codebase);
  const chatView = new ChatViewProvider(services, session, chatContext, agent);
  const statusBar = new BalanceStatusBar(services);
  const proposals = new ProposalManager();
  const inline = new InlineCompletionProvider(services, services.spend);
  const inlineStatusBar = new InlineStatusBar(services, services.spend);
  const start = startLocalGateway(services);

  const commands: Record<string, (...args: never[]) => unknown> = {
    'aihub.setApiKey': setApiKey(services),
    'aihub.clearApiKey': clearApiKey(services),
    'aihub.openChat': openChat(chatView, session),
    'aihub.newChat': newChat(session),
    'aihub.ask': askInChat(chatView, session),
    'aihub.stopReply': stopReply(session),
    'aihub.explainSelection': explainSelection(chatView, session),
    'aihub.generateCode': generateCode(services, proposals),
    'aihub.acceptProposal': acceptProposal(proposals),
    'aihub.rejectProposal': rejectProposal(proposals),
    'aihub.addFileToChat': addFileToChat(chatView, chatContext),
    'aihub.toggleInlineCompletions': toggleInlineCompletions(),
    'aihub.showBalance': showBalance(services),
    'aihub.topUp': topUp(services),
    'aihub.selectModel': selectModel(services, session),
    'aihub.startLocalGateway': start,
    'aihub.stopLocalGateway': stopLocalGateway(services),
    'aihub.openSettings': openSettings(),
    ...providerCommands(services),
    ...agentCommands(chatView, agent),
  };

  context.subscriptions.push(
    services,
    codebase,
    ...codebaseCommands(codebase),
    session,
    agent,
    chatContext,
    chatView,
    statusBar,
    proposals,
    inline,
    inlineStatusBar,
    inline.register(),
    chatView.register(),
    ...Object.entries(commands).map(([id, run]) => vscode.commands.registerCommand(id, run)),
  );

  const settings = services.settings();
  if (settings.localGatewayAutoStart && settings.usesLocalGateway) void start({ silent: true });
  else void statusBar.refresh();

  const activationMs = performance.now() - activationStarted;
  services.log.info(`Activated in ${activationMs.toFixed(1)} ms`);
  return extensionApi({
    activationMs,
    owned: services,
    session,
    statusBar,
    inlineStatusBar,
    chatContext,
    inline,
    proposals,
    codebase,
    agent,
    languageModels: AIHubChatProvider.start(services, context.subscriptions),
  });
}

interface ApiParts {
  activationMs: number;
  owned: Services;
  session: ChatSession;
  statusBar: BalanceStatusBar;
  inlineStatusBar: InlineStatusBar;
  chatContext: ChatContext;
  inline: InlineCompletionProvider;
  proposals: ProposalManager;
  codebase: CodebaseIndex;
  agent: AgentController;
  languageModels: AIHubChatProvider;
}

/** What activate() returns: the extension's state as its tests read it. */
function extensionApi({
  activationMs,
  owned,
  session,
  statusBar,
  inlineStatusBar,
  chatContext,
  inline,
  proposals,
  codebase,
  agent,
  languageModels,
}: ApiParts): AIHubApi {
  return {
    activationMs,
    chatTranscript: () => session.transcript(),
    onDidPostToChat: session.onDidPost,
    statusBarText: () => statusBar.text,
    inlineStatusText: () => inlineStatusBar.text,
    chatContext: () => chatContext.build(),
    conversations: () => session.conversations(),
    currentConversation: () => session.conversation,
    openConversation: (id) => session.open(id),
    renameConversation: (id, title) => session.rename(id, title),
    deleteConversation: (id) => session.delete(id),
    inlineStats: () => ({ ...inline.stats }),
    onDidChangeInline: inline.onDidUpdateStats,
    spend: () => owned.spend.view(),
    onDidAskSpend: owned.spend.onDidAsk,
    proposalPending: () => proposals.pending,
    onDidDecideProposal: proposals.onDidDecide,
    codebase: () => codebase.status(),
    onDidChangeCodebase: codebase.onDidChange,
    codebaseFiles: () => codebase.indexedFiles(),
    hasApiKey: async () => (await owned.keys.get()) !== undefined,
    chatMode: () => agent.mode(),
    pendingApprovals: () => agent.approvals.list(),
    onDidAskApproval: agent.approvals.onDidAsk,
    onDidFinishTask: agent.onDidFinishTask,
    agentTask: () =>
      agent.task ? { taskId: agent.task.taskId, step: agent.task.step } : undefined,
    onDidAnswerLanguageModel: languageModels.onDidAnswer,
    onDidChangeLanguageModels: languageModels.onDidChangeLanguageModelChatInformation,
    localGateway: () => ({
      state: owned.localGateway.state,
      pid: owned.localGateway.pid,
      apiBase: owned.localGateway.apiBase,
      dataDir: owned.localGateway.dataDir,
      configFile: localGatewayConfigFile(owned.context),
    }),
    modelProviders: () => owned.providers.get(),
    hasProviderKey: async (id) => (await owned.providers.key(id)) !== undefined,
  };
}

/** Stops the local gateway and waits for it, so that its store is flushed before VS Code exits. */
export async function deactivate(): Promise<void> {
  await services?.localGateway.stop();
  services = undefined;
}
