// Errors that services (commands, engines) throw without knowing HTTP: a kind, a machine code,
// a message and the offending field. Each surface maps a kind to its status and shape
// (http/errors.ts for the JSON APIs, web/context.ts for the dashboard's pages).
export type ServiceErrorKind = 'invalid' | 'not_found' | 'conflict' | 'insufficient_balance' | 'forbidden' | 'rate_limited' | 'unavailable';

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
