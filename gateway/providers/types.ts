// The one interface every payment upstream implements, whatever the service. The failover
// chain (chain.ts) knows only this interface; adding an upstream is adding an adapter.
import type { ServiceName } from '../store/state.js';

export type PaymentService = Exclude<ServiceName, 'ai'>;

/** What a provider is asked to do. `subject` is the number, consumer number or account number. */
export interface ProviderRequest {
  txn_id: string;
  service: PaymentService;
  amount_micros: number;
  subject: string;
  /** Service-specific parameters (operator_id, ifsc, txn_type...). */
  params: Record<string, string | number>;
  /** When the transaction was first submitted (ISO time). */
  submitted_at: string;
}

export interface StatusQuery extends ProviderRequest {
  /** The reference the provider gave, when it gave one. */
  provider_ref: string | null;
}

/** A business answer. `failed` is a decline: final, never a reason to fail over. */
export type ProviderResult =
  | {
      outcome: 'success';
      provider_ref: string | null;
      message: string;
      data?: Record<string, string | number>;
    }
  | { outcome: 'pending'; provider_ref: string | null; message: string }
  | { outcome: 'failed'; provider_ref: string | null; message: string; code?: string };

/** A status check can also learn that the provider never saw the transaction. */
export type StatusResult = ProviderResult | { outcome: 'not_found'; message: string };

export type UnavailableKind =
  'timeout' | 'transport' | 'http_5xx' | 'rate_limited' | 'bad_response' | 'misconfigured';

/** The provider could not answer (as opposed to answering "declined"): fail over. */
export class ProviderUnavailableError extends Error {
  override name = 'ProviderUnavailableError';
  constructor(
    readonly kind: UnavailableKind,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A question that moves no money (a bill fetch): asked with the same failover and timeouts,
 * but without a hold or a transaction.
 */
export interface LookupRequest {
  service: PaymentService;
  /** What is looked up, e.g. `bill`. */
  kind: string;
  /** The consumer number (sandbox answers key on its last four digits). */
  subject: string;
  params: Record<string, string | number>;
}

/** `not_found` is a business answer (no failover); the provider could not answer → ProviderUnavailableError. */
export type LookupResult =
  | { outcome: 'found'; data: Record<string, string | number>; message: string }
  | { outcome: 'not_found'; message: string };

export interface PaymentProvider {
  readonly name: string;
  /** Upper bound of one call; the chain aborts `signal` when it passes. */
  readonly timeout_ms: number;
  submit(request: ProviderRequest, signal: AbortSignal): Promise<ProviderResult>;
  status(query: StatusQuery, signal: AbortSignal): Promise<StatusResult>;
  /** Lookups (bill fetch); a provider without it is skipped by the lookup chain. */
  lookup?(request: LookupRequest, signal: AbortSignal): Promise<LookupResult>;
}
