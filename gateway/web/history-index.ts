// What the dashboard shows from history (wallet history, spend per day and tier, a key's
// spend and last use, the audit log), read through the store's read interface: a page view
// reads its page (the store's history indexes are kept up with every commit), never the
// journal. A key's "last used" comes from the history records that carry its key_id (chat
// usage records and any other room's records that name the key): no journal write per
// request.
import type { KeyStats, Store, WalletLine } from '../store/types.js';
import type { HistoryRecord, Posting } from '../store/state.js';

export interface WalletRow {
  ts: string;
  memo: string;
  ref: string | null;
  delta_micros: number;
  opening_micros: number;
  closing_micros: number;
}

export type { KeyStats };

export interface AuditEntry {
  ts: string;
  actor: string;
  action: string;
  account_id: string | null;
  detail: string;
}

/** Our records carry `detail` (text); the payments room's carry `details` (an object) and a status. */
function auditDetail(record: HistoryRecord): string {
  const parts: string[] = [];
  if (typeof record.detail === 'string' && record.detail) parts.push(record.detail);
  if (record.details !== undefined && record.details !== null)
    parts.push(JSON.stringify(record.details).slice(0, 300));
  if (typeof record.status === 'number' && record.status >= 400)
    parts.push(`refused (${record.status})`);
  return parts.join(' · ');
}

const DAY_MS = 86_400_000;

export class HistoryIndex {
  constructor(private readonly store: Store) {}

  /** Waits until every commit so far is durable (and so indexed). */
  async catchUp(): Promise<void> {
    await this.store.readDurable();
  }

  /** One page of an account's wallet history, newest first, with the balance around each row. */
  async walletPage(
    account_id: string,
    page: number,
    per_page: number,
  ): Promise<{ total: number; rows: WalletRow[] }> {
    const result = await this.store.reads.wallet(
      { account_id },
      { offset: (page - 1) * per_page, limit: per_page },
      'desc',
    );
    return { total: result.total, rows: result.rows.map((line) => this.walletRow(line)) };
  }

  /** Every wallet row of an account, oldest first, read a chunk at a time (CSV export). */
  async *walletRows(account_id: string): AsyncGenerator<WalletRow> {
    // One walk of the account's list (a page per read walked the list from its start each
    // time: quadratic in the history).
    for await (const lines of this.store.reads.walletExport({ account_id }, 'asc'))
      for (const line of lines) yield this.walletRow(line);
  }

  private walletRow(line: WalletLine): WalletRow {
    const posting: Posting = line.posting;
    const hold = posting.hold;
    let memo = posting.memo;
    if (hold?.action === 'open') {
      // A reservation resolved in the same commit is named after what it paid for.
      const by = line.resolved_by;
      if (by)
        memo =
          by.hold?.action === 'capture'
            ? by.memo
            : `Reserved: ${posting.memo.replace(/^hold for /, '')} (released)`;
      else memo = `Reserved: ${posting.memo.replace(/^hold for /, '')}`;
    } else if (hold?.action === 'capture') memo = `${posting.memo}: unused reserve returned`;
    else if (hold?.action === 'void') memo = `${posting.memo}: reserve released`;
    return {
      ts: posting.ts,
      memo,
      ref: posting.ref ?? null,
      delta_micros: line.delta_micros,
      opening_micros: line.opening_micros,
      closing_micros: line.closing_micros,
    };
  }

  async keyStats(key_id: string): Promise<KeyStats> {
    return { ...(await this.store.reads.keyStats(key_id)) };
  }

  /** Spend per tier for each of the `days` UTC days ending with `last_day` (inclusive). */
  async dailySpend(
    account_id: string,
    last_day: string,
    days: number,
  ): Promise<Array<{ day: string; tiers: Map<string, number> }>> {
    const first_ms = Date.parse(`${last_day}T00:00:00Z`) - (days - 1) * DAY_MS;
    const spend = await this.store.reads.dailySpend(account_id, first_ms, days);
    return spend.map((tiers, i) => ({
      day: new Date(first_ms + i * DAY_MS).toISOString().slice(0, 10),
      tiers,
    }));
  }

  /** One page of the audit log (one account's, or everyone's), newest first. */
  async auditPage(
    account_id: string | null,
    page: number,
    per_page: number,
  ): Promise<{ total: number; rows: AuditEntry[] }> {
    const { total, rows } = await this.store.reads.audit(
      { account_id },
      { offset: (page - 1) * per_page, limit: per_page },
    );
    return {
      total,
      rows: rows.map((record) => ({
        ts: record.ts,
        actor: String(record.actor ?? ''),
        action: String(record.action ?? ''),
        account_id: typeof record.account_id === 'string' ? record.account_id : null,
        detail: auditDetail(record),
      })),
    };
  }
}
