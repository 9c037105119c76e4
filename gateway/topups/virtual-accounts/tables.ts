// The virtual accounts' tables in the store document (declaration merging on Tables).
import type { TopupProviderName, VirtualAccount } from '../types.js';

/** An account's virtual bank account (and UPI ID) at the provider: made on its first ask, then served from here. */
export interface TopupVirtualAccount extends VirtualAccount {
  account_id: string;
  provider: TopupProviderName;
  created_at: string;
}

declare module '../../store/state.js' {
  interface Tables {
    /** account id → its virtual account (one per account that asked for load details). */
    topup_virtual_accounts: Record<string, TopupVirtualAccount>;
    /** `<provider>:<virtual account id>` → the account it credits. */
    topup_va_owners: Record<string, string>;
  }
}
