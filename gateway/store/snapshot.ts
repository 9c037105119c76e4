// One point in history that several reads agree on (`StoreReads.snapshot`): both backends'
// history reads keep their positions in it.

/**
 * One point in history that several reads agree on (a CSV download's count pass and its rows
 * pass): each index list is read up to the length it had when a read through this snapshot
 * first looked at it, and the live (pending) transactions are those of that first look, as
 * they were then. A report reads one list (and, for transactions, the live rows), so its reads
 * through one snapshot see exactly the rows committed up to one point; rows committed later are
 * skipped. It holds a number per list and the live rows it was asked for (pending ones: few).
 */
export class ReadSnapshot {
  private readonly ends = new Map<string, number>();
  private readonly kept = new Map<string, unknown>();

  /** How many entries of the list `name` (null: none yet) this snapshot reads. */
  end(name: string, list: { readonly count: number } | null): number {
    let end = this.ends.get(name);
    if (end === undefined) this.ends.set(name, (end = list?.count ?? 0));
    return end;
  }

  /** What `read` gave the first time `name` was asked for. */
  once<T>(name: string, read: () => T): T {
    if (!this.kept.has(name)) this.kept.set(name, read());
    return this.kept.get(name) as T;
  }
}
