// Maps a failed gateway call to what the user is told and which one-click actions are offered.
// Pure apart from reading the openai SDK's error classes; unit-tested.
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ActionId } from './chat/protocol.js';

export type GatewayFailure =
  | {
      kind: 'http';
      status: number;
      code: string | undefined;
      message: string;
      retryAfterSeconds: number | undefined;
      /** The gateway's wallet page with the shortfall filled in (a 402's x-aihub-topup-url). */
      topUpUrl?: string;
    }
  | { kind: 'unreachable'; message: string }
  | { kind: 'timeout' }
  | { kind: 'aborted' }
  | { kind: 'missingKey' }
  | { kind: 'badBaseUrl'; message: string }
  | { kind: 'unknown'; message: string };

export interface Advice {
  message: string;
  actions: ActionId[];
  /** What the Top Up action opens when it is offered for this failure. */
  topUpUrl?: string;
}

export class AIHubError extends Error {
  constructor(readonly failure: GatewayFailure) {
    super('message' in failure ? failure.message : failure.kind);
    this.name = 'AIHubError';
  }
}

export function toFailure(error: unknown): GatewayFailure {
  if (error instanceof AIHubError) return error.failure;
  if (error instanceof APIUserAbortError) return { kind: 'aborted' };
  if (error instanceof APIConnectionTimeoutError) return { kind: 'timeout' };
  if (error instanceof APIConnectionError)
    return { kind: 'unreachable', message: causeMessage(error) };
  if (error instanceof APIError && typeof error.status === 'number') {
    const body = (error.error ?? {}) as { message?: unknown; code?: unknown };
    const retryAfter = Number(error.headers?.get('retry-after'));
    const topUpUrl = error.headers?.get('x-aihub-topup-url') ?? undefined;
    return {
      kind: 'http',
      status: error.status,
      code: typeof body.code === 'string' ? body.code : undefined,
      message: typeof body.message === 'string' ? body.message : error.message,
      retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined,
      ...(topUpUrl ? { topUpUrl } : {}),
    };
  }
  if (error instanceof Error && error.name === 'AbortError') return { kind: 'aborted' };
  return { kind: 'unknown', message: error instanceof Error ? error.message : String(error) };
}

function causeMessage(error: Error): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? error.message;
}

/** Returns undefined for a cancellation: the user asked for it, so there is nothing to report. */
export function advise(
  failure: GatewayFailure,
  gateway: { apiBase: string; isLocal: boolean },
): Advice | undefined {
  switch (failure.kind) {
    case 'aborted':
      return undefined;
    case 'missingKey':
      return {
        message: 'No AIHub API key is set.',
        actions: gateway.isLocal ? ['startLocalGateway', 'setApiKey'] : ['setApiKey'],
      };
    case 'badBaseUrl':
      return { message: `AIHub base URL: ${failure.message}`, actions: ['openSettings'] };
    case 'unreachable':
      return {
        message: `The AIHub gateway at ${gateway.apiBase} is not reachable (${failure.message}).`,
        actions: gateway.isLocal ? ['startLocalGateway'] : ['startLocalGateway', 'openSettings'],
      };
    case 'timeout':
      return {
        message: `The AIHub gateway at ${gateway.apiBase} did not answer in time.`,
        actions: ['openSettings'],
      };
    case 'unknown':
      return { message: `AIHub: ${failure.message}`, actions: [] };
    case 'http':
      return adviseHttp(failure);
  }
}

function adviseHttp(failure: Extract<GatewayFailure, { kind: 'http' }>): Advice {
  const detail = failure.message;
  switch (failure.status) {
    case 401:
      return failure.code === 'key_expired'
        ? { message: `This AIHub API key has expired: ${detail}`, actions: ['setApiKey'] }
        : { message: `The AIHub API key was rejected: ${detail}`, actions: ['setApiKey'] };
    case 402:
      // A key's own spending limit is not the wallet: a top-up does not lift it, another key does.
      return failure.code === 'key_limit_exceeded'
        ? {
            message: `This AIHub API key has reached its spending limit (the wallet may still have credit; raise the key's limit on the gateway's API keys page or use another key): ${detail}`,
            actions: ['setApiKey'],
          }
        : {
            message: `Your AIHub balance is too low: ${detail}`,
            actions: ['topUp'],
            ...(failure.topUpUrl ? { topUpUrl: failure.topUpUrl } : {}),
          };
    case 403:
      return failure.code === 'model_not_allowed'
        ? {
            message: `This AIHub API key may not use this tier: ${detail}`,
            actions: ['selectModel', 'setApiKey'],
          }
        : { message: `AIHub refused the request: ${detail}`, actions: ['setApiKey'] };
    case 404:
      return failure.code === 'model_not_found'
        ? { message: `AIHub does not know this model: ${detail}`, actions: ['selectModel'] }
        : {
            message: `Not found at the AIHub base URL (is it right?): ${detail}`,
            actions: ['openSettings'],
          };
    case 429: {
      const wait = failure.retryAfterSeconds ? ` Try again in ${failure.retryAfterSeconds} s.` : '';
      return { message: `AIHub rate limit reached: ${detail}.${wait}`, actions: [] };
    }
    default:
      return { message: `AIHub error ${failure.status}: ${detail}`, actions: [] };
  }
}
