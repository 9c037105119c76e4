// What the history reads of both backends share (store/reads.ts for the JSON-file store,
// store/pg/reads.ts for PostgreSQL): a page picked from a walk while its totals are folded,
// a page taken from a stream, and the tests of a transaction's fields against a selection.
import type { Page, TxnRow, TxnSelect } from './types.js';

export function statusMatches(status: number, wanted: string): boolean {
  return /^\dxx$/.test(wanted)
    ? Math.floor(status / 100) === Number(wanted[0])
    : status === Number(wanted);
}

/**
 * The page of a walk in list order (oldest first), in `order`, holding no more than the page
 * (or, newest first, the page and the rows after it): a range's totals are counted over
 * every match while memory holds its page only.
 */
export class PagePick<T> {
  total = 0;
  /** The most items held at once. */
  kept_most = 0;
  private kept: T[] = [];
  constructor(
    private readonly page: Page | null,
    private readonly order: 'asc' | 'desc',
  ) {}

  offer(item: T): void {
    const position = this.total++;
    const page = this.page;
    if (page === null) this.kept.push(item);
    else if (page.limit === 0)
      return; // a count alone (a CSV download's total)
    else if (this.order === 'asc') {
      if (position >= page.offset && position < page.offset + page.limit) this.kept.push(item);
    } else {
      // Newest first: the last offset + limit matches so far (trimmed now and then, amortized).
      this.kept.push(item);
      const need = page.offset + page.limit;
      if (this.kept.length >= 2 * need + 1024) this.kept = this.kept.slice(-need);
    }
    if (this.kept.length > this.kept_most) this.kept_most = this.kept.length;
  }

  rows(): T[] {
    if (this.order === 'asc') return this.kept;
    const newest_first = this.kept.slice().reverse();
    return this.page === null
      ? newest_first
      : newest_first.slice(this.page.offset, this.page.offset + this.page.limit);
  }
}

/**
 * A page taken from items as they pass in the page's order: the first `offset` skipped, then
 * at most `limit` kept; a stream stops reading once `full`.
 */
export class PageTake {
  private skipped = 0;
  private taken = 0;
  constructor(private readonly page: Page) {}

  /** Counts an item: true when it is in the page (keep it), false when it is skipped. */
  offer(): boolean {
    if (this.skipped < this.page.offset) {
      this.skipped++;
      return false;
    }
    this.taken++;
    return true;
  }

  get full(): boolean {
    return this.taken >= this.page.limit;
  }
}

/** The test of a transaction's service, status and creation time against a selection (not its `match`). */
export function txnFieldsMatch(row: TxnRow, select: TxnSelect): boolean {
  if (select.service !== undefined && row.service !== select.service) return false;
  if (select.status !== undefined && row.status !== select.status) return false;
  const created_ms = Date.parse(row.created_at);
  if (select.from_ms !== undefined && created_ms < select.from_ms) return false;
  if (select.to_ms !== undefined && created_ms > select.to_ms) return false;
  return true;
}
