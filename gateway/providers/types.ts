// The one interface every payment upstream implements, whatever the service. The failover
// chain (chain.ts) knows only this interface; adding an upstream is adding an adapter.
/**
 * The payment services an adapter may be asked to serve, by code. Named here, not in the
 * payments room's list, because an adapter implements each service's provider actions: a new
 * service needs its actions in the adapters that serve it (docs/ARCHITECTURE.md).
 */
export type PaymentService = 'recharge' | 'dmt' | 'pan' | 'bills';

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
  /** Accepted, and held by the provider for a review (an enquiry is needed): not final, checks go on. */
  | { outcome: 'on_hold'; provider_ref: string | null; message: string }
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
 * What a lookup asks: a bill (`bill`), the operator and circle of a mobile number (`hlr`), an
 * operator's plans in a circle (`plans`), a number's special offers (`offers`), a DTH
 * subscriber's account (`dth_info`), a BBPS biller's validation of a customer (`validate`),
 * a BBPS complaint's registration (`complaint`: asked of one provider, never failed over)
 * and its status (`complaint_status`), a DMT remitter's officially valid document
 * (`remitter_kyc`, RBI 2024).
 */
export const LOOKUP_KINDS = [
  'bill',
  'hlr',
  'plans',
  'offers',
  'dth_info',
  'validate',
  'complaint',
  'complaint_status',
  'remitter_kyc',
] as const;
export type LookupKind = (typeof LOOKUP_KINDS)[number];

/**
 * A question that moves no money (a bill fetch, a number's operator, plans): asked with the
 * same failover and timeouts, but without a hold or a transaction.
 */
export interface LookupRequest {
  service: PaymentService;
  /** What is looked up. */
  kind: LookupKind;
  /** The consumer number (sandbox answers key on its last four digits). */
  subject: string;
  params: Record<string, string | number>;
}

/** `not_found` is a business answer (no failover); the provider could not answer → ProviderUnavailableError. */
export type LookupResult =
  | {
      outcome: 'found';
      data: Record<string, string | number>;
      /** A list the answer carries (plans, offers), each item's fields. */
      items?: Array<Record<string, string | number>>;
      message: string;
    }
  | { outcome: 'not_found'; message: string };

/**
 * What a provider tells of a transaction on its own (a callback to the gateway, or the
 * sandbox's later news): a final or changed status, or a success reversed days later
 * (`reversed`, also a `failed` about a success). The engine applies it as the status table allows.
 */
export interface ProviderEvent {
  provider: string;
  txn_id: string;
  outcome: 'success' | 'pending' | 'on_hold' | 'failed' | 'reversed';
  provider_ref?: string | null;
  message: string;
  code?: string;
  data?: Record<string, string | number>;
}

/** A callback that cannot be the provider's (no or wrong signature or token) or cannot be read. */
export class CallbackRefusedError extends Error {
  override name = 'CallbackRefusedError';
  constructor(
    readonly kind: 'unauthenticated' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

/** The status callbacks a provider sends the gateway (an HTTP provider configured with `callback`). */
export interface ProviderCallbacks {
  readonly max_body_bytes: number;
  /** Judged from the head before the body is read: throws CallbackRefusedError when it cannot be the provider's. */
  checkHead(headers: Readonly<Record<string, string | string[] | undefined>>): void;
  /**
   * The event the body tells (null: a status the gateway does not act on), or
   * CallbackRefusedError; a provider that confirms a callback with its own API answers later.
   */
  read(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    raw: Buffer,
  ): ProviderEvent | null | Promise<ProviderEvent | null>;
}

/**
 * A provider that refunds a failed transfer at its own end with the remitter's consent: it
 * sends the remitter the refund OTP itself, and the refund is claimed there with that OTP
 * (PaySprint's DMT refund). `done: false` is the provider's refusal, with its message; a
 * provider that cannot answer throws ProviderUnavailableError.
 */
export interface ProviderRefunds {
  requestOtp(query: StatusQuery, signal: AbortSignal): Promise<{ done: boolean; message: string }>;
  claim(
    query: StatusQuery,
    otp: string,
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }>;
}

/**
 * A provider that registers a DMT remitter (its "sender" or "customer") with its own OTP
 * (Eko's customer OTP): it sends the remitter the OTP itself, and the code the remitter gives
 * is checked there. `done: false` is the provider's refusal, with its message; a provider that
 * cannot answer throws ProviderUnavailableError.
 */
export interface ProviderRemitters {
  requestOtp(
    remitter: { mobile: string; name: string },
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }>;
  verifyOtp(
    remitter: { mobile: string; name: string },
    otp: string,
    signal: AbortSignal,
  ): Promise<{ done: boolean; message: string }>;
}

export interface PaymentProvider {
  readonly name: string;
  /** Present when the provider sends status callbacks (POST /api/callbacks/<service>/<name>). */
  readonly callbacks?: ProviderCallbacks;
  /**
   * Providers that tell of transactions on their own (the sandbox's reversals) deliver those
   * events to `sink`; returns the unsubscribe. HTTP providers' callbacks arrive through the
   * gateway's callback route instead.
   */
  listen?(sink: (event: ProviderEvent) => void): () => void;
  /** Present when the provider refunds a failed transfer with its own OTP (dmt/refund.ts). */
  readonly refunds?: ProviderRefunds;
  /** Present when the provider registers remitters with its own OTP (dmt/commands.ts). */
  readonly remitters?: ProviderRemitters;
  /** Upper bound of one call; the chain aborts `signal` when it passes. */
  readonly timeout_ms: number;
  submit(request: ProviderRequest, signal: AbortSignal): Promise<ProviderResult>;
  status(query: StatusQuery, signal: AbortSignal): Promise<StatusResult>;
  /** Lookups; a provider without it, or without the kind asked, is skipped by the lookup chain. */
  lookup?(request: LookupRequest, signal: AbortSignal): Promise<LookupResult>;
  /** The kinds `lookup` answers (absent: every kind). */
  readonly lookup_kinds?: readonly LookupKind[];
}
