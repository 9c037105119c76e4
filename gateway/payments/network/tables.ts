// The distribution network's tables in the store document: who is a distributor, whose
// retailer an account is, which commission scheme it earns by, and the schemes themselves.
import type { CommissionScheme } from './schemes.js';

export type NetworkRole = 'retailer' | 'distributor';

/** An account's place in the network; an account without a row is a retailer of no one on the default scheme. */
export interface NetworkMember {
  account_id: string;
  role: NetworkRole;
  /** The distributor that onboarded it (or that the admin placed it under). */
  parent_id: string | null;
  /** null: the default scheme (the operator and biller catalogue's rates). */
  scheme_id: string | null;
  created_at: string;
  updated_at: string;
}

declare module '../../store/state.js' {
  interface Tables {
    /** account id → its place in the network */
    network: Record<string, NetworkMember>;
    commission_schemes: Record<string, CommissionScheme>;
  }
}
