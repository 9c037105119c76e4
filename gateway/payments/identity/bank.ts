// Bank account identities as NEFT and IMPS carry them. IFSC (RBI): 11 characters, the bank's
// four letters, a 0 (reserved), six for the branch; the bank's code must be in Razorpay's
// `ifsc` directory (MIT; its bank names and sublet lists are bundled, not its 1 MB branch
// list), which also names the bank. Account numbers: 9 to 18 digits as NPCI's IMPS and the
// banks' NEFT forms take them (leading zeros kept), never all zeros; the directory has no
// per-bank lengths, so 9–18 is the rule for every bank.
import banknames from 'ifsc/src/banknames.json' with { type: 'json' };
import sublets from 'ifsc/src/sublet.json' with { type: 'json' };
import customSublets from 'ifsc/src/custom-sublets.json' with { type: 'json' };
import { rowOf } from '../../store/state.js';

export const IFSC_PATTERN = /^[A-Z]{4}0[A-Z0-9]{6}$/;

const SUBLETS = sublets as Readonly<Record<string, string>>;
const BANK_NAMES = banknames as Readonly<Record<string, string>>;
const CUSTOM_SUBLETS = Object.entries(customSublets as Readonly<Record<string, string>>);

export function normalizeIfsc(input: string): string {
  return input.trim().toUpperCase();
}

/** Why `ifsc` (normalized) is not an IFSC of a bank in the directory, or null. */
export function ifscError(ifsc: string): string | null {
  if (!IFSC_PATTERN.test(ifsc))
    return 'must be an IFSC: 4 letters, 0, then 6 letters or digits (e.g. SBIN0001234)';
  if (rowOf(BANK_NAMES, ifsc.slice(0, 4)) === undefined)
    return `names no bank: ${ifsc.slice(0, 4)} is not a bank code of the IFSC directory`;
  return null;
}

/**
 * The bank of an IFSC, from the IFSC itself: the first four letters name the bank, except for
 * sublet branches (a co-operative or regional bank's branch coded under its sponsor bank's
 * prefix, e.g. HDFC0CAACOB is Akhand Anand Co-op Bank).
 */
export function bankCodeForIfsc(ifsc: string): string {
  const sublet = rowOf(SUBLETS, ifsc);
  if (sublet) return sublet;
  let best: string | null = null;
  let best_length = 0;
  for (const [prefix, code] of CUSTOM_SUBLETS)
    if (prefix.length > best_length && ifsc.startsWith(prefix)) {
      best = code;
      best_length = prefix.length;
    }
  return best ?? ifsc.slice(0, 4);
}

/** The bank's name for an IFSC that passed ifscError. */
export function bankForIfsc(ifsc: string): string {
  const code = bankCodeForIfsc(ifsc);
  return rowOf(BANK_NAMES, code) ?? rowOf(BANK_NAMES, ifsc.slice(0, 4)) ?? code;
}

export const ACCOUNT_NUMBER_MIN_DIGITS = 9;
export const ACCOUNT_NUMBER_MAX_DIGITS = 18;

/** An account number as typed: spaces, hyphens and slashes dropped. */
export function normalizeAccountNumber(input: string): string {
  return input.replace(/[\s/-]/g, '');
}

/** Why `account_number` (normalized) is not one NEFT and IMPS take, or null. */
export function accountNumberError(account_number: string): string | null {
  if (!/^\d+$/.test(account_number)) return 'must be digits only';
  if (
    account_number.length < ACCOUNT_NUMBER_MIN_DIGITS ||
    account_number.length > ACCOUNT_NUMBER_MAX_DIGITS
  )
    return `must be ${ACCOUNT_NUMBER_MIN_DIGITS} to ${ACCOUNT_NUMBER_MAX_DIGITS} digits (this is ${account_number.length})`;
  if (/^0+$/.test(account_number)) return 'must not be all zeros';
  return null;
}

export function maskAccountNumber(account_number: string): string {
  return `${'X'.repeat(Math.max(0, account_number.length - 4))}${account_number.slice(-4)}`;
}
