// The payments room's tables in the store document (declaration merging on Tables), and the
// records it writes to history (the journal): API logs and the admin audit log.
import type { Attempt } from '../providers/chain.js';
import type { PaymentService } from '../providers/types.js';

export type TxnStatus = 'pending' | 'success' | 'failed';

export interface PaymentTxn {
  id: string;
  account_id: string;
  service: PaymentService;
  status: TxnStatus;
  /** `submitting`: a request is talking to providers; `awaiting_status`: the reconciler asks; `final`. */
  stage: 'submitting' | 'awaiting_status' | 'final';
  /** Paid to the provider on success. */
  amount_micros: number;
  /** The platform's charges, posted separately to revenue:<service> on success. */
  charges_micros: number;
  /** Credited to the customer's wallet on success, as its own posting. */
  commission_micros: number;
  /** The ledger account the amount goes to on success (provider:<service> or revenue:<service> for fees). */
  pay_to: string;
  /** The number, consumer number or account number (sandbox outcomes key on its last four digits). */
  subject: string;
  /** What the customer asked for, for display (operator, type...). */
  details: Record<string, string | number>;
  /** Parameters sent to providers. */
  provider_params: Record<string, string | number>;
  hold_id: string;
  provider: string | null;
  provider_ref: string | null;
  /** Extra fields from the provider's success answer (operator_ref, utr...). */
  result: Record<string, string | number>;
  message: string;
  attempts: Attempt[];
  history: Array<{ status: TxnStatus; at: string; note: string }>;
  checks: { count: number; next_at: string | null; last_at: string | null; last_result: string | null; stalled: boolean };
  postings: { hold: string; capture?: string; charges?: string; commission?: string; refund?: string };
  refund: { posting_id: string; amount_micros: number; at: string } | null;
  idempotency_key: string | null;
  client_ref: string | null;
  created_at: string;
  updated_at: string;
  finalized_at: string | null;
}

export interface KycDocument {
  id: string;
  kind: string;
  filename: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  /** Relative to the data dir. */
  path: string;
}

export interface KycSubmission {
  account_id: string;
  name: string;
  /** Only the last four digits are kept. */
  aadhaar_masked: string;
  pan_number: string;
  gstin: string | null;
  documents: KycDocument[];
  status: 'submitted' | 'approved' | 'rejected';
  reason: string | null;
  submitted_at: string;
  reviewed_at: string | null;
  /** How many times this account has submitted. */
  submissions: number;
}

export interface WebhookDelivery {
  id: string;
  account_id: string;
  txn_id: string;
  event: string;
  /** The exact bytes sent on every attempt, so the signature is stable across retries. */
  payload: string;
  attempts: number;
  next_at: string;
  last_error: string | null;
  created_at: string;
}

declare module '../store/state.js' {
  interface Tables {
    payment_txns: Record<string, PaymentTxn>;
    kyc_submissions: Record<string, KycSubmission>;
    webhook_deliveries: Record<string, WebhookDelivery>;
  }
}

/** History record types this room writes. */
export const API_LOG = 'api_log';
export const AUDIT = 'audit';
