// One Aadhaar number or one PAN on several accounts: flagged to the admin, never refused (a
// proprietor may run several shops, each its own account). Found through two indexes of the
// eKYC submissions kept by the store with every commit, on both stores (a lookup reads the
// rows with that number, never the table): by PAN (kept in clear in the submission already,
// it is printed on TDS statements) and by the Aadhaar number's fingerprint (the number itself
// is never kept: Sealer.fingerprint, a keyed one-block encryption that tells equality only).
import type { Store } from '../../store/types.js';
import type { Sealer } from '../../util/sealed.js';
import type { KycSubmission } from '../engine/tables.js';

export const AADHAAR_FINGERPRINT = 'aadhaar';
/** How many other accounts a flag names (the count is always whole). */
const LISTED = 20;

export function aadhaarFingerprint(sealer: Sealer, aadhaar_digits: string): string {
  return sealer.fingerprint(aadhaar_digits, AADHAAR_FINGERPRINT);
}

export interface KycDuplicates {
  /** Other accounts whose eKYC carries the same Aadhaar number (at most 20 named). */
  aadhaar: { count: number; accounts: Array<{ account_id: string; status: string }> };
  pan: { count: number; accounts: Array<{ account_id: string; status: string }> };
}

/** The indexes duplicates are read from (declare them once, at start: PostgreSQL builds them). */
export function duplicateIndexes(store: Store) {
  return {
    by_aadhaar: store.indexBy('kyc_submissions', 'aadhaar_fingerprint'),
    by_pan: store.indexBy('kyc_submissions', 'pan_number'),
  };
}

/**
 * The other accounts that share this submission's Aadhaar number or PAN. Synchronous: call it
 * inside `store.read` (PostgreSQL loads the index keys it misses and runs it again).
 */
export function duplicatesOf(store: Store, submission: KycSubmission): KycDuplicates {
  const { by_aadhaar, by_pan } = duplicateIndexes(store);
  const others = (ids: ReadonlySet<string>) => {
    const accounts: KycDuplicates['pan']['accounts'] = [];
    let count = 0;
    for (const id of ids) {
      if (id === submission.account_id) continue;
      count++;
      if (accounts.length < LISTED)
        accounts.push({ account_id: id, status: store.get('kyc_submissions', id)?.status ?? '' });
    }
    return { count, accounts };
  };
  return {
    aadhaar: submission.aadhaar_fingerprint
      ? others(by_aadhaar.ids(submission.aadhaar_fingerprint))
      : { count: 0, accounts: [] },
    pan: others(by_pan.ids(submission.pan_number)),
  };
}
