// The built-in sandbox provider (any service): it answers by the last four digits of the
// subject (mobile, consumer or account number; a PAN's four digits), as CONTRACT.md's sandbox
// table says, and is stateless, so a status check after a restart gives the same answer as
// before it. What a success carries depends on the service: an operator reference for a
// recharge, a 12-digit UTR for a transfer (and the registered name for a penny drop), the
// holder's name for a PAN, a biller reference for a bill; lookups fetch bills.
import type { SandboxProviderConfig } from './config.js';
import { SURNAMES, FIRST_NAMES, digitsOf, hashOf, personName, pick } from '../sample/seeded.js';
import {
  sandboxComplaint,
  sandboxDthInfo,
  sandboxHlr,
  sandboxOffers,
  sandboxPlans,
} from '../sample/lookups.js';
import {
  ProviderUnavailableError,
  type ProviderEvent,
  type LookupRequest,
  type LookupResult,
  type PaymentProvider,
  type ProviderRequest,
  type ProviderResult,
  type StatusQuery,
  type StatusResult,
} from '../types.js';
import { indiaTime } from '../../kernel/india-time.js';

export const SANDBOX_OUTCOMES = {
  /** PAN lookups and bill fetches: no such record. */
  not_found: '0000',
  declined: '0001',
  pending_then_success: '0002',
  pending_then_failed: '0003',
  first_provider_times_out: '0004',
  every_provider_fails: '0005',
  /** Success, then reversed by the operator `pending_ms` later (an event, as a callback would bring it). */
  success_then_reversed: '0006',
  /** On hold at the provider, then success on reconciliation. */
  on_hold_then_success: '0007',
  /** A transfer split into parts: its second part and every later one are declined. */
  later_parts_declined: '0009',
  /** PAN verifications: deactivated, deleted, valid but its Aadhaar not seeded. */
  pan_deactivated: '0006',
  pan_deleted: '0007',
  pan_not_seeded: '0008',
} as const;

/** The last four digits of a subject (a PAN's digits are its 6th to 9th characters). */
export function sandboxSuffix(subject: string): string {
  return subject.replace(/\D/g, '').slice(-4);
}

/** What a sandbox `0000` lookup says it did not find. */
const NOT_FOUND: Record<LookupRequest['kind'], string> = {
  bill: 'no bill is due for',
  hlr: 'no operator knows the number',
  plans: 'no plans for',
  offers: 'no offers for',
  dth_info: 'no subscriber',
  validate: 'the biller has no customer',
  complaint: 'no transaction to complain about for',
  complaint_status: 'no complaint',
  remitter_kyc: 'no record of the document',
};

export class SandboxProvider implements PaymentProvider {
  readonly name: string;
  readonly timeout_ms: number;
  /** Who hears of this provider's later news (the engine), and the news not told yet. */
  private readonly sinks = new Set<(event: ProviderEvent) => void>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly config: SandboxProviderConfig,
    private readonly now: () => Date,
  ) {
    this.name = config.name;
    this.timeout_ms = config.timeout_ms;
  }

  listen(sink: (event: ProviderEvent) => void): () => void {
    this.sinks.add(sink);
    return () => {
      this.sinks.delete(sink);
      if (this.sinks.size > 0) return;
      for (const timer of this.timers) clearTimeout(timer);
      this.timers.clear();
    };
  }

  /** Tells the listeners `event` after `pending_ms` (kept in memory only: a restart forgets it). */
  private later(event: ProviderEvent): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      for (const sink of this.sinks) sink(event);
    }, this.config.pending_ms);
    timer.unref();
    this.timers.add(timer);
  }

  async submit(request: ProviderRequest, signal: AbortSignal): Promise<ProviderResult> {
    const suffix = sandboxSuffix(request.subject);
    if (this.config.hang_on.includes(suffix)) return hang(signal);
    if (suffix === SANDBOX_OUTCOMES.later_parts_declined && Number(request.params.leg ?? 1) >= 2)
      return {
        outcome: 'failed',
        provider_ref: this.ref(request),
        message: `part ${String(request.params.leg)} declined by the bank (sandbox 0009)`,
        code: 'declined',
      };
    if (request.service !== 'pan') {
      if (suffix === SANDBOX_OUTCOMES.on_hold_then_success)
        return {
          outcome: 'on_hold',
          provider_ref: this.ref(request),
          message: 'on hold for a review at the operator (sandbox 0007)',
        };
      if (suffix === SANDBOX_OUTCOMES.success_then_reversed) {
        this.later({
          provider: this.name,
          txn_id: request.txn_id,
          outcome: 'reversed',
          provider_ref: this.ref(request),
          message: 'reversed by the operator (sandbox 0006)',
        });
        return this.success(request);
      }
    }
    switch (suffix) {
      case SANDBOX_OUTCOMES.declined:
        return {
          outcome: 'failed',
          provider_ref: this.ref(request),
          message: 'declined by the operator (sandbox 0001)',
          code: 'declined',
        };
      case SANDBOX_OUTCOMES.pending_then_success:
      case SANDBOX_OUTCOMES.pending_then_failed:
        return {
          outcome: 'pending',
          provider_ref: this.ref(request),
          message: 'accepted, awaiting the operator (sandbox)',
        };
      case SANDBOX_OUTCOMES.every_provider_fails:
        throw new ProviderUnavailableError(
          'http_5xx',
          `sandbox provider ${this.name} answered 503 (sandbox 0005)`,
        );
      default:
        if (request.service === 'pan' && request.params.variant !== undefined)
          return this.success(request);
        if (request.service === 'pan' && suffix === SANDBOX_OUTCOMES.not_found)
          return notFoundPan(this.ref(request));
        if (this.deferred(request))
          return {
            outcome: 'pending',
            provider_ref: this.ref(request),
            message: 'accepted for the next settlement batch (sandbox)',
          };
        return this.success(request);
    }
  }

  async status(query: StatusQuery, signal: AbortSignal): Promise<StatusResult> {
    if (signal.aborted) throw new ProviderUnavailableError('timeout', 'aborted');
    const suffix = sandboxSuffix(query.subject);
    if (this.config.hang_on.includes(suffix))
      return {
        outcome: 'not_found',
        message: `sandbox provider ${this.name} has no record of ${query.txn_id}`,
      };
    const settled = this.now().getTime() - Date.parse(query.submitted_at) >= this.config.pending_ms;
    const still = {
      outcome: 'pending' as const,
      provider_ref: this.ref(query),
      message: 'still awaiting the operator (sandbox)',
    };
    if (query.service !== 'pan' && suffix === SANDBOX_OUTCOMES.on_hold_then_success)
      return settled
        ? this.success(query)
        : {
            outcome: 'on_hold',
            provider_ref: this.ref(query),
            message: 'still on hold at the operator (sandbox 0007)',
          };
    switch (suffix) {
      case SANDBOX_OUTCOMES.declined:
        return {
          outcome: 'failed',
          provider_ref: this.ref(query),
          message: 'declined by the operator (sandbox 0001)',
          code: 'declined',
        };
      case SANDBOX_OUTCOMES.pending_then_success:
        return settled ? this.success(query) : still;
      case SANDBOX_OUTCOMES.pending_then_failed:
        return settled
          ? {
              outcome: 'failed',
              provider_ref: this.ref(query),
              message: 'failed at the operator (sandbox 0003)',
              code: 'operator_failed',
            }
          : still;
      case SANDBOX_OUTCOMES.every_provider_fails:
        throw new ProviderUnavailableError(
          'http_5xx',
          `sandbox provider ${this.name} answered 503 (sandbox 0005)`,
        );
      default:
        if (query.service === 'pan' && query.params.variant !== undefined)
          return this.success(query);
        if (query.service === 'pan' && suffix === SANDBOX_OUTCOMES.not_found)
          return notFoundPan(this.ref(query));
        if (this.deferred(query) && !settled) return still;
        return this.success(query);
    }
  }

  async lookup(request: LookupRequest, signal: AbortSignal): Promise<LookupResult> {
    const suffix = sandboxSuffix(request.subject);
    if (this.config.hang_on.includes(suffix)) return hang(signal);
    if (suffix === SANDBOX_OUTCOMES.every_provider_fails)
      throw new ProviderUnavailableError(
        'http_5xx',
        `sandbox provider ${this.name} answered 503 (sandbox 0005)`,
      );
    if (suffix === SANDBOX_OUTCOMES.not_found)
      return {
        outcome: 'not_found',
        message: `${NOT_FOUND[request.kind]} ${request.subject} (sandbox 0000)`,
      };
    switch (request.kind) {
      case 'bill':
        return {
          outcome: 'found',
          message: 'bill fetched (sandbox)',
          data: sandboxBill(request, this.now()),
        };
      case 'hlr':
        return sandboxHlr(request.subject);
      case 'plans':
        return sandboxPlans(request);
      case 'offers':
        return sandboxOffers(request);
      case 'dth_info':
        return sandboxDthInfo(request, this.now());
      case 'complaint':
      case 'complaint_status':
        return sandboxComplaint(request, this.now(), this.config.pending_ms);
      case 'validate': {
        const { amount: _amount, ...customer } = sandboxBill(request, this.now());
        return { outcome: 'found', message: 'customer validated (sandbox)', data: customer };
      }
      case 'remitter_kyc':
        return {
          outcome: 'found',
          message: 'document verified (sandbox)',
          data: {
            name_on_document:
              typeof request.params.name === 'string'
                ? request.params.name.toUpperCase()
                : personName(request.subject),
          },
        };
      default:
        throw new ProviderUnavailableError(
          'misconfigured',
          `sandbox provider ${this.name} cannot look up ${request.kind}`,
        );
    }
  }

  /** A request whose parameters name a batch mode (NEFT) is accepted pending and settles after `pending_ms`. */
  private deferred(request: ProviderRequest): boolean {
    return Object.entries(this.config.pending_params).some(([param, values]) =>
      values.includes(String(request.params[param] ?? '')),
    );
  }

  private ref(request: ProviderRequest): string {
    return `${this.name}-${request.txn_id.slice(-12)}`;
  }

  private success(request: ProviderRequest): ProviderResult {
    // A stable 12-digit reference (the form of a UTR or an operator transaction id).
    const reference = digitsOf(`${this.name}:${request.txn_id}`, 12);
    const base = {
      outcome: 'success' as const,
      provider_ref: this.ref(request),
      message: 'success (sandbox)',
    };
    switch (request.service) {
      case 'dmt':
        if (request.params.kind === 'penny_drop') {
          const given =
            typeof request.params.name === 'string'
              ? request.params.name.toUpperCase()
              : personName(request.subject);
          return {
            ...base,
            message: 'account verified by a penny drop (sandbox)',
            data: { utr: reference, registered_name: given },
          };
        }
        return { ...base, data: bankReference(request, this.now()) };
      case 'pan':
        if (request.params.variant !== undefined)
          return { ...base, message: 'PAN verified (sandbox)', data: panVerification(request) };
        return {
          ...base,
          message: 'PAN found (sandbox)',
          data: { name: panHolderName(request.subject) },
        };
      case 'bills':
        // A Bharat Connect (BBPS) transaction reference beside the biller's own.
        return {
          ...base,
          data: {
            biller_ref: reference,
            bbps_ref: `CC01${digitsOf(`bbps:${request.txn_id}`, 16)}`,
          },
        };
      default:
        return { ...base, data: { operator_ref: reference } };
    }
  }
}

/**
 * A transfer's bank reference as the banks form it. NEFT: a 16-character UTR, the sending
 * bank's four letters, `N`, the year's last digit, the day of the year and a 7-digit sequence
 * (HDFCN52022112345); IMPS: a 12-digit RRN (NPCI), the year's last digit, the day of the year,
 * the hour and a 6-digit sequence. Year, day and hour are India's (IST, UTC+5:30), as the
 * banks' switches stamp them: at 20:00 UTC it is 01:30 of the next day there. The sending bank
 * is the provider parameter `sponsor` (an IFSC prefix; default YESB, Yes Bank).
 */
export function bankReference(request: ProviderRequest, now: Date): { utr: string; rrn?: string } {
  const ist = indiaTime(now);
  const year = String(ist.year % 10);
  const day = String(ist.day_of_year).padStart(3, '0');
  if (request.params.txn_type === 'NEFT') {
    const sponsor = typeof request.params.sponsor === 'string' ? request.params.sponsor : 'YESB';
    return { utr: `${sponsor}N${year}${day}${digitsOf(`neft:${request.txn_id}`, 7)}` };
  }
  const hour = String(ist.hour).padStart(2, '0');
  const rrn = `${year}${day}${hour}${digitsOf(`imps:${request.txn_id}`, 6)}`;
  return { utr: rrn, rrn };
}

/**
 * A PAN verification as the income-tax department's service answers it: the PAN's status
 * (valid; fake for 0000, deactivated 0006, deleted 0007), name and date-of-birth match flags
 * (Y/N) for what was asked, and the Aadhaar seeding status (Y; N for 0008; NA when the holder
 * is not a person). The sandbox holder's date of birth is 1 January 1980 plus the PAN's four
 * digits in days; its name is the lookup's.
 */
function panVerification(request: ProviderRequest): Record<string, string> {
  const pan = request.subject;
  const suffix = sandboxSuffix(pan);
  const status =
    suffix === SANDBOX_OUTCOMES.not_found
      ? 'fake'
      : suffix === SANDBOX_OUTCOMES.pan_deactivated
        ? 'deactivated'
        : suffix === SANDBOX_OUTCOMES.pan_deleted
          ? 'deleted'
          : 'valid';
  if (status === 'fake') return { pan_status: status };
  const name = panHolderName(pan);
  const dob = new Date(Date.UTC(1980, 0, 1) + Number(suffix) * 86_400_000)
    .toISOString()
    .slice(0, 10);
  const words = (text: string) =>
    text
      .toUpperCase()
      .replace(/[^A-Z ]/g, ' ')
      .split(/\s+/)
      .filter(Boolean)
      .sort()
      .join(' ');
  const data: Record<string, string> = {
    pan_status: status,
    name,
    aadhaar_seeding: pan[3] !== 'P' ? 'NA' : suffix === SANDBOX_OUTCOMES.pan_not_seeded ? 'N' : 'Y',
  };
  if (typeof request.params.name === 'string')
    data.name_match = words(request.params.name) === words(name) ? 'Y' : 'N';
  if (typeof request.params.dob === 'string')
    data.dob_match = request.params.dob === dob ? 'Y' : 'N';
  return data;
}

function notFoundPan(provider_ref: string): ProviderResult {
  return {
    outcome: 'failed',
    provider_ref,
    message: 'no PAN record matches (sandbox 0000)',
    code: 'not_found',
  };
}

/** Never answers; rejects when the chain gives up. */
function hang(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new ProviderUnavailableError('timeout', 'aborted while waiting'));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}

/** The 5th character of a PAN is the initial of the holder's surname (or of the entity's name). */
function panHolderName(pan: string): string {
  const initial = pan[4] ?? 'A';
  const surnames = SURNAMES.filter((s) => s.startsWith(initial));
  const surname = surnames.length
    ? pick(surnames, `last:${pan}`)
    : `${initial}${pick(['andhi', 'umar', 'ohan'], pan)}`;
  const first = pick(FIRST_NAMES, `first:${pan}`);
  const entity: Record<string, string> = {
    C: `${surname} Industries Private Limited`,
    H: `${first} ${surname} HUF`,
    F: `${surname} & Associates`,
    A: `${surname} Welfare Association`,
    T: `${surname} Charitable Trust`,
    B: `${surname} Family Body of Individuals`,
    L: `${surname} Municipal Council`,
    J: `${surname} University`,
    G: `Office of the ${surname} District Collector`,
  };
  return (entity[pan[3] ?? 'P'] ?? `${first} ${surname}`).toUpperCase();
}

/** A bill that stays the same for a consumer within a calendar month (UTC). */
function sandboxBill(request: LookupRequest, now: Date): Record<string, string | number> {
  const month = now.toISOString().slice(0, 7);
  const seed = `${String(request.params.biller_id ?? '')}:${request.subject}:${month}`;
  const paise = 15_000 + Number(hashOf(`amount:${seed}`) % 485_000n);
  const due = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) + 24 * 86_400_000);
  const billed = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) + 4 * 86_400_000);
  return {
    customer_name: personName(`${String(request.params.biller_id ?? '')}:${request.subject}`),
    amount: paise / 100,
    due_date: due.toISOString().slice(0, 10),
    bill_date: billed.toISOString().slice(0, 10),
    bill_number: `SB${digitsOf(`bill:${seed}`, 10)}`,
    bill_period: month,
  };
}
