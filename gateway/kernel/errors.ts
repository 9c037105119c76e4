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
 * undone, nothing of it recorded; reads go on. 507 insufficient_storage on every surface.
 */
export class StoreFullError extends ServiceError {
  constructor(
    message = "the gateway's disk is full, so this change was not recorded (nothing was changed by it); reads still work; retry once space is freed",
  ) {
    super('insufficient_storage', 'insufficient_storage', message, null, { 'retry-after': '5' });
    this.name = 'StoreFullError';
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
