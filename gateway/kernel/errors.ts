// Errors that services (commands, engines) throw without knowing HTTP: a kind, a machine code,
// a message and the offending field. Each surface maps a kind to its status and shape
// (http/errors.ts for the JSON APIs, web/context.ts for the dashboard's pages).
import { requestScope, type RequestScope } from './request-scope.js';

export type ServiceErrorKind =
  | 'invalid'
  | 'not_found'
  | 'conflict'
  | 'insufficient_balance'
  | 'forbidden'
  | 'rate_limited'
  | 'unavailable'
  | 'insufficient_storage';

export class ServiceError extends Error {
  constructor(
    readonly kind: ServiceErrorKind,
    readonly code: string,
    message: string,
    readonly field: string | null = null,
    /** Advice for the caller, such as `Retry-After`; a surface may send them as headers. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

/**
 * The data dir's disk had no room to make a change durable (JSON-file store): the change was
 * undone, nothing of it recorded; reads go on. 507 insufficient_storage on every surface. The
 * default text says "nothing was changed" only when the request it answers has had no earlier
 * write acknowledged (its scope, kernel/request-scope.ts), as a store_unavailable does.
 */
export class StoreFullError extends ServiceError {
  constructor(message?: string, scope: RequestScope | undefined = requestScope()) {
    super(
      'insufficient_storage',
      'insufficient_storage',
      message ??
        (scope !== undefined && scope.committed === 0
          ? "the gateway's disk is full, so this change was not recorded (nothing was changed by it); reads still work; retry once space is freed"
          : "the gateway's disk is full, so this request's last change was not recorded; what it recorded before stands; reads still work; retry with the same idempotency key once space is freed"),
      null,
      { 'retry-after': '5' },
    );
    this.name = 'StoreFullError';
  }
}

/**
 * The store could not serve a read or a write (PostgreSQL store: the database is down or the
 * connection dropped). Every surface answers it 503 with Retry-After (http/errors.ts):
 * `store_unavailable`, whose text says "nothing was changed" only when `nothingChanged` holds
 * for the request answered: the failed statement is known not to have been applied (it never
 * reached the server, the server refused it, or the gateway's lookup of its commit id proved
 * it absent) and no transaction of that request was committed.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  readonly code: 'store_unavailable' | 'store_outcome_unknown' = 'store_unavailable';
  /** Seconds a client should wait before retrying. */
  readonly retry_after_s = 1;
  /** The failed statement is known not to have been applied. */
  readonly known_not_applied: boolean = true;
  /** The scope of the request it was raised for, where that was known (kernel/request-scope.ts). */
  readonly scope: RequestScope | undefined;

  constructor(message: string, options: ErrorOptions & { scope?: RequestScope | undefined } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.scope = 'scope' in options ? options.scope : requestScope();
  }

  /**
   * Whether the request answered changed nothing (known, not presumed): `request` is the
   * answering request's scope (a lane knows its own; a read's failure may be shared by several
   * requests), else the one the error was raised in.
   */
  nothingChanged(request: RequestScope | undefined = this.scope): boolean {
    return this.known_not_applied && request !== undefined && request.committed === 0;
  }
}

/**
 * A commit whose outcome the gateway could not learn: the connection dropped after the commit
 * statement was sent and before its answer, and the lookup of its commit id did not succeed
 * within the wait (docs/store-postgres.md, "Faults"). 503 `store_outcome_unknown`: a retry with
 * the same idempotency key is safe.
 */
export class StoreOutcomeUnknownError extends StoreUnavailableError {
  override name = 'StoreOutcomeUnknownError';
  override readonly code = 'store_outcome_unknown';
  override readonly known_not_applied = false;
}
