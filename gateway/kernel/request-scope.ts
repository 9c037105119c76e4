// What a request has changed in the store so far. A refusal by the store can then say
// truthfully whether anything was changed: "nothing was changed" only when the statement that
// failed is known not to have been applied AND no earlier transaction of the same request was
// committed (a recharge whose settlement failed after its hold committed did change something).
// The store marks a scope when it acknowledges a transaction of it that wrote.
//
// Two ways a transaction finds its request's scope:
// - explicitly: the lean lane (/v1, the billed hot path) makes one per request (its locals) and
//   passes it with each transaction (`TransactOptions.scope`) and to the error it answers;
// - implicitly: the Express lane's handlers and services do not carry it, so each Express
//   request runs in it as an async-local value (`inRequestScope`), read by the store at commit
//   and by the store errors' constructors. The storage is switched on only while such a
//   request is in flight (kernel/scoped-storage.ts): on Node 20 it costs every promise of the
//   process otherwise.
import type { ServerResponse } from 'node:http';
import { ScopedStorage } from './scoped-storage.js';

export interface RequestScope {
  /** Transactions of this request the store acknowledged as committed (that wrote something). */
  committed: number;
}

const scopes = new ScopedStorage<RequestScope>();

/** A request's scope, nothing committed yet. */
export function newRequestScope(): RequestScope {
  return { committed: 0 };
}

/**
 * Runs `fn` (a request's handling) in `scope`, implicit in its async continuations until
 * `until` closes (an Express request: its response), else until fn's promise settles.
 */
export function inRequestScope<T>(
  fn: () => T,
  options: { scope?: RequestScope; until?: ServerResponse } = {},
): T {
  const { until } = options;
  return scopes.run(
    options.scope ?? newRequestScope(),
    fn,
    until ? (leave) => until.once('close', leave) : undefined,
  );
}

/** The scope of the Express request being served, if any (none in background work or the lean lane, which carries its own). */
export function requestScope(): RequestScope | undefined {
  return scopes.get();
}

/** Express requests in flight in a scope (tests). */
export function scopedRequests(): number {
  return scopes.opened;
}
