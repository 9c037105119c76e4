// The built-in sandbox provider (any service): it answers by the last four digits of the
// subject, as CONTRACT.md's sandbox table says, and is stateless, so a status check after a
// restart gives the same answer as before it.
import { createHash } from 'node:crypto';
import type { SandboxProviderConfig } from './config.js';
import {
  ProviderUnavailableError,
  type PaymentProvider,
  type ProviderRequest,
  type ProviderResult,
  type StatusQuery,
  type StatusResult,
} from './types.js';

export const SANDBOX_OUTCOMES = {
  declined: '0001',
  pending_then_success: '0002',
  pending_then_failed: '0003',
  first_provider_times_out: '0004',
  every_provider_fails: '0005',
} as const;

export class SandboxProvider implements PaymentProvider {
  readonly name: string;
  readonly timeout_ms: number;

  constructor(
    private readonly config: SandboxProviderConfig,
    private readonly now: () => Date,
  ) {
    this.name = config.name;
    this.timeout_ms = config.timeout_ms;
  }

  async submit(request: ProviderRequest, signal: AbortSignal): Promise<ProviderResult> {
    const suffix = request.subject.slice(-4);
    if (this.config.hang_on.includes(suffix)) return hang(signal);
    switch (suffix) {
      case SANDBOX_OUTCOMES.declined:
        return { outcome: 'failed', provider_ref: this.ref(request), message: 'declined by the operator (sandbox 0001)', code: 'declined' };
      case SANDBOX_OUTCOMES.pending_then_success:
      case SANDBOX_OUTCOMES.pending_then_failed:
        return { outcome: 'pending', provider_ref: this.ref(request), message: 'accepted, awaiting the operator (sandbox)' };
      case SANDBOX_OUTCOMES.every_provider_fails:
        throw new ProviderUnavailableError('http_5xx', `sandbox provider ${this.name} answered 503 (sandbox 0005)`);
      default:
        return this.success(request);
    }
  }

  async status(query: StatusQuery, signal: AbortSignal): Promise<StatusResult> {
    if (signal.aborted) throw new ProviderUnavailableError('timeout', 'aborted');
    const suffix = query.subject.slice(-4);
    if (this.config.hang_on.includes(suffix)) return { outcome: 'not_found', message: `sandbox provider ${this.name} has no record of ${query.txn_id}` };
    const settled = this.now().getTime() - Date.parse(query.submitted_at) >= this.config.pending_ms;
    switch (suffix) {
      case SANDBOX_OUTCOMES.declined:
        return { outcome: 'failed', provider_ref: this.ref(query), message: 'declined by the operator (sandbox 0001)', code: 'declined' };
      case SANDBOX_OUTCOMES.pending_then_success:
        return settled ? this.success(query) : { outcome: 'pending', provider_ref: this.ref(query), message: 'still awaiting the operator (sandbox)' };
      case SANDBOX_OUTCOMES.pending_then_failed:
        return settled
          ? { outcome: 'failed', provider_ref: this.ref(query), message: 'failed at the operator (sandbox 0003)', code: 'operator_failed' }
          : { outcome: 'pending', provider_ref: this.ref(query), message: 'still awaiting the operator (sandbox)' };
      case SANDBOX_OUTCOMES.every_provider_fails:
        throw new ProviderUnavailableError('http_5xx', `sandbox provider ${this.name} answered 503 (sandbox 0005)`);
      default:
        return this.success(query);
    }
  }

  private ref(request: ProviderRequest): string {
    return `${this.name}-${request.txn_id.slice(-12)}`;
  }

  private success(request: ProviderRequest): ProviderResult {
    // A stable 12-digit operator reference (the form of a UTR or an operator transaction id).
    const digits = BigInt(`0x${createHash('sha256').update(`${this.name}:${request.txn_id}`).digest('hex').slice(0, 15)}`) % 10n ** 12n;
    return {
      outcome: 'success',
      provider_ref: this.ref(request),
      message: 'success (sandbox)',
      data: { operator_ref: digits.toString().padStart(12, '0') },
    };
  }
}

/** Never answers; rejects when the chain gives up. */
function hang(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new ProviderUnavailableError('timeout', 'aborted while waiting'));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}
