// BBPS complaints, as NPCI defines them: about a transaction (its reason one of NPCI's
// transaction reasons) or about a service (a biller or the agent), registered with the
// provider that handled the payment (never failed over: a complaint registered twice is two
// complaints), with BBPS's complaint reference; its status over time (registered, assigned,
// in progress, resolved or rejected) is asked of that provider when the complaint is read, at
// most every `complaints.refresh_ms`, and each change kept in its history. Complaints are kept
// in the store; a closed one is pruned `complaints.keep_ms` after it closed.
import { z } from 'zod';
import { ApiError, badRequest, conflict, notFound } from '../../http/errors.js';
import { callWithTimeout } from '../../providers/chain.js';
import { ProviderUnavailableError, type PaymentProvider } from '../../providers/types.js';
import type { Account } from '../../store/state.js';
import { newId } from '../../util/ids.js';
import type { PaymentsContext } from '../context.js';
import type { Biller } from './config.js';

export const TRANSACTION_REASONS = {
  transaction_successful_account_not_updated: 'Transaction successful, account not updated',
  amount_deducted_biller_credited_no_txn_id:
    'Amount deducted, biller account credited but transaction ID not received',
  amount_deducted_biller_not_credited_no_txn_id:
    'Amount deducted, biller account not credited and transaction ID not received',
  amount_deducted_multiple_times: 'Amount deducted multiple times',
  double_payment_updated: 'Double payment updated',
  erroneously_paid_wrong_account: 'Erroneously paid in wrong account',
  others: 'Others, provide details in description',
} as const;

export const SERVICE_REASONS = {
  biller_not_responding: 'Biller not responding',
  incorrect_bill_details: 'Incorrect bill details shown by the biller',
  agent_overcharging: 'Agent overcharging',
  agent_no_receipt: 'Agent not willing to print the receipt',
  agent_misbehaviour: 'Agent misbehaviour',
  agent_outlet_closed: 'Agent outlet closed',
  others: 'Others, provide details in description',
} as const;

export const COMPLAINT_STATUSES = [
  'registered',
  'assigned',
  'in_progress',
  'resolved',
  'rejected',
] as const;
export type ComplaintStatus = (typeof COMPLAINT_STATUSES)[number];
const CLOSED: ReadonlySet<ComplaintStatus> = new Set(['resolved', 'rejected']);

export interface BillComplaint {
  id: string;
  account_id: string;
  type: 'transaction' | 'service';
  txn_id: string | null;
  biller_id: string | null;
  reason: string;
  description: string;
  provider: string;
  /** BBPS's complaint reference, from the provider. */
  complaint_ref: string | null;
  status: ComplaintStatus;
  assigned_to: string | null;
  resolution: string | null;
  history: Array<{ status: ComplaintStatus; at: string; note: string }>;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  /** When the provider was last asked for its status. */
  checked_at: string;
}

declare module '../../store/state.js' {
  interface Tables {
    /** complaint id → BBPS complaint (closed ones pruned after `bills.complaints.keep_ms`) */
    bill_complaints: Record<string, BillComplaint>;
  }
}

export const complaintBody = z
  .strictObject({
    type: z.enum(['transaction', 'service']).optional(),
    txn_id: z
      .string()
      .regex(/^txn_[0-9a-f]{24}$/, 'is not a transaction id')
      .optional(),
    biller_id: z
      .string()
      .trim()
      .toUpperCase()
      .pipe(z.string().regex(/^[A-Z0-9_-]{2,32}$/, 'is not a biller id'))
      .optional(),
    reason: z.string({ error: 'is required' }).trim().min(1).max(80),
    description: z.string().trim().max(500).default(''),
  })
  .transform((body) => ({ ...body, type: body.type ?? (body.txn_id ? 'transaction' : 'service') }));

export const complaintIdSchema = z.string().regex(/^cmp_[0-9a-f]{24}$/, 'is not a complaint id');

type Ctx = Pick<PaymentsContext, 'store' | 'settings' | 'providers' | 'logger' | 'clock'>;

/** A provider's complaint status (ASSIGNED, In Progress, resolved...) in our terms; null: one we do not know. */
function statusOf(text: unknown): ComplaintStatus | null {
  const key = String(text ?? '')
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  if (key === 'registered' || key === 'open' || key === 'new') return 'registered';
  if (key === 'assigned') return 'assigned';
  if (key === 'in_progress' || key === 'pending' || key === 'escalated') return 'in_progress';
  if (key === 'resolved' || key === 'closed' || key === 'success') return 'resolved';
  if (key === 'rejected' || key === 'unresolved' || key === 'failed') return 'rejected';
  return null;
}

/** The provider a complaint goes to: the one that handled the payment, else the first bills provider that takes complaints. */
function complaintProvider(ctx: Ctx, name: string | null): PaymentProvider {
  const takes = (p: PaymentProvider) =>
    p.lookup !== undefined && (!p.lookup_kinds || p.lookup_kinds.includes('complaint'));
  const provider =
    name !== null
      ? ctx.providers.bills.find((p) => p.name === name)
      : ctx.providers.bills.find(takes);
  if (!provider || !takes(provider))
    throw new ApiError(
      503,
      'complaints_unavailable',
      `no bills provider${name ? ` (${name})` : ''} takes BBPS complaints`,
      null,
      null,
      { 'Retry-After': '30' },
    );
  return provider;
}

/** Asks `provider` one complaint question; a 503 the client may retry when it cannot answer. */
async function ask(
  provider: PaymentProvider,
  kind: 'complaint' | 'complaint_status',
  params: Record<string, string | number>,
): Promise<Record<string, string | number>> {
  try {
    const answer = await callWithTimeout(provider.timeout_ms, undefined, (signal) =>
      provider.lookup!({ service: 'bills', kind, subject: '', params }, signal),
    );
    if (!answer)
      throw new ProviderUnavailableError('timeout', `no answer in ${provider.timeout_ms} ms`);
    if (answer.outcome === 'not_found') throw notFound(answer.message, 'complaint_not_found');
    return answer.data;
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError(
      503,
      'providers_unavailable',
      `${provider.name} could not take the complaint: ${(error as Error).message.slice(0, 300)}; retry later`,
      null,
      null,
      { 'Retry-After': '30' },
    );
  }
}

/** Whether the complaint may be registered, and about what: the payment's provider and biller, or the biller named. */
async function complaintTarget(
  ctx: Ctx,
  account: Account,
  body: z.output<typeof complaintBody>,
  requireBiller: (biller_id: string) => Biller,
): Promise<{ provider_name: string | null; biller_id: string | null }> {
  const { store } = ctx;
  const reasons: Record<string, string> =
    body.type === 'transaction' ? TRANSACTION_REASONS : SERVICE_REASONS;
  if (!Object.hasOwn(reasons, body.reason))
    throw badRequest(
      `reason: a ${body.type} complaint's reason is one of ${Object.keys(reasons).join(', ')}`,
      'reason',
      'invalid_value',
    );
  if (body.reason === 'others' && body.description === '')
    throw badRequest('description: say what happened', 'description', 'missing_param');
  let provider_name: string | null = null;
  let biller_id = body.biller_id ?? null;
  if (body.type === 'transaction') {
    if (!body.txn_id)
      throw badRequest('txn_id: a transaction complaint names it', 'txn_id', 'missing_param');
    const txn = await store.fetch('payment_txns', body.txn_id);
    if (!txn || txn.account_id !== account.id || txn.service !== 'bills')
      throw notFound(`no bill payment ${body.txn_id}`, 'transaction_not_found');
    provider_name = txn.provider;
    biller_id = String(txn.details.biller_id);
    if (provider_name === null)
      throw conflict(
        `bill payment ${txn.id} never reached a provider: nothing to complain about`,
        'not_submitted',
      );
  } else if (biller_id === null) {
    throw badRequest(
      'biller_id: a service complaint names the biller',
      'biller_id',
      'missing_param',
    );
  } else requireBiller(biller_id);
  return { provider_name, biller_id };
}

/** Registers a complaint about one of the account's bill payments, or about a biller's or the agent's service. */
export async function registerComplaint(
  ctx: Ctx,
  account: Account,
  body: z.output<typeof complaintBody>,
  requireBiller: (biller_id: string) => Biller,
): Promise<BillComplaint> {
  const { store, settings } = ctx;
  const { provider_name, biller_id } = await complaintTarget(ctx, account, body, requireBiller);
  const provider = complaintProvider(ctx, provider_name);
  const id = newId('cmp');
  const registered_at = ctx.clock.now().toISOString();
  // Refused before the provider is asked: a second open complaint about the same payment, too many open ones.
  const open = await openComplaints(ctx, account.id);
  if (body.txn_id && open.some((c) => c.txn_id === body.txn_id))
    throw conflict(
      `payment ${body.txn_id} has an open complaint already (${open.find((c) => c.txn_id === body.txn_id)!.id})`,
      'complaint_exists',
      'txn_id',
    );
  if (open.length >= settings.bills.complaints.max_open_per_account)
    throw new ApiError(429, 'too_many_complaints', `${open.length} complaints are open already`);
  const data = await ask(provider, 'complaint', {
    complaint_id: id,
    type: body.type,
    reason: body.reason,
    description: body.description,
    registered_at,
    ...(body.txn_id ? { txn_id: body.txn_id } : {}),
    ...(biller_id ? { biller_id } : {}),
  });
  return store.transact((tx) => {
    const at = tx.now.toISOString();
    const status = statusOf(data.status) ?? 'registered';
    const complaint: BillComplaint = {
      id,
      account_id: account.id,
      type: body.type,
      txn_id: body.txn_id ?? null,
      biller_id,
      reason: body.reason,
      description: body.description,
      provider: provider.name,
      complaint_ref:
        data.complaint_ref === undefined ? null : String(data.complaint_ref).slice(0, 64),
      status,
      assigned_to: data.assigned_to === undefined ? null : String(data.assigned_to).slice(0, 60),
      resolution: null,
      history: [
        { status: 'registered', at, note: `registered with ${provider.name}` },
        ...(status !== 'registered'
          ? [
              {
                status,
                at,
                note: `${status.replace('_', ' ')} (${String(data.assigned_to ?? provider.name)})`,
              },
            ]
          : []),
      ],
      created_at: registered_at,
      updated_at: at,
      closed_at: CLOSED.has(status) ? at : null,
      checked_at: at,
    };
    tx.set('bill_complaints', id, complaint);
    return complaint;
  });
}

async function openComplaints(ctx: Ctx, account_id: string): Promise<BillComplaint[]> {
  const all = await ctx.store.list('bill_complaints', 'account_id', account_id);
  return all.filter((c) => !CLOSED.has(c.status));
}

/** The account's complaint, its status brought up to date from the provider (at most every `refresh_ms`). */
export async function readComplaint(
  ctx: Ctx,
  account: Account,
  id: string,
): Promise<BillComplaint> {
  const { store, settings } = ctx;
  const complaint = await store.fetch('bill_complaints', id);
  if (!complaint || complaint.account_id !== account.id)
    throw notFound(`no complaint ${id}`, 'complaint_not_found');
  const now_ms = ctx.clock.now().getTime();
  if (
    CLOSED.has(complaint.status) ||
    now_ms - Date.parse(complaint.checked_at) < settings.bills.complaints.refresh_ms
  )
    return complaint;
  let data: Record<string, string | number>;
  try {
    data = await ask(complaintProvider(ctx, complaint.provider), 'complaint_status', {
      complaint_id: complaint.id,
      complaint_ref: complaint.complaint_ref ?? '',
      type: complaint.type,
      reason: complaint.reason,
      registered_at: complaint.created_at,
    });
  } catch (error) {
    // The status as last known is still an answer; the next read asks again.
    ctx.logger.warn({ msg: 'complaint status unavailable', complaint_id: id, err: error });
    return complaint;
  }
  return store.transact((tx) => {
    const current = tx.get('bill_complaints', id)!;
    const at = tx.now.toISOString();
    const status = statusOf(data.status);
    // Statuses only move forward (registered → assigned → in progress → closed): a provider
    // answering an older status changes nothing, and the history holds each status once.
    const changed =
      status !== null &&
      COMPLAINT_STATUSES.indexOf(status) > COMPLAINT_STATUSES.indexOf(current.status) &&
      !CLOSED.has(current.status);
    const next: BillComplaint = {
      ...current,
      checked_at: at,
      ...(changed
        ? {
            status,
            updated_at: at,
            assigned_to:
              data.assigned_to === undefined
                ? current.assigned_to
                : String(data.assigned_to).slice(0, 60),
            resolution:
              data.resolution === undefined
                ? current.resolution
                : String(data.resolution).slice(0, 500),
            closed_at: CLOSED.has(status) ? at : null,
            history: [
              ...current.history,
              {
                status,
                at,
                note:
                  data.resolution !== undefined
                    ? String(data.resolution).slice(0, 200)
                    : `${status.replace('_', ' ')} at ${current.provider}`,
              },
            ],
          }
        : {}),
    };
    tx.set('bill_complaints', id, next);
    return next;
  });
}

/** A closed complaint past `keep_ms` (the pruning pass asks this). */
export function complaintExpired(
  complaint: BillComplaint,
  now_ms: number,
  keep_ms: number,
): boolean {
  return complaint.closed_at !== null && now_ms - Date.parse(complaint.closed_at) >= keep_ms;
}

export function complaintView(complaint: BillComplaint) {
  return {
    complaint_id: complaint.id,
    complaint_ref: complaint.complaint_ref,
    type: complaint.type,
    txn_id: complaint.txn_id,
    biller_id: complaint.biller_id,
    reason: complaint.reason,
    reason_text:
      (complaint.type === 'transaction'
        ? (TRANSACTION_REASONS as Record<string, string>)
        : (SERVICE_REASONS as Record<string, string>))[complaint.reason] ?? complaint.reason,
    description: complaint.description,
    status: complaint.status,
    assigned_to: complaint.assigned_to,
    resolution: complaint.resolution,
    history: complaint.history,
    created_at: complaint.created_at,
    updated_at: complaint.updated_at,
  };
}
