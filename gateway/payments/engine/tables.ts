// The payments room's tables in the store document (declaration merging on Tables), and the
// records it writes to history (the journal): API logs and the admin audit log.
import type { Attempt } from '../../providers/chain.js';
import type { PaymentService } from '../../providers/types.js';
import type { TaxSplit } from './tax.js';

/** A commission credited on a transaction's success: gross, the TDS withheld, and the slab it came from. */
export interface Earning {
  /** Who is credited: the transacting account, or (an override) its distributor. */
  account_id: string;
  gross_micros: number;
  tds_micros: number;
  /** The TDS rate applied (basis points): section 194H's, or 206AA's without a PAN. */
  tds_rate_bp: number;
  /** `<scheme id>/<slab id>`: the slab that gave it. */
  slab: string;
}

/**
 * Every status a payment reaches (docs/payments-api.md, "Statuses and transitions"; the one
 * table of moves is `TRANSITIONS` in transactions.ts). pending, on_hold and refund_pending
 * are live (the money is held); success, failed, refunded and reversed are final (history),
 * and only success moves again (reversed).
 */
export const TXN_STATUSES = [
  'pending',
  'success',
  'failed',
  'refund_pending',
  'refunded',
  'reversed',
  'on_hold',
] as const;
export type TxnStatus = (typeof TXN_STATUSES)[number];

export interface PaymentTxn {
  id: string;
  account_id: string;
  service: PaymentService;
  status: TxnStatus;
  /**
   * `submitting`: a request is talking to providers; `awaiting_status`: the reconciler asks
   * (pending, or on hold at the provider); `awaiting_operator`: on hold until an operator
   * acts; `awaiting_consent`: refund_pending until the customer's OTP; `final`.
   */
  stage: 'submitting' | 'awaiting_status' | 'awaiting_operator' | 'awaiting_consent' | 'final';
  /** 1, 2...: the row of a final transaction set final again (a success reversed); absent before. */
  revision?: number;
  /** Paid to the provider on success. */
  amount_micros: number;
  /** The platform's charges, posted separately to revenue:<service> on success. */
  charges_micros: number;
  /** The commission earned on success (gross: `earning` has the TDS withheld from it), as its own posting. */
  commission_micros: number;
  /** The GST in the fee: in `charges_micros`, or in `amount_micros` when the amount is the fee (`pay_to` revenue:*). Absent on transactions from before GST was split out. */
  tax?: TaxSplit;
  /** The commission's TDS and slab (absent when there is no commission, and before issue #28). */
  earning?: Earning;
  /** The transacting account's distributor's override commission, credited to the distributor on success. */
  override?: Earning;
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
  checks: {
    count: number;
    next_at: string | null;
    last_at: string | null;
    last_result: string | null;
    stalled: boolean;
  };
  postings: {
    hold: string;
    capture?: string;
    charges?: string;
    commission?: string;
    /** The distributor's override commission. */
    override?: string;
    refund?: string;
    reversal?: string;
  };
  /**
   * What every posting of this transaction moved, net, per ledger account and per account the
   * posting belonged to (its `account_id`: the customer, or a distributor whose commission
   * it is); the hold nets out once it is resolved. Sorted; kept up by the engine with each
   * step, whatever accounts a step's postings touch. A reversal posts its exact negation.
   * Absent on rows from before it was kept (`ledgerOf` derives theirs).
   */
  ledger?: Array<[owner: string, account: string, micros: number]>;
  /** Every posting this transaction made, in order (absent on rows from before). */
  posting_ids?: string[];
  refund: { posting_id: string; amount_micros: number; at: string } | null;
  /** A success undone later: who reversed it, why, the posting, and what it moved back. */
  reversal?: {
    posting_id: string;
    at: string;
    by: 'provider' | 'admin';
    reason: string;
    /** Back to the customer's wallet (net of the commission taken back); negative when it owes. */
    wallet_micros: number;
    commission_micros: number;
  } | null;
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
  /**
   * The Aadhaar number's fingerprint (Sealer.fingerprint), the key of the index that finds
   * one number on several accounts (identity/duplicates.ts); absent in submissions from
   * before it was kept.
   */
  aadhaar_fingerprint?: string;
  pan_number: string;
  gstin: string | null;
  /** The business address, when given (absent in submissions from before it was asked). */
  address?: string;
  /** The GST state code: the GSTIN's, else the one given with the address. */
  state?: string;
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

/** A money-transfer remitter, registered by an account (an agent) and verified by OTP. */
export interface Remitter {
  account_id: string;
  mobile: string;
  name: string;
  verified: boolean;
  created_at: string;
  verified_at: string | null;
  /** The OTP waiting for verification: only its hash is kept. */
  otp: { hash: string; salt: string; expires_at: string; attempts: number } | null;
  /** Sends in the current hour window, to bound SMS traffic. */
  sends: { window_start: string; count: number; last_at: string };
  /** This remitter's beneficiaries (bounded by dmt.max_beneficiaries_per_remitter). */
  beneficiary_ids: string[];
}

export interface Beneficiary {
  id: string;
  account_id: string;
  mobile: string;
  name: string;
  account_number: string;
  ifsc: string;
  bank: string;
  verified: boolean;
  /** The name the bank holds for the account, from a penny drop. */
  registered_name: string | null;
  verification_txn_id: string | null;
  created_at: string;
}

/** A bill fetched from a biller, payable by its id until `expires_at`. */
/** A fetched bill can be paid by id until its `expires_at` (`bills.fetch_ttl_ms` after the fetch); the pay route and the pruner both ask this. */
export function billFetchExpired(bill: Pick<FetchedBill, 'expires_at'>, now_ms: number): boolean {
  return Date.parse(bill.expires_at) <= now_ms;
}

export interface FetchedBill {
  id: string;
  account_id: string;
  biller_id: string;
  consumer_number: string;
  customer_name: string;
  amount_micros: number;
  due_date: string | null;
  bill_date: string | null;
  bill_number: string | null;
  bill_period: string | null;
  provider: string;
  fetched_at: string;
  expires_at: string;
  /** The successful or pending payment of this bill, so it is not paid twice. */
  paid_txn_id: string | null;
  /** `validation`: a validate-and-pay biller's confirmation of the customer (no amount); absent: a bill. */
  kind?: 'bill' | 'validation';
  /** The customer parameters it was fetched for (absent on fetches from before: `consumer_number` alone). */
  params?: Record<string, string>;
}

declare module '../../store/state.js' {
  interface Tables {
    payment_txns: Record<string, PaymentTxn>;
    kyc_submissions: Record<string, KycSubmission>;
    webhook_deliveries: Record<string, WebhookDelivery>;
    /** `<account_id>:<mobile>` → remitter */
    dmt_remitters: Record<string, Remitter>;
    dmt_beneficiaries: Record<string, Beneficiary>;
    /** `<mobile>:<YYYY-MM>` → micro-units transferred (pending or successful) in that calendar month */
    dmt_usage: Record<string, number>;
    /** account id → number of remitters it registered (bounded by dmt.max_remitters_per_account) */
    dmt_remitter_counts: Record<string, number>;
    bill_fetches: Record<string, FetchedBill>;
    /**
     * Several gateways on one database: `<account>:<service>:<subject>:<amount>` → the latest
     * such transaction, for the duplicate window (one gateway keeps it in memory).
     */
    payment_recent: Record<string, { txn_id: string; at_ms: number }>;
  }
}

/** History record types this room writes. */
export const API_LOG = 'api_log';
export const AUDIT = 'audit';
