// Routes a tier's request over its ordered targets. A target that fails before anything
// reached the client (connection refused, timeout, 429, 5xx, a misconfigured target, an
// answer we cannot bill on) is skipped for the next one; a target whose circuit is open is
// not tried at all. The router knows engines only through the Engine interface.
import { CircuitBreaker, type BreakerOptions, type BreakerState } from './breaker.js';
import {
  UpstreamError,
  type EmbedRequest,
  type Engine,
  type EngineRequest,
  type UpstreamChunk,
  type UpstreamCompletion,
  type UpstreamEmbeddings,
  type UpstreamErrorKind,
} from './types.js';
import { withUpstreamAttempt } from '../telemetry/index.js';
import type { CallSignal } from './call-signal.js';

export type AttemptOutcome = 'ok' | UpstreamErrorKind | 'circuit_open';

export interface Attempt {
  target: string;
  outcome: AttemptOutcome;
  status: number | null;
}

/**
 * Told of every attempt as it ends, circuit_open skips included (with 0 s). `seconds` is
 * the engine call's duration: for a stream, up to its first chunk. Called on the hot path:
 * it must be cheap and must not throw.
 */
export type AttemptObserver = (target: string, outcome: AttemptOutcome, seconds: number) => void;

/** No target could answer: the status says why (last failure timeout → 504, overload → 503, else 502). */
export class RoutingError extends Error {
  override name = 'RoutingError';
  constructor(
    readonly status: 502 | 503 | 504,
    readonly code: 'upstream_error' | 'upstream_unavailable' | 'upstream_timeout',
    message: string,
    readonly attempts: Attempt[],
    readonly retry_after_s: number | null,
  ) {
    super(message);
  }
}

export interface Routed<T> {
  target: string;
  attempts: Attempt[];
  value: T;
}

export interface OpenedStream {
  /** The first chunk, already read, so that failover was still possible when it failed. */
  first: UpstreamChunk | null;
  rest: AsyncIterator<UpstreamChunk>;
}

export class Router {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly engines: ReadonlyMap<string, Engine>,
    breaker: BreakerOptions,
    now_ms: () => number,
    private readonly on_attempt: AttemptObserver | null = null,
  ) {
    for (const name of engines.keys()) this.breakers.set(name, new CircuitBreaker(breaker, now_ms));
  }

  breakerStates(): Record<string, BreakerState> {
    return Object.fromEntries([...this.breakers].map(([name, b]) => [name, b.state]));
  }

  complete(
    targets: readonly string[],
    request: EngineRequest,
  ): Promise<Routed<UpstreamCompletion>> {
    return this.route(targets, request, (engine) => engine.complete(request));
  }

  stream(targets: readonly string[], request: EngineRequest): Promise<Routed<OpenedStream>> {
    return this.route(targets, request, async (engine, breaker) => {
      const iterator = engine.stream(request)[Symbol.asyncIterator]();
      const first = await iterator.next();
      return { first: first.done ? null : first.value, rest: watched(iterator, breaker) };
    });
  }

  embed(targets: readonly string[], request: EmbedRequest): Promise<Routed<UpstreamEmbeddings>> {
    return this.route(targets, request, (engine) => {
      if (!engine.embed)
        return Promise.reject(
          new UpstreamError(
            'misconfigured',
            `engine type ${engine.type} does not serve embeddings`,
          ),
        );
      return engine.embed(request);
    });
  }

  /** Tries the targets in order with `attempt` (for calls that pick per target how to speak to it). */
  each<T>(
    targets: readonly string[],
    request: { signal: CallSignal },
    attempt: (engine: Engine) => Promise<T>,
  ): Promise<Routed<T>> {
    return this.route(targets, request, attempt);
  }

  private async route<T>(
    targets: readonly string[],
    request: { signal: CallSignal },
    attempt: (engine: Engine, breaker: CircuitBreaker) => Promise<T>,
  ): Promise<Routed<T>> {
    const attempts: Attempt[] = [];
    let last: UpstreamError | null = null;
    for (const target of targets) {
      if (request.signal.aborted) throw new UpstreamError('aborted', 'the client went away');
      const engine = this.engines.get(target);
      const breaker = this.breakers.get(target);
      if (!engine || !breaker) throw new Error(`invariant: target ${target} has no engine`);
      if (!breaker.tryAcquire()) {
        attempts.push({ target, outcome: 'circuit_open', status: null });
        this.on_attempt?.(target, 'circuit_open', 0);
        continue;
      }
      const started_ms = performance.now();
      try {
        const value = await withUpstreamAttempt(target, () => attempt(engine, breaker));
        breaker.onSuccess();
        attempts.push({ target, outcome: 'ok', status: null });
        this.on_attempt?.(target, 'ok', (performance.now() - started_ms) / 1000);
        return { target, attempts, value };
      } catch (error) {
        const failure =
          error instanceof UpstreamError
            ? error
            : new UpstreamError('invalid_response', String(error), null, { cause: error });
        if (failure.targetFault) breaker.onFailure();
        else breaker.onNeutral();
        attempts.push({ target, outcome: failure.kind, status: failure.status });
        this.on_attempt?.(target, failure.kind, (performance.now() - started_ms) / 1000);
        if (!failure.retryable) throw failure;
        last = failure;
      }
    }
    throw this.exhausted(targets, attempts, last);
  }

  private exhausted(
    targets: readonly string[],
    attempts: Attempt[],
    last: UpstreamError | null,
  ): RoutingError {
    const summary = attempts
      .map((a) => `${a.target}: ${a.outcome}${a.status ? ` ${a.status}` : ''}`)
      .join(', ');
    if (!last || last.kind === 'rate_limited') {
      const waits = targets.map((t) => this.breakers.get(t)!.retryAfterMs()).filter((ms) => ms > 0);
      const retry_after_s = waits.length
        ? Math.max(1, Math.ceil(Math.min(...waits) / 1000))
        : last
          ? 1
          : null;
      return new RoutingError(
        503,
        'upstream_unavailable',
        `no upstream is available for this model right now (${summary})`,
        attempts,
        retry_after_s,
      );
    }
    if (last.kind === 'timeout')
      return new RoutingError(
        504,
        'upstream_timeout',
        `the upstream timed out (${summary})`,
        attempts,
        null,
      );
    return new RoutingError(
      502,
      'upstream_error',
      `the upstream failed (${summary})`,
      attempts,
      null,
    );
  }
}

/** Reports a stream that breaks after its first chunk to the target's breaker. */
function watched(
  iterator: AsyncIterator<UpstreamChunk>,
  breaker: CircuitBreaker,
): AsyncIterator<UpstreamChunk> {
  return {
    async next() {
      try {
        return await iterator.next();
      } catch (error) {
        if (error instanceof UpstreamError && error.targetFault) breaker.onFailure();
        throw error;
      }
    },
    async return() {
      return (await iterator.return?.()) ?? { done: true, value: undefined };
    },
  };
}
