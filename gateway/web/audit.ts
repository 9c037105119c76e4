// The audit log: one history record per security- or money-relevant action, written in the
// same transaction as the action itself (so there is no action without its record).
import type { Tx } from '../store/types.js';

export interface AuditInput {
  /** `admin` (console), `user:<account id>`, or another room's actor name. */
  actor: string;
  action: string;
  account_id?: string | null;
  detail?: string;
  ip?: string | null;
}

export function audit(tx: Tx, entry: AuditInput): void {
  tx.history({
    type: 'audit',
    ts: tx.now.toISOString(),
    actor: entry.actor,
    action: entry.action,
    account_id: entry.account_id ?? null,
    detail: entry.detail ?? '',
    ...(entry.ip ? { ip: entry.ip } : {}),
  });
}
