// How an inline completion is asked of the gateway, behind one interface: today a chat completion
// with a fill-in-the-middle prompt; where the gateway serves POST /v1/completions with `suffix`
// (probed once per gateway and key), the native FIM request. The provider knows only the interface.
import type { ReplyMeta } from '../chat/protocol.js';
import type { GatewayClient } from '../client.js';
import { fimMessages, fimStops, type FimInput } from './fim.js';

export interface CompletionRequest extends FimInput {
  model: string;
  maxTokens: number;
}

export interface CompletionAnswer {
  /** The model's text, before clean-up. */
  text: string;
  meta: ReplyMeta | undefined;
}

export interface CompletionClient {
  readonly kind: 'chat-fim' | 'completions';
  complete(request: CompletionRequest, signal: AbortSignal): Promise<CompletionAnswer>;
  /** Characters and messages sent, for the spending cap's worst case. */
  size(request: CompletionRequest): { chars: number; messages: number };
}

const TEMPERATURE = 0.1;

export class ChatFimCompletionClient implements CompletionClient {
  readonly kind = 'chat-fim';
  constructor(private readonly gateway: GatewayClient) {}

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<CompletionAnswer> {
    const stop = fimStops(request.mode);
    const result = await this.gateway.complete(
      {
        model: request.model,
        messages: fimMessages(request),
        maxTokens: request.maxTokens,
        temperature: TEMPERATURE,
        ...(stop ? { stop } : {}),
      },
      signal,
    );
    return { text: result.text, meta: result.meta };
  }

  size(request: CompletionRequest): { chars: number; messages: number } {
    return {
      chars: fimMessages(request).reduce((sum, m) => sum + m.content.length, 0),
      messages: 2,
    };
  }
}

export class NativeFimCompletionClient implements CompletionClient {
  readonly kind = 'completions';
  constructor(private readonly gateway: GatewayClient) {}

  async complete(request: CompletionRequest, signal: AbortSignal): Promise<CompletionAnswer> {
    const stop = fimStops(request.mode);
    const result = await this.gateway.completeFim(
      {
        model: request.model,
        prompt: request.prefix,
        suffix: request.suffix,
        maxTokens: request.maxTokens,
        temperature: TEMPERATURE,
        ...(stop ? { stop } : {}),
      },
      signal,
    );
    return { text: result.text, meta: result.meta };
  }

  size(request: CompletionRequest): { chars: number; messages: number } {
    return { chars: request.prefix.length + request.suffix.length, messages: 1 };
  }
}

/** Remembers, per gateway address, whether it serves /v1/completions (bounded: a handful of gateways). */
export class CompletionClientChooser {
  private readonly served = new Map<string, boolean>();

  async choose(gateway: GatewayClient, signal: AbortSignal): Promise<CompletionClient> {
    const where = gateway.connection.apiBase;
    let serves = this.served.get(where);
    if (serves === undefined) {
      try {
        serves = await gateway.servesCompletions(signal);
      } catch {
        return new ChatFimCompletionClient(gateway);
      }
      if (this.served.size >= 16) this.served.clear();
      this.served.set(where, serves);
    }
    return serves ? new NativeFimCompletionClient(gateway) : new ChatFimCompletionClient(gateway);
  }

  forget(): void {
    this.served.clear();
  }
}
