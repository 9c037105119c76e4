// Whether a transfer into a virtual account came from the account holder: the payer's name as
// the remitting bank gives it against the holder's name (the eKYC's, else the account's), and
// the payer's bank account against the holder's own ones where they are known. Pure.
import type { PayerDetails } from '../types.js';

export interface Holder {
  /** The names the holder goes by (eKYC name first); compared as sets of words. */
  names: string[];
  /** The holder's own bank accounts (account number + IFSC), where known. */
  bank_accounts: Array<{ account_number: string; ifsc: string }>;
}

/** Upper-case words of letters only: "Rao, Asha K." and "ASHA K RAO" are the same words. */
function words(name: string): string[] {
  return name
    .toUpperCase()
    .replace(/[^A-Z ]+/g, ' ')
    .split(' ')
    .filter((w) => w.length > 0 && !['MR', 'MRS', 'MS', 'DR', 'SHRI', 'SMT', 'KUMARI'].includes(w))
    .sort();
}

const digits = (account: string) => account.replace(/\D+/g, '').replace(/^0+/, '');

/** Null when the payer is the holder; else why the transfer is held for review. */
export function thirdPartyReason(holder: Holder, payer: PayerDetails): string | null {
  if (payer.account_number && payer.ifsc && holder.bank_accounts.length > 0) {
    const own = holder.bank_accounts.some(
      (b) =>
        digits(b.account_number) === digits(payer.account_number!) &&
        b.ifsc.toUpperCase() === payer.ifsc!.toUpperCase(),
    );
    if (own) return null;
  }
  if (!payer.name) return 'the payer’s name was not given (a UPI payment names none)';
  const paid_by = words(payer.name).join(' ');
  if (paid_by !== '' && holder.names.some((name) => words(name).join(' ') === paid_by)) return null;
  return `paid by ${payer.name.slice(0, 100)}, not the account holder`;
}
