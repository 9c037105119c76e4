// DMT's tables for RBI's 2024 framework: a remitter's KYC (the OVD verified once), the OTP of
// each transfer, and the parent of a transfer split into legs.
import type { KycLevel } from './config.js';
import type { OtpSends, StoredOtp } from './otp.js';

export const OVD_TYPES = [
  'aadhaar',
  'passport',
  'voter_id',
  'driving_licence',
  'nrega_job_card',
] as const;
export type OvdType = (typeof OVD_TYPES)[number];

export interface RemitterKyc {
  document_type: OvdType;
  /** The document number with all but its last four characters masked (Aadhaar: XXXX-XXXX-1234). */
  document_masked: string;
  /** The name and address as the remitter declared them (the framework's self-certified OVD). */
  name: string;
  address: string | null;
  level: KycLevel;
  /** The provider that verified it, and when: once, never again. */
  verified_by: string;
  verified_at: string;
}

declare module '../engine/tables.js' {
  interface Remitter {
    /** Absent: registered on its mobile alone (before the 2024 framework, or not yet verified). */
    kyc?: RemitterKyc;
    /** Transfer OTPs sent in the current hour window (bounds SMS traffic: `dmt.rbi.otp_per_hour`). */
    transfer_otps?: OtpSends;
    /** The registration OTP the provider sent and checks (`PaymentProvider.remitters`): whose, until when, wrong tries. */
    otp_at?: { provider: string; expires_at: string; attempts: number };
  }
}

/** An OTP that confirms one transfer (the framework's additional factor of authentication). */
export interface TransferOtp extends StoredOtp {
  id: string;
  account_id: string;
  mobile: string;
  /** The transfer it confirms: mobile, beneficiary, amount, type. Another transfer cannot use it. */
  request_hash: string;
  /** When a correct code was first given; the transfer's commit then marks it used. */
  verified_at: string | null;
  /** The transfer (a transaction, or a split transfer's parent) that used it. */
  used_by: string | null;
  created_at: string;
}

/** A transfer above the per-transfer limit: its legs, each its own transaction, sent in order. */
export interface SplitTransfer {
  id: string;
  account_id: string;
  mobile: string;
  bene_id: string;
  txn_type: string;
  amount_micros: number;
  leg_ids: string[];
  idempotency_key: string | null;
  created_at: string;
}

declare module '../../store/state.js' {
  interface Tables {
    dmt_transfer_otps: Record<string, TransferOtp>;
    /** `dmtp_…` → a split transfer (history at once: store/state.ts ARCHIVED_TABLES) */
    dmt_transfers: Record<string, SplitTransfer>;
    /** `<account>:<idempotency key>` → the split transfer it made (history at once, as dmt_transfers) */
    dmt_transfer_keys: Record<string, { parent_id: string }>;
  }
}
