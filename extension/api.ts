// What the extension exports (vscode.extensions.getExtension('aihub.aihub').exports): read-only
// views used by the extension-host tests and by other extensions. Never exposes the key.
import type * as vscode from 'vscode';
import type { CodebaseStatus } from './codebase/index.js';
import type { ApprovalRequest } from './agent/approvals.js';
import type { TaskResult } from './agent/task.js';
import type {
  ChatEntry,
  ConversationSummary,
  ModeView,
  SpendView,
  ToWebview,
} from './chat/protocol.js';
import type { BuiltContext } from './context/chatContext.js';
import type { ProposalOutcome } from './generate/proposal.js';
import type { InlineStats } from './inline/provider.js';
import type { LanguageModelOutcome } from './lm/provider.js';
import type { LocalGatewayState } from './localGateway.js';
import type { ProviderSet } from './providers/store.js';

export interface AIHubApi {
  /** How long activate() took, in milliseconds. */
  activationMs: number;
  chatTranscript(): readonly ChatEntry[];
  /** What the next chat message would carry. */
  chatContext(): Promise<BuiltContext>;
  conversations(): ConversationSummary[];
  currentConversation(): { id: string; title: string };
  openConversation(id: string): Promise<boolean>;
  renameConversation(id: string, title: string): Promise<boolean>;
  deleteConversation(id: string): Promise<boolean>;
  inlineStatusText(): string;
  inlineStats(): InlineStats;
  onDidChangeInline: vscode.Event<InlineStats>;
  spend(): SpendView;
  /** Fired when a request that could pass the daily cap is asked about. */
  onDidAskSpend: vscode.Event<{ purpose: string; worstCase: number; cap: number }>;
  proposalPending(): boolean;
  onDidDecideProposal: vscode.Event<ProposalOutcome>;
  /** The messages the chat view receives, as they are sent. */
  onDidPostToChat: vscode.Event<ToWebview>;
  statusBarText(): string;
  /** The codebase index: state, size, what it left out, what it cost. */
  codebase(): CodebaseStatus;
  onDidChangeCodebase: vscode.Event<CodebaseStatus>;
  /** The indexed files: workspace-relative paths (sorted), content hashes, chunk counts. */
  codebaseFiles(): Array<{ path: string; sha256: string; chunks: number }>;
  hasApiKey(): Promise<boolean>;
  /** The chat view's mode (chat or agent) and whether agent mode is available. */
  chatMode(): ModeView;
  /** Agent steps waiting for the user's approval (answered with aihub.approveStep / aihub.rejectStep). */
  pendingApprovals(): ApprovalRequest[];
  onDidAskApproval: vscode.Event<ApprovalRequest>;
  onDidFinishTask: vscode.Event<TaskResult>;
  /** The running agent task and its current step. */
  agentTask(): { taskId: string; step: number } | undefined;
  /** Every request through the language model provider (vendor `aihub`), once it ended: billed, cancelled, refused or failed. */
  onDidAnswerLanguageModel: vscode.Event<LanguageModelOutcome>;
  /** Fired when the provider tells VS Code that its models changed (key, gateway, setting). */
  onDidChangeLanguageModels: vscode.Event<void>;
  localGateway(): {
    state: LocalGatewayState;
    pid: number | undefined;
    apiBase: string | undefined;
    /** Its data dir (wallet, history) and the config file the providers made (absent without one). */
    dataDir: string;
    configFile: string;
  };
  /** The model providers in failover order (no keys). */
  modelProviders(): ProviderSet;
  /** Whether SecretStorage holds a key for this provider (never the key). */
  hasProviderKey(id: string): Promise<boolean>;
}
