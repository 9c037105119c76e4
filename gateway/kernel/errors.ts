// Errors that services (commands, engines) throw without knowing HTTP: a kind, a machine code,
// a message and the offending field. Each surface maps a kind to its status and shape
// (http/errors.ts for the JSON APIs, web/context.ts for the dashboard's pages).
export type ServiceErrorKind =
  | 'invalid'
  | 'not_found'
  | 'conflict'
  | 'insufficient_balance'
  | 'forbidden'
  | 'rate_limited'
  | 'unavailable';

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
 * The store cannot reach its database (PostgreSQL store), or a commit's outcome is unknown:
 * nothing was acknowledged, retry later. Every surface answers it 503 store_unavailable
 * with Retry-After (http/errors.ts).
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  readonly code = 'store_unavailable';
  /** Seconds a client should wait before retrying. */
  readonly retry_after_s = 1;
}
