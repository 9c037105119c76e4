// The failover chain: providers in order; move on after "unavailable" (transport error,
// timeout, 429, 5xx), never after a business answer. Every attempt is reported, so the
// transaction shows what happened. After a timeout the provider is asked once for the
// transaction's status before the next one is tried: a slow provider may have accepted it,
// and sending the same money to a second provider would pay twice.
import {
  ProviderUnavailableError,
  type LookupRequest,
  type LookupResult,
  type PaymentProvider,
  type ProviderRequest,
  type ProviderResult,
  type UnavailableKind,
} from './types.js';
import { withClientSpan } from '../telemetry/index.js';

export interface Attempt {
  provider: string;
  started_at: string;
  finished_at: string | null;
  /** `in_flight` only while the call runs (or when a crash interrupted it). */
  outcome: 'in_flight' | 'success' | 'pending' | 'on_hold' | 'failed' | 'unavailable';
  error_kind?: UnavailableKind;
  message: string;
  latency_ms?: number;
  provider_ref?: string | null;
}

export type ChainResult =
  { result: ProviderResult; provider: string } | { result: null; provider: null };

export interface ChainHooks {
  now(): Date;
  /** Called (and awaited) before each call, so that the attempt is durable before money may move upstream. */
  beforeAttempt(attempt: Attempt, index: number): Promise<void>;
  afterAttempt(attempt: Attempt, index: number): void;
  /** Aborted on shutdown: the call in flight is abandoned and the transaction stays pending. */
  signal?: AbortSignal;
}

/** Bound on the status question asked after a timeout. */
const STATUS_AFTER_TIMEOUT_MAX_MS = 5_000;

export async function runChain(
  providers: readonly PaymentProvider[],
  request: ProviderRequest,
  hooks: ChainHooks,
): Promise<ChainResult> {
  for (let index = 0; index < providers.length; index++) {
    const provider = providers[index]!;
    if (hooks.signal?.aborted) throw new ChainAbortedError();
    const started = hooks.now();
    const attempt: Attempt = {
      provider: provider.name,
      started_at: started.toISOString(),
      finished_at: null,
      outcome: 'in_flight',
      message: '',
    };
    await hooks.beforeAttempt(attempt, index);
    const finish = (fields: Partial<Attempt>) => {
      const finished = hooks.now();
      Object.assign(attempt, fields, {
        finished_at: finished.toISOString(),
        latency_ms: finished.getTime() - started.getTime(),
      });
      hooks.afterAttempt(attempt, index);
    };
    try {
      const result = await withClientSpan(
        `provider ${provider.name}`,
        attemptAttributes(provider, request),
        async () => {
          const answer = await callWithTimeout(provider.timeout_ms, hooks.signal, (signal) =>
            provider.submit(request, signal),
          );
          return answer ?? (await askAfterTimeout(provider, request, hooks.signal));
        },
      );
      if (result) {
        finish({
          outcome: result.outcome,
          message: result.message,
          provider_ref: result.provider_ref,
        });
        return { result, provider: provider.name };
      }
      finish({
        outcome: 'unavailable',
        error_kind: 'timeout',
        message: `no answer in ${provider.timeout_ms} ms, and no record of the transaction at ${provider.name}`,
      });
    } catch (error) {
      if (hooks.signal?.aborted) throw new ChainAbortedError();
      const kind: UnavailableKind =
        error instanceof ProviderUnavailableError ? error.kind : 'transport';
      finish({
        outcome: 'unavailable',
        error_kind: kind,
        message: (error as Error).message.slice(0, 500),
      });
    }
  }
  return { result: null, provider: null };
}

export type LookupChainResult =
  | { result: LookupResult; provider: string; attempts: Attempt[] }
  | { result: null; provider: null; attempts: Attempt[] };

/**
 * The same failover for lookups, which move no money: providers in order, on to the next
 * after "unavailable" (and after a timeout: asking twice costs nothing), never after an answer.
 */
export async function runLookupChain(
  providers: readonly PaymentProvider[],
  request: LookupRequest,
  hooks: { now(): Date; signal?: AbortSignal },
): Promise<LookupChainResult> {
  const attempts: Attempt[] = [];
  for (const provider of providers) {
    if (!provider.lookup) continue;
    if (provider.lookup_kinds && !provider.lookup_kinds.includes(request.kind)) continue;
    if (hooks.signal?.aborted) throw new ChainAbortedError();
    const started = hooks.now();
    const attempt: Attempt = {
      provider: provider.name,
      started_at: started.toISOString(),
      finished_at: null,
      outcome: 'in_flight',
      message: '',
    };
    attempts.push(attempt);
    const finish = (fields: Partial<Attempt>) => {
      const finished = hooks.now();
      Object.assign(attempt, fields, {
        finished_at: finished.toISOString(),
        latency_ms: finished.getTime() - started.getTime(),
      });
    };
    try {
      const result = await withClientSpan(
        `provider ${provider.name}`,
        attemptAttributes(provider, request),
        () =>
          callWithTimeout(provider.timeout_ms, hooks.signal, (signal) =>
            provider.lookup!(request, signal),
          ),
      );
      if (result) {
        finish({ outcome: 'success', message: result.message });
        return { result, provider: provider.name, attempts };
      }
      finish({
        outcome: 'unavailable',
        error_kind: 'timeout',
        message: `no answer in ${provider.timeout_ms} ms`,
      });
    } catch (error) {
      if (hooks.signal?.aborted) throw new ChainAbortedError();
      const kind: UnavailableKind =
        error instanceof ProviderUnavailableError ? error.kind : 'transport';
      finish({
        outcome: 'unavailable',
        error_kind: kind,
        message: (error as Error).message.slice(0, 500),
      });
    }
  }
  return { result: null, provider: null, attempts };
}

/** A provider attempt's span attributes: who and which service, never the number, account or PAN. */
function attemptAttributes(provider: PaymentProvider, request: { service: string }) {
  return { 'aihub.provider': provider.name, 'aihub.payments.service': request.service };
}

/** After a timeout: did the provider take the transaction after all? null when it has no record (or cannot say). */
async function askAfterTimeout(
  provider: PaymentProvider,
  request: ProviderRequest,
  outer?: AbortSignal,
): Promise<ProviderResult | null> {
  try {
    const answer = await callWithTimeout(
      Math.min(provider.timeout_ms, STATUS_AFTER_TIMEOUT_MAX_MS),
      outer,
      (signal) => provider.status({ ...request, provider_ref: null }, signal),
    );
    if (!answer || answer.outcome === 'not_found') return null;
    return answer;
  } catch (error) {
    if (outer?.aborted) throw error;
    return null;
  }
}

/** Runs `call` with its own abort signal; null when it timed out. */
export async function callWithTimeout<T>(
  timeout_ms: number,
  outer: AbortSignal | undefined,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T | null> {
  const controller = new AbortController();
  let timed_out = false;
  const timer = setTimeout(() => {
    timed_out = true;
    controller.abort();
  }, timeout_ms);
  const onOuter = () => controller.abort();
  outer?.addEventListener('abort', onOuter, { once: true });
  try {
    return await call(controller.signal);
  } catch (error) {
    if (timed_out) return null;
    throw error;
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuter);
  }
}

export class ChainAbortedError extends Error {
  override name = 'ChainAbortedError';
  constructor() {
    super('the gateway is shutting down');
  }
}
