// A new account made by the payments room (a registration, a distributor's retailer): the
// accounts room's createAccount, with each of the room's payment services off.
import { createAccount } from '../accounts/accounts.js';
import type { Account } from '../store/state.js';
import type { Tx } from '../store/types.js';
import type { ServiceSummary } from './context.js';

export function createPaymentsAccount(
  tx: Tx,
  services: readonly ServiceSummary[],
  input: { id: string; email: string; name: string | undefined; password_hash: string },
): Account {
  return createAccount(tx, { ...input, payment_services: services.map((service) => service.code) });
}
