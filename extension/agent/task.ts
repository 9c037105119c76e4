// One agent task: the loop of model steps (a streamed chat completion with tools through the
// gateway, on the user's key and wallet) and tool calls, shown step by step in the chat's
// transcript with each step's cost. It ends when the model calls finish (or answers without a
// tool), at the step budget, before a step that could pass the daily spending cap, at the time
// limit, on Stop (one AbortSignal reaches the request, the approvals and the running command), or
// on an error it cannot recover from (the gateway's; a tool's errors go back to the model).
import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import type {
  AgentStepEntry,
  ChatEntry,
  TaskEndReason,
  TaskResultEntry,
  ToolCallView,
} from '../chat/protocol.js';
import { formatMoney } from '../chat/protocol.js';
import type { ChatSession } from '../chat/session.js';
import type { AgentStepResult, AgentToolCall, GatewayClient } from '../client.js';
import type { Services } from '../services.js';
import type { AgentSettings } from '../settings.js';
import { fromMicros, toMicros } from '../spendMath.js';
import { TaskCheckpoint, type CheckpointStore } from './checkpoint.js';
import { StopTask, ToolExecutor, type TaskScope, type ToolDeps } from './executor.js';
import { conversationChars, fitConversation, type AgentMessage } from './messages.js';
import { clip, clipEnd } from './policy.js';
import { agentSystemPrompt } from './prompt.js';
import { describeCall, parseToolCall, toolDefinitions } from './tools.js';

/** A tool result as the model gets it, at most. */
export const MAX_TOOL_RESULT_CHARS = 16_000;
/** A tool result as the transcript shows it, at most. */
const MAX_VIEW_RESULT_CHARS = 4_000;
const MAX_VIEW_ARGS_CHARS = 2_000;
/** The conversation sent each step, at most (older tool results are elided past it). */
const MAX_CONVERSATION_CHARS = 240_000;
/** Steps in a row whose tool calls were all malformed before the task gives up. */
const MAX_INVALID_STEPS = 3;
const AGENT_TEMPERATURE = 0;

export interface TaskOptions {
  text: string;
  model: string;
  autoApproveEdits: boolean;
  /** The editor context sent with the task (as with a chat message): its prompt and its labels. */
  context?: { prompt: string; labels: string[] };
}

export interface TaskResult {
  taskId: string;
  status: TaskResultEntry['status'];
  reason: TaskEndReason;
  /** The summary, or why the task stopped. */
  text: string;
  steps: number;
  /** Total cost of the task's requests (currency units), from the gateway's x_aihub of each. */
  cost: number;
  currency: string;
  changed: string[];
  created: string[];
}

export interface TaskDeps extends ToolDeps {
  services: Services;
  session: ChatSession;
  checkpoints: CheckpointStore;
}

type Ending = { reason: TaskEndReason; text: string; actions?: TaskResultEntry['actions'] };

export class AgentTask implements TaskScope {
  readonly taskId = randomUUID();
  private readonly controller = new AbortController();
  private endReason: TaskEndReason | undefined;
  private task: TaskCheckpoint | undefined;
  private readonly executor: ToolExecutor;
  private costMicros = 0;
  private currency = 'INR';
  private steps = 0;
  /** Tool calls so far (their views' ids are unique in the task). */
  private callCount = 0;
  private current: { entry: AgentStepEntry } | undefined;
  private readonly conversationId: string;
  readonly settings: AgentSettings;
  autoApproveEdits: boolean;

  constructor(
    private readonly deps: TaskDeps,
    private readonly options: TaskOptions,
  ) {
    this.settings = deps.services.settings().agent;
    this.autoApproveEdits = options.autoApproveEdits;
    this.executor = new ToolExecutor(deps, this);
    this.conversationId = deps.session.conversation.id;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get step(): number {
    return this.steps;
  }

  /** Stop: the request, the approval or the command under way ends; the task reports it. */
  stop(reason: TaskEndReason = 'stopped'): void {
    if (this.controller.signal.aborted) return;
    this.endReason = reason;
    this.controller.abort(new StopTask());
  }

  checkpoint(): TaskCheckpoint {
    return (this.task ??= new TaskCheckpoint(this.taskId, this.options.text));
  }

  async saveCheckpoint(): Promise<void> {
    if (this.task) await this.deps.checkpoints.save(this.task);
  }

  refresh(): void {
    if (this.current) this.show(this.current.entry);
  }

  private show(entry: ChatEntry): void {
    this.deps.session.showEntry(entry, this.conversationId);
  }

  async run(): Promise<TaskResult> {
    const { services } = this.deps;
    const labels = this.options.context?.labels ?? [];
    this.show({
      id: randomUUID(),
      role: 'user',
      text: this.options.text,
      task: true,
      ...(labels.length ? { context: labels } : {}),
    });
    const timer = setTimeout(() => this.stop('time'), this.settings.maxMinutes * 60_000);
    let ending: Ending;
    try {
      ending = await this.loop();
    } catch (error) {
      // Only a stop or a failure outside the steps (no key, no gateway) gets here.
      const advice = this.signal.aborted ? undefined : services.advise(error);
      ending = advice
        ? { reason: 'error', text: advice.message, actions: advice.actions }
        : this.stopped();
    } finally {
      clearTimeout(timer);
    }
    const result = this.finishEntry(ending);
    this.show(result);
    await this.deps.session.save();
    return {
      taskId: this.taskId,
      status: result.status,
      reason: result.reason,
      text: result.text,
      steps: result.steps,
      cost: result.cost,
      currency: result.currency,
      changed: result.changed,
      created: result.created,
    };
  }

  private stopped(): Ending {
    switch (this.endReason) {
      case 'time':
        return {
          reason: 'time',
          text: `Stopped at the time limit of ${this.settings.maxMinutes} minutes (aihub.agent.maxMinutes).`,
          actions: ['openSettings'],
        };
      default:
        return { reason: 'stopped', text: 'Stopped.' };
    }
  }

  private async loop(): Promise<Ending> {
    const folders = this.deps.access.folders();
    if (folders.length === 0)
      return { reason: 'error', text: 'No local workspace folder is open.' };
    const client = await this.deps.services.client();
    const tools = toolDefinitions();
    const messages: AgentMessage[] = [
      {
        role: 'system',
        content: agentSystemPrompt({
          folders: folders.map((f) => f.name),
          platform: process.platform,
          maxSteps: this.settings.maxSteps,
          codebaseIndex: this.deps.codebase?.ready ?? false,
        }),
      },
      {
        role: 'user',
        content: this.options.context?.prompt
          ? `${this.options.context.prompt}\n\n${this.options.text}`
          : this.options.text,
      },
    ];
    let invalidSteps = 0;
    for (;;) {
      const sent = fitConversation(messages, MAX_CONVERSATION_CHARS);
      const blocked = await this.blocked(sent, tools);
      if (blocked) return blocked;
      const step = await this.request(client, sent, tools);
      if ('reason' in step) return step;
      const { entry, answer } = step;
      messages.push({
        role: 'assistant',
        content: answer.text || null,
        ...(answer.toolCalls.length
          ? {
              tool_calls: answer.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      });
      if (answer.toolCalls.length === 0) return withoutTools(answer);
      const outcome = await this.runCalls(entry, answer.toolCalls, messages);
      await this.deps.session.save();
      if (outcome.finished !== undefined) return { reason: 'finished', text: outcome.finished };
      if (outcome.stopped) return this.stopped();
      invalidSteps = outcome.allInvalid ? invalidSteps + 1 : 0;
      if (invalidSteps >= MAX_INVALID_STEPS)
        return {
          reason: 'error',
          text: `The model sent malformed tool calls ${MAX_INVALID_STEPS} steps in a row; the task stopped.`,
        };
    }
  }

  /** Why the next step may not start: Stop, the step budget, or the daily spending cap. */
  private async blocked(
    sent: AgentMessage[],
    tools: ReturnType<typeof toolDefinitions>,
  ): Promise<Ending | undefined> {
    if (this.signal.aborted) return this.stopped();
    if (this.steps >= this.settings.maxSteps)
      return {
        reason: 'steps',
        text: `Stopped at the step budget: ${this.settings.maxSteps} steps (aihub.agent.maxSteps).`,
        actions: ['openSettings'],
      };
    const spend = this.deps.services.spend;
    const allowed = await spend.allowsQuietly({
      model: this.options.model,
      promptChars: conversationChars(sent) + JSON.stringify(tools).length,
      messages: sent.length,
      maxTokens: this.settings.maxTokensPerStep,
      purpose: 'The next step of this task',
    });
    if (allowed) return undefined;
    const cap = spend.view();
    return {
      reason: 'cap',
      text: `Stopped before step ${this.steps + 1}: it could pass your daily spending cap of ${formatMoney(cap.cap ?? 0, cap.currency)} (aihub.spendingCap.perDay).`,
      actions: ['openSettings'],
    };
  }

  /** One model request, streamed into a new step entry; its cost recorded. */
  private async request(
    client: GatewayClient,
    sent: AgentMessage[],
    tools: ReturnType<typeof toolDefinitions>,
  ): Promise<{ entry: AgentStepEntry; answer: AgentStepResult } | Ending> {
    const { services } = this.deps;
    this.steps++;
    const entry: AgentStepEntry = {
      id: randomUUID(),
      role: 'agent',
      taskId: this.taskId,
      step: this.steps,
      text: '',
      model: this.options.model,
      status: 'streaming',
      calls: [],
    };
    this.current = { entry };
    this.show(entry);
    let answer: AgentStepResult;
    try {
      answer = await client.streamAgentStep(
        {
          model: this.options.model,
          messages: sent as OpenAI.Chat.ChatCompletionMessageParam[],
          tools,
          maxTokens: this.settings.maxTokensPerStep,
          temperature: AGENT_TEMPERATURE,
        },
        this.signal,
        (delta) => {
          entry.text += delta;
          this.deps.session.streamInto(entry.id, delta);
        },
      );
    } catch (error) {
      services.balanceMayHaveChanged();
      if (this.signal.aborted) {
        entry.status = 'stopped';
        this.show(entry);
        return this.stopped();
      }
      entry.status = 'error';
      entry.error = services.advise(error) ?? { message: String(error), actions: [] };
      this.show(entry);
      return { reason: 'error', text: entry.error.message, actions: entry.error.actions };
    }
    const meta = answer.meta;
    if (meta) {
      entry.meta = meta;
      this.costMicros += toMicros(meta.cost);
      this.currency = meta.currency;
      services.spend.record(meta.cost, meta.currency);
      services.learnBalance(meta.balance, meta.currency);
      services.log.info(
        `agent ${this.taskId} step ${this.steps} ${meta.requestId}: ${meta.promptTokens}+${meta.completionTokens} tokens, cost ${meta.cost} ${meta.currency}`,
      );
    } else services.balanceMayHaveChanged();
    entry.status = 'done';
    this.show(entry);
    return { entry, answer };
  }

  /** Runs one step's tool calls in order; each result goes back to the model. */
  private async runCalls(
    entry: AgentStepEntry,
    calls: AgentToolCall[],
    messages: AgentMessage[],
  ): Promise<{ finished?: string; stopped?: boolean; allInvalid: boolean }> {
    let finished: string | undefined;
    let invalid = 0;
    const views = calls.map((call) => {
      const view: ToolCallView = {
        id: viewId(call.id, ++this.callCount),
        tool: call.name,
        title: call.name,
        args: clipEnd(call.arguments, MAX_VIEW_ARGS_CHARS),
        status: 'running',
      };
      entry.calls.push(view);
      return view;
    });
    for (const [index, call] of calls.entries()) {
      const view = views[index]!;
      if (this.signal.aborted || finished !== undefined) {
        view.status = 'stopped';
        continue;
      }
      const parsed = parseToolCall(call.name, call.arguments);
      let text: string;
      if (!parsed.ok) {
        invalid++;
        view.status = 'failed';
        text = `Error: ${parsed.error}.`;
      } else {
        view.title = describeCall(parsed.call);
        this.show(entry);
        if (parsed.call.name === 'finish') {
          finished = parsed.call.args.summary;
          view.status = 'done';
          text = 'The task is finished.';
        } else {
          try {
            const outcome = await this.executor.execute(parsed.call, view);
            view.status = outcome.status;
            text = outcome.text;
            if (outcome.costMicros) {
              view.cost = fromMicros(outcome.costMicros);
              this.costMicros += outcome.costMicros;
            }
          } catch (error) {
            if (error instanceof StopTask || this.signal.aborted) {
              view.status = 'stopped';
              delete view.approval;
              this.show(entry);
              return { stopped: true, allInvalid: false };
            }
            view.status = 'failed';
            text = `Error: ${(error as Error).message}`;
          }
        }
      }
      const forModel = clip(text, MAX_TOOL_RESULT_CHARS);
      view.result = clip(text, MAX_VIEW_RESULT_CHARS);
      messages.push({ role: 'tool', tool_call_id: call.id, content: forModel });
      this.show(entry);
    }
    return {
      ...(finished !== undefined ? { finished } : {}),
      ...(this.signal.aborted ? { stopped: true } : {}),
      allInvalid: invalid === calls.length,
    };
  }

  private finishEntry(ending: Ending): TaskResultEntry {
    const status: TaskResultEntry['status'] =
      ending.reason === 'finished' || ending.reason === 'answered'
        ? 'done'
        : ending.reason === 'error'
          ? 'error'
          : 'stopped';
    const result: TaskResultEntry = {
      id: randomUUID(),
      role: 'task',
      taskId: this.taskId,
      text: ending.text,
      status,
      reason: ending.reason,
      steps: this.steps,
      cost: fromMicros(this.costMicros),
      currency: this.currency,
      changed: this.task?.changed ?? [],
      created: this.task?.created ?? [],
      ...(ending.actions?.length ? { actions: ending.actions } : {}),
    };
    return result;
  }
}

/** The end of a task whose model answered without calling a tool: the answer is its summary. */
function withoutTools(answer: AgentStepResult): Ending {
  if (answer.text.trim()) return { reason: 'answered', text: answer.text };
  return answer.finishReason === 'length'
    ? {
        reason: 'error',
        text: 'The model ran out of tokens before it said anything (aihub.agent.maxTokensPerStep).',
        actions: ['openSettings'],
      }
    : { reason: 'error', text: 'The model answered with nothing.' };
}

/** A tool call id the view and the webview protocol accept (ids come from the model). */
function viewId(id: string, index: number): string {
  const clean = id.replace(/[^\w:.-]/g, '_').slice(0, 80);
  return `${clean || 'call'}-${index}`;
}
