// What a request has changed in the store so far. A refusal by the store can then say
// truthfully whether anything was changed: "nothing was changed" only when the statement that
// failed is known not to have been applied AND no earlier transaction of the same request was
// committed (a recharge whose settlement failed after its hold committed did change something).
// Entered once per request at the HTTP door (app.ts); the store marks it when it acknowledges
// a transaction that wrote.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestScope {
  /** Transactions of this request the store acknowledged as committed (that wrote something). */
  committed: number;
}

const scopes = new AsyncLocalStorage<RequestScope>();

/** Runs `fn` (a request's handling) in a scope of its own. */
export function inRequestScope<T>(fn: () => T): T {
  return scopes.run({ committed: 0 }, fn);
}

/** The scope of the request being served, if any (none in background work). */
export function requestScope(): RequestScope | undefined {
  return scopes.getStore();
}
