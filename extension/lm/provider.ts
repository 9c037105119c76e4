// AIHub's tiers in VS Code's own chat: a Language Model Chat Provider (vendor `aihub`). The models
// are the tiers GET /v1/models lists on the stored key; each request is a streamed chat completion
// through the gateway (the gateway's own protocol: nothing is lost in a translation), billed to the
// wallet and counted in the session's and today's spend like the extension's own chat; a request
// whose worst case could pass the daily cap is refused before it is sent.
import * as vscode from 'vscode';
import { formatMoney, type ReplyMeta } from '../chat/protocol.js';
import { abortSignalFor } from '../cancellation.js';
import type { AgentToolCall, LanguageModelRequest } from '../client.js';
import { toFailure, type Advice } from '../errors.js';
import type { Services } from '../services.js';
import { fromMicros } from '../spendMath.js';
import {
  estimateTokens,
  requestChars,
  toChatMessages,
  toChatTools,
  toModelInformation,
  type ModelInformation,
} from './convert.js';
import { languageModelErrorCode } from './errors.js';

export const VENDOR = 'aihub';
export const ENABLED_SETTING = 'languageModelProvider.enabled';
const LIST_TIMEOUT_MS = 15_000;

/** What became of one request through the provider (the extension-host tests wait on it). */
export interface LanguageModelOutcome {
  model: string;
  status: 'done' | 'cancelled' | 'refused' | 'error';
  meta?: ReplyMeta;
  toolCalls: number;
  /** The message and the actions offered, for a refusal or an error. */
  advice?: Advice;
}

type Thinking = new (value: string) => vscode.LanguageModelResponsePart;

export class AIHubChatProvider
  implements vscode.LanguageModelChatProvider<ModelInformation>, vscode.Disposable
{
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeLanguageModelChatInformation = this.changed.event;
  private readonly answered = new vscode.EventEmitter<LanguageModelOutcome>();
  readonly onDidAnswer = this.answered.event;
  private readonly disposables: vscode.Disposable[] = [];

  /** The provider, registered with VS Code and disposed with the extension. */
  static start(services: Services, subscriptions: vscode.Disposable[]): AIHubChatProvider {
    const provider = new AIHubChatProvider(services);
    subscriptions.push(provider);
    return provider;
  }

  /** Registers itself with VS Code (where it has the API); dispose unregisters. */
  private constructor(private readonly services: Services) {
    this.disposables.push(this.register());
    // The models follow the key and the gateway: Set API Key, Clear API Key, the local gateway
    // coming up or going away, another base URL, the setting that hides them.
    this.disposables.push(
      services.keys.onDidChange(() => this.changed.fire()),
      services.localGateway.onDidChangeState((state) => {
        if (state === 'running' || state === 'stopped') this.changed.fire();
      }),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (
          event.affectsConfiguration('aihub.baseUrl') ||
          event.affectsConfiguration(`aihub.${ENABLED_SETTING}`)
        )
          this.changed.fire();
      }),
    );
  }

  /** Registers the provider where VS Code has the API (1.104 and later). */
  private register(): vscode.Disposable {
    const lm = vscode.lm as Partial<typeof vscode.lm>;
    if (typeof lm.registerLanguageModelChatProvider !== 'function') {
      this.services.log.info('This VS Code has no Language Model Chat Provider API (1.104+).');
      return new vscode.Disposable(() => undefined);
    }
    return lm.registerLanguageModelChatProvider(VENDOR, this);
  }

  enabled(): boolean {
    return vscode.workspace.getConfiguration('aihub').get<boolean>(ENABLED_SETTING, true);
  }

  async provideLanguageModelChatInformation(
    options: vscode.PrepareLanguageModelChatModelOptions,
    token: vscode.CancellationToken,
  ): Promise<ModelInformation[]> {
    if (!this.enabled()) return [];
    const abort = abortSignalFor(token);
    try {
      const client = await this.services.client();
      const listed = await client.listedModels(
        AbortSignal.any([abort.signal, AbortSignal.timeout(LIST_TIMEOUT_MS)]),
      );
      return listed.filter((m) => typeof m?.id === 'string').map(toModelInformation);
    } catch (error) {
      // Asked silently (VS Code looking around), no key or no gateway just means no models yet;
      // asked by the user (the model manager), they are told why, with the action that fixes it.
      if (options.silent) this.services.log.info(`No AIHub models: ${toFailure(error).kind}`);
      else void this.services.showError(error);
      return [];
    } finally {
      abort.dispose();
    }
  }

  async provideTokenCount(
    _model: ModelInformation,
    text: string | vscode.LanguageModelChatRequestMessage,
  ): Promise<number> {
    return estimateTokens(text);
  }

  async provideLanguageModelChatResponse(
    model: ModelInformation,
    messages: readonly vscode.LanguageModelChatRequestMessage[],
    options: vscode.ProvideLanguageModelChatResponseOptions,
    progress: vscode.Progress<vscode.LanguageModelResponsePart>,
    token: vscode.CancellationToken,
  ): Promise<void> {
    const outcome: LanguageModelOutcome = { model: model.id, status: 'error', toolCalls: 0 };
    const abort = abortSignalFor(token);
    try {
      const client = await this.services.client();
      const thinking = (vscode as unknown as { LanguageModelThinkingPart?: Thinking })
        .LanguageModelThinkingPart;
      const converted = toChatMessages(messages, (part) =>
        thinking ? part instanceof thinking : false,
      );
      if (converted.dropped)
        this.services.log.info(
          `${converted.dropped} message part(s) chat completions cannot carry were left out`,
        );
      const request = toRequest(model, converted.messages, options);
      await this.checkCap(model, request.messages, request.tools, request.maxTokens);
      const result = await client.streamLanguageModel(request, abort.signal, {
        onText: (text) => progress.report(new vscode.LanguageModelTextPart(text)),
        ...(thinking ? { onReasoning: (text) => progress.report(new thinking(text)) } : {}),
      });
      for (const call of result.toolCalls)
        progress.report(
          new vscode.LanguageModelToolCallPart(call.id, call.name, this.toolInput(call)),
        );
      outcome.toolCalls = result.toolCalls.length;
      outcome.status = 'done';
      if (result.meta) {
        outcome.meta = result.meta;
        this.services.spend.record(result.meta.cost, result.meta.currency);
        this.services.learnBalance(result.meta.balance, result.meta.currency);
      } else this.services.balanceMayHaveChanged();
    } catch (error) {
      const failure = toFailure(error);
      if (failure.kind === 'aborted' || token.isCancellationRequested) {
        // What streamed before the stop is billed by the gateway; the balance is read again.
        outcome.status = 'cancelled';
        this.services.balanceMayHaveChanged();
        return;
      }
      if (error instanceof CapRefusal) {
        outcome.status = 'refused';
        outcome.advice = { message: error.message, actions: ['openSettings'] };
        this.services.offer(outcome.advice);
        throw vscode.LanguageModelError.Blocked(error.message);
      }
      this.services.balanceMayHaveChanged();
      const advice = this.services.advise(error) ?? { message: String(error), actions: [] };
      outcome.advice = advice;
      this.services.offer(advice);
      const code = languageModelErrorCode(failure);
      throw code ? vscode.LanguageModelError[code](advice.message) : new Error(advice.message);
    } finally {
      abort.dispose();
      this.answered.fire(outcome);
    }
  }

  /** Refuses (throws CapRefusal) when the request's worst case could pass the daily spending cap. */
  private async checkCap(
    model: ModelInformation,
    messages: LanguageModelRequest['messages'],
    tools: LanguageModelRequest['tools'],
    maxTokens: number,
  ): Promise<void> {
    const spend = this.services.spend;
    const cap = spend.capMicros();
    if (cap === undefined) return;
    const today = spend.todayMicros();
    const worst = await spend.worstCase({
      model: model.id,
      promptChars: requestChars(messages, tools),
      maxTokens,
      messages: messages.length,
      purpose: 'A request from VS Code chat',
    });
    if (worst === undefined ? today < cap : today + worst <= cap) return;
    const currency = spend.view().currency;
    const money = (micros: number): string => formatMoney(fromMicros(micros), currency);
    throw new CapRefusal(
      `AIHub did not send this request: it could cost ${worst === undefined ? 'an unknown amount' : `up to ${money(worst)}`} on ${model.id}, which could pass your daily spending cap of ${money(cap)} (${money(today)} spent today, UTC). Raise aihub.spendingCap.perDay, pick a cheaper tier, or wait for tomorrow.`,
    );
  }

  private toolInput(call: AgentToolCall): object {
    try {
      const input = JSON.parse(call.arguments || '{}') as unknown;
      if (typeof input === 'object' && input !== null && !Array.isArray(input)) return input;
    } catch {
      // fall through: the model wrote arguments that are not JSON
    }
    this.services.log.warn(`The model's arguments for ${call.name} are not a JSON object`);
    return {};
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
    this.changed.dispose();
    this.answered.dispose();
  }
}

class CapRefusal extends Error {}

/** The gateway request: the converted messages, the tools, and the few model options it honours. */
function toRequest(
  model: ModelInformation,
  messages: LanguageModelRequest['messages'],
  options: vscode.ProvideLanguageModelChatResponseOptions,
): LanguageModelRequest {
  const tools = toChatTools(options.tools, options.toolMode);
  const modelOptions = (options.modelOptions ?? {}) as Record<string, unknown>;
  return {
    model: model.id,
    messages,
    ...(tools.tools ? { tools: tools.tools, toolChoice: tools.tool_choice } : {}),
    // Without a limit of its own the tier's output cap, which is also what the gateway holds.
    maxTokens:
      boundedInt(modelOptions.max_tokens, 1, model.maxOutputTokens) ?? model.maxOutputTokens,
    temperature: boundedNumber(modelOptions.temperature, 0, 2),
    topP: boundedNumber(modelOptions.top_p, 0, 1),
    stop: stopList(modelOptions.stop),
  };
}

function boundedInt(value: unknown, min: number, max: number): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value)
    ? Math.min(Math.max(value, min), max)
    : undefined;
}

function boundedNumber(value: unknown, min: number, max: number): number | undefined {
  return typeof value === 'number' && Number.isFinite(value)
    ? Math.min(Math.max(value, min), max)
    : undefined;
}

function stopList(value: unknown): string[] | undefined {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((s) => typeof s === 'string'))
    return value.slice(0, 4) as string[];
  return undefined;
}
