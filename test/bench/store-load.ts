// The store benches' load: a store funded for 64 accounts, one durable commit (a debit
// posting, the typical money-moving transaction), and commits per second at N writers, for
// any backend that opens a Store (the JSON-file store, the PostgreSQL store).
import { Store } from '../../gateway/store/store.ts';
import { FUNDING_TOPUP, creditWallet, debitWallet } from '../../gateway/ledger/ledger.ts';

export async function fund(store: Store): Promise<Store> {
  await store.transact((tx) => {
    for (let i = 0; i < 64; i++)
      creditWallet(tx, {
        account_id: `acc${i}`,
        amount_micros: 1e15,
        from: FUNDING_TOPUP,
        memo: 'bench funding',
      });
  });
  return store;
}

/** One durable commit: a debit posting. */
export function commit(store: Store, writer: number, n: number): Promise<unknown> {
  return store.transact((tx) =>
    debitWallet(tx, {
      account_id: `acc${writer % 64}`,
      amount_micros: 1000 + (n % 100),
      to: 'revenue:bench',
      memo: 'bench',
    }),
  );
}

/** Commits per second (and commit groups, i.e. fsyncs, per second) of `writers` concurrent writers for `seconds`. */
export async function commitThroughput(
  store: Store,
  writers: number,
  seconds: number,
): Promise<{ commits_per_s: number; fsyncs_per_s: number }> {
  const groups_before = store.commit_groups;
  let commits = 0;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: writers }, async (_, writer) => {
      while (performance.now() < deadline) {
        await commit(store, writer, commits);
        commits++;
      }
    }),
  );
  return {
    commits_per_s: commits / seconds,
    fsyncs_per_s: (store.commit_groups - groups_before) / seconds,
  };
}
