// What `verify` knows of the ledger accounts that carry taxes and the distribution network
// (issue #28), beyond the invariants every account has (integer amounts, postings that sum to
// zero, customer accounts never below zero):
//   gst:cgst, gst:sgst, gst:utgst, gst:igst   GST collected on fees: never below zero, and
//                         within one posting CGST equals SGST (or UTGST), and IGST is never
//                         beside them (a supply is either intra-state or inter-state);
//   tds:194h              TDS withheld from commissions: never below zero;
//   override:<service>    distributors' overrides, an expense: never above zero;
//   network:transfers     a distributor's money on its way to a retailer: zero after every
//                         commit (both sides of a transfer are in one commit).
// The names are the ledger's (ledger/ledger.ts); the store checks them without importing it.
import type { Posting } from './state.js';

const GST_ACCOUNTS = new Set(['gst:cgst', 'gst:sgst', 'gst:utgst', 'gst:igst']);
const TDS_ACCOUNTS = new Set(['tds:194h']);
export const NETWORK_TRANSFERS_ACCOUNT = 'network:transfers';

/** A posting's own shape: known tax accounts only, and one kind of GST supply. */
export function checkPostingTaxes(
  posting: Posting,
  seq: number,
  breach: (message: string) => void,
): void {
  let cgst: number | null = null;
  let state_half: number | null = null;
  let igst: number | null = null;
  for (const [account, amount] of posting.entries) {
    if (account.startsWith('gst:')) {
      if (!GST_ACCOUNTS.has(account))
        breach(`posting ${posting.id} (record ${seq}) names an unknown GST account ${account}`);
      if (account === 'gst:cgst') cgst = (cgst ?? 0) + amount;
      else if (account === 'gst:igst') igst = (igst ?? 0) + amount;
      else state_half = (state_half ?? 0) + amount;
    } else if (account.startsWith('tds:') && !TDS_ACCOUNTS.has(account)) {
      breach(`posting ${posting.id} (record ${seq}) names an unknown TDS account ${account}`);
    }
  }
  if (igst !== null && (cgst !== null || state_half !== null))
    breach(`posting ${posting.id} (record ${seq}) charges IGST beside CGST/SGST`);
  if ((cgst ?? 0) !== (state_half ?? 0))
    breach(
      `posting ${posting.id} (record ${seq}) has CGST ${cgst ?? 0} but SGST/UTGST ${state_half ?? 0}`,
    );
}

/** After a whole commit: no money is left between two wallets. */
export function checkRecordEnd(
  balances: Readonly<Record<string, number>>,
  seq: number,
  breach: (message: string) => void,
): void {
  const in_flight = balances[NETWORK_TRANSFERS_ACCOUNT] ?? 0;
  if (in_flight !== 0)
    breach(`${NETWORK_TRANSFERS_ACCOUNT} is ${in_flight} after record ${seq}, not zero`);
}

/** The signs the tax and network accounts must keep. */
export function checkTaxBalances(
  balances: Readonly<Record<string, number>>,
  breach: (message: string) => void,
): void {
  for (const [account, balance] of Object.entries(balances)) {
    if ((GST_ACCOUNTS.has(account) || TDS_ACCOUNTS.has(account)) && balance < 0)
      breach(`${account} is below zero: ${balance} (more tax given back than was collected)`);
    if (account.startsWith('override:') && balance > 0)
      breach(`${account} is above zero: ${balance} (more overrides taken back than were paid)`);
    if (account === NETWORK_TRANSFERS_ACCOUNT && balance !== 0)
      breach(`${account} is ${balance}, not zero`);
  }
}
