// What the dashboard shows from history (wallet history, spend per day and tier, a key's
// spend and last use, the audit log), kept in memory and brought up to date from the
// journal on each page view. It reads only the bytes appended since the last view (it
// remembers its segment and byte offset), so a page view costs the new records, not the
// whole journal; the first view after a start reads the journal once. A key's "last used"
// is derived from the history records that carry its key_id (chat usage records and any
// other room's records that name the key): no journal write per request.
// Memory grows with the number of wallet postings (a few dozen bytes each); past millions
// of postings this belongs in a database behind the Store interface.
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { listSegments } from '../store/journal.js';
import { JOURNAL_DIR, type Store } from '../store/store.js';
import type { HistoryRecord, JournalRecord, Posting } from '../store/state.js';
import { walletAccount } from '../ledger/ledger.js';

export interface WalletRow {
  seq: number;
  ts: string;
  memo: string;
  ref: string | null;
  delta_micros: number;
  opening_micros: number;
  closing_micros: number;
}

export interface KeyStats {
  requests: number;
  cost_micros: number;
  last_used: string | null;
}

export interface AuditEntry {
  seq: number;
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
  if (record.details !== undefined && record.details !== null) parts.push(JSON.stringify(record.details).slice(0, 300));
  if (typeof record.status === 'number' && record.status >= 400) parts.push(`refused (${record.status})`);
  return parts.join(' · ');
}

const READ_CHUNK_BYTES = 1024 * 1024;

export class HistoryIndex {
  private seq = 0;
  private segment_first_seq = -1;
  private offset = 0;
  private running: Promise<void> = Promise.resolve();
  private readonly wallets = new Map<string, WalletRow[]>();
  private readonly keys = new Map<string, KeyStats>();
  /** account → UTC day → tier → micros */
  private readonly daily = new Map<string, Map<string, Map<string, number>>>();
  private readonly audit: AuditEntry[] = [];
  /** Open holds → their wallet row, to name the row after what the hold paid for. */
  private readonly open_holds = new Map<string, WalletRow>();

  constructor(private readonly store: Store) {}

  /** Brings the index up to the durable state; concurrent callers share one read. */
  catchUp(): Promise<void> {
    const next = this.running.then(async () => {
      await this.store.transact(() => undefined);
      await this.readUpTo(this.store.state.seq);
    });
    this.running = next.catch(() => undefined);
    return next;
  }

  private async readUpTo(up_to_seq: number): Promise<void> {
    const journal_dir = join(this.store.data_dir, JOURNAL_DIR);
    while (this.seq < up_to_seq) {
      const segments = listSegments(journal_dir);
      let index = -1;
      for (let i = 0; i < segments.length; i++) if (segments[i]!.first_seq <= this.seq + 1) index = i;
      if (index === -1) return;
      const segment = segments[index]!;
      if (segment.first_seq !== this.segment_first_seq) {
        this.segment_first_seq = segment.first_seq;
        this.offset = 0;
      }
      const before = this.seq;
      await this.readSegment(segment.file, up_to_seq);
      if (this.seq === before) {
        // Nothing new here: the next record is in the next segment, or not written yet.
        const following = segments[index + 1];
        if (!following || following.first_seq !== this.seq + 1) return;
      }
    }
  }

  private async readSegment(file: string, up_to_seq: number): Promise<void> {
    const handle = await open(file, 'r');
    try {
      let carry = Buffer.alloc(0);
      let position = this.offset;
      for (;;) {
        const chunk = Buffer.alloc(READ_CHUNK_BYTES);
        const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
        if (bytesRead === 0) return;
        position += bytesRead;
        const data = carry.length ? Buffer.concat([carry, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
        let start = 0;
        for (;;) {
          const newline = data.indexOf(10, start);
          if (newline === -1) break;
          const line = data.subarray(start, newline).toString('utf8');
          let record: JournalRecord | null = null;
          try {
            record = JSON.parse(line) as JournalRecord;
          } catch {
            record = null;
          }
          if (record && typeof record.s === 'number') {
            if (record.s > up_to_seq) return; // not durable yet: read it next time
            if (record.s > this.seq) this.apply(record);
          }
          this.offset += newline + 1 - start;
          start = newline + 1;
        }
        carry = Buffer.from(data.subarray(start));
      }
    } finally {
      await handle.close();
    }
  }

  private apply(record: JournalRecord): void {
    for (const op of record.ops) {
      if (op.o === 'post') this.applyPosting(record.s, op.p);
      else if (op.o === 'hist') this.applyRecord(record.s, op.r);
    }
    this.seq = record.s;
  }

  private applyPosting(seq: number, posting: Posting): void {
    if (!posting.account_id) return;
    const wallet = walletAccount(posting.account_id);
    let delta_micros = 0;
    let touches = false;
    for (const [ledger_account, amount_micros] of posting.entries) {
      if (ledger_account === wallet) {
        delta_micros += amount_micros;
        touches = true;
      }
    }
    const hold = posting.hold;
    if (hold && hold.action !== 'open') {
      // The hold's reservation row is named after what it paid for ("chat … tokens").
      const reserved = this.open_holds.get(hold.id);
      this.open_holds.delete(hold.id);
      if (reserved) reserved.memo = hold.action === 'capture' ? posting.memo : `${reserved.memo} (released)`;
    }
    if (!touches) return;
    let rows = this.wallets.get(posting.account_id);
    if (!rows) this.wallets.set(posting.account_id, (rows = []));
    const opening_micros = rows.at(-1)?.closing_micros ?? 0;
    let memo = posting.memo;
    if (hold?.action === 'open') memo = `Reserved: ${posting.memo.replace(/^hold for /, '')}`;
    else if (hold?.action === 'capture') memo = `${posting.memo}: unused reserve returned`;
    else if (hold?.action === 'void') memo = `${posting.memo}: reserve released`;
    const row: WalletRow = { seq, ts: posting.ts, memo, ref: posting.ref ?? null, delta_micros, opening_micros, closing_micros: opening_micros + delta_micros };
    rows.push(row);
    if (hold?.action === 'open') this.open_holds.set(hold.id, row);
  }

  private applyRecord(seq: number, record: HistoryRecord): void {
    const key_id = typeof record.key_id === 'string' ? record.key_id : this.keyOfApiLog(record);
    const cost_micros = typeof record.cost_micros === 'number' && Number.isSafeInteger(record.cost_micros) ? record.cost_micros : 0;
    if (key_id) {
      const stats = this.keys.get(key_id) ?? { requests: 0, cost_micros: 0, last_used: null };
      stats.requests++;
      stats.cost_micros += cost_micros;
      if (!stats.last_used || record.ts > stats.last_used) stats.last_used = record.ts;
      this.keys.set(key_id, stats);
    }
    if (record.type === 'usage' && typeof record.account_id === 'string' && cost_micros > 0) {
      const tier = typeof record.tier === 'string' ? record.tier : 'other';
      const day = record.ts.slice(0, 10);
      let days = this.daily.get(record.account_id);
      if (!days) this.daily.set(record.account_id, (days = new Map()));
      let tiers = days.get(day);
      if (!tiers) days.set(day, (tiers = new Map()));
      tiers.set(tier, (tiers.get(tier) ?? 0) + cost_micros);
    }
    if (record.type === 'audit') {
      this.audit.push({
        seq,
        ts: record.ts,
        actor: String(record.actor ?? ''),
        action: String(record.action ?? ''),
        account_id: typeof record.account_id === 'string' ? record.account_id : null,
        detail: auditDetail(record),
      });
    }
  }

  /** The key that made an /api call, as its API log record names it. */
  private keyOfApiLog(record: HistoryRecord): string | null {
    return record.type === 'api_log' && typeof record.key_id === 'string' ? record.key_id : null;
  }

  /** Oldest first, each with the wallet balance before and after it. */
  walletRows(account_id: string): readonly WalletRow[] {
    return this.wallets.get(account_id) ?? [];
  }

  keyStats(key_id: string): KeyStats {
    return this.keys.get(key_id) ?? { requests: 0, cost_micros: 0, last_used: null };
  }

  /** Spend per tier for each of the `days` UTC days ending with `last_day` (inclusive). */
  dailySpend(account_id: string, last_day: string, days: number): Array<{ day: string; tiers: Map<string, number> }> {
    const out: Array<{ day: string; tiers: Map<string, number> }> = [];
    const end = Date.parse(`${last_day}T00:00:00Z`);
    const by_day = this.daily.get(account_id);
    for (let i = days - 1; i >= 0; i--) {
      const day = new Date(end - i * 86_400_000).toISOString().slice(0, 10);
      out.push({ day, tiers: by_day?.get(day) ?? new Map() });
    }
    return out;
  }

  auditEntries(): readonly AuditEntry[] {
    return this.audit;
  }
}
