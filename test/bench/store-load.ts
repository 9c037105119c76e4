// The store benches' load: a store funded for 64 accounts, one durable commit (a debit
// posting, the typical money-moving transaction), and commits per second at N writers, for
// any backend that opens a Store (the JSON-file store, the PostgreSQL store) and, for the
// A/B against an older tree (store-ab-child.ts), with that tree's own ledger functions.
import type { Store } from '../../gateway/store/types.ts';
import * as own from '../../gateway/ledger/ledger.ts';

/** The ledger functions the load calls (this tree's, or an older tree's for its own store). */
export type LoadLedger = Pick<typeof own, 'FUNDING_TOPUP' | 'creditWallet' | 'debitWallet'>;
/** What the load needs of a store (this tree's Store, or an older tree's). */
export type LoadStore = Pick<Store, 'transact'> & {
  /** Commit groups (fsyncs) so far: the JSON-file store's; absent elsewhere (counted as 0). */
  readonly commit_groups?: number;
};

export async function fund<S extends LoadStore>(store: S, ledger: LoadLedger = own): Promise<S> {
  await store.transact((tx) => {
    for (let i = 0; i < 64; i++)
      ledger.creditWallet(tx, {
        account_id: `acc${i}`,
        amount_micros: 1e15,
        from: ledger.FUNDING_TOPUP,
        memo: 'bench funding',
      });
  });
  return store;
}

/** One durable commit: a debit posting. */
export function commit(
  store: LoadStore,
  writer: number,
  n: number,
  ledger: LoadLedger = own,
): Promise<unknown> {
  return store.transact((tx) =>
    ledger.debitWallet(tx, {
      account_id: `acc${writer % 64}`,
      amount_micros: 1000 + (n % 100),
      to: 'revenue:bench',
      memo: 'bench',
    }),
  );
}

/** Commits per second (and commit groups, i.e. fsyncs, per second) of `writers` concurrent writers for `seconds`. */
export async function commitThroughput(
  store: LoadStore,
  writers: number,
  seconds: number,
  ledger: LoadLedger = own,
): Promise<{ commits: number; commits_per_s: number; fsyncs_per_s: number }> {
  const groups_before = store.commit_groups ?? 0;
  let commits = 0;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      while (performance.now() < deadline) {
        await commit(store, writer, commits, ledger);
        commits++;
      }
    }),
  );
  return {
    commits,
    commits_per_s: commits / seconds,
    fsyncs_per_s: ((store.commit_groups ?? 0) - groups_before) / seconds,
  };
}
